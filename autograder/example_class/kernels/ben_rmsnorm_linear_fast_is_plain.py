# ben, stage 7 Q2: correct, but Q1's kernel again: every [128, 128] block of the normalised rows is transposed
# again for every 512 output columns, and w is loaded again for every row tile (speed points lost).
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm_linear_fast(x, g, w):
    R, C = x.shape
    N = w.shape[1]
    out = nl.ndarray((R, N), dtype=x.dtype, buffer=nl.shared_hbm)
    g_all = nl.load(g.reshape((1, C))).broadcast_to((128, C))
    for r in nl.affine_range(R // 128):
        x_tile = nl.load(x[r * 128:(r + 1) * 128, :])
        inv_rms = nl.rsqrt(nl.mean(nl.square(x_tile, dtype=nl.float32), axis=[1]) + 1e-6)
        normed = nl.multiply(nl.multiply(x_tile, inv_rms), g_all, dtype=x.dtype)
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(C // 128):
                normed_T = nl.copy(nl.transpose(normed[:, k * 128:(k + 1) * 128]), dtype=x.dtype)
                w_tile = nl.load(w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(normed_T, w_tile, transpose_x=True)
            nl.store(out[r * 128:(r + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc, dtype=x.dtype))
    return out
