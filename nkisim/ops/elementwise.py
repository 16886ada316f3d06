"""Elementwise numerics: unary activations, binary ALU ops (nl.add & co, Python operators), where.

Vector and Scalar engines widen every input to fp32, compute, and round once to the output dtype;
integer-only arithmetic is done exactly (int64) and wrapped on write.  Output dtypes follow the
promotion table unless ``dtype=`` is given; comparisons default to bool.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core import syntax
from nkisim.core.buffers import sbuf
from nkisim.core.context import KernelContext, current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read
from nkisim.core.tensor import Access, Tensor, is_tile, shape_str
from nkisim.cost.instructions import ACTIVATION, TENSOR_SCALAR, TENSOR_TENSOR, WHERE
from nkisim.ops.base import (
    _result_facts,
    emit,
    mask_array,
    new_tile,
    one_operand,
    operands,
    packed_operand,
    two_operands,
)
from nkisim.ops.optable import ACTIVATIONS, ALU
from nkisim.ops.registry import op

_FLOAT32 = np.dtype(np.float32)
_INT64 = np.dtype(np.int64)
#: What counts as a tile operand (is_tile, without the call).
_TILES = (Tensor, Access)


def values(acc: Access | Tensor | None, ctx: KernelContext, compute: np.dtype,
           shape: tuple[int, ...] | None = None) -> Any:
    """Operand values in the compute dtype, reshaped so a (P,) tile broadcasts as (P, 1, ...)."""
    if acc is None or not ctx.numerics:
        return None
    a = read(acc)  # an Access, or a Tensor read whole
    if a is None:
        return None
    if a.dtype is not compute and a.dtype != compute:  # identity first: dtype equality is a slow compare
        if dt.is_packed(acc.dtype):
            raise packed_operand(acc)
        a = a.astype(compute)
    if shape is not None and len(shape) > 1 and shape != acc.shape and a.ndim == 1:  # NumPy attributes last
        a = a.reshape(a.shape + (1,) * (len(shape) - 1))
    return a


def scalar_value(x: Any, compute: np.dtype) -> Any:
    return np.asarray(x, dtype=compute)


def column_shape(shape: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    """A ``[P]`` tile seen with ``ndim`` dimensions: a column ``[P, 1, ...]`` (one value per partition)."""
    return shape + (1,) * (ndim - len(shape)) if len(shape) == 1 and ndim > 1 else shape


def broadcast_shape(name: str, shapes: dict[str, tuple[int, ...]], partition_broadcast: bool = True) -> tuple:
    """Output shape of an elementwise op; a (P,) reduction result broadcasts as (P, 1, ...)."""
    listed_shapes = list(shapes.values())
    if listed_shapes and listed_shapes.count(listed_shapes[0]) == len(listed_shapes):
        return tuple(listed_shapes[0])  # identical shapes (the common case) broadcast to themselves
    nd = max(len(s) for s in shapes.values())
    fixed = {k: column_shape(s, nd) for k, s in shapes.items()}
    try:
        out = tuple(np.broadcast_shapes(*fixed.values()))
    except ValueError:
        listed = ", ".join(shape_str(k, s) for k, s in shapes.items())
        dims = " and ".join(str(list(s)) for s in shapes.values())
        raise nki_error("err_param_shape_incompatible_with_numpy",
                        f"Parameter shapes ({listed}) of '{name}' could not be broadcast together with shapes "
                        f"{dims}") from None
    if not partition_broadcast:
        parts = {s[0] for s in fixed.values() if len(s) >= 1}
        if len(parts) > 1:
            listed = ", ".join(shape_str(k, s) for k, s in shapes.items())
            raise nki_error("err_param_shape_incompatible_with_numpy",
                            f"Parameter shapes ({listed}) of '{name}' could not be broadcast together: the Python "
                            f"operators do not broadcast along the partition dimension; use nl.{name}(...) or "
                            f"nl.broadcast_to")
    return out


#: (x shape, y shape, partition_broadcast) -> output shape of a binary op on tiles of different
#: shapes (a (P, F) tile and a (P, 1) row statistic, typically): static per call site.
_PAIR_SHAPES: dict[tuple, tuple] = {}


def pair_shape(name: str, xs: tuple[int, ...], ys: tuple[int, ...], partition_broadcast: bool) -> tuple:
    """``broadcast_shape`` of two tiles, memoised; shapes that do not broadcast are not memoised, so
    they raise on every call, at the student's line."""
    key = (xs, ys, partition_broadcast)
    out = _PAIR_SHAPES.get(key)
    if out is None:
        out = broadcast_shape(name, {"x": xs, "y": ys}, partition_broadcast)
        if len(_PAIR_SHAPES) > 4096:  # bound the memo for programs with unusually many shapes
            _PAIR_SHAPES.clear()
        _PAIR_SHAPES[key] = out
    return out


