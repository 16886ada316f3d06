# Reference solution, generated from notebooks/09_rmsnorm_backward_fp8.py by `make release`. Do not edit.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_backward(x, w, dy, rstd):
    """dx and dw of RMSNorm, packed: grads[:R] = dx, grads[R] = dw."""
    R, C = x.shape
    grads = nl.ndarray((R + 1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    w_b = nl.load(w.reshape((1, C)).broadcast(0, 128), dtype=nl.float32)  # w on every partition in one DMA
    dw_ps = [nl.zeros((1, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(0, C, 512)]  # one bank each
    for t in range((R + 127) // 128):  # the last tile of rows may be ragged (n < 128): a smaller slice
        r0, n = t * 128, min(128, R - t * 128)
        x_t = nl.load(x[r0:r0 + n, :], dtype=nl.float32)
        dy_t = nl.load(dy[r0:r0 + n, :], dtype=nl.float32)
        rs = nl.load(rstd[r0:r0 + n, :])
        q = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=q, data1=dy_t, data2=x_t, op=nl.multiply, engine=nisa.engine.gpsimd)  # dy * x (GpSimd)
        for k, c0 in enumerate(range(0, C, 512)):  # dw: the sum over this tile's rows, on the Tensor Engine
            cn = min(512, C - c0)
            nisa.nc_matmul(dst=dw_ps[k][:, 0:cn], stationary=rs, moving=q[:, c0:c0 + cn])
        qw = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=qw, data1=q, data2=w_b[:n, :], op=nl.multiply, engine=nisa.engine.gpsimd)  # (GpSimd)
        s = nl.ndarray((n, 1), dtype=nl.float32, buffer=nl.sbuf)
        qw_copy = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=qw_copy, op=nl.copy, data=qw, reduce_op=nl.add, reduce_res=s)  # row sums (Scalar)
        coef = nl.multiply(nl.multiply(nl.multiply(rs, rs), rs), s)  # rstd^3 * s, one per row
        x_c = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=x_c, op=nl.copy, data=x_t, scale=nl.multiply(coef, -1.0 / C))  # -rstd^3 s x / C (Scalar)
        g = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=g, data1=dy_t, data2=w_b[:n, :], op=nl.multiply)  # dy * w                 (Vector)
        dx = nl.ndarray((n, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=dx, data=g, op0=nl.multiply, operand0=rs, op1=nl.add,
                                  operand1=x_c)  # rstd * g + x_c, rounded once                           (Vector)
        nl.store(grads[r0:r0 + n, :], value=dx)
    for k, c0 in enumerate(range(0, C, 512)):
        cn = min(512, C - c0)
        dw = nl.ndarray((1, cn), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=dw, op=nl.copy, data=dw_ps[k][:, 0:cn])
        nl.store(grads[R:R + 1, c0:c0 + cn], value=dw)
    return grads
