# Reference solution, generated from notebooks/04_masked_rmsnorm.py by `make release`. Do not edit.
import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_fast(a, g):
    """rmsnorm with fused, engine-balanced instructions."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(n_cols)[None, :]
    # g on every partition in one DMA: each of the 128 partitions gathers row 0 of g viewed as [1, C]
    row0 = nl.zeros((128, 1), dtype=nl.int32)
    g_bcast = nl.load(g.reshape((1, n_cols))[row0[i_p, 0], i_f])
    for i in nl.affine_range(math.ceil(n_rows / 128)):
        rows = i * 128 + i_p
        valid = rows < n_rows
        a_tile = nl.load(a[rows, i_f], mask=valid)
        # ScalarE: squares and their row sum in one instruction (fp32 accumulation)
        sum_sq = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.activation_reduce(op=nl.square, data=a_tile, reduce_op=np.add, reduce_res=sum_sq[i_p, 0],
                               dtype=nl.float32, mask=valid)
        # one value per partition: mean + eps, then 1/sqrt
        inv_rms = nl.rsqrt(nisa.tensor_scalar(sum_sq, np.multiply, 1.0 / n_cols, op1=np.add, operand1=1e-6,
                                              mask=valid), mask=valid)
        # ScalarE scales by the per-row statistic; VectorE multiplies by the broadcast weight
        normed = nisa.activation(op=nl.copy, data=a_tile, scale=inv_rms, mask=valid)
        out_tile = nl.multiply(normed, g_bcast, dtype=a.dtype, mask=valid)
        nl.store(out[rows, i_f], value=out_tile, mask=valid)
    return out