def unary_op(name: str, x: Any, dtype: Any = None, mask: Any = None) -> Tensor:
    """An elementwise function of one tile (Scalar engine for activations)."""
    ctx = current()
    a = one_operand(name, "x", x, ctx)
    out_dt = a.dtype if dtype is None else dt.normalize(dtype)
    valid = mask_array(mask, a.shape, name, ctx)
    vals = None
    activation = ACTIVATIONS.get(name)
    if ctx.numerics:
        if activation is None:  # (a bitwise operator)
            raw = read(a)
            vals = np.logical_not(raw) if name == "logical_not" or raw.dtype == np.bool_ else np.invert(raw)
        else:
            vals = activation.fn(values(a, ctx, _FLOAT32))
    tile = new_tile(ctx, a.shape, out_dt, vals, valid)
    extra = _FUNC_EXTRA.get(name) or _FUNC_EXTRA.setdefault(name, {"func": name})  # (shared: never mutated)
    tile.producer = emit(ctx, TENSOR_SCALAR if activation is None else ACTIVATION, reads=(a,), writes=(tile,),
                         extra=extra)
    return tile


#: a unary op's name -> its instructions' extra facts, one dict shared by all of them (never mutated)
_FUNC_EXTRA: dict[str, dict] = {}


def _is_vector(shape: tuple[int, ...], out: tuple[int, ...]) -> bool:
    """A (P, 1)/(P,) operand: a per-partition scalar, served by tensor_scalar."""
    return len(shape) >= 1 and shape[0] == out[0] and math.prod(shape[1:]) == 1


class _BinaryFacts(NamedTuple):
    """What a binary op's instruction is, from its operands' shapes and dtypes alone: static per call site, so
    memoised (``_binary_facts``) instead of worked out again for every instruction a loop issues."""

    out_shape: tuple[int, ...]
    out_dt: np.dtype
    compute: np.dtype  # the dtype the engine computes in
    kind: Any  # TENSOR_SCALAR or TENSOR_TENSOR
    extra: dict  # the instruction's extra facts (shared by every instruction with these facts: never mutated)
    floor: bool  # an integer quotient, floored


#: (name, x shape, x dtype, y shape, y dtype, dtype=, partition_broadcast) -> (its ``_BinaryFacts``, the dtypes of
#: the key); shapes that do not broadcast raise, and are never memoised.  The dtypes are keyed by identity, as
#: ``ops.base._result_facts`` keys them (hashing a NumPy dtype is slow); each entry holds them, so no other
#: dtype can take their ids while it lives.
_BINARY: dict[tuple, tuple[_BinaryFacts, tuple]] = {}


def _binary_facts(name: str, xs: tuple[int, ...] | None, xd: np.dtype, ys: tuple[int, ...] | None, yd: np.dtype,
                  dtype: Any, partition_broadcast: bool) -> _BinaryFacts:
    """The facts of ``name`` on operands of shapes ``xs``, ``ys`` (None: a scalar of dtype ``xd``/``yd``)."""
    key = (name, xs, id(xd), ys, id(yd), id(dtype), partition_broadcast)
    hit = _BINARY.get(key)
    if hit is not None:
        return hit[0]
    spec = ALU[name]
    xt, yt = xs is not None, ys is not None
    if xt and yt:
        out_shape = xs if xs == ys else pair_shape(name, xs, ys, partition_broadcast)  # type: ignore[arg-type]
    else:
        out_shape = xs if xt else ys  # type: ignore[assignment]
    if dtype is not None:
        out_dt = dtype
    elif spec.compare:
        out_dt = dt.bool_
    else:
        out_dt = xd if xd is yd else dt.promote(xd, yd)
    if spec.bitvec:
        compute = _INT64
    elif out_dt is _FLOAT32 or spec.true_division or dt.is_float(out_dt):
        compute = _FLOAT32
    else:
        compute = dt.compute_dtype(xd, yd)
    if not (xt and yt):
        scalarish = True
    elif xs == ys:  # same shapes: a per-partition scalar only when there is one element per partition
        scalarish = math.prod(xs[1:]) == 1  # type: ignore[index]
    else:
        scalarish = _is_vector(xs, out_shape) or _is_vector(ys, out_shape)  # type: ignore[arg-type]
    extra: dict = {"alu": name}
    if xt and yt and xs != ys and not scalarish:
        extra["broadcast"] = True  # one operand repeated along a free axis: a zero-stride read, not contiguous
    facts = _BinaryFacts(out_shape, out_dt, compute, TENSOR_SCALAR if scalarish else TENSOR_TENSOR, extra,
                         bool(spec.true_division and out_dt.kind in "iu"))
    if len(_BINARY) > 4096:  # bound the memo for programs with unusually many shapes
        _BINARY.clear()
    _BINARY[key] = (facts, (xd, yd, dtype))
    return facts


