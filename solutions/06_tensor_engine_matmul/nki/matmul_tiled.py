# Reference solution, generated from notebooks/06_tensor_engine_matmul.py by `make release`. Do not edit.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    """lhsT.T @ rhs for lhsT [K, M] and rhs [K, N]: one [128, 512] PSUM accumulator per output tile."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                # the first matmul into res_psum overwrites it, every later one adds (accumulate=None)
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
            res_sbuf = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
            nisa.activation(dst=res_sbuf, op=nl.copy, data=res_psum)  # PSUM -> SBUF on the Scalar engine, cast
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sbuf)
    return result
