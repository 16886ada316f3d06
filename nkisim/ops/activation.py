"""Activation instructions, the Scalar engine's functions and their NeuronCore-v4 relatives: ``nisa.activation``
and ``activation_reduce``, ``nisa.exponential`` (VectorE, NeuronCore-v4) and ``nisa.activate2`` (ScalarE,
NeuronCore-v4).

Each is one registry entry: the compiler's checks at the kernel's line, the NumPy numerics (in fp32, cast once to the
destination's dtype) and the instruction it issues, priced by its kind in ``cost.instructions``.  The 0.6 ones follow
the docstrings of AWS's ``nki/api/nki/isa/__init__.py`` (SDK 2.32); where a docstring leaves a case open the choice
made here is written in the op's docstring.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import KernelContext, current
from nkisim.core.errors import nki_error
from nkisim.core.storage import write
from nkisim.core.tensor import Access, Tensor, as_access, is_tile, shape_str
from nkisim.cost.instructions import (
    ACTIVATE2,
    ACTIVATION,
    EXPONENTIAL,
)
from nkisim.ops import reduce as red
from nkisim.ops.base import dtype_in, emit, mask_array, new_tile, operand, operands, region, write_dst
from nkisim.ops.elementwise import values
from nkisim.ops.mx import needs_v4
from nkisim.ops.optable import ACTIVATIONS, ALU, op_name
from nkisim.ops.outputs import (
    F32,
    IDLE,
    LOAD_REDUCE,
    REDUCE,
    RESET,
    RESET_REDUCE,
    accumulate,
    alu,
    free_elements,
    per_partition,
    same_elements,
)
from nkisim.ops.registry import op


@op("nisa.activation", emits=(ACTIVATION,))
def activation(op: Any, data: Any, *, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: int = 0, mask: Any = None, dtype: Any = None, dst: Any = None,
               name: str = "") -> Tensor | None:
    """``nisa.activation``: op(data * scale + bias) on the Scalar Engine, optional free-axis reduce."""
    ctx = current()
    name = op_name(op)
    if name not in ACTIVATIONS:
        raise nki_error("err_instruction_unsupported_op", f"{name} is not supported in 'activation'")
    a = operands("activation", data=data)["data"]
    if bias is not None:
        b = operands("activation", bias=bias)["bias"]
        if b.dtype not in (dt.float32, dt.float16, dt.bfloat16):
            raise nki_error("err_activation_bias_invalid_type",
                            f"'bias' param of 'activation' must be a vector of type float32, float16, or bfloat16, "
                            f"got '{dt.name(b.dtype)}'")
    if is_tile(scale):
        s = operands("activation", scale=scale)["scale"]
        if s.dtype != dt.float32:
            raise nki_error("err_activation_scale_invalid_type",
                            f"'scale' param of 'activation' must be a scalar or vector of type float32, got "
                            f"'{dt.name(s.dtype)}'")
        if s.shape[0] != a.shape[0] or math.prod(s.shape[1:]) != 1:
            raise nki_error("err_activation_scale_scalar_or_vector",
                            f"'scale' param of 'activation' can only be a scalar or a vector in partition "
                            f"dimension, scale.shape={list(s.shape)}")
    bias_v = per_partition("activation", "bias", bias, a.shape[0], ctx, len(a.shape)) if bias is not None else None
    scale_v = per_partition("activation", "scale", scale, a.shape[0], ctx, len(a.shape))
    valid = mask_array(mask, a.shape, "activation")
    out_dt = a.dtype if dtype is None else dt.normalize(dtype)
    vals = None
    if ctx.numerics:
        x = values(a, ctx, F32)
        if not (np.ndim(scale_v) == 0 and float(scale_v) == 1.0):
            x = x * scale_v
        if bias_v is not None:
            x = x + bias_v
        vals = ACTIVATIONS[name].fn(x)
    reads = [a] + [as_access(v) for v in (bias, scale) if is_tile(v)]
    if dst is not None:
        out = write_dst(ctx, "activation", dst, a.shape, vals, valid)
        instruction = emit(ctx, ACTIVATION, reads=reads, writes=[out], extra={"func": name})
    else:
        tile = out = new_tile(ctx, a.shape, out_dt, vals, valid)
        instruction = tile.producer = emit(ctx, ACTIVATION, reads=reads, writes=[tile.full()], extra={"func": name})
    if reduce_res is not None and (reduce_op is not None or int(reduce_cmd) in (2, 3)):
        r = operands("activation", reduce_res=reduce_res)["reduce_res"]
        rop = "add" if reduce_op is None else alu(reduce_op, "activation")
        res = None
        if ctx.numerics:
            outv = values(as_access(out), ctx, F32)
            axes = tuple(range(1, outv.ndim))
            res = red.reduce_values(rop, outv, axes, False)
            if int(reduce_cmd) == 2 and ctx.act_accum is not None:
                res = ALU[rop].fn(ctx.act_accum, res)
            ctx.act_accum = res
            res = res.reshape(r.shape)
        r.check_write()
        write(r, res)
        instruction.extra["reduce"] = rop
        instruction.writes = instruction.writes + (emit_region(r),)
    return None if dst is not None else tile


def emit_region(acc: Access) -> tuple:
    return region(acc)


@op("nisa.activation_reduce", emits=(ACTIVATION,))
def activation_reduce(op: Any, data: Any, *, reduce_op: Any, reduce_res: Any, bias: Any = None, scale: Any = 1.0,
                      mask: Any = None, dtype: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.activation_reduce``: activation plus a reduction of all free axes into reduce_res."""
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res, reduce_cmd=3,
                      mask=mask, dtype=dtype, dst=dst)


