"""GpSimd instructions whose destination has more than one free dimension (issue 29 scope 2).

nki-library's find_nonzero_indices (validated on AWS's compiler) writes ``nonzero_with_count`` into a
``[C, 1, chunk + 1]`` tile and shuffles that tile with ``nc_stream_shuffle`` (a mask that skips partitions): the
values land in the tile's own shape, each checked against NumPy, and partitions the instruction does not write keep
what they held.
"""

from __future__ import annotations

import numpy as np

import nkisim

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(3129)


@nki.jit
def nonzero_3d(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    d = nl.ndarray((128, 1, 257), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=d, value=7)
    nisa.nonzero_with_count(dst=d, src=t, index_offset=5, padding_val=-1)
    # each quadrant's partition 0 to all of the quadrant's partitions 0..3, the others skipped (255)
    s = nl.ndarray((128, 1, 257), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=s, value=9)
    nisa.nc_stream_shuffle(dst=s, src=d, shuffle_mask=[0, 0, 0, 0] + [255] * 28)
    out = nl.ndarray((2, 128, 1, 257), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[0], src=d)
    nisa.dma_copy(dst=out[1], src=s)
    return out


def test_nonzero_with_count_and_a_shuffle_into_a_3d_tile():
    x = (RNG.random((128, 2, 128)) > 0.6).astype(np.float32)
    got = nonzero_3d(x)
    flat = x.reshape(128, -1)
    want = np.full((128, 257), 7, np.int64)
    for p in range(0, 128, 16):  # GpSimd's cores write their first partition only
        idx = np.flatnonzero(flat[p])
        want[p] = -1
        want[p, :len(idx)] = idx + 5
        want[p, 256] = len(idx)
    np.testing.assert_array_equal(got[0, :, 0], want)
    shuffled = np.full((128, 257), 9, np.int64)
    for q in range(0, 128, 32):
        shuffled[q:q + 4] = want[q]
    np.testing.assert_array_equal(got[1, :, 0], shuffled)
