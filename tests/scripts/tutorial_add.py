"""Official-tutorial-style script (nki.jit decorator and nki.jit(kernel, mode=...)), unmodified."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def nki_tensor_add_kernel_(a_input, b_input):
    """Element-wise add of two [128, 512] tensors."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    ix = nl.arange(128)[:, None]
    iy = nl.arange(512)[None, :]
    a_tile = nl.load(a_input[ix, iy])
    b_tile = nl.load(b_input[ix, iy])
    c_tile = a_tile + b_tile
    nl.store(c_output[ix, iy], value=c_tile)
    return c_output


def nki_matmul_basic_(lhsT, rhs):
    """Tutorial basic matmul: lhsT [64, 128], rhs [64, 512] -> [128, 512]."""
    result = nl.ndarray((128, 512), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    lhs_tile = nl.load(lhsT)
    rhs_tile = nl.load(rhs)
    result_psum = nl.matmul(lhs_tile, rhs_tile, transpose_x=True)
    result_sbuf = nl.copy(result_psum, dtype=result.dtype)
    nl.store(result, value=result_sbuf)
    return result


if __name__ == "__main__":
    a = np.random.random_sample([128, 512]).astype(np.float32) * 100
    b = np.random.random_sample([128, 512]).astype(np.float32) * 100
    c = nki_tensor_add_kernel_(a, b)
    assert np.allclose(c, a + b)

    matmul = nki.jit(nki_matmul_basic_, mode="simulation", platform_target="trn2")
    lhs_t = np.random.random_sample([64, 128]).astype(np.float32)
    rhs = np.random.random_sample([64, 512]).astype(np.float32)
    out = matmul(lhs_t, rhs)
    assert np.allclose(out, lhs_t.T @ rhs, atol=1e-4, rtol=1e-4)
    print("TUTORIAL OK")
