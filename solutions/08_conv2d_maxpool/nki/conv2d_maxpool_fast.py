# Reference solution, generated from notebooks/08_conv2d_maxpool.py by `make release`. Do not edit.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def conv2d_maxpool_fast(X, W, bias):
    """The same, for channel counts that are multiples of 128: several rows per matmul, filters resident."""
    B, C_in, H, Wd = X.shape
    C_out, _, K, _ = W.shape
    Ho, Wo = H - K + 1, Wd - K + 1
    n_ci, n_co = C_in // 128, C_out // 128
    RB = 2 * (512 // (2 * Wd))  # output rows per matmul: RB full-width rows fill at most 512 PSUM columns
    out = nl.ndarray((B, C_out, Ho // 2, Wo // 2), dtype=X.dtype, buffer=nl.shared_hbm)
    taps = W.reshape((C_out, C_in, K * K))
    flat = X.reshape((B, C_in, H * Wd))  # each channel's image as one row of H * W pixels
    # every filter tap of every channel pair, transposed once (four taps per PSUM bank) and kept in SBUF
    w_T = nl.ndarray((128, n_ci, K * K, C_out), dtype=W.dtype, buffer=nl.sbuf)
    b_cols = nl.ndarray((128, n_co), dtype=nl.float32, buffer=nl.sbuf)
    for co in range(n_co):
        nisa.dma_copy(dst=b_cols[:, co:co + 1], src=bias.reshape((C_out, 1))[co * 128:(co + 1) * 128, :])
        for ci in range(n_ci):
            w_nat = nl.load(taps[co * 128:(co + 1) * 128, ci * 128:(ci + 1) * 128, :])
            for t0 in range(0, K * K, 4):
                nt = min(4, K * K - t0)
                w_ps = nl.ndarray((128, 4, 128), dtype=W.dtype, buffer=nl.psum)
                for t in range(nt):
                    nisa.nc_transpose(dst=w_ps[:, t, :], data=w_nat[:, :, t0 + t])
                nisa.activation(dst=w_T[:, ci, t0:t0 + nt, co * 128:(co + 1) * 128], op=nl.copy, data=w_ps[:, 0:nt, :])
    for b in range(B):
        for blk in range((Ho + RB - 1) // RB):  # blocks of RB output rows (the last one may be shorter)
            r0 = blk * RB
            R = min(RB, Ho - r0)
            # the block's R + K - 1 input rows, flat, for every input-channel tile; loaded once for all co
            n_in = (R + K - 1) * Wd
            x_blk = nl.ndarray((128, n_ci, n_in + K - 1), dtype=X.dtype, buffer=nl.sbuf)
            for ci in range(n_ci):
                nisa.dma_copy(dst=x_blk[:, ci, 0:n_in], src=flat[b, ci * 128:(ci + 1) * 128, r0 * Wd:r0 * Wd + n_in])
                if K > 1:  # the last tap reads K - 1 pixels past the block: they only feed discarded columns
                    nisa.memset(dst=x_blk[:, ci, n_in:n_in + K - 1], value=0.0)
            for co in range(n_co):
                # R full-width rows at once: column c of row r is output pixel (r0 + r, c) for c < Wo; the
                # K - 1 columns past Wo wrap into the next row and are thrown away below
                acc = nl.zeros((128, R * Wd), nl.float32, buffer=nl.psum)
                for ci in range(n_ci):
                    for i in range(K):
                        for j in range(K):
                            nisa.nc_matmul(dst=acc, stationary=w_T[:, ci, i * K + j, co * 128:(co + 1) * 128],
                                           moving=x_blk[:, ci, i * Wd + j:i * Wd + j + R * Wd])
                # pool straight from PSUM, then add the bias to a quarter of the values (max commutes with +b)
                pairs = acc.reshape((128, R // 2, 2 * Wd))
                rows = nl.maximum(pairs[:, :, 0:Wo], pairs[:, :, Wd:Wd + Wo])
                pooled = nl.max(rows.reshape((128, R // 2, Wo // 2, 2)), axis=3)
                res = nl.ndarray((128, R // 2, Wo // 2), dtype=X.dtype, buffer=nl.sbuf)
                nisa.activation(dst=res, op=nl.copy, data=pooled, bias=b_cols[:, co:co + 1])
                nl.store(out[b, co * 128:(co + 1) * 128, r0 // 2:r0 // 2 + R // 2, :], value=res)
    return out
