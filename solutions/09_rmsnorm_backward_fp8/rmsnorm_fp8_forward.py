# Reference solution, generated from notebooks/09_rmsnorm_backward_fp8.py by `make release`. Do not edit.
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

FP8_MAX = 240.0  # the largest finite float8_e4m3
GROUP = 16  # values per input scale


@nki.jit
def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
    """rmsnorm(x_q * group scales) * w / out_scale, saturated, as float8_e4m3."""
    R, C = x_q.shape
    G = C // GROUP
    T = (R + 127) // 128  # tiles of rows
    out = nl.ndarray((R, C), dtype=x_q.dtype, buffer=nl.shared_hbm)
    inv_s = nisa.tensor_scalar(nl.load(out_scale), np.power, -1.0)  # 1 / out_scale
    w_row = nl.load(w.reshape((1, C)), dtype=nl.float32)
    ws = nisa.tensor_scalar(w_row, np.multiply, inv_s).broadcast_to((128, C))  # w / s
    firsts, scaled = [], []  # tiles whose first half / whose scaling is issued, oldest first
    for t in range(T + 2):  # tile t's first half, t - 1's scaling, t - 2's saturation: no in-order engine waits
        if t < T:
            r0, n = t * 128, min(128, R - t * 128)
            xq = nl.load(x_q[r0:r0 + n, :])
            sc = nl.load(x_scale[r0:r0 + n, :])
            x = nl.multiply(xq.reshape((n, G, GROUP)), sc.reshape((n, G, 1)), dtype=nl.float32).reshape((n, C))
            ss = nl.ndarray((n, 1), dtype=nl.float32)
            nisa.activation_reduce(op=nl.square, data=x, reduce_op=np.add, reduce_res=ss)  # sum of squares (Scalar)
            ms = nisa.tensor_scalar(ss, np.multiply, 1.0 / C, op1=np.add, operand1=1e-6, engine=nisa.scalar_engine)
            rstd = nisa.activation(op=nl.rsqrt, data=ms)  # one value per row                          (Scalar)
            xw = nisa.tensor_tensor(x, ws[:n, :], op=np.multiply, engine=nisa.gpsimd_engine)  # x * w / s  (GpSimd)
            firsts.append((r0, n, xw, rstd))
        if 0 < t <= T:
            p0, pn, pxw, prstd = firsts.pop(0)
            scaled.append((p0, pn, nisa.activation(op=nl.copy, data=pxw, scale=prstd)))  # * rstd      (Scalar)
        if t > 1:
            p0, pn, v = scaled.pop(0)
            q = nisa.tensor_scalar(v, np.minimum, FP8_MAX, op1=np.maximum, operand1=-FP8_MAX,
                                   dtype=out.dtype)  # saturate, then cast to fp8                          (Vector)
            nl.store(out[p0:p0 + pn, :], value=q)
    return out