def binary_op(name: str, x: Any, y: Any, dtype: Any = None, mask: Any = None,
              partition_broadcast: bool = True) -> Tensor:
    """An elementwise ALU op of two operands (tiles or scalars), NumPy broadcasting."""
    ctx = current()
    if mask is None and dtype is None and x.__class__ is Tensor:
        tile = whole_pair(ctx, name, x, y, partition_broadcast)
        if tile is not None:
            return tile
    if dtype is not None:
        dtype = dt.normalize(dtype)  # (a key of the facts' memo)
    # straight-line code instead of per-operand dicts: this runs once per simulated instruction
    xt, yt = isinstance(x, _TILES), isinstance(y, _TILES)
    if xt and yt:
        xa, ya = two_operands(name, "x", x, "y", y, ctx)
        f = _binary_facts(name, xa.shape, xa.dtype, ya.shape, ya.dtype, dtype, partition_broadcast)
    elif xt:
        xa, ya = one_operand(name, "x", x, ctx), None
        f = _binary_facts(name, xa.shape, xa.dtype, None, dt.scalar_dtype(y), dtype, partition_broadcast)
    elif yt:
        xa, ya = None, one_operand(name, "y", y, ctx)
        f = _binary_facts(name, None, dt.scalar_dtype(x), ya.shape, ya.dtype, dtype, partition_broadcast)
    else:
        raise TypeError(f"nl.{name} needs at least one tile operand")
    out_shape = f.out_shape
    valid = mask_array(mask, out_shape, name, ctx)
    vals = None
    if ctx.numerics:
        compute = f.compute
        vals = ALU[name].fn(values(xa, ctx, compute, out_shape) if xt else scalar_value(x, compute),
                            values(ya, ctx, compute, out_shape) if yt else scalar_value(y, compute))
        if f.floor:  # an integer quotient floors (pos // w), never rounds up
            vals = np.floor(vals)
    tile = new_tile(ctx, out_shape, f.out_dt, vals, valid)
    tile.producer = emit(ctx, f.kind, reads=(xa, ya) if xt and yt else (xa if xt else ya,), writes=(tile,),
                         extra=f.extra)
    if mask is None and dtype is None and x.__class__ is Tensor and ctx.numerics:
        key = _whole_key(name, x, y, partition_broadcast)
        if key is not None:
            _note_whole(key, f, x, y)
    return tile


#: ``_whole_key`` -> what ``whole_pair`` needs, in one flat tuple it unpacks at once: the ALU's function, the dtype
#: it computes in, x's and y's values reshaped to (None: as they are), the result's shape and dtype, its facts for
#: ``Tensor.result`` (or None: a tfloat32 result goes through ``new_tile``), the instruction's kind and extra facts,
#: whether the quotient is floored, and the key's static facts (``Tensor.static``: held, so no other object takes
#: their ids while the entry lives); noted by the general path of ``binary_op`` only for operands that passed every
#: check on it
_WHOLE: dict[tuple, tuple] = {}

#: (shape, id of the dtype, space, partition axis) -> the ``Tensor.static`` of a tensor with those facts that is not
#: an op's result (an allocation, a kernel input, a view): (shape, dtype, space, partition axis)
_STATIC: dict[tuple, tuple] = {}

#: ``Tensor.static`` of a tensor ``whole_pair`` never takes: a direct allocation (its whole access maps to physical
#: blocks) or a scalar tile
_NOT_WHOLE = ("not a plain whole tile",)


def _static(t: Tensor) -> Any:
    """``t.static`` of a tensor that is not an op's result (those get their facts tuple from ``Tensor.result``),
    looked up once per tensor."""
    if t.buffer.alloc is not None or not t.shape:
        st: Any = _NOT_WHOLE
    else:
        key = (t.shape, id(t.dtype), t.buffer.family, t.par_axis)
        st = _STATIC.get(key)
        if st is None:
            if len(_STATIC) > 4096:  # bound the memo for programs with unusually many shapes
                _STATIC.clear()
            st = _STATIC[key] = (t.shape, t.dtype, t.buffer.family, t.par_axis)
    t.static = st
    return st


