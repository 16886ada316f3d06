# cleo, stage 4 Q2: her first rmsnorm again under the new name -- correct, but no faster (speed points lost).
import math

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm_fast(a, g):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(n_cols)[None, :]
    g_row = nl.load(g.reshape((1, n_cols))[nl.arange(1)[:, None], i_f]).broadcast_to((128, n_cols))
    for i in nl.affine_range(math.ceil(n_rows / 128)):
        rows = i * 128 + i_p
        valid = rows < n_rows
        a_tile = nl.load(a[rows, i_f], mask=valid)
        mean_sq = nl.mean(nl.square(a_tile, dtype=nl.float32, mask=valid), axis=[1], mask=valid)
        normed = nl.multiply(a_tile, nl.rsqrt(mean_sq + 1e-6, mask=valid), mask=valid)
        nl.store(out[rows, i_f], value=nl.multiply(normed, g_row, dtype=a.dtype, mask=valid), mask=valid)
    return out
