# Reference solution, generated from notebooks/09_rmsnorm_backward_fp8.py by `make release`. Do not edit.
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_backward(x, w, dy, rstd):
    """dx and dw of RMSNorm, packed: grads[:R] = dx, grads[R] = dw."""
    R, C = x.shape
    grads = nl.ndarray((R + 1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_c = nl.arange(128)[:, None], nl.arange(C)[None, :]
    row0 = nl.zeros((128, 1), dtype=nl.int32)  # w on every partition in one DMA: each partition gathers row 0
    w_b = nl.load(w.reshape((1, C))[row0[i_p, 0], i_c], dtype=nl.float32)
    dw_ps = [nl.zeros((1, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(0, C, 512)]  # one bank each
    for t in range((R + 127) // 128):  # a Python loop: the last tile of rows may be ragged (n < 128)
        r0, n = t * 128, min(128, R - t * 128)
        x_t = nl.load(x[r0:r0 + n, :], dtype=nl.float32)
        dy_t = nl.load(dy[r0:r0 + n, :], dtype=nl.float32)
        rs = nl.load(rstd[r0:r0 + n, :])
        q = nisa.tensor_tensor(dy_t, x_t, op=np.multiply, engine=nisa.gpsimd_engine)  # dy * x         (GpSimd)
        for k, c0 in enumerate(range(0, C, 512)):  # dw: the sum over this tile's rows, on the Tensor Engine
            cn = min(512, C - c0)
            dw_ps[k][:, 0:cn] += nl.matmul(rs, q[:, c0:c0 + cn], transpose_x=True)
        qw = nisa.tensor_tensor(q, w_b[:n, :], op=np.multiply, engine=nisa.gpsimd_engine)  # * w      (GpSimd)
        s = nl.ndarray((n, 1), dtype=nl.float32)
        nisa.activation_reduce(op=nl.copy, data=qw, reduce_op=np.add, reduce_res=s)  # row sums        (Scalar)
        coef = nl.multiply(nl.multiply(nl.multiply(rs, rs), rs), s)  # rstd^3 * s, one per row
        x_c = nisa.activation(op=nl.copy, data=x_t, scale=nl.multiply(coef, -1.0 / C))  # -rstd^3 s x / C (Scalar)
        g = nisa.tensor_tensor(dy_t, w_b[:n, :], op=np.multiply)  # dy * w                             (Vector)
        dx = nisa.scalar_tensor_tensor(data=g, op0=np.multiply, operand0=rs, op1=np.add, operand1=x_c,
                                       dtype=x.dtype)  # rstd * g + x_c, rounded once                 (Vector)
        nl.store(grads[r0:r0 + n, :], value=dx)
    for k, c0 in enumerate(range(0, C, 512)):
        cn = min(512, C - c0)
        nl.store(grads[R:R + 1, c0:c0 + cn], value=nl.copy(dw_ps[k][:, 0:cn], dtype=x.dtype))
    return grads
