# Reference solution, generated from notebooks/09_rmsnorm_backward_fp8.py by `make release`. Do not edit.
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

FP8_MAX = 240.0  # the largest finite float8_e4m3
GROUP = 16  # values per input scale


@nki.jit
def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
    """rmsnorm(x_q * group scales) * w / out_scale, saturated, as float8_e4m3 (bf16 in between)."""
    R, C = x_q.shape
    G = C // GROUP
    GV = max(1, 3 * G // 4)  # groups the Vector engine dequantises; GpSimd takes the rest
    T = (R + 127) // 128  # tiles of rows
    out = nl.ndarray((R, C), dtype=x_q.dtype, buffer=nl.shared_hbm)
    inv_s = nisa.tensor_scalar(nl.load(out_scale), np.power, -1.0).broadcast_to((128, 1))  # 1 / out_scale, every row
    inv_sb = nisa.activation(op=nl.copy, data=inv_s, dtype=nl.bfloat16)
    eps = nl.full((128, 1), 1e-6, dtype=nl.float32)
    i_p = nl.arange(128)[:, None, None]
    i_g = nl.arange(G)[None, :, None] + 0 * nl.arange(GROUP)[None, None, :]  # each group's scale 16 times
    row0 = nl.zeros((128, 1), dtype=nl.int32)  # the row of w each partition gathers (one DMA puts w on all 128)
    i_w, i_c = nl.arange(128)[:, None], nl.arange(C)[None, :]
    ws = None  # w on every partition: loaded in the first step, after that tile's loads
    tiles = {}  # tile -> what its next stage needs
    for t in range(T + 5):  # step t: tile t's first stage, t-2's weight, t-3's rstd, t-5's saturation and store
        if 0 <= t - 5 < T:
            p0, pn, v = tiles.pop(t - 5)
            q = nisa.tensor_scalar(v, np.minimum, FP8_MAX, op1=np.maximum, operand1=-FP8_MAX)  # saturate (Vector)
            nl.store(out[p0:p0 + pn, :], value=q)  # the DMA casts bf16 to float8_e4m3
        if 0 <= t - 3 < T:
            p0, pn, xw, rstd, rstd_b = tiles[t - 3]
            if t % 4 == 2:  # one tile in four on the Scalar engine, which has time to spare
                rs = nisa.activation(op=nl.copy, data=rstd, scale=inv_s[:pn])  # rstd / out_scale
                v = nisa.activation(op=nl.copy, data=xw, scale=rs, dtype=nl.bfloat16)
            else:  # the others on the Vector engine: all bf16, so 4x in its performance mode
                v = nisa.tensor_scalar(xw, np.multiply, rstd_b, op1=np.multiply, operand1=inv_sb[:pn])
            tiles[t - 3] = (p0, pn, v)
        if 0 <= t - 2 < T:
            p0, pn, x, rstd, rstd_b = tiles[t - 2]
            xw = nisa.tensor_tensor(x, ws[:pn, :], op=np.multiply, engine=nisa.gpsimd_engine)  # x * w (GpSimd)
            tiles[t - 2] = (p0, pn, xw, rstd, rstd_b)
        if t < T:
            r0, n = t * 128, min(128, R - t * 128)
            xq = nl.load(x_q[r0:r0 + n, :], dtype=nl.bfloat16).reshape((n, G, GROUP))  # the DMA casts (exact)
            sc = nl.load(x_scale[r0:r0 + n, :], dtype=nl.bfloat16)
            x = nl.ndarray((n, G, GROUP), dtype=nl.bfloat16)
            x[:, :GV, :] = nisa.tensor_tensor(xq[:, :GV, :], sc[i_p[:n], i_g[:, :GV, :]], op=np.multiply)
            if GV < G:
                x[:, GV:, :] = nisa.tensor_tensor(xq[:, GV:, :], sc[i_p[:n], i_g[:, GV:, :]],
                                                  op=np.multiply, engine=nisa.gpsimd_engine)  # (GpSimd)
            x = x.reshape((n, C))
            ss = nl.ndarray((n, 1), dtype=nl.float32)
            nisa.activation_reduce(op=nl.square, data=x, reduce_op=np.add, reduce_res=ss)  # sum of squares (Scalar)
            rstd = nisa.activation(op=nl.rsqrt, data=ss, scale=1.0 / C, bias=eps[:n])  # 1 / sqrt(ss / C + eps)
            tiles[t] = (r0, n, x, rstd, nisa.activation(op=nl.copy, data=rstd, dtype=nl.bfloat16))
        if t == 0:  # after the first tile's loads: w in bf16 on every partition, one DMA (the DMA casts)
            ws = nl.load(w.reshape((1, C))[row0[i_w, 0], i_c], dtype=nl.bfloat16)
    return out
