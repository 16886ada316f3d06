# Reference solution, generated from notebooks/04_masked_rmsnorm.py by `make release`. Do not edit.
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm(a, g):
    """a / sqrt(mean(a^2, row) + 1e-6) * g for a of shape [R, C] (any R) and g of shape [C]."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    P = nl.tile_size.pmax
    g_tile = nl.load(g.reshape((1, n_cols)))
    g_bcast = nl.broadcast_to(g_tile, (P, n_cols))
    for i in range(math.ceil(n_rows / P)):
        lo, hi = i * P, min((i + 1) * P, n_rows)  # the last tile may have fewer rows: a smaller tile, no mask
        a_tile = nl.load(a[lo:hi, :])
        squares = nl.square(a_tile, dtype=nl.float32)
        mean_sq = nl.mean(squares, axis=[1], keepdims=True)  # (rows, 1): one value per row
        inv_rms = nl.rsqrt(nl.add(mean_sq, 1e-6))
        # NKI 0.6's nl.multiply does not broadcast: scale each row by its (rows, 1) statistic with tensor_scalar
        normed = nl.ndarray((hi - lo, n_cols), dtype=nl.float32)
        nisa.tensor_scalar(normed, a_tile, nl.multiply, inv_rms)
        out_tile = nl.multiply(normed, g_bcast[0:hi - lo, :], dtype=a.dtype)
        nl.store(out[lo:hi, :], value=out_tile)
    return out
