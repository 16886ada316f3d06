# Reference solution, generated from notebooks/06_tensor_engine_matmul.py by `make release`. Do not edit.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    """lhsT.T @ rhs for lhsT [K, M] and rhs [K, N]: one [128, 512] PSUM accumulator per output tile."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                res_psum += nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)
            res_sbuf = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sbuf)
    return result
