# Reference solution, generated from notebooks/05_multicore_spmd.py by `make release`. Do not edit.
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_2core(a, g):
    """RMSNorm(a) * g; launched as rmsnorm_2core[2](a, g), each logical core takes a block of row tiles."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    P = nl.tile_size.pmax
    tiles_per_core = math.ceil(math.ceil(n_rows / P) / nl.num_programs(0))
    first_tile = nl.program_id(0) * tiles_per_core
    g_bcast = nl.load(g.reshape((1, n_cols)).broadcast(0, P))  # g on every partition in one DMA, as in rmsnorm_fast
    for t in range(tiles_per_core):
        lo, hi = (first_tile + t) * P, min((first_tile + t + 1) * P, n_rows)
        if lo >= hi:  # past the last row (R = 1: core 1 has nothing to do); a Python int, known while tracing
            break
        rows = hi - lo
        a_tile = nl.load(a[lo:hi, :])
        squares = nl.ndarray((rows, n_cols), dtype=nl.float32)
        sum_sq = nl.ndarray((rows, 1), dtype=nl.float32)
        nisa.activation_reduce(squares, nl.square, a_tile, reduce_op=nl.add, reduce_res=sum_sq)
        mean_eps = nl.ndarray((rows, 1), dtype=nl.float32)
        nisa.tensor_scalar(mean_eps, sum_sq, nl.multiply, 1.0 / n_cols, op1=nl.add, operand1=1e-6)
        inv_rms = nl.rsqrt(mean_eps)
        normed = nl.ndarray((rows, n_cols), dtype=a.dtype)
        nisa.activation(normed, nl.copy, a_tile, scale=inv_rms)
        nl.store(out[lo:hi, :], value=nl.multiply(normed, g_bcast[0:rows, :], dtype=a.dtype))
    return out
