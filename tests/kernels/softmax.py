"""Row softmax, as in the NKI fused-attention tutorial: nl version and an nisa version."""

from __future__ import annotations

import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def softmax_nl(x):
    """max-subtract, exp, divide by the row sum; (P,) reductions broadcast against (P, F)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    num_rows, n = x.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(n)[None, :]
    for i in nl.affine_range(math.ceil(num_rows / 128)):
        rows = i * 128 + i_p
        t = nl.load(x[rows, i_f], mask=(rows < num_rows), dtype=nl.float32)
        row_max = nl.max(t, axis=[1], mask=(rows < num_rows))
        numerator = nl.exp(nl.subtract(t, row_max, mask=(rows < num_rows)), mask=(rows < num_rows))
        res = nl.divide(numerator, nl.sum(numerator, axis=[1], mask=(rows < num_rows)), mask=(rows < num_rows),
                        dtype=x.dtype)
        nl.store(out[rows, i_f], value=res, mask=(rows < num_rows))
    return out


@nki.jit
def softmax_isa(x):
    """exp(x - max) on ScalarE with the row sum accumulated in reduce_res, then scale by 1/sum."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    num_rows, n = x.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(n)[None, :]
    for i in nl.affine_range(math.ceil(num_rows / 128)):
        rows = i * 128 + i_p
        t = nl.load(x[rows, i_f], mask=(rows < num_rows))
        neg_max = nisa.tensor_reduce(np.max, t, axis=[1], negate=True, keepdims=True, dtype=nl.float32,
                                     mask=(rows < num_rows))
        row_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        e = nisa.activation(op=nl.exp, data=t, bias=neg_max, reduce_op=np.add, reduce_res=row_sum,
                            reduce_cmd=nisa.reduce_cmd.reset_reduce, dtype=nl.float32, mask=(rows < num_rows))
        inv = nisa.reciprocal(row_sum, mask=(rows < num_rows))
        res = nisa.tensor_scalar(e, np.multiply, inv, dtype=x.dtype, mask=(rows < num_rows))
        nl.store(out[rows, i_f], value=res, mask=(rows < num_rows))
    return out
