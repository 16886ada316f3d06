# hana, stage 9 Q1: dx = rstd * dy * w, as if rstd did not depend on x (the chain rule's second term is missing);
# dw is right. Every case has a wrong dx: 0 correctness points.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm_backward(x, w, dy, rstd):
    R, C = x.shape
    grads = nl.ndarray((R + 1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    w_b = nl.load(w.reshape((1, C)), dtype=nl.float32).broadcast_to((128, C))
    dw_ps = [nl.zeros((1, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(0, C, 512)]
    for t in range((R + 127) // 128):
        r0, n = t * 128, min(128, R - t * 128)
        x_t = nl.load(x[r0:r0 + n, :], dtype=nl.float32)
        dy_t = nl.load(dy[r0:r0 + n, :], dtype=nl.float32)
        rs = nl.load(rstd[r0:r0 + n, :])
        nl.store(grads[r0:r0 + n, :], value=nl.multiply(nl.multiply(dy_t, w_b[:n, :]), rs, dtype=x.dtype))
        p = nl.multiply(dy_t, x_t)
        for k, c0 in enumerate(range(0, C, 512)):
            cn = min(512, C - c0)
            dw_ps[k][:, 0:cn] += nl.matmul(rs, p[:, c0:c0 + cn], transpose_x=True)
    for k, c0 in enumerate(range(0, C, 512)):
        cn = min(512, C - c0)
        nl.store(grads[R:R + 1, c0:c0 + cn], value=nl.copy(dw_ps[k][:, 0:cn], dtype=x.dtype))
    return grads
