"""Free-axis reductions (nl.sum/mean/max/min/prod/all/var, nisa.tensor_reduce) and partition reduce
(nisa.tensor_partition_reduce)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.tensor import Tensor
from nkisim.cost.instructions import TENSOR_PARTITION_REDUCE, TENSOR_REDUCE
from nkisim.ops.base import emit, mask_array, new_tile, one_operand, operands, write_dst
from nkisim.ops.elementwise import values
from nkisim.ops.optable import ALU, op_name
from nkisim.ops.outputs import alu
from nkisim.ops.registry import op

_FLOAT32 = np.dtype(np.float32)
_INT64 = np.dtype(np.int64)
_IDENTITY = {"add": 0.0, "multiply": 1.0, "max": -np.inf, "maximum": -np.inf, "min": np.inf, "minimum": np.inf,
             "logical_and": 1, "logical_or": 0, "bitwise_and": -1, "bitwise_or": 0, "bitwise_xor": 0}


def normalize_axis(axis: Any, ndim: int, api: str) -> tuple[int, ...]:
    """Reduction axes: free axes only (the partition axis 0 cannot be reduced by Vector/Scalar)."""
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if a < 0:
            a += ndim
        if a == 0:
            raise nki_error("err_reduce_partition_axis",
                            f"'{api}' cannot reduce along the partition axis (axis 0): reductions run on free axes "
                            f"only; use nisa.tensor_partition_reduce, a transpose, or a matmul with a ones vector")
        if not 0 < a < ndim:
            raise ValueError(f"axis {a} is out of range for a tile of rank {ndim} in '{api}'")
        out.append(a)
    return tuple(sorted(set(out)))


#: reductions whose result NumPy's ``reduce`` gives bit for bit when the last axis is folded in by one ufunc call
#: per element, in order, up to ``_FOLD_MAX`` elements (measured on random data with zeros of both signs, NaNs and
#: infinities: from 9 elements on, max and min reduce with SIMD lanes whose NaN and zero picks differ, and an add
#: reduction differs already at 2); ``tests/test_executor_speed.py`` checks them against ``reduce``
_FOLDED = frozenset({"max", "maximum", "min", "minimum", "multiply"})
_FOLD_MAX = 8


def reduce_values(op: str, vals: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    spec = ALU[op]
    if op in _FOLDED and len(axes) == 1:
        last = vals.ndim - 1
        width = vals.shape[-1] if axes[0] == last else 0
        if 1 < width <= _FOLD_MAX:
            # NumPy's reduce along a short last axis costs about ten of its elementwise calls (5.8 us for a
            # [128, 4] tile against 0.5 for an add): the columns folded one by one are the same values
            fn = spec.fn
            out = fn(vals[..., 0], vals[..., 1])  # (columns without their axis: NumPy walks those faster)
            for j in range(2, width):
                fn(out, vals[..., j], out=out)
            return out.reshape(out.shape + (1,)) if keepdims else out
    if op in ("logical_and", "logical_or"):
        return spec.reduce_fn(vals != 0, axis=axes, keepdims=keepdims)
    if spec.bitvec:
        out = vals
        for a in sorted(axes, reverse=True):
            out = spec.reduce_fn(out, axis=a, keepdims=keepdims)
        return out
    return spec.reduce_fn(vals, axis=axes, keepdims=keepdims)


#: (axis, input shape, keepdims) -> (axes, output shape, elements per partition read): static per
#: call site, and normalising the axes costs more than the reduction of a small tile.
_GEOMETRY: dict[tuple, tuple] = {}


def reduce_geometry(axis: Any, shape: tuple[int, ...], keepdims: bool, api: str) -> tuple:
    """(normalised axes, output shape, input elements per partition) of a free-axis reduction.

    Memoised by value (the axis's type is part of the key, so ``1`` and ``1.0`` stay apart); only
    valid geometries are memoised, so a bad axis raises on every call, at the student's line."""
    try:
        key = (axis.__class__, tuple(axis) if isinstance(axis, list) else axis, shape, keepdims)
        hit = _GEOMETRY.get(key)
    except TypeError:  # unhashable axis: no memo
        key = hit = None
    if hit is None:
        axes = normalize_axis(axis, len(shape), api)
        out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape)) if keepdims else \
            tuple(s for i, s in enumerate(shape) if i not in axes)
        hit = (axes, out_shape, math.prod(shape[1:]) if len(shape) > 1 else 1)
        if key is not None:
            if len(_GEOMETRY) > 4096:  # bound the memo for programs with unusually many shapes
                _GEOMETRY.clear()
            _GEOMETRY[key] = hit
    return hit


