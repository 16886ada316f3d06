"""The engines' arithmetic on tiles: ``nisa.tensor_tensor`` (two tiles), ``nisa.tensor_scalar`` (a tile and
per-partition scalars), ``nisa.scalar_tensor_tensor`` (both) and ``nisa.reciprocal``, on the Vector engine unless
the call or the operator names another.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.tensor import Tensor, as_access, is_tile, shape_str
from nkisim.cost.instructions import (
    RECIPROCAL,
    SCALAR_TENSOR_TENSOR,
    TENSOR_SCALAR,
    TENSOR_TENSOR,
)
from nkisim.ops import engines
from nkisim.ops.base import emit, mask_array, new_tile, operands, write_dst
from nkisim.ops.elementwise import values
from nkisim.ops.optable import ACTIVATIONS, ALU, ARITH_UNARY, op_name
from nkisim.ops.outputs import F32, alu, per_partition
from nkisim.ops.registry import op


@op("nisa.tensor_tensor", emits=(TENSOR_TENSOR,))
def tensor_tensor(data1: Any, data2: Any, op: Any, *, dtype: Any = None, mask: Any = None, engine: Any = 0,
                  dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.tensor_tensor``: elementwise op of two tiles with identical partitions and sizes.

    One input may instead be a column, ``[P, 1]`` or ``[P]`` (one value per partition): the engine reads it
    with a zero stride along the free dimension (AWS's docstring: for "broadcasting capability in the free
    dimension for either input tile ... consider tensor_scalar ... which has better performance"), so it
    costs a full two-input pass over the other tile's elements.  CS149 2025's handout suggests it for a bias add.
    """
    ctx = current()
    name = alu(op, "tensor_tensor")
    accs = operands("tensor_tensor", data1=data1, data2=data2)
    a, b = accs["data1"], accs["data2"]
    if a.shape[0] != b.shape[0]:
        raise nki_error("err_num_partition_mismatch",
                        f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                        f"({shape_str('data1', a.shape)}, {shape_str('data2', b.shape)}) of 'tensor_tensor'")
    na, nb = _per_partition(a.shape), _per_partition(b.shape)
    broadcast = na != nb and min(na, nb) == 1
    if na != nb and not broadcast:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('data1', a.shape)}, {shape_str('data2', b.shape)}) of "
                        f"'tensor_tensor' has mismatched shapes")
    if a.space == "psum" and b.space == "psum":
        raise nki_error("err_unsupported_memory",
                        "Expected operand 'data2' of 'tensor_tensor' to be in address space 'sbuf', but got a tile "
                        "in 'psum' instead. (at most one tensor_tensor input may be in PSUM)")
    spec = ALU[name]
    out_dt = dt.normalize(dtype) if dtype is not None else dt.promote(a.dtype, b.dtype)
    if dst is not None:
        out_dt = dst.dtype
    shape = b.shape if nb > na else a.shape  # the result has the full tile's shape
    valid = mask_array(mask, shape, "tensor_tensor")
    vals = None
    if ctx.numerics:
        compute = np.dtype(np.int64) if spec.bitvec else dt.compute_dtype(a.dtype, b.dtype, out_dt)
        x, y = values(a, ctx, compute), values(b, ctx, compute)
        col = (shape[0],) + (1,) * (len(shape) - 1)  # a column operand, broadcast along the free dims
        x = x.reshape(col) if broadcast and na == 1 else x.reshape(shape)
        y = y.reshape(col) if broadcast and nb == 1 else y.reshape(shape)
        vals = spec.fn(x, y)
    both_int = not dt.is_float(a.dtype) and not dt.is_float(b.dtype)
    engine_name = "pool" if int(engine or 0) == 3 or spec.gpsimd or (both_int and spec.gpsimd_for_integers) else "dve"
    extra: dict[str, Any] = {"alu": name}
    if broadcast:
        extra["broadcast"] = True
    if dst is not None:
        out = write_dst(ctx, "tensor_tensor", dst, shape, vals, valid)
        emit(ctx, TENSOR_TENSOR, engine_name, reads=[a, b], writes=[out], extra=extra)
        return None
    tile = new_tile(ctx, shape, out_dt, vals, valid)
    tile.producer = emit(ctx, TENSOR_TENSOR, engine_name, reads=[a, b], writes=[tile.full()], extra=extra)
    return tile


def _per_partition(shape: tuple[int, ...]) -> int:
    """Elements per partition of a tile (a ``[P]`` tile holds one)."""
    return int(math.prod(shape[1:])) if len(shape) > 1 else 1


