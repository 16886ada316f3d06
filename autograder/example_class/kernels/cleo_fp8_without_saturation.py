# cleo, stage 9 Q2: everything right but the saturation: she casts y / out_scale straight to float8_e4m3, so the
# values beyond 240 (every case has some, since out_scale lags this step's amax) become inf. 0 correctness points.
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
    R, C = x_q.shape
    G = C // 16
    out = nl.ndarray((R, C), dtype=x_q.dtype, buffer=nl.shared_hbm)
    w_b = nl.load(w.reshape((1, C)), dtype=nl.float32).broadcast_to((128, C))
    inv_s = nl.reciprocal(nl.load(out_scale).broadcast_to((128, 1)))
    for t in range((R + 127) // 128):
        r0, n = t * 128, min(128, R - t * 128)
        xq = nl.load(x_q[r0:r0 + n, :])
        sc = nl.load(x_scale[r0:r0 + n, :])
        x = nl.multiply(xq.reshape((n, G, 16)), sc.reshape((n, G, 1)), dtype=nl.float32).reshape((n, C))
        ss = nl.ndarray((n, 1), dtype=nl.float32)
        nisa.activation_reduce(op=nl.square, data=x, reduce_op=np.add, reduce_res=ss)
        rstd = nl.rsqrt(nisa.tensor_scalar(ss, np.multiply, 1.0 / C, op1=np.add, operand1=1e-6))
        y = nl.multiply(nl.multiply(x, w_b[:n, :]), nl.multiply(rstd, inv_s[:n, :]), dtype=out.dtype)
        nl.store(out[r0:r0 + n, :], value=y)
    return out