_CMD_NAMES = {IDLE: "idle", RESET: "reset", REDUCE: "reduce", RESET_REDUCE: "reset_reduce", LOAD_REDUCE: "load_reduce"}


def _command(api: str, reduce_cmd: Any, allowed: tuple[int, ...]) -> int:
    cmd = int(reduce_cmd or 0)
    if cmd not in allowed:
        raise nki_error("err_instruction_unsupported_op",
                        f"reduce_cmd={_CMD_NAMES.get(cmd, cmd)} is not supported in '{api}' (supported: "
                        f"{', '.join(_CMD_NAMES[c] for c in allowed)})")
    return cmd


def _reduce_res(api: str, reduce_res: Any, parts: int) -> Access:
    r = operands(api, reduce_res=reduce_res)["reduce_res"]
    if r.shape[0] != parts or free_elements(r.shape) != 1:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('reduce_res', r.shape)}) of '{api}' has mismatched shapes: "
                        f"'reduce_res' must be [{parts}, 1] (one value per partition)")
    return r


def _write_column(ctx: KernelContext, api: str, r: Access, regs: np.ndarray | None) -> Access:
    r.check_write()
    return write_dst(ctx, api, r, r.shape, None if regs is None else np.asarray(regs, F32).reshape(r.shape))


# --- exponential (VectorE, NeuronCore-v4) -----------------------------------------------------------------------
_EXP_SRC = ("float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "int8", "int16", "int32", "uint8",
            "uint16", "uint32")