@op("nisa.tensor_scalar", emits=(TENSOR_SCALAR,))
def tensor_scalar(data: Any, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None, operand1: Any = None,
                  reverse1: bool = False, *, dtype: Any = None, mask: Any = None, engine: Any = 0, dst: Any = None,
                  name: str = "") -> Tensor | None:
    """``nisa.tensor_scalar``: (data op0 operand0) op1 operand1, operands scalars or [P, 1] vectors."""
    ctx = current()
    n0 = _scalar_op(op0)
    n1 = None if op1 is None else _scalar_op(op1)
    if n1 is not None and _bitvec(n0) != _bitvec(n1):
        raise nki_error("err_instruction_unsupported_op",
                        f"{n1} is not supported in 'tensor_scalar' together with {n0}: op0 and op1 must both be "
                        f"bitvec or both arithmetic")
    a = operands("tensor_scalar", data=data)["data"]
    v0 = per_partition("tensor_scalar", "operand0", operand0, a.shape[0], ctx, len(a.shape))
    v1 = None if n1 is None else per_partition("tensor_scalar", "operand1", operand1, a.shape[0], ctx, len(a.shape))
    out_dt = a.dtype if dtype is None else dt.normalize(dtype)
    valid = mask_array(mask, a.shape, "tensor_scalar")
    vals = None
    if ctx.numerics:
        bit = _bitvec(n0)
        compute = np.dtype(np.int64) if bit else F32
        x = values(a, ctx, compute)
        v0c = v0.astype(compute) if bit else v0
        x = _scalar_apply(n0, x, v0c, reverse0)
        if n1 is not None:
            v1c = v1.astype(compute) if bit else v1
            x = _scalar_apply(n1, x, v1c, reverse1)
        vals = x
    reads = [a] + [as_access(v) for v in (operand0, operand1) if is_tile(v)]
    eng = {2: "act", 3: "pool", 5: "dve"}.get(int(engine or 0), "dve")
    engines.tensor_scalar_supports(ctx, eng, n0, n1)
    if dst is not None:
        out = write_dst(ctx, "tensor_scalar", dst, a.shape, vals, valid)
        emit(ctx, TENSOR_SCALAR, eng, reads=reads, writes=[out], extra={"alu": (n0, n1)})
        return None
    tile = new_tile(ctx, a.shape, out_dt, vals, valid)
    tile.producer = emit(ctx, TENSOR_SCALAR, eng, reads=reads, writes=[tile.full()], extra={"alu": (n0, n1)})
    return tile


def _scalar_op(op: Any) -> str:
    """tensor_scalar's operator: an ALU operator, or an Arithmetic Unary one (``optable.ARITH_UNARY``)."""
    name = op_name(op)
    return name if name in ARITH_UNARY else alu(op, "tensor_scalar")


def _bitvec(name: str) -> bool:
    return name not in ARITH_UNARY and ALU[name].bitvec


def _scalar_apply(name: str, x: Any, v: Any, reverse: bool) -> Any:
    """``x op v`` (``v op x`` reversed); an Arithmetic Unary operator computes ``op(x)`` and ignores ``v``."""
    if name in ARITH_UNARY:
        return ACTIVATIONS[name].fn(np.asarray(x, dtype=F32))
    return ALU[name].fn(v, x) if reverse else ALU[name].fn(x, v)


@op("nisa.scalar_tensor_tensor", emits=(SCALAR_TENSOR_TENSOR,))
def scalar_tensor_tensor(*, data: Any, op0: Any, operand0: Any, op1: Any, operand1: Any, reverse0: bool = False,
                         reverse1: bool = False, dtype: Any = None, mask: Any = None, dst: Any = None,
                         name: str = "") -> Tensor | None:
    """``nisa.scalar_tensor_tensor``: (data op0 operand0) op1 operand1, operand1 a full tile."""
    ctx = current()
    n0, n1 = alu(op0, "scalar_tensor_tensor"), alu(op1, "scalar_tensor_tensor")
    accs = operands("scalar_tensor_tensor", data=data, operand1=operand1)
    a, b = accs["data"], accs["operand1"]
    if b.shape[0] != a.shape[0] or int(np.prod(b.shape)) != int(np.prod(a.shape)):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('data', a.shape)}, {shape_str('operand1', b.shape)}) of "
                        f"'scalar_tensor_tensor' has mismatched shapes")
    v0 = per_partition("scalar_tensor_tensor", "operand0", operand0, a.shape[0], ctx, len(a.shape))
    out_dt = dt.normalize(dtype) if dtype is not None else dt.promote(a.dtype, b.dtype)
    valid = mask_array(mask, a.shape, "scalar_tensor_tensor")
    vals = None
    if ctx.numerics:
        x = values(a, ctx, F32)
        x = ALU[n0].fn(v0, x) if reverse0 else ALU[n0].fn(x, v0)
        y = values(b, ctx, F32).reshape(a.shape)
        vals = ALU[n1].fn(y, x) if reverse1 else ALU[n1].fn(x, y)
    if dst is not None:
        emit(ctx, SCALAR_TENSOR_TENSOR, reads=[a, b], writes=[write_dst(ctx, "scalar_tensor_tensor", dst, a.shape, vals,
                                                                        valid)])
        return None
    tile = new_tile(ctx, a.shape, out_dt, vals, valid)
    tile.producer = emit(ctx, SCALAR_TENSOR_TENSOR, reads=[a, b], writes=[tile.full()])
    return tile


@op("nisa.reciprocal", emits=(RECIPROCAL,))
def reciprocal(data: Any, *, dtype: Any = None, mask: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.reciprocal``: 1/x on the Vector Engine."""
    ctx = current()
    a = operands("reciprocal", data=data)["data"]
    valid = mask_array(mask, a.shape, "reciprocal")
    vals = None
    if ctx.numerics:
        vals = 1.0 / values(a, ctx, F32)
    if dst is not None:
        emit(ctx, RECIPROCAL, reads=[a], writes=[write_dst(ctx, "reciprocal", dst, a.shape, vals, valid)])
        return None
    tile = new_tile(ctx, a.shape, a.dtype if dtype is None else dt.normalize(dtype), vals, valid)
    tile.producer = emit(ctx, RECIPROCAL, reads=[a], writes=[tile.full()])
    return tile
