# ben, stage 7 Q2: correct, but Q1's kernel again: every [128, 128] block of the normalised rows is transposed
# again for every 512 output columns, and w is loaded again for every row tile (speed points lost).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_linear_fast(x, g, w):
    R, C = x.shape
    N = w.shape[1]
    out = nl.ndarray((R, N), dtype=x.dtype, buffer=nl.shared_hbm)
    g_all = nl.broadcast_to(nl.load(g.reshape((1, C))), (128, C))
    for r in range(R // 128):
        x_tile = nl.load(x[r * 128:(r + 1) * 128, :])
        inv_rms = nl.rsqrt(nl.add(nl.mean(nl.square(x_tile, dtype=nl.float32), axis=[1]), 1e-6))
        scaled = nl.ndarray((128, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=scaled, data=x_tile, op0=nl.multiply, operand0=inv_rms)
        normed = nl.multiply(scaled, g_all, dtype=x.dtype)
        for n in range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(C // 128):
                normed_T_ps = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=normed_T_ps, data=normed[:, k * 128:(k + 1) * 128])
                normed_T = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
                nisa.activation(dst=normed_T, op=nl.copy, data=normed_T_ps)
                w_tile = nl.load(w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=normed_T, moving=w_tile)
            res = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
            nisa.activation(dst=res, op=nl.copy, data=acc)
            nl.store(out[r * 128:(r + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out
