# hana, stage 9 Q1: dx = rstd * dy * w, as if rstd did not depend on x (the chain rule's second term is missing);
# dw is right. Every case has a wrong dx: 0 correctness points.
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
        dx = nl.ndarray((n, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=dx, data=nl.multiply(dy_t, w_b[:n, :]), op0=nl.multiply, operand0=rs)
        nl.store(grads[r0:r0 + n, :], value=dx)
        p = nl.multiply(dy_t, x_t)
        for k, c0 in enumerate(range(0, C, 512)):
            cn = min(512, C - c0)
            nisa.nc_matmul(dst=dw_ps[k][:, 0:cn], stationary=rs, moving=p[:, c0:c0 + cn])
    for k, c0 in enumerate(range(0, C, 512)):
        cn = min(512, C - c0)
        dw = nl.ndarray((1, cn), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=dw, op=nl.copy, data=dw_ps[k][:, 0:cn])
        nl.store(grads[R:R + 1, c0:c0 + cn], value=dw)
    return grads
