"""Running (scan) and fused-reduction Vector-engine instructions: ``tensor_tensor_scan``,
``tensor_scalar_cumulative`` and ``tensor_scalar_reduce`` (issue 12; semantics from the NKI ISA
reference).  Each runs along the flattened free elements of every partition, in fp32.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.tensor import Tensor, is_tile, shape_str
from nkisim.cost.instructions import TENSOR_SCALAR_CUMULATIVE, TENSOR_SCALAR_REDUCE, TENSOR_TENSOR_SCAN
from nkisim.ops.base import mask_array, operands
from nkisim.ops.optable import ACTIVATIONS, ALU, ARITH_UNARY, op_name
from nkisim.ops.outputs import (
    F32,
    LOAD_REDUCE,
    REDUCE,
    RESET_REDUCE,
    accumulate,
    alu,
    deliver,
    flat,
    per_partition,
    register_start,
    write_reduce_res,
)
from nkisim.ops.registry import op

_ARITH = ("add", "subtract", "multiply", "divide", "max", "min", "maximum", "minimum", "power", "mod", "fmod")
_RUNNING = ("add", "subtract", "multiply", "max", "min", "maximum", "minimum")
#: the "Arithmetic Unary" operators (optable.ARITH_UNARY): an ``op0`` of tensor_scalar_reduce that ignores
#: ``operand0`` (nki-library's rmsnorm_quant: ``op0=nl.abs, operand0=0.0``)
_UNARY = ARITH_UNARY


def _apply(op: str, x: Any, y: Any, reverse: bool) -> Any:
    """``op(x, y)``, or ``op(y, x)`` when the instruction's ``reverse`` flag swaps the operands."""
    fn = ALU[op].fn
    return fn(y, x) if reverse else fn(x, y)


def _tile_reads(inst: str, **named: Any) -> list:
    return [operands(inst, **{k: v})[k] for k, v in named.items() if is_tile(v)]


#: operators whose fp32 result is the correctly rounded one however NumPy computes it
_EXACT = ("add", "subtract", "multiply", "divide")


def linear_scan(n0: str, n1: str, x: np.ndarray, y: np.ndarray, prev: np.ndarray, reverse0: bool = False,
                reverse1: bool = False) -> np.ndarray:
    """``r[i] = op1(op0(x[:, i], r[i-1]), y[:, i])`` along the columns of ``x`` and ``y`` from ``r[-1] = prev``
    (``[P]`` fp32), rounded to fp32 at each step: ``tensor_tensor_scan``'s values, ``[P, F]`` fp32.

    The recurrence is sequential, so the plain form is a loop over columns (``scan_by_column``), a few NumPy calls
    per element column.  Two forms give the same bits faster, and nki-library's kernels (cumsum, at up to 20,480
    rows of 6,144) are what they are for: a cumulative sum (``op0`` multiply by a ``data0`` of ones, ``op1`` add) is
    ``np.add.accumulate`` from ``prev``, which adds strictly in order, ``r[i-1] + y[i]`` in fp32 as the loop does
    (a product by 1.0 is exact, NaN included, and an operand's order is kept); any other pair of fp32 ufuncs runs
    the loop over contiguous columns into preallocated rows (``out=``: the same ufunc loop on the same fp32
    operands, without a new array and a cast per step).  Only for the four operators IEEE rounds exactly
    (``_EXACT``): NumPy may compute a contiguous row and a strided column by different code (SIMD or not), which
    for ``maximum`` of -0.0 and 0.0, ``power`` or ``fmod`` need not agree.  tests/test_scan_fast.py compares the
    forms bit for bit."""
    f0, f1 = ALU[n0].fn, ALU[n1].fn
    if not (n0 in _EXACT and n1 in _EXACT and x.dtype == F32 and y.dtype == F32 and prev.dtype == F32
            and _fp32_ufunc(f0) and _fp32_ufunc(f1)):
        return scan_by_column(n0, n1, x, y, prev, reverse0, reverse1)
    if n0 == "multiply" and n1 == "add" and not reverse1 and bool((x == 1).all()):
        return np.add.accumulate(np.concatenate([prev[:, None], y], axis=1), axis=1)[:, 1:]
    xt, yt = np.ascontiguousarray(x.T), np.ascontiguousarray(y.T)
    out = np.empty_like(yt)
    tmp = np.empty_like(prev)
    for i in range(out.shape[0]):
        if reverse0:
            f0(prev, xt[i], out=tmp)
        else:
            f0(xt[i], prev, out=tmp)
        prev = out[i]
        if reverse1:
            f1(yt[i], tmp, out=prev)
        else:
            f1(tmp, yt[i], out=prev)
    return out.T.copy()


def _fp32_ufunc(fn: Any) -> bool:
    """``fn`` is a NumPy ufunc with a loop from two fp32 operands to an fp32 result (the one it picks for them)."""
    return isinstance(fn, np.ufunc) and fn.nin == 2 and "ff->f" in fn.types


