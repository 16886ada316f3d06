# Reference solution, generated from notebooks/06_tensor_engine_matmul.py by `make release`. Do not edit.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_fast(lhsT, rhs):
    """lhsT.T @ rhs with [256, 1024] output blocks: every loaded tile feeds two matmuls."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TK, TM, TN = 128, 128, 512  # one matmul: a [TK, TM] stationary and a [TK, TN] moving tile
    BM, BN = 2, 2  # output tiles per block along M and along N
    for m in range(M // (BM * TM)):
        # this block's lhsT columns, every K slice: loaded once, used by every n block
        lhsT_block = nl.ndarray((TK, K // TK, BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in range(K // TK):
            nisa.dma_copy(dst=lhsT_block[:, k, :], src=lhsT[k * TK:(k + 1) * TK, m * BM * TM:(m + 1) * BM * TM])
        for n in range(N // (BN * TN)):
            rhs_block = nl.ndarray((TK, K // TK, BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in range(K // TK):
                nisa.dma_copy(dst=rhs_block[:, k, :], src=rhs[k * TK:(k + 1) * TK, n * BN * TN:(n + 1) * BN * TN])
            # one accumulator per output tile of the block; the K loop outermost, so the first matmuls start as soon
            # as the first K slice has arrived
            res = [nl.zeros((TM, TN), nl.float32, buffer=nl.psum) for _ in range(BM * BN)]
            for k in range(K // TK):
                for bm in range(BM):
                    for bn in range(BN):
                        nisa.nc_matmul(dst=res[bm * BN + bn], stationary=lhsT_block[:, k, bm * TM:(bm + 1) * TM],
                                       moving=rhs_block[:, k, bn * TN:(bn + 1) * TN])
            for bm in range(BM):
                for bn in range(BN):
                    row, col = (m * BM + bm) * TM, (n * BN + bn) * TN
                    res_sbuf = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.activation(dst=res_sbuf, op=nl.copy, data=res[bm * BN + bn])
                    nl.store(result[row:row + TM, col:col + TN], value=res_sbuf)
    return result
