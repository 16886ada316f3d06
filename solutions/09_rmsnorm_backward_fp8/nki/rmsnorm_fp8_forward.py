# Reference solution, generated from notebooks/09_rmsnorm_backward_fp8.py by `make release`. Do not edit.
import nki
import nki.isa as nisa
import nki.language as nl

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
    inv_s1 = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=inv_s1, data=nl.load(out_scale), op0=nl.power, operand0=-1.0)
    inv_s = nl.broadcast_to(inv_s1, (128, 1))  # 1 / out_scale on every partition
    inv_sb = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.activation(dst=inv_sb, op=nl.copy, data=inv_s)
    eps = nl.full((128, 1), 1e-6, dtype=nl.float32)
    ws = None  # w on every partition: loaded in the first step, after that tile's loads
    tiles = {}  # tile -> what its next stage needs
    for t in range(T + 5):  # step t: tile t's first stage, t-2's weight, t-3's rstd, t-5's saturation and store
        if 0 <= t - 5 < T:
            p0, pn, v = tiles.pop(t - 5)
            q = nl.ndarray((pn, C), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=q, data=v, op0=nl.minimum, operand0=FP8_MAX, op1=nl.maximum,
                               operand1=-FP8_MAX)  # saturate (Vector)
            nl.store(out[p0:p0 + pn, :], value=q)  # the DMA casts bf16 to float8_e4m3
        if 0 <= t - 3 < T:
            p0, pn, xw, rstd, rstd_b = tiles[t - 3]
            v = nl.ndarray((pn, C), dtype=nl.bfloat16, buffer=nl.sbuf)
            if t % 4 == 2:  # one tile in four on the Scalar engine, which has time to spare
                rs = nl.ndarray((pn, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=rs, op=nl.copy, data=rstd, scale=inv_s[:pn, :])  # rstd / out_scale
                nisa.activation(dst=v, op=nl.copy, data=xw, scale=rs)
            else:  # the others on the Vector engine: all bf16, so 4x in its performance mode
                nisa.tensor_scalar(dst=v, data=xw, op0=nl.multiply, operand0=rstd_b, op1=nl.multiply,
                                   operand1=inv_sb[:pn, :])
            tiles[t - 3] = (p0, pn, v)
        if 0 <= t - 2 < T:
            p0, pn, x, rstd, rstd_b = tiles[t - 2]
            xw = nl.ndarray((pn, C), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=xw, data1=x, data2=ws[:pn, :], op=nl.multiply, engine=nisa.engine.gpsimd)  # x * w
            tiles[t - 2] = (p0, pn, xw, rstd, rstd_b)
        if t < T:
            r0, n = t * 128, min(128, R - t * 128)
            xq = nl.load(x_q[r0:r0 + n, :], dtype=nl.bfloat16).reshape((n, G, GROUP))  # the DMA casts (exact)
            sc = nl.load(x_scale[r0:r0 + n, :], dtype=nl.bfloat16).reshape((n, G, 1))
            x = nl.ndarray((n, G, GROUP), dtype=nl.bfloat16, buffer=nl.sbuf)
            # each group's scale read 16 times along the last axis (a stride-0 view)
            nisa.tensor_tensor(dst=x[:, :GV, :], data1=xq[:, :GV, :], data2=sc[:, :GV, :].broadcast(2, GROUP),
                               op=nl.multiply)
            if GV < G:
                nisa.tensor_tensor(dst=x[:, GV:, :], data1=xq[:, GV:, :], data2=sc[:, GV:, :].broadcast(2, GROUP),
                                   op=nl.multiply, engine=nisa.engine.gpsimd)
            x = x.reshape((n, C))
            ss = nl.ndarray((n, 1), dtype=nl.float32, buffer=nl.sbuf)
            sq = nl.ndarray((n, C), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.activation_reduce(dst=sq, op=nl.square, data=x, reduce_op=nl.add, reduce_res=ss)  # (Scalar)
            rstd = nl.ndarray((n, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=rstd, op=nl.rsqrt, data=ss, scale=1.0 / C, bias=eps[:n, :])  # 1 / sqrt(ss/C + eps)
            rstd_b = nl.ndarray((n, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.activation(dst=rstd_b, op=nl.copy, data=rstd)
            tiles[t] = (r0, n, x, rstd, rstd_b)
        if t == 0:  # after the first tile's loads: w in bf16 on every partition, one DMA (the DMA casts)
            ws = nl.load(w.reshape((1, C)).broadcast(0, 128), dtype=nl.bfloat16)
    return out
