# Reference solution, generated from notebooks/06_tensor_engine_matmul.py by `make release`. Do not edit.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def matmul_fast(lhsT, rhs):
    """lhsT.T @ rhs with [256, 1024] output blocks: every loaded tile feeds two matmuls."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TK, TM, TN = 128, 128, 512  # one matmul: a [TK, TM] stationary and a [TK, TN] moving tile
    BM, BN = 2, 2  # output tiles per block along M and along N
    for m in nl.affine_range(M // (BM * TM)):
        # this block's lhsT columns, every K slice: loaded once, used by every n block
        lhsT_block = nl.ndarray((TK, K // TK, BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TK):
            lhsT_block[:, k, :] = nl.load(lhsT[k * TK:(k + 1) * TK, m * BM * TM:(m + 1) * BM * TM])
        for n in nl.affine_range(N // (BN * TN)):
            rhs_block = nl.ndarray((TK, K // TK, BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // TK):
                rhs_block[:, k, :] = nl.load(rhs[k * TK:(k + 1) * TK, n * BN * TN:(n + 1) * BN * TN])
            # one accumulator per output tile of the block; the K loop outermost, so the first matmuls start as soon
            # as the first K slice has arrived
            res = [nl.zeros((TM, TN), nl.float32, buffer=nl.psum) for _ in range(BM * BN)]
            for k in nl.affine_range(K // TK):
                for bm in range(BM):
                    for bn in range(BN):
                        res[bm * BN + bn][...] += nl.matmul(lhsT_block[:, k, bm * TM:(bm + 1) * TM],
                                                            rhs_block[:, k, bn * TN:(bn + 1) * TN], transpose_x=True)
            for bm in range(BM):
                for bn in range(BN):
                    row, col = (m * BM + bm) * TM, (n * BN + bn) * TN
                    nl.store(result[row:row + TM, col:col + TN], value=nl.copy(res[bm * BN + bn], dtype=result.dtype))
    return result
