# eve, stage 8 Q2: hands in her CS149 kernel unchanged but for the name: `pool_size` defaults to 1 there, so called
# as conv2d_maxpool_fast(X, W, bias) it does not pool. Every output has the convolution's shape, not the pooled
# one: 0 correctness points (the grader says which shape it expected).
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def conv2d_maxpool_fast(X, W, bias, pool_size=1):
    batch, c_in, height, width = X.shape
    c_out, _, k, _ = W.shape
    out_h, out_w = height - k + 1, width - k + 1
    X_out = nl.ndarray((batch, c_out, out_h // pool_size, out_w // pool_size), dtype=X.dtype, buffer=nl.hbm)
    n_in, n_out = c_in // 128, c_out // 128
    w_t = nl.ndarray((128, n_in, k * k, c_out), dtype=W.dtype, buffer=nl.sbuf)
    w_flat = W.reshape((c_out, c_in, k * k))
    for o in nl.affine_range(n_out):
        w_rows = nl.load(w_flat[o * 128:(o + 1) * 128, :, :])
        for c in nl.affine_range(n_in):
            for t in nl.affine_range(k * k):
                w_t[:, c, t, o * 128:(o + 1) * 128] = nl.copy(nisa.nc_transpose(w_rows[:, c * 128:(c + 1) * 128, t]),
                                                              dtype=W.dtype)
    for b in nl.affine_range(batch):
        for r in nl.affine_range(out_h):
            window = nl.ndarray((128, n_in, k, width), dtype=X.dtype, buffer=nl.sbuf)
            for c in nl.affine_range(n_in):
                window[:, c, :, :] = nl.load(X[b, c * 128:(c + 1) * 128, r:r + k, :])
            for o in nl.affine_range(n_out):
                bias_col = nl.load(bias.reshape((c_out, 1))[o * 128:(o + 1) * 128, :], dtype=nl.float32)
                acc = nl.zeros((128, out_w), dtype=nl.float32, buffer=nl.psum)
                for c in nl.affine_range(n_in):
                    for t in nl.affine_range(k * k):
                        acc += nisa.nc_matmul(w_t[:, c, t, o * 128:(o + 1) * 128],
                                              window[:, c, t // k, t % k:t % k + out_w])
                nl.store(X_out[b, o * 128:(o + 1) * 128, r, :], value=nl.add(acc, bias_col, dtype=X.dtype))
    return X_out