@op("nisa.exponential", emits=(EXPONENTIAL,))
def exponential(src: Any, *, dst: Any, max_value: Any = 0.0, reduce_res: Any = None, reduce_cmd: Any = IDLE,
                reduce_init: Any = 0.0, name: str = "") -> None:
    """``nisa.exponential``: ``dst = exp(src - max_value)`` on the Vector engine in fp32, ``max_value`` a scalar or
    one value per partition; with a ``reduce_cmd`` other than idle each partition's sum of the results goes into the
    Vector engine's accumulator registers (shared with ``select_reduce``, ``range_select``, ...), starting from 0
    (``reset_reduce``), ``reduce_init`` (``load_reduce``) or what they hold (``reduce``), and into ``reduce_res``
    when given.  The sum adds the fp32 results, before the cast to ``dst``'s dtype.  ``reduce_res`` with
    ``reduce_cmd=idle`` is refused: the registers' state is then undefined (AWS: "accumulator state unknown")."""
    ctx = current()
    api = "exponential"
    needs_v4(api)
    a = operands(api, src=src)["src"]
    d = as_access(operand(api, "dst", dst, ["psum", "sbuf"], ctx))
    for pname, acc in (("src", a), ("dst", d)):
        if len(acc.shape) > 4:
            raise nki_error("err_exceed_max_supported_dimension",
                            f"parameter '{shape_str(pname, acc.shape)}' of '{api}' exceed max supported number of "
                            f"dimensions of 4.")
    dtype_in(api, "src", a, _EXP_SRC)
    if dt.name(d.dtype) == "uint32" or dt.is_packed(d.dtype):
        raise nki_error("err_supported_operand_dtype", f"'dst' of '{api}' cannot have dtype {dt.name(d.dtype)}")
    same_elements(api, a, "src", d, "dst")
    cmd = _command(api, reduce_cmd, (IDLE, RESET_REDUCE, REDUCE, LOAD_REDUCE))
    if cmd != LOAD_REDUCE and (is_tile(reduce_init) or float(reduce_init) != 0.0):
        raise nki_error("err_instruction_unsupported_op",
                        f"reduce_init={reduce_init!r} of '{api}' is used by reduce_cmd=load_reduce only: leave it 0.0 "
                        f"with reduce_cmd={_CMD_NAMES[cmd]}")
    if reduce_res is not None and cmd == IDLE:
        raise nki_error("err_instruction_unsupported_op",
                        f"'reduce_res' of '{api}' with reduce_cmd=idle: the accumulator is not updated (its state is "
                        f"undefined); use reset_reduce, reduce or load_reduce")
    parts = a.shape[0]
    for pname, v in (("max_value", max_value), ("reduce_init", reduce_init)):
        if is_tile(v) and operands(api, **{pname: v})[pname].dtype != dt.float32:
            raise nki_error("err_supported_operand_dtype", f"'{pname}' of '{api}' must be float32")
    m = per_partition(api, "max_value", max_value, parts, ctx, len(a.shape))
    init = per_partition(api, "reduce_init", reduce_init, parts, ctx, 2)
    r = _reduce_res(api, reduce_res, parts) if reduce_res is not None else None
    vals = regs = None
    if ctx.numerics:
        x = values(a, ctx, F32)
        vals = np.exp(x - m).astype(F32)
        if cmd != IDLE:
            regs = accumulate(ctx, cmd, "add", vals.reshape(parts, -1).sum(axis=1, dtype=F32), load=init)
    out = write_dst(ctx, api, dst, a.shape, vals)
    writes = [out] + ([_write_column(ctx, api, r, regs)] if r is not None else [])
    reads = [a] + [as_access(v) for v in (max_value, reduce_init) if is_tile(v)]
    # the accumulator's read-out into reduce_res costs what activation's does (cost.costs)
    emit(ctx, EXPONENTIAL, reads=reads, writes=writes, extra={"reduce": "add"} if r is not None else None)


# --- activate2 (ScalarE, NeuronCore-v4) -------------------------------------------------------------------------
#: the (op0, op1) pairs the Scalar engine's tensor-scalar stage supports
ACTIVATE2_PAIRS = (("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"), ("add", "bypass"),
                   ("subtract", "bypass"), ("bypass", "bypass"))


_ACT2_REDUCE = {"add": "add", "max": "maximum", "maximum": "maximum", "min": "minimum", "minimum": "minimum",
                "abs_max": "abs_max", "abs_min": "abs_min"}


REDUCE_IDENTITY = {"add": 0.0, "maximum": -np.inf, "minimum": np.inf, "abs_max": 0.0, "abs_min": np.inf}


def _prelu(x: np.ndarray, alpha: Any) -> np.ndarray:
    return np.where(x >= 0, x, x * alpha)


