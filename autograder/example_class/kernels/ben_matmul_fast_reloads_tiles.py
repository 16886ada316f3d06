# ben, stage 6 Q2: correct, but section 2's kernel again -- every tile is reloaded for every output tile (slow).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_fast(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                a_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=a_tile, moving=b_tile)
            res = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
            nisa.activation(dst=res, op=nl.copy, data=acc)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return result