def reduce(op: str, x: Any, axis: Any, *, dtype: Any = None, mask: Any = None, keepdims: bool = False,
           api: str | None = None, negate: bool = False, kind: str = "plain", dst: Any = None) -> Tensor | None:
    """Shared implementation of every free-axis reduction (kind: plain, mean, var)."""
    ctx = current()
    name = api or op
    a = one_operand(name, "x", x, ctx)
    axes, out_shape, n_in = reduce_geometry(axis, a.shape, keepdims, name)
    if dtype is not None:
        out_dt = dt.normalize(dtype)
    elif op in ("logical_and", "logical_or"):
        out_dt = dt.bool_
    elif kind in ("mean", "var") and not dt.is_float(a.dtype):
        out_dt = dt.float32
    else:
        out_dt = a.dtype
    in_valid = mask_array(mask, a.shape, name, ctx)
    valid = None
    vals = None
    if in_valid is not None and in_valid.ndim:
        valid = np.any(in_valid, axis=axes, keepdims=keepdims)
    elif in_valid is not None:
        valid = in_valid
    if ctx.numerics:
        compute = _INT64 if ALU[op].bitvec else _FLOAT32
        v = values(a, ctx, compute)
        if in_valid is not None and in_valid.ndim:
            v = np.where(in_valid, v, np.asarray(_IDENTITY.get(op, 0), dtype=compute))
        if kind == "mean":
            vals = np.mean(v, axis=axes, keepdims=keepdims)
        elif kind == "var":
            vals = np.var(v, axis=axes, keepdims=keepdims)
        else:
            vals = reduce_values(op, v, axes, keepdims)
        if negate:
            vals = -vals
    extra = _EXTRA.get((op, kind)) or _EXTRA.setdefault((op, kind), {"alu": op, "kind": kind})
    if dst is not None:
        emit(ctx, TENSOR_REDUCE, reads=(a,), writes=(write_dst(ctx, name, dst, out_shape, vals, valid),), n=n_in,
             extra=extra)
        return None
    tile = new_tile(ctx, out_shape, out_dt, vals, valid)
    tile.producer = emit(ctx, TENSOR_REDUCE, reads=(a,), writes=(tile,), n=n_in, extra=extra)
    return tile


#: (ALU operator, kind) -> a reduction's extra facts, one dict shared by all its instructions (never mutated: a
#: dict per instruction was an allocation the cycle collector then traversed for the trace's whole life)
_EXTRA: dict[tuple[str, str], dict] = {}


def _nl_reduce(call: str, alu_op: str, kind: str, default_dtype: Any, what: str) -> Callable[..., Tensor]:
    def fn(x: Any, axis: Any, *, dtype: Any = default_dtype, mask: Any = None, keepdims: bool = False,
           name: str = "") -> Tensor:
        return reduce(alu_op, x, axis, dtype=dtype, mask=mask, keepdims=keepdims, api=call, kind=kind)

    fn.__name__ = fn.__qualname__ = call
    fn.__doc__ = f"``nl.{call}``: {what} over the given free axes of a tile (``keepdims`` keeps them as size 1)."
    return fn


# nl's reductions (functions of this module would shadow the builtins sum, max, min and all)
for _call, _alu, _kind, _dtype, _what in (
        ("sum", "add", "plain", None, "the sum"), ("prod", "multiply", "plain", None, "the product"),
        ("max", "max", "plain", None, "the maximum"), ("min", "min", "plain", None, "the minimum"),
        ("mean", "add", "mean", None, "the mean"), ("var", "add", "var", None, "the population variance"),
        ("all", "logical_and", "plain", dt.bool_, "logical AND")):
    op(f"nl.{_call}", emits=(TENSOR_REDUCE,))(_nl_reduce(_call, _alu, _kind, _dtype, _what))


def partition_reduce(op: str, data: Any, *, mask: Any = None, dtype: Any = None, dst: Any = None) -> Tensor | None:
    """``nisa.tensor_partition_reduce``: reduce across partitions on GpSimd -> a [1, F] tile."""
    ctx = current()
    if op not in ("add", "max", "maximum", "bitwise_or", "bitwise_and"):
        raise nki_error("err_instruction_unsupported_op", f"{op} is not supported in 'tensor_partition_reduce'")
    a = operands("tensor_partition_reduce", data=data)["data"]
    out_shape = (1,) + tuple(a.shape[1:])
    valid = mask_array(mask, a.shape, "tensor_partition_reduce")
    vals = None
    if ctx.numerics:
        compute = np.dtype(np.int64) if ALU[op].bitvec else np.dtype(np.float32)
        v = values(a, ctx, compute)
        if valid is not None and valid.ndim:
            v = np.where(valid, v, np.asarray(_IDENTITY.get(op, 0), dtype=compute))
        vals = reduce_values(op, v, (0,), True)
    if dst is not None:
        emit(ctx, TENSOR_PARTITION_REDUCE, reads=[a], writes=[write_dst(ctx, "tensor_partition_reduce", dst, out_shape,
                                                                        vals)], extra={"alu": op})
        return None
    tile = new_tile(ctx, out_shape, a.dtype if dtype is None else dt.normalize(dtype), vals)
    tile.producer = emit(ctx, TENSOR_PARTITION_REDUCE, reads=[a], writes=[tile.full()],
                         extra={"alu": op})
    return tile


@op("nisa.tensor_reduce", emits=(TENSOR_REDUCE,))
def tensor_reduce(op: Any, data: Any, axis: Any, *, mask: Any = None, dtype: Any = None, negate: bool = False,
                  keepdims: bool = False, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.tensor_reduce`` on the Vector Engine (free axes only)."""
    name = alu(op, "tensor_reduce")
    if not ALU[name].reducible or name == "subtract":
        raise nki_error("err_instruction_unsupported_op", f"{name} is not supported in 'tensor_reduce'")
    if negate and ALU[name].bitvec:
        raise nki_error("err_reduce_unsupported_negate",
                        f"negate option can only be used with arithmetic ops, unsupported op={name}")
    return reduce(name, data, axis, dtype=dtype, mask=mask, keepdims=keepdims, api="tensor_reduce",
                      negate=negate, dst=dst)


@op("nisa.tensor_partition_reduce", emits=(TENSOR_PARTITION_REDUCE,), spaces="sbuf")
def tensor_partition_reduce(op: Any, data: Any, *, mask: Any = None, dtype: Any = None, dst: Any = None,
                            name: str = "") -> Tensor | None:
    """``nisa.tensor_partition_reduce``: reduce along the partition axis with ``op`` (GpSimd engine)."""
    return partition_reduce(op_name(op), data, mask=mask, dtype=dtype, dst=dst)
