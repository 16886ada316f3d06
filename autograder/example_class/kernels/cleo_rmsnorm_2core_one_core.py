# cleo, stage 5 Q2: correct, but every instance normalises *all* rows, so the second core only repeats the
# first one's work (no speed-up; speed points lost).
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_2core(a, g):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    g_row = nl.broadcast_to(nl.load(g.reshape((1, n_cols))), (128, n_cols))
    for i in range(math.ceil(n_rows / 128)):
        lo, hi = i * 128, min((i + 1) * 128, n_rows)
        a_tile = nl.load(a[lo:hi, :])
        mean_sq = nl.mean(nl.square(a_tile, dtype=nl.float32), axis=[1], keepdims=True)
        normed = nl.ndarray((hi - lo, n_cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed, data=a_tile, op0=nl.multiply, operand0=nl.rsqrt(nl.add(mean_sq, 1e-6)))
        nl.store(out[lo:hi, :], value=nl.multiply(normed, g_row[0:hi - lo, :], dtype=a.dtype))
    return out