def _whole_key(name: str, x: Any, y: Any, partition_broadcast: bool) -> tuple | None:
    """What every check of ``binary_op``'s general path depends on (the operands' shapes, dtypes, address spaces,
    partition axes: their ``Tensor.static``, by identity), when ``x`` is a whole tile and ``y`` a whole tile or a
    Python number, neither in a direct allocation nor a scalar tile; None otherwise.  An op result's static facts
    hold its shape, dtype and space, and it is a plain tile with partition axis 0 (``Tensor.result``)."""
    if not x.shape:
        return None
    xs = x.static or _static(x)
    if xs is _NOT_WHOLE:
        return None
    yc = y.__class__
    if yc is Tensor:
        if not y.shape:
            return None
        ys = y.static or _static(y)
        if ys is _NOT_WHOLE:
            return None
        return name, partition_broadcast, id(xs), id(ys)
    if yc is float or yc is int:
        return name, partition_broadcast, id(xs), yc
    return None


def _note_whole(key: tuple, f: _BinaryFacts, x: Tensor, y: Any) -> None:
    """Remember what ``whole_pair`` needs for operands of ``key``, which just passed the general path's checks."""
    def reshape(t: Any) -> tuple[int, ...] | None:  # (as ``values`` reshapes a [P] tile against the result)
        shape = f.out_shape
        if len(shape) > 1 and shape != t.shape and len(t.shape) == 1:
            return t.shape + (1,) * (len(shape) - 1)
        return None

    if len(_WHOLE) > 4096:  # bound the memo for programs with unusually many shapes
        _WHOLE.clear()
    facts = _result_facts(f.out_shape, f.out_dt, sbuf) if f.out_dt is not dt.tfloat32 else None
    _WHOLE[key] = (ALU[key[0]].fn, f.compute, reshape(x), reshape(y) if y.__class__ is Tensor else None, f.out_shape,
                   f.out_dt, facts, f.kind, f.extra, f.floor, (x.static, y.static if y.__class__ is Tensor else None))


def whole_pair(ctx: KernelContext, name: str, x: Tensor, y: Any, partition_broadcast: bool) -> Tensor | None:
    """``binary_op`` of a whole tile ``x`` with a whole tile or a Python number ``y``, without a mask or a dtype:
    what most instructions of a loop body are.  Every fact that depends only on the operands' shapes, dtypes,
    spaces and partition axes was worked out by the general path the first time it saw them, which passed every
    check on them (``_note_whole``); what may change from one call to the next is checked here as the general path
    checks it (each operand's scope, a pending fill).  None: not this case, or not seen yet, or a check fails (the
    general path runs, and raises)."""
    if not ctx.numerics:
        return None
    key = _whole_key(name, x, y, partition_broadcast)
    hit = None if key is None else _WHOLE.get(key)
    if hit is None:
        return None
    fn, compute, xshape, yshape, out_shape, out_dt, facts, kind, extra, floor, _ = hit
    loops = x.loops
    if loops and loops[-1] not in ctx.loops:
        return None
    xv = read(x)
    if xv is None:
        return None
    if xv.dtype is not compute:
        xv = xv.astype(compute)
    if xshape is not None:
        xv = xv.reshape(xshape)
    if y.__class__ is Tensor:
        loops = y.loops
        if loops and loops[-1] not in ctx.loops:
            return None
        yv = read(y)
        if yv is None:
            return None
        if yv.dtype is not compute:
            yv = yv.astype(compute)
        if yshape is not None:
            yv = yv.reshape(yshape)
        reads: tuple = (x, y)
    else:
        yv = np.asarray(y, dtype=compute)
        reads = (x,)
    ctx.op_mask = None  # (what ``mask_array`` does for an op without a mask)
    vals = fn(xv, yv)
    if floor:
        vals = np.floor(vals)
    if facts is not None and vals.__class__ is np.ndarray and vals.dtype is out_dt and vals.base is None \
            and vals.shape == facts[3] and not ctx.stack_allocator and facts[2] <= ctx.target.sbuf_partition_bytes:
        # what ``new_tile`` makes of a new array of the result's dtype and shape, its facts looked up once per key
        tile = Tensor.result(facts[3], out_dt, sbuf, vals, ctx.loop_tuple, facts)
    else:
        tile = new_tile(ctx, out_shape, out_dt, vals)
    tile.producer = emit(ctx, kind, reads=reads, writes=(tile,), extra=extra)
    return tile