def scan_by_column(n0: str, n1: str, x: np.ndarray, y: np.ndarray, prev: np.ndarray, reverse0: bool = False,
                   reverse1: bool = False) -> np.ndarray:
    """``linear_scan`` as the recurrence reads: one column at a time, each step's result cast to fp32."""
    vals = np.empty_like(x)
    for i in range(x.shape[1]):
        prev = _apply(n1, _apply(n0, x[:, i], prev, reverse0), y[:, i], reverse1).astype(F32)
        vals[:, i] = prev
    return vals


@op("nisa.tensor_tensor_scan", emits=(TENSOR_TENSOR_SCAN,))
def tensor_tensor_scan(data0: Any = None, data1: Any = None, initial: Any = 0.0, op0: Any = "multiply",
                       op1: Any = "add", reverse0: bool = False, reverse1: bool = False, *, dtype: Any = None,
                       mask: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.tensor_tensor_scan`` (Vector): ``r[i] = op1(op0(data0[i], r[i-1]), data1[i])`` along the
    free elements of each partition, starting from ``initial`` (a scalar or a ``[P, 1]`` tile) --
    the first-order linear recurrences of state-space models."""
    ctx = current()
    n0, n1 = alu(op0, "tensor_tensor_scan", _ARITH), alu(op1, "tensor_tensor_scan", _ARITH)
    accs = operands("tensor_tensor_scan", data0=data0, data1=data1)
    a, b = accs["data0"], accs["data1"]
    if a.shape[0] != b.shape[0] or math.prod(a.shape) != math.prod(b.shape):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('data0', a.shape)}, {shape_str('data1', b.shape)}) of "
                        f"'tensor_tensor_scan' has mismatched shapes")
    if a.space == "psum" and b.space == "psum":
        raise nki_error("err_unsupported_memory",
                        "Expected operand 'data1' of 'tensor_tensor_scan' to be in address space 'sbuf', but got a "
                        "tile in 'psum' instead. (data0 and data1 cannot both be in PSUM)")
    init = per_partition("tensor_tensor_scan", "initial", initial, a.shape[0], ctx)
    valid = mask_array(mask, a.shape, "tensor_tensor_scan", ctx)
    vals = None
    if ctx.numerics:
        x, y = flat(a, ctx), flat(b, ctx)
        prev = np.broadcast_to(init, (x.shape[0], 1))[:, 0].astype(F32)
        vals = linear_scan(n0, n1, x, y, prev, reverse0, reverse1)
    out_dt = a.dtype if dtype is None else dtype
    reads = [a, b] + _tile_reads("tensor_tensor_scan", initial=initial)
    return deliver(ctx, TENSOR_TENSOR_SCAN, a.shape, out_dt, vals, dst, reads=reads, valid=valid,
                   extra={"alu": (n0, n1)})


@op("nisa.tensor_scalar_cumulative", emits=(TENSOR_SCALAR_CUMULATIVE,))
def tensor_scalar_cumulative(src: Any = None, dst: Any = None, op0: Any = "add", op1: Any = "add", imm0: Any = 0.0,
                             imm1: Any = None, reduce_cmd: Any = RESET_REDUCE, reverse0: bool = False, *,
                             dtype: Any = None, mask: Any = None, name: str = "") -> Tensor | None:
    """``nisa.tensor_scalar_cumulative`` (Vector): ``reg = op1(op0(src[i], imm0), reg)``, ``dst[i] = reg``.

    The register starts from ``op1``'s identity (``reset_reduce``), from ``imm1`` (``load_reduce``) or
    from where the previous accumulating instruction left it (``reduce``), and stays there for the next.
    """
    ctx = current()
    n0 = alu(op0, "tensor_scalar_cumulative", _ARITH)
    n1 = alu(op1, "tensor_scalar_cumulative", _RUNNING)
    a = operands("tensor_scalar_cumulative", src=src)["src"]
    parts = a.shape[0]
    v0 = per_partition("tensor_scalar_cumulative", "imm0", imm0, parts, ctx)
    v1 = None if imm1 is None else per_partition("tensor_scalar_cumulative", "imm1", imm1, parts, ctx)
    valid = mask_array(mask, a.shape, "tensor_scalar_cumulative", ctx)
    vals = None
    if ctx.numerics:
        x = _apply(n0, flat(a, ctx), v0, reverse0).astype(F32)
        reg = register_start(ctx, reduce_cmd, n1, parts, v1)
        if ALU[n1].reduce_fn is not None:  # an associative ufunc (the op table's reducible ones): one NumPy pass
            vals = ALU[n1].fn.accumulate(np.concatenate([reg[:, None], x], axis=1), axis=1)[:, 1:].astype(F32)
        else:
            vals = np.empty_like(x)
            for i in range(x.shape[1]):
                reg = ALU[n1].fn(x[:, i], reg).astype(F32)
                vals[:, i] = reg
        ctx.dve_accum = vals[:, -1].copy()
    out_dt = a.dtype if dtype is None else dtype
    if dst is not None:
        out_dt = operands("tensor_scalar_cumulative", dst=dst)["dst"].dtype
    reads = [a] + _tile_reads("tensor_scalar_cumulative", imm0=imm0, imm1=imm1)
    return deliver(ctx, TENSOR_SCALAR_CUMULATIVE, a.shape, out_dt, vals, dst, reads=reads, valid=valid,
                   extra={"alu": (n0, n1)})


@op("nisa.tensor_scalar_reduce", emits=(TENSOR_SCALAR_REDUCE,))
def tensor_scalar_reduce(data: Any = None, op0: Any = "add", operand0: Any = 0.0, reduce_op: Any = "add",
                         reduce_res: Any = None, reverse0: bool = False, *, dtype: Any = None, mask: Any = None,
                         dst: Any = None, name: str = "", reduce_cmd: Any = None, reduce_init: Any = None,
                         reduce_res_negate: bool = False) -> Tensor | None:
    """``nisa.tensor_scalar_reduce`` (Vector): ``data op0 operand0`` like ``tensor_scalar`` with one
    operator, plus its reduction over all free axes into the Vector engine's accumulator registers, read out
    into ``reduce_res`` (``[P, 1]``), negated there with ``reduce_res_negate`` (the registers keep the sum).

    ``reduce_cmd`` (NKI 0.6; None is the legacy call: reset_reduce, ``reduce_res`` required): ``reset_reduce``
    starts from the operator's identity, ``reduce`` from what the registers hold, ``load_reduce`` from
    ``reduce_init`` (a float32 scalar or ``[P, 1]`` tile).  With ``reduce_res=None`` the result stays in the
    registers for a later call to read out (AWS's isa docs, tensor_scalar_reduce)."""
    ctx = current()
    api = "tensor_scalar_reduce"
    unary = op_name(op0) in _UNARY
    n0 = op_name(op0) if unary else alu(op0, api, _ARITH)
    rop = alu(reduce_op, api, _RUNNING)
    legacy = reduce_cmd is None
    cmd = RESET_REDUCE if legacy else int(reduce_cmd)
    if reduce_res is None and legacy:
        raise nki_error("err_operand_cannot_be_none", "'reduce_res' cannot be None.")
    if cmd not in (RESET_REDUCE, REDUCE, LOAD_REDUCE):
        raise nki_error("err_instruction_unsupported_op",
                        f"reduce_cmd of '{api}' must be reset_reduce, reduce or load_reduce (the ones AWS's "
                        f"tensor_scalar_reduce supports)")
    if cmd == LOAD_REDUCE and reduce_init is None:
        raise nki_error("err_operand_cannot_be_none", f"'reduce_init' of '{api}' must be given with "
                                                      f"reduce_cmd=load_reduce")
    a = operands(api, data=data)["data"]
    if is_tile(reduce_init) and operands(api, reduce_init=reduce_init)["reduce_init"].dtype != F32:
        raise nki_error("err_supported_operand_dtype", f"'reduce_init' of '{api}' must be float32")
    v0 = per_partition(api, "operand0", operand0, a.shape[0], ctx)
    init = None if reduce_init is None else per_partition(api, "reduce_init", reduce_init, a.shape[0], ctx, 2)
    valid = mask_array(mask, a.shape, api, ctx)
    vals = partial = None
    if ctx.numerics:
        x = flat(a, ctx)
        vals = (ACTIVATIONS[n0].fn(x) if unary else _apply(n0, x, v0, reverse0)).astype(F32)
        kept = vals if valid is None or valid.ndim == 0 else np.where(
            np.broadcast_to(valid, a.shape).reshape(vals.shape), vals, np.nan)
        partial = _reduce_rows(rop, kept)
    regs = accumulate(ctx, cmd, rop, partial, load=init)
    writes = []
    if reduce_res is not None:  # the negation is the read-out's: the registers keep the reduction itself
        writes.append(write_reduce_res(api, reduce_res, -regs if regs is not None and reduce_res_negate else regs))
    out_dt = a.dtype if dtype is None else dtype
    reads = [a] + _tile_reads(api, operand0=operand0, reduce_init=reduce_init)
    return deliver(ctx, TENSOR_SCALAR_REDUCE, a.shape, out_dt, vals, dst, reads=reads, valid=valid,
                   extra_writes=writes, extra={"alu": n0, "reduce": rop})


def _reduce_rows(op: str, x: np.ndarray) -> np.ndarray:
    """Per-partition reduction that skips masked-off elements (held as NaN)."""
    if op in ("add", "subtract"):
        return np.nansum(x, axis=1).astype(F32)
    if op == "multiply":
        return np.nanprod(x, axis=1).astype(F32)
    # fmax/fmin skip NaN as nanmax does, without its warning for a row masked off entirely (a ragged last tile)
    return (np.fmax if "max" in op else np.fmin).reduce(x, axis=1).astype(F32)
