# ben, stage 9 Q1: the formulas as written, every elementwise step on the Vector engine and the row sums of dw by a
# matmul with a column of ones. Correct, but the Vector engine does all the work while GpSimd and the Scalar engine
# idle: more than twice the reference's estimated latency (no speed point).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_backward(x, w, dy, rstd):
    R, C = x.shape
    grads = nl.ndarray((R + 1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    w_b = nl.broadcast_to(nl.load(w.reshape((1, C)), dtype=nl.float32), (128, C))
    dw_ps = [nl.zeros((1, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(0, C, 512)]
    for t in range((R + 127) // 128):
        r0, n = t * 128, min(128, R - t * 128)
        x_t = nl.load(x[r0:r0 + n, :], dtype=nl.float32)
        dy_t = nl.load(dy[r0:r0 + n, :], dtype=nl.float32)
        rs = nl.load(rstd[r0:r0 + n, :])
        xhat = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=xhat, data=x_t, op0=nl.multiply, operand0=rs)
        g = nl.multiply(dy_t, w_b[:n, :])
        m = nl.mean(nl.multiply(g, xhat), axis=1, keepdims=True)
        xm = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=xm, data=xhat, op0=nl.multiply, operand0=m)
        dx = nl.ndarray((n, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=dx, data=nl.subtract(g, xm), op0=nl.multiply, operand0=rs)
        nl.store(grads[r0:r0 + n, :], value=dx)
        p = nl.multiply(dy_t, xhat)
        for k, c0 in enumerate(range(0, C, 512)):
            cn = min(512, C - c0)
            nisa.nc_matmul(dst=dw_ps[k][:, 0:cn], stationary=nl.ones((n, 1), dtype=nl.float32), moving=p[:, c0:c0 + cn])
    for k, c0 in enumerate(range(0, C, 512)):
        cn = min(512, C - c0)
        dw = nl.ndarray((1, cn), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=dw, op=nl.copy, data=dw_ps[k][:, 0:cn])
        nl.store(grads[R:R + 1, c0:c0 + cn], value=dw)
    return grads
