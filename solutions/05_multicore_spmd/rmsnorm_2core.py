# Reference solution, generated from notebooks/05_multicore_spmd.py by `make release`. Do not edit.
import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_2core(a, g):
    """RMSNorm(a) * g; launched as rmsnorm_2core[nl.nc(2)](a, g), each instance takes a block of row tiles."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(n_cols)[None, :]
    tiles_per_instance = math.ceil(math.ceil(n_rows / 128) / nl.num_programs(0))
    first_tile = nl.program_id(0) * tiles_per_instance
    row0 = nl.zeros((128, 1), dtype=nl.int32)  # g on every partition in one DMA, as in rmsnorm_fast
    g_bcast = nl.load(g.reshape((1, n_cols))[row0[i_p, 0], i_f])
    for t in nl.affine_range(tiles_per_instance):
        rows = (first_tile + t) * 128 + i_p
        valid = rows < n_rows
        a_tile = nl.load(a[rows, i_f], mask=valid)
        sum_sq = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.activation_reduce(op=nl.square, data=a_tile, reduce_op=np.add, reduce_res=sum_sq[i_p, 0],
                               dtype=nl.float32, mask=valid)
        inv_rms = nl.rsqrt(nisa.tensor_scalar(sum_sq, np.multiply, 1.0 / n_cols, op1=np.add, operand1=1e-6,
                                              mask=valid), mask=valid)
        normed = nisa.activation(op=nl.copy, data=a_tile, scale=inv_rms, mask=valid)
        nl.store(out[rows, i_f], value=nl.multiply(normed, g_bcast, dtype=a.dtype, mask=valid), mask=valid)
    return out
