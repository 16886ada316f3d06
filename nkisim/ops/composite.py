"""``nl`` functions the compiler expands into several instructions: softmax, rms_norm, dropout.

Each is one NKI call in a program (``ops.registry``), built from the same numerics and instructions as
the ops a kernel could write out itself, so its cost is the cost of what it expands to.
"""

from __future__ import annotations

from typing import Any

from nkisim.core import dtypes as dt
from nkisim.core.tensor import Tensor, is_tile
from nkisim.cost.instructions import ACTIVATION, MEMSET, TENSOR_REDUCE, TENSOR_SCALAR, TENSOR_TENSOR, WHERE
from nkisim.ops.base import one_operand
from nkisim.ops.creation import rand
from nkisim.ops.elementwise import binary_op, unary_op, where
from nkisim.ops.reduce import reduce
from nkisim.ops.registry import op


@op("nl.softmax", emits=(TENSOR_REDUCE, TENSOR_TENSOR, TENSOR_SCALAR, ACTIVATION))
def softmax(x: Any, axis: Any, *, dtype: Any = None, compute_dtype: Any = None, mask: Any = None,
            name: str = "") -> Tensor:
    """``nl.softmax`` along free axes (max-subtracted for stability)."""
    m = reduce("max", x, axis, mask=mask, keepdims=True, api="softmax")
    e = unary_op("exp", binary_op("subtract", x, m, mask=mask), mask=mask)
    return binary_op("divide", e, reduce("add", e, axis, mask=mask, keepdims=True, api="softmax"),
                     dtype=dtype, mask=mask)


@op("nl.rms_norm", emits=(ACTIVATION, TENSOR_REDUCE, TENSOR_TENSOR, TENSOR_SCALAR))
def rms_norm(x: Any, w: Any, axis: Any, n: int, epsilon: float = 1e-6, *, dtype: Any = None,
             compute_dtype: Any = None, mask: Any = None, name: str = "") -> Tensor:
    """``nl.rms_norm``: x / sqrt(mean(x^2) + eps) * w over ``axis`` (``n`` elements)."""
    one_operand("rms_norm", "x", x)  # its operands are named as the student wrote the call
    if is_tile(w):  # (a scalar weight scales like any other operand)
        one_operand("rms_norm", "w", w)
    sq = unary_op("square", x, mask=mask)
    ms = reduce("add", sq, axis, mask=mask, keepdims=True, api="sum")
    inv = unary_op("rsqrt", binary_op("add", binary_op("multiply", ms, 1.0 / n, mask=mask), epsilon, mask=mask),
                   mask=mask)
    return binary_op("multiply", binary_op("multiply", x, inv, mask=mask), w, dtype=dtype, mask=mask)


@op("nl.dropout", emits=(MEMSET, TENSOR_TENSOR, TENSOR_SCALAR, WHERE))
def dropout(x: Any, rate: Any, *, dtype: Any = None, mask: Any = None, name: str = "") -> Tensor:
    """``nl.dropout``: zero elements with probability ``rate`` (deterministic generator)."""
    one_operand("dropout", "x", x)
    r = rand(x.shape, dtype=dt.float32)
    keep = binary_op("greater_equal", r, rate if is_tile(rate) else float(rate))
    return where(keep, x, 0.0, dtype=dtype, mask=mask)