def operator(tile: Any, other: Any, op: str, reverse: bool) -> Any:
    """Python operators on tiles: the nl op without partition broadcasting."""
    if not (is_tile(other) or isinstance(other, (int, float, bool, np.number))):
        return NotImplemented
    x, y = (other, tile) if reverse else (tile, other)
    return binary_op(op, x, y, partition_broadcast=False)


@op("nl.where", emits=(WHERE,))
def where(condition: Any, x: Any, y: Any, *, dtype: Any = None, mask: Any = None, name: str = "") -> Tensor:
    """``nl.where``: select x where condition else y (y may be a scalar)."""
    ctx = current()
    named = {k: v for k, v in (("condition", condition), ("x", x), ("y", y)) if is_tile(v)}
    accs = operands("where", **named)
    out_shape = broadcast_shape("where", {k: a.shape for k, a in accs.items()})
    dts = [accs[k].dtype if k in accs else dt.scalar_dtype(v) for k, v in (("x", x), ("y", y))]
    out_dt = dt.normalize(dtype) if dtype is not None else dt.promote(dts[0], dts[1])
    valid = mask_array(mask, out_shape, "where")
    vals = None
    if ctx.numerics:
        compute = dt.compute_dtype(*dts)
        c = values(accs["condition"], ctx, np.dtype(np.float32), out_shape) if "condition" in accs \
            else np.asarray(condition)
        xs = values(accs["x"], ctx, compute, out_shape) if "x" in accs else scalar_value(x, compute)
        ys = values(accs["y"], ctx, compute, out_shape) if "y" in accs else scalar_value(y, compute)
        vals = np.where(c != 0, xs, ys)
    tile = new_tile(ctx, out_shape, out_dt, vals, valid)
    tile.producer = emit(ctx, WHERE, reads=list(accs.values()), writes=[tile.full()])
    return tile


# --- nl's elementwise functions, generated from the op table --------------------------------------
def _nl_unary(op_name: str) -> Callable[..., Tensor]:
    def fn(x: Any, *, dtype: Any = None, mask: Any = None, name: str = "") -> Tensor:
        return unary_op(op_name, x, dtype, mask)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = f"``nl.{op_name}``: elementwise {op_name} of a tile (computed in fp32)."
    return fn


def _nl_binary(op_name: str) -> Callable[..., Tensor]:
    def fn(x: Any, y: Any, *, dtype: Any = None, mask: Any = None, name: str = "") -> Tensor:
        return binary_op(op_name, x, y, dtype, mask)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = f"``nl.{op_name}``: elementwise {op_name} of two tiles or a tile and a scalar (NumPy broadcasting)."
    return fn


for _name in ACTIVATIONS:
    if _name not in ("copy", "identity"):  # nl.copy is the Scalar engine's copy (ops.memory)
        op(f"nl.{_name}", emits=(ACTIVATION,))(_nl_unary(_name))
for _name in ("invert", "logical_not"):  # bitwise_not is an ISA operator, not an nl function
    op(f"nl.{_name}", emits=(TENSOR_SCALAR,))(_nl_unary(_name))
for _alu in ALU.values():
    if _alu.nl_function:  # the op table says which operators nl offers as functions
        op(f"nl.{_alu.name}", emits=(TENSOR_TENSOR, TENSOR_SCALAR))(_nl_binary(_alu.name))


@op("nl.mod", emits=(TENSOR_TENSOR, TENSOR_SCALAR))
def mod(x: Any, y: Any, dtype: Any = None, mask: Any = None, name: str = "") -> Tensor:
    """``nl.mod``: remainder with the sign of the divisor (Python %)."""
    return binary_op("mod", x, y, dtype=dtype, mask=mask)


@op("nl.fmod", emits=(TENSOR_TENSOR, TENSOR_SCALAR))
def fmod(x: Any, y: Any, dtype: Any = None, mask: Any = None, name: str = "") -> Tensor:
    """``nl.fmod``: remainder with the sign of the dividend (C fmod)."""
    return binary_op("fmod", x, y, dtype=dtype, mask=mask)


syntax.provide(binary=op("tile.binary", emits=(TENSOR_TENSOR, TENSOR_SCALAR))(operator),  # t + u
               unary=op("tile.unary", emits=(ACTIVATION, TENSOR_SCALAR))(unary_op))  # -t, abs(t), ~t
