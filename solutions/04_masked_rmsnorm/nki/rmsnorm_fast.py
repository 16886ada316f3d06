# Reference solution, generated from notebooks/04_masked_rmsnorm.py by `make release`. Do not edit.
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_fast(a, g):
    """rmsnorm with fused, engine-balanced instructions."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    P = nl.tile_size.pmax
    g_bcast = nl.load(g.reshape((1, n_cols)).broadcast(0, P))  # g on every partition in one DMA (a stride-0 view)
    for i in range(math.ceil(n_rows / P)):
        lo, hi = i * P, min((i + 1) * P, n_rows)
        rows = hi - lo
        a_tile = nl.load(a[lo:hi, :])
        # ScalarE: squares and their row sum in one instruction (fp32 accumulation); the squares are not needed
        squares = nl.ndarray((rows, n_cols), dtype=nl.float32)
        sum_sq = nl.ndarray((rows, 1), dtype=nl.float32)
        nisa.activation_reduce(squares, nl.square, a_tile, reduce_op=nl.add, reduce_res=sum_sq)
        # one value per partition: mean + eps, then 1/sqrt
        mean_eps = nl.ndarray((rows, 1), dtype=nl.float32)
        nisa.tensor_scalar(mean_eps, sum_sq, nl.multiply, 1.0 / n_cols, op1=nl.add, operand1=1e-6)
        inv_rms = nl.rsqrt(mean_eps)
        # ScalarE scales by the per-row statistic; VectorE multiplies by the broadcast weight
        normed = nl.ndarray((rows, n_cols), dtype=a.dtype)
        nisa.activation(normed, nl.copy, a_tile, scale=inv_rms)
        out_tile = nl.multiply(normed, g_bcast[0:rows, :], dtype=a.dtype)
        nl.store(out[lo:hi, :], value=out_tile)
    return out
