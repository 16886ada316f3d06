# nadia, stage 6 Q1, in NKI 0.6: every matmul of the K loop passes accumulate=False, so each one starts a new
# accumulation group in the PSUM tile and the sum keeps only the last K tile's product: right when K is a single
# tile, wrong otherwise (correctness lost on the cases with K > 128; no speed points).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            res_psum = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(res_psum, lhsT_tile, rhs_tile, accumulate=False)
            res_sbuf = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
            nisa.activation(dst=res_sbuf, op=nl.copy, data=res_psum)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sbuf)
    return result
