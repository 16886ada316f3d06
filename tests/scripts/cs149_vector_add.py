"""CS149-style NKI vector add, written for the real Neuron compiler (runs unmodified on nkisim)."""

import argparse

import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def vector_add_tiled(a_vec, b_vec):
    """Add two 1-D vectors 128 elements (one partition column) at a time."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    M = a_vec.shape[0]
    ROW_CHUNK = nl.tile_size.pmax
    for m in nl.affine_range(M // ROW_CHUNK):
        a_tile = nl.ndarray((ROW_CHUNK, 1), dtype=a_vec.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((ROW_CHUNK, 1), dtype=b_vec.dtype, buffer=nl.sbuf)
        a_tile[...] = nl.load(a_vec[m * ROW_CHUNK:(m + 1) * ROW_CHUNK])
        b_tile[...] = nl.load(b_vec[m * ROW_CHUNK:(m + 1) * ROW_CHUNK])
        res = nl.add(a_tile, b_tile)
        nl.store(out[m * ROW_CHUNK:(m + 1) * ROW_CHUNK], value=res)
    return out


def vector_add_naive(a_vec, b_vec):
    """The first CS149 kernel: one 128-element tile, not decorated (nki.baremetal wraps it)."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    a = nl.load(a_vec)
    b = nl.load(b_vec)
    nl.store(out, value=nl.add(a, b))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()

    a = np.random.rand(args.size).astype(np.float32)
    b = np.random.rand(args.size).astype(np.float32)
    out = nki.simulate_kernel(vector_add_tiled, a, b)
    assert np.allclose(out, a + b), "tiled vector add mismatch"

    a128, b128 = a[:128].copy(), b[:128].copy()
    out_naive = nki.baremetal(vector_add_naive)(a128, b128)
    assert np.allclose(out_naive, a128 + b128), "naive vector add mismatch"
    print(f"CS149 VECTOR ADD OK size={args.size}")
