"""SPMD tensor add from the tutorials: kernel[grid] with nl.program_id, unmodified."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def nki_tensor_add(a_input, b_input):
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    grid_x = a_input.shape[0] // 128
    grid_y = a_input.shape[1] // 512
    for i in nl.affine_range(grid_x):
        for j in nl.affine_range(grid_y):
            ix = i * 128 + nl.arange(128)[:, None]
            iy = j * 512 + nl.arange(512)[None, :]
            nl.store(c_output[ix, iy], value=nl.add(nl.load(a_input[ix, iy]), nl.load(b_input[ix, iy])))
    return c_output


@nki.jit
def spmd_add(a_input, b_input):
    """Output created once for the whole grid (shared_hbm), each instance writes its own tile."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    j = nl.program_id(1)
    ix = i * 128 + nl.arange(128)[:, None]
    iy = j * 512 + nl.arange(512)[None, :]
    nl.store(c_output[ix, iy], value=nl.load(a_input[ix, iy]) + nl.load(b_input[ix, iy]))
    return c_output


if __name__ == "__main__":
    a = np.random.random_sample([256, 1024]).astype(np.float32)
    b = np.random.random_sample([256, 1024]).astype(np.float32)
    grid = (a.shape[0] // 128, a.shape[1] // 512)
    c = spmd_add[grid](a, b)
    assert np.allclose(c, a + b)
    c2 = nki_tensor_add(a, b)
    assert np.allclose(c2, a + b)
    print(f"SPMD OK grid={list(grid)}")
