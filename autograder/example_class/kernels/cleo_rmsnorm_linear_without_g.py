# cleo, stage 7 Q1: normalises the rows but forgets the RMSNorm weight g before the matmul: every case is wrong
# (0 correctness points, so no speed points either).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_linear(x, g, w):
    R, C = x.shape
    N = w.shape[1]
    out = nl.ndarray((R, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for r in range(R // 128):
        x_tile = nl.load(x[r * 128:(r + 1) * 128, :])
        inv_rms = nl.rsqrt(nl.add(nl.mean(nl.square(x_tile, dtype=nl.float32), axis=[1]), 1e-6))
        normed = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed, data=x_tile, op0=nl.multiply, operand0=inv_rms)
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
