# cleo, stage 9 Q2: everything right but the saturation: she casts y / out_scale straight to float8_e4m3, so the
# values beyond 240 (every case has some, since out_scale lags this step's amax) become inf. 0 correctness points.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
    R, C = x_q.shape
    G = C // 16
    out = nl.ndarray((R, C), dtype=x_q.dtype, buffer=nl.shared_hbm)
    w_b = nl.broadcast_to(nl.load(w.reshape((1, C)), dtype=nl.float32), (128, C))
    inv_s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=inv_s, data=nl.broadcast_to(nl.load(out_scale), (128, 1)))
    for t in range((R + 127) // 128):
        r0, n = t * 128, min(128, R - t * 128)
        xq = nl.load(x_q[r0:r0 + n, :]).reshape((n, G, 16))
        sc = nl.load(x_scale[r0:r0 + n, :]).reshape((n, G, 1))
        x3 = nl.ndarray((n, G, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=x3, data1=xq, data2=sc.broadcast(2, 16), op=nl.multiply)
        x = x3.reshape((n, C))
        sq = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((n, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=sq, op=nl.square, data=x, reduce_op=nl.add, reduce_res=ss)
        mean_eps = nl.ndarray((n, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=mean_eps, data=ss, op0=nl.multiply, operand0=1.0 / C, op1=nl.add, operand1=1e-6)
        scale = nl.multiply(nl.rsqrt(mean_eps), inv_s[:n, :])
        y = nl.ndarray((n, C), dtype=out.dtype, buffer=nl.sbuf)  # cast straight to float8_e4m3: no saturation
        nisa.tensor_scalar(dst=y, data=nl.multiply(x, w_b[:n, :]), op0=nl.multiply, operand0=scale)
        nl.store(out[r0:r0 + n, :], value=y)
    return out
