# cleo, stage 8 Q1: assumes the channel counts are multiples of 128 (as the fast question may): every channel tile is
# 128 wide, so a ragged count (3, 130, 200 channels ...) reads and writes past the last channel. Right on the cases
# with full tiles only (some correctness points, no speed points).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def conv2d_maxpool(X, W, bias):
    B, C_in, H, Wd = X.shape
    C_out, _, K, _ = W.shape
    Ho, Wo = H - K + 1, Wd - K + 1
    out = nl.ndarray((B, C_out, Ho // 2, Wo // 2), dtype=X.dtype, buffer=nl.shared_hbm)
    n_ci, n_co = (C_in + 127) // 128, (C_out + 127) // 128
    taps = W.reshape((C_out, C_in, K * K))
    for co in range(n_co):
        b_col = nl.load(bias.reshape((C_out, 1))[co * 128:(co + 1) * 128, :], dtype=nl.float32)
        w_nat = nl.load(taps[co * 128:(co + 1) * 128, :, :])
        w_T = nl.ndarray((128, n_ci, K * K, 128), dtype=W.dtype, buffer=nl.sbuf)
        for ci in range(n_ci):
            for t in range(K * K):
                w_ps = nl.ndarray((128, 128), dtype=W.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=w_ps, data=w_nat[:, ci * 128:(ci + 1) * 128, t])
                nisa.activation(dst=w_T[:, ci, t, :], op=nl.copy, data=w_ps)
        for b in range(B):
            for r in range(Ho // 2):
                top = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
                bottom = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
                for ci in range(n_ci):
                    x_rows = nl.load(X[b, ci * 128:(ci + 1) * 128, 2 * r:2 * r + K + 1, :])
                    for i in range(K):
                        for j in range(K):
                            nisa.nc_matmul(dst=top, stationary=w_T[:, ci, i * K + j, :], moving=x_rows[:, i, j:j + Wo])
                            nisa.nc_matmul(dst=bottom, stationary=w_T[:, ci, i * K + j, :],
                                           moving=x_rows[:, i + 1, j:j + Wo])
                row = nl.maximum(top, bottom)
                nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=b_col)
                pooled = nl.max(row.reshape((128, Wo // 2, 2)), axis=2)
                res = nl.ndarray((128, Wo // 2), dtype=X.dtype, buffer=nl.sbuf)
                nisa.activation(dst=res, op=nl.copy, data=pooled)
                nl.store(out[b, co * 128:(co + 1) * 128, r, :], value=res)
    return out