@op("nisa.activate2", emits=(ACTIVATE2,))
def activate2(op: Any, data: Any, imm0: Any, imm1: Any, op0: Any, op1: Any, *, relu_param: Any = 0.0,
              reverse0: bool = False, reverse1: bool = False, reduce_op: Any = None, reduce_res: Any = None,
              reduce_cmd: Any = IDLE, dst: Any = None, name: str = "") -> None:
    """``nisa.activate2``: ``dst = op((data op0 imm0) op1 imm1)`` on the Scalar engine in fp32 (``reverse0`` /
    ``reverse1`` swap an operator's operands; ``nl.bypass`` skips a stage), for the six (op0, op1) pairs in
    ``ACTIVATE2_PAIRS``; ``relu_param`` is the slope of ``nl.prelu`` below zero.  ``reduce_cmd`` drives the Scalar
    engine's accumulator registers (shared with ``activation``): ``reset`` sets them to ``reduce_op``'s identity,
    ``reset_reduce`` resets then reduces each partition's results into them, ``reduce`` reduces on top of what they
    hold, ``idle`` leaves them; ``reduce_res`` receives what they hold after the instruction."""
    ctx = current()
    api = "activate2"
    needs_v4(api)
    fname = op_name(op)
    if fname not in ACTIVATIONS and fname != "prelu":
        raise nki_error("err_instruction_unsupported_op", f"{fname} is not supported in '{api}'")
    n0, n1 = op_name(op0), op_name(op1)
    if (n0, n1) not in ACTIVATE2_PAIRS:
        raise nki_error("err_instruction_unsupported_op",
                        f"(op0, op1) = ({n0}, {n1}) is not supported in '{api}': the pairs are "
                        f"{', '.join(f'({x}, {y})' for x, y in ACTIVATE2_PAIRS)}")
    for flag, opname, pname in ((reverse0, n0, "reverse0"), (reverse1, n1, "reverse1")):
        if flag and opname == "bypass":
            raise nki_error("err_instruction_unsupported_op", f"{pname}=True of '{api}' needs its operator to be set, not "
                                                    f"nl.bypass")
    a = operands(api, data=data)["data"]
    imms = {k: operands(api, **{k: v})[k] for k, v in (("imm0", imm0), ("imm1", imm1)) if is_tile(v)}
    if len(imms) == 2 and imms["imm0"].dtype != imms["imm1"].dtype:
        raise nki_error("err_supported_operand_dtype",
                        f"'imm0' ({dt.name(imms['imm0'].dtype)}) and 'imm1' ({dt.name(imms['imm1'].dtype)}) of "
                        f"'{api}' must have the same dtype")
    cmd = _command(api, reduce_cmd, (IDLE, RESET, REDUCE, RESET_REDUCE))
    rop = None
    if reduce_op is not None:
        rname = op_name(reduce_op)
        if rname not in _ACT2_REDUCE:
            raise nki_error("err_instruction_unsupported_op",
                            f"reduce_op {rname} is not supported in '{api}' (add, maximum, minimum, abs_max, abs_min)")
        rop = _ACT2_REDUCE[rname]
    elif cmd in (REDUCE, RESET_REDUCE, RESET):
        raise nki_error("err_operand_cannot_be_none",
                        f"'reduce_op' of '{api}' cannot be None with reduce_cmd={_CMD_NAMES[cmd]}")
    parts, nd = a.shape[0], len(a.shape)
    v0, v1, alpha = (per_partition(api, k, v, parts, ctx, nd)
                     for k, v in (("imm0", imm0), ("imm1", imm1), ("relu_param", relu_param)))
    r = _reduce_res(api, reduce_res, parts) if reduce_res is not None else None
    vals = regs = None
    if ctx.numerics:
        x = values(a, ctx, F32)
        for opname, v, rev in ((n0, v0, reverse0), (n1, v1, reverse1)):
            if opname != "bypass":
                x = ALU[opname].fn(v, x) if rev else ALU[opname].fn(x, v)
        vals = (_prelu(x, alpha) if fname == "prelu" else ACTIVATIONS[fname].fn(x)).astype(F32)
        regs = ctx.act_accum if np.size(ctx.act_accum) == parts else None  # (another tile's registers: not ours)
        if rop is not None:
            if cmd in (RESET, RESET_REDUCE) or regs is None:
                regs = np.full((parts,), REDUCE_IDENTITY[rop], F32)
            regs = np.asarray(regs, F32).reshape(parts)
            if cmd in (REDUCE, RESET_REDUCE):
                fn = ALU[rop].fn
                for col in vals.reshape(parts, -1).T:
                    regs = fn(regs, col)
            ctx.act_accum = regs = np.asarray(regs, F32)
        if r is not None and regs is None:
            raise nki_error("err_instruction_unsupported_op",
                            f"'reduce_res' of '{api}' reads the Scalar engine's accumulators, which no instruction "
                            f"has set: pass reduce_op= with reduce_cmd=reset_reduce")
    out = write_dst(ctx, api, dst, a.shape, vals)
    writes = [out] + ([_write_column(ctx, api, r, regs)] if r is not None else [])
    reads = [a] + [as_access(v) for v in (imm0, imm1, relu_param) if is_tile(v)]
    extra: dict[str, Any] = {"func": fname}
    if r is not None:  # AWS: reduce_res adds an instruction that reads the accumulators out (priced in cost.costs)
        extra["reduce"] = rop or "held"
    emit(ctx, ACTIVATE2, reads=reads, writes=writes, extra=extra)
