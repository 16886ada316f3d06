"""Predicated selection instructions: ``affine_select``, ``range_select``, ``select_reduce`` and
``tensor_copy_predicated`` (issue 12; semantics from the NKI ISA reference).

All compute in fp32 and round once to the output dtype, like the other engines' instructions.
``range_select`` and ``select_reduce`` also feed the Vector engine's accumulator registers, which
later instructions continue with ``reduce_cmd=reduce`` (see ``outputs.accumulate``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.indexing import check_mask
from nkisim.core.tensor import Tensor, is_tile, shape_str
from nkisim.cost.instructions import AFFINE_SELECT, RANGE_SELECT, SELECT_REDUCE, TENSOR_COPY_PREDICATED
from nkisim.ops.base import mask_array, operands
from nkisim.ops.outputs import (
    F32,
    IDLE,
    accumulate,
    alu,
    deliver,
    flat,
    per_partition,
    write_reduce_res,
)
from nkisim.ops.registry import op

_COMPARE = ("equal", "less", "less_equal", "greater", "greater_equal", "not_equal")


def _affine_pattern(pattern: Any, offset: int, channel_multiplier: int, parts: int, cmp: str) -> np.ndarray:
    """The predicate of the newer ``affine_select(pattern=...)`` form: cmp(affine value, 0) per element."""
    from nkisim.ops.optable import ALU

    steps = [(int(s), int(n)) for s, n in pattern]
    value = np.full((parts,) + tuple(n for _, n in steps), int(offset), dtype=np.int64)
    value += (np.arange(parts, dtype=np.int64) * int(channel_multiplier)).reshape((parts,) + (1,) * len(steps))
    for axis, (step, n) in enumerate(steps):
        shape = [1] * (len(steps) + 1)
        shape[axis + 1] = n
        value += (np.arange(n, dtype=np.int64) * step).reshape(shape)
    return np.asarray(ALU[cmp].fn(value, 0), dtype=bool).reshape(parts, -1)


@op("nisa.affine_select", emits=(AFFINE_SELECT,))
def affine_select(pred: Any = None, on_true_tile: Any = None, on_false_value: Any = 0.0, *, dtype: Any = None,
                  mask: Any = None, dst: Any = None, pattern: Any = None, offset: int = 0,
                  channel_multiplier: int = 0, cmp_op: Any = "equal", name: str = "") -> Tensor | None:
    """``nisa.affine_select`` (GpSimd): ``on_true_tile`` where an affine predicate of the indices holds,
    else ``on_false_value`` (the causal mask of attention kernels).

    ``pred`` is an index expression such as ``iy < ix`` built from ``nl.arange``/``nl.mgrid``; the
    newer form gives ``pattern``/``offset``/``channel_multiplier`` and ``cmp_op`` instead.  The legacy
    compiler takes ``on_true_tile`` from PSUM as well as SBUF (flash attention masks the QK^T
    product straight out of PSUM), so both are accepted.
    """
    ctx = current()
    a = operands("affine_select", on_true_tile=on_true_tile)["on_true_tile"]
    n = int(np.prod(a.shape[1:] or (1,)))
    if pattern is not None:
        keep = _affine_pattern(pattern, offset, channel_multiplier, a.shape[0], alu(cmp_op, "affine_select",
                                                                                      _COMPARE))
        if keep.shape[1] != n:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('on_true_tile', a.shape)}, pattern {list(pattern)}) of "
                            f"'affine_select' has mismatched shapes")
        keep = keep.reshape(a.shape)
    else:
        keep = check_mask(pred, "affine_select")
        if keep is None:
            raise nki_error("err_operand_cannot_be_none", "'pred' cannot be None.")
        try:
            keep = np.broadcast_to(keep, a.shape)
        except ValueError:
            raise nki_error("err_param_shape_incompatible_with_numpy",
                            f"Parameter shapes (pred{list(np.shape(keep))}, {shape_str('on_true_tile', a.shape)}) "
                            f"of 'affine_select' could not be broadcast together") from None
    if is_tile(on_false_value):
        raise nki_error("err_supported_operand_dtype",
                        "'on_false_value' of 'affine_select' must be a compile-time constant, not a tile, expected "
                        "one of the following dtypes: float32")
    valid = mask_array(mask, a.shape, "affine_select", ctx)
    vals = None
    if ctx.numerics:
        vals = np.where(keep, flat(a, ctx).reshape(a.shape), np.float32(on_false_value))
    out_dt = a.dtype if dtype is None else dtype
    return deliver(ctx, AFFINE_SELECT, a.shape, out_dt, vals, dst, reads=[a], valid=valid)


@op("nisa.range_select", emits=(RANGE_SELECT,))
def range_select(on_true_tile: Any = None, comp_op0: Any = None, comp_op1: Any = None, bound0: Any = None,
                 bound1: Any = None, reduce_cmd: Any = IDLE, reduce_res: Any = None, reduce_op: Any = "max",
                 range_start: float = 0.0, on_false_value: float = 0.0, *, dtype: Any = None, dst: Any = None,
                 mask: Any = None, name: str = "") -> Tensor | None:
    """``nisa.range_select`` (Vector, NeuronCore-v3+): keep elements whose free index + ``range_start``
    satisfies ``comp_op0(i, bound0) & comp_op1(i, bound1)``, else ``on_false_value``; optionally reduce
    the result per partition into the accumulator registers and ``reduce_res``."""
    ctx = current()
    if ctx.nc_version < 3:
        raise nki_error("err_min_arch_support_for_inst",
                        f"inst range_select requires min target gen3 (trn2), got {ctx.target}")
    op0, op1 = alu(comp_op0, "range_select", _COMPARE), alu(comp_op1, "range_select", _COMPARE)
    rop = alu(reduce_op, "range_select", ("max", "maximum", "min", "minimum", "add"))
    a = operands("range_select", on_true_tile=on_true_tile)["on_true_tile"]
    parts, n = a.shape[0], int(np.prod(a.shape[1:] or (1,)))
    b0 = per_partition("range_select", "bound0", bound0, parts, ctx)
    b1 = per_partition("range_select", "bound1", bound1, parts, ctx)
    valid = mask_array(mask, a.shape, "range_select", ctx)
    vals = partial = None
    if ctx.numerics:
        from nkisim.ops.optable import ALU

        idx = (np.float32(range_start) + np.arange(n, dtype=F32))[None, :]
        keep = np.logical_and(ALU[op0].fn(idx, b0), ALU[op1].fn(idx, b1))
        vals = np.where(keep, flat(a, ctx), np.float32(on_false_value)).astype(F32)
        partial = ALU[rop].reduce_fn(vals, axis=1)
    regs = accumulate(ctx, reduce_cmd, rop, partial)
    extra_writes = []
    if reduce_res is not None:
        extra_writes.append(write_reduce_res("range_select", reduce_res, regs))
    reads = [a] + [operands("range_select", **{k: v})[k] for k, v in (("bound0", bound0), ("bound1", bound1))
                   if is_tile(v)]
    out_dt = a.dtype if dtype is None else dtype
    return deliver(ctx, RANGE_SELECT, a.shape, out_dt, vals, dst, reads=reads, valid=valid,
                   extra_writes=extra_writes, extra={"reduce": rop})


def _predicate(inst: str, predicate: Any, shape: tuple[int, ...], reverse: bool, ctx: Any) -> tuple[Any, Any]:
    """(access, boolean values shaped ``(P, N)``) of an integer predicate tile matching ``shape``."""
    p = operands(inst, predicate=predicate)["predicate"]
    if p.shape[0] != shape[0] or int(np.prod(p.shape)) != int(np.prod(shape)):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('predicate', p.shape)}, {shape_str('data', shape)}) of "
                        f"'{inst}' has mismatched shapes")
    if not ctx.numerics:
        return p, None
    keep = flat(p, ctx, np.dtype(np.float64)) != 0
    return p, (~keep if reverse else keep)


@op("nisa.select_reduce", emits=(SELECT_REDUCE,))
def select_reduce(dst: Any = None, predicate: Any = None, on_true: Any = None, on_false: Any = 0.0,
                  reduce_res: Any = None, reduce_cmd: Any = IDLE, reduce_op: Any = "max", reverse_pred: bool = False,
                  *, dtype: Any = None, mask: Any = None, name: str = "") -> Tensor | None:
    """``nisa.select_reduce`` (Vector): ``where(predicate, on_true, on_false)`` into ``dst``, with an
    optional per-partition max into the accumulator registers and ``reduce_res``.  ``on_false`` is a
    float32 scalar or a ``[P, 1]`` vector."""
    ctx = current()
    rop = alu(reduce_op, "select_reduce", ("max", "maximum"))
    a = operands("select_reduce", on_true=on_true)["on_true"]
    parts = a.shape[0]
    p, keep = _predicate("select_reduce", predicate, a.shape, reverse_pred, ctx)
    if p.space == "psum" and a.space == "psum":
        raise nki_error("err_unsupported_memory",
                        "Expected operand 'predicate' of 'select_reduce' to be in address space 'sbuf', but got a "
                        "tile in 'psum' instead. (on_true and predicate cannot both be in PSUM)")
    f = per_partition("select_reduce", "on_false", on_false, parts, ctx)
    valid = mask_array(mask, a.shape, "select_reduce", ctx)
    vals = partial = None
    if ctx.numerics:
        vals = np.where(keep, flat(a, ctx), f).astype(F32)
        partial = np.max(vals, axis=1)
    extra_writes = []
    if reduce_res is not None or int(reduce_cmd or 0) != IDLE:
        regs = accumulate(ctx, reduce_cmd, rop, partial)
        if reduce_res is not None:
            extra_writes.append(write_reduce_res("select_reduce", reduce_res, regs))
    reads = [a, p] + ([operands("select_reduce", on_false=on_false)["on_false"]] if is_tile(on_false) else [])
    out_dt = a.dtype if dtype is None else dtype
    return deliver(ctx, SELECT_REDUCE, a.shape, out_dt, vals, dst, reads=reads, valid=valid,
                   extra_writes=extra_writes)


@op("nisa.tensor_copy_predicated", emits=(TENSOR_COPY_PREDICATED,))
def tensor_copy_predicated(src: Any = None, dst: Any = None, predicate: Any = None, reverse_pred: bool = False,
                           *, mask: Any = None, name: str = "") -> None:
    """``nisa.tensor_copy_predicated`` (Vector): copy ``src`` (a tile or a scalar) into ``dst`` where the
    predicate is non-zero; elsewhere ``dst`` keeps its values (so it is read as well as written)."""
    ctx = current()
    if dst is None:
        raise nki_error("err_operand_cannot_be_none", "'dst' cannot be None.")
    d = operands("tensor_copy_predicated", dst=dst)["dst"]
    p, keep = _predicate("tensor_copy_predicated", predicate, d.shape, reverse_pred, ctx)
    reads = [p, d]
    s = None
    if is_tile(src):
        s = operands("tensor_copy_predicated", src=src)["src"]
        if s.space == "psum" and p.space == "psum":
            raise nki_error("err_unsupported_memory",
                            "Expected operand 'predicate' of 'tensor_copy_predicated' to be in address space "
                            "'sbuf', but got a tile in 'psum' instead. (src and predicate cannot both be in PSUM)")
        if int(np.prod(s.shape)) != int(np.prod(d.shape)) or s.shape[0] != d.shape[0]:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('src', s.shape)}, {shape_str('dst', d.shape)}) of "
                            f"'tensor_copy_predicated' has mismatched shapes")
        reads.insert(0, s)
    valid = mask_array(mask, d.shape, "tensor_copy_predicated", ctx)
    vals = None
    if ctx.numerics:
        compute = dt.compute_dtype(d.dtype)
        old = flat(d, ctx, compute)
        vals = np.where(keep, flat(s, ctx, compute) if s is not None else src, old)
    return deliver(ctx, TENSOR_COPY_PREDICATED, d.shape, d.dtype, vals, dst, reads=reads, valid=valid)
