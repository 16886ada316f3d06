"""Instructions NKI 0.6 added to the ISA: ``exponential`` and ``activate2`` (NeuronCore-v4), ``nonzero_with_count``
(NeuronCore-v3+), ``topk``, ``nc_n_gather`` and ``dma_compute``.

Each is one registry entry: the compiler's checks at the kernel's line, the NumPy numerics (in fp32, cast once to
the destination's dtype) and the instruction it issues, priced by its kind in ``cost.instructions``.  Semantics and
restrictions follow the docstrings of AWS's ``nki/api/nki/isa/__init__.py`` (SDK 2.32); where a docstring leaves a
case open the choice made here is written in the op's docstring.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import KernelContext, current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read, read_masked, write
from nkisim.core.tensor import Access, as_access, is_tile, shape_str
from nkisim.cost.instructions import ACTIVATE2, DMA_COMPUTE, EXPONENTIAL, GATHER_FLATTENED, NONZERO_WITH_COUNT, TOPK
from nkisim.ops.base import dtype_in, emit, operand, operands, write_dst
from nkisim.ops.elementwise import values
from nkisim.ops.movement import gathered
from nkisim.ops.mx import check_packed_copy, needs_v4
from nkisim.ops.optable import ACTIVATIONS, ALU, op_name
from nkisim.ops.outputs import IDLE, LOAD_REDUCE, REDUCE, RESET, RESET_REDUCE, accumulate, per_partition
from nkisim.ops.registry import op

F32 = np.dtype(np.float32)
_CMD_NAMES = {IDLE: "idle", RESET: "reset", REDUCE: "reduce", RESET_REDUCE: "reset_reduce", LOAD_REDUCE: "load_reduce"}


def _free(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape[1:])) if len(shape) > 1 else 1


def _same_elements(api: str, a: Access, aname: str, d: Access, dname: str) -> None:
    if a.shape[0] != d.shape[0] or _free(a.shape) != _free(d.shape):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str(aname, a.shape)}, {shape_str(dname, d.shape)}) of '{api}' has "
                        f"mismatched shapes: they must have the same partitions and elements per partition")


def _command(api: str, reduce_cmd: Any, allowed: tuple[int, ...]) -> int:
    cmd = int(reduce_cmd or 0)
    if cmd not in allowed:
        raise nki_error("err_instruction_unsupported_op",
                        f"reduce_cmd={_CMD_NAMES.get(cmd, cmd)} is not supported in '{api}' (supported: "
                        f"{', '.join(_CMD_NAMES[c] for c in allowed)})")
    return cmd


def _reduce_res(api: str, reduce_res: Any, parts: int) -> Access:
    r = operands(api, reduce_res=reduce_res)["reduce_res"]
    if r.shape[0] != parts or _free(r.shape) != 1:
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
    _same_elements(api, a, "src", d, "dst")
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


# --- nonzero_with_count (GpSimd, NeuronCore-v3+) ----------------------------------------------------------------
def core_rows(parts: int, stride: int) -> np.ndarray:
    """The partitions GpSimd's cores read and write in ``nonzero_with_count``: each core's first one."""
    return np.arange(parts) % stride == 0


def _int32(api: str, pname: str, v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not -2**31 <= int(v) < 2**31:
        raise nki_error("err_supported_operand_dtype", f"'{pname}' of '{api}' must be an int32 integer, got {v!r}")
    return int(v)


@op("nisa.nonzero_with_count", emits=(NONZERO_WITH_COUNT,), spaces="sbuf")
def nonzero_with_count(src: Any, *, dst: Any, index_offset: Any = 0, padding_val: Any = -1, name: str = "") -> None:
    """``nisa.nonzero_with_count``: on partitions 0, 16, 32, ... only (the first partition of each GpSimd core's
    16), ``dst`` gets the free indices of ``src``'s nonzero elements plus ``index_offset``, then ``padding_val``
    up to ``src``'s length, then the count in its last slot; every other partition of ``dst`` is left as it was."""
    ctx = current()
    api = "nonzero_with_count"
    if ctx.nc_version < 3:
        raise nki_error("err_min_arch_support_for_inst",
                        f"inst {api} requires min target gen3 (trn2), got {ctx.target}")
    a = operands(api, src=src)["src"]
    d = as_access(operand(api, "dst", dst, ["sbuf"], ctx))
    dtype_in(api, "src", a, ("float32", "int32"))
    dtype_in(api, "dst", d, ("int32",))
    t = _free(a.shape)
    if d.shape[0] != a.shape[0] or _free(d.shape) != t + 1:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('src', a.shape)}, {shape_str('dst', d.shape)}) of '{api}' has "
                        f"mismatched shapes: dst needs src's partitions and one more element per partition ({t + 1}) "
                        f"for the count")
    offset, pad = _int32(api, "index_offset", index_offset), _int32(api, "padding_val", padding_val)
    rows = core_rows(a.shape[0], ctx.target.limit("gpsimd_core_partitions"))
    out_shape = (a.shape[0], t + 1)
    vals = None
    if ctx.numerics:
        x = values(a, ctx, np.dtype(np.float64)).reshape(a.shape[0], t)
        vals = np.full(out_shape, pad, dtype=np.int64)
        for p in np.flatnonzero(rows):
            idx = np.flatnonzero(x[p])
            vals[p, :len(idx)] = idx + offset
            vals[p, t] = len(idx)
        vals = vals.astype(np.int32).astype(np.int64)  # int32 wrap, as the 32-bit engine writes it
    # dst of any free shape holding t + 1 elements per partition (nki-library's find_nonzero_indices writes a
    # [C, 1, chunk + 1] tile): the values in its own shape
    shape = tuple(d.shape)
    valid = np.broadcast_to(rows.reshape((-1,) + (1,) * (len(shape) - 1)), shape)
    out = write_dst(ctx, api, dst, shape, None if vals is None else vals.reshape(shape), valid)
    emit(ctx, NONZERO_WITH_COUNT, reads=[a], writes=[out], n=t + 1)


# --- topk (GpSimd) ------------------------------------------------------------------------------------------------
def snake(block: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` elements of the snake a ``[16, cols]`` block holds: element ``i`` at ``[i % 16, i // 16]``."""
    return block.T.reshape(-1)[:n]


def ascending_top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``values`` (a lower index before a higher one among equals), in ascending order
    of value (so the largest comes last)."""
    return np.lexsort((np.arange(len(values)), -values))[:k][::-1]


@op("nisa.topk", emits=(TOPK,), spaces="sbuf")
def topk(src: Any, n: Any, *, val_dst: Any, idx_dst: Any, name: str = "") -> None:
    """``nisa.topk``: each group of 16 partitions holds one "snake" of ``n`` bf16 values (element ``i`` at partition
    ``i % 16`` of the group, column ``i // 16``); its K largest values (K = ``val_dst``'s free size) go to
    ``val_dst`` in ascending order and their snake indices to ``idx_dst`` (uint32).  Every partition of a group
    gets its group's result (AWS: each partition selects from the source snake).  Among equal values the lower
    index counts as larger, so it is written after the higher one."""
    ctx = current()
    api = "topk"
    a = operands(api, src=src)["src"]
    vd = as_access(operand(api, "val_dst", val_dst, ["sbuf"], ctx))
    idd = as_access(operand(api, "idx_dst", idx_dst, ["sbuf"], ctx))
    dtype_in(api, "src", a, ("bfloat16",))
    dtype_in(api, "val_dst", vd, ("bfloat16",))
    dtype_in(api, "idx_dst", idd, ("uint32",))
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise nki_error("err_supported_operand_dtype", f"'n' of '{api}' must be an integer, got {n!r}")
    n = int(n)
    group = ctx.target.limit("gpsimd_core_partitions")
    parts, cols = a.shape[0], _free(a.shape)
    if parts % group:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"size of dimension 0 in '{shape_str('src', a.shape)}' of '{api}' must be a multiple of "
                        f"{group} (one snake per GpSimd core's {group} partitions)")
    lo, hi, k_max = (ctx.target.limit(k) for k in ("topk_min_elements", "topk_max_elements", "topk_max_k"))
    if not lo <= n <= hi or cols * group < n:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"n={n} of '{api}' must be at least {lo}, at most {hi} and at most the snake's "
                        f"{cols * group} elements ({shape_str('src', a.shape)} holds {cols} per partition)")
    k = _free(vd.shape)
    for pname, acc in (("val_dst", vd), ("idx_dst", idd)):
        if len(acc.shape) != 2 or acc.shape[0] != parts or acc.shape[1] != k:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('val_dst', vd.shape)}, {shape_str(pname, acc.shape)}) of "
                            f"'{api}' has mismatched shapes: val_dst and idx_dst must both be [{parts}, K]")
    if not 1 <= k <= k_max or k > n:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"K={k} (val_dst's free size) of '{api}' must be at least 1, at most {k_max} and at most n={n}")
    top_v = top_i = None
    if ctx.numerics:
        x = values(a, ctx, F32).reshape(parts, cols)
        top_v = np.empty((parts, k), F32)
        top_i = np.empty((parts, k), np.int64)
        for g in range(parts // group):
            flat_snake = snake(x[g * group:(g + 1) * group], n)
            order = ascending_top(flat_snake, k)
            top_v[g * group:(g + 1) * group] = flat_snake[order]
            top_i[g * group:(g + 1) * group] = order
    vout = write_dst(ctx, api, val_dst, (parts, k), top_v)
    iout = write_dst(ctx, api, idx_dst, (parts, k), top_i)
    emit(ctx, TOPK, reads=[a], writes=[vout, iout], n=n, extra={"n": n, "k": k})


# --- nc_n_gather (GpSimd) ------------------------------------------------------------------------------------------
@op("nisa.nc_n_gather", emits=(GATHER_FLATTENED,), spaces="sbuf")
def nc_n_gather(data: Any, indices: Any, *, dst: Any, name: str = "") -> None:
    """``nisa.nc_n_gather``: per partition, ``dst`` gets the elements of ``data``'s flattened free axes at the uint32
    positions in ``indices`` (``dst`` and ``indices`` hold the same elements per partition): the GpSimd gather of
    ``nl.gather_flattened`` (same numerics, same instruction), with 0.6's stricter operand rules."""
    ctx = current()
    api = "nc_n_gather"
    a = operands(api, data=data)["data"]
    ix = operands(api, indices=indices)["indices"]
    d = as_access(operand(api, "dst", dst, ["sbuf"], ctx))
    dtype_in(api, "indices", ix, ("uint32",))
    if d.dtype != a.dtype:
        raise nki_error("err_supported_operand_dtype",
                        f"'dst' ({dt.name(d.dtype)}) of '{api}' must have the dtype of 'data' ({dt.name(a.dtype)})")
    if len({a.shape[0], ix.shape[0], d.shape[0]}) != 1:
        raise nki_error("err_num_partition_mismatch",
                        f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                        f"({shape_str('data', a.shape)}, {shape_str('indices', ix.shape)}, "
                        f"{shape_str('dst', d.shape)}) of '{api}'")
    _same_elements(api, ix, "indices", d, "dst")
    vals = gathered(api, a, ix, ctx) if ctx.numerics else None
    out = write_dst(ctx, api, dst, ix.shape, vals)
    emit(ctx, GATHER_FLATTENED, reads=[a, ix], writes=[out])


# --- dma_compute (DMA) ---------------------------------------------------------------------------------------------
#: AWS's words for dma_compute's read-modify-write (nki/api/nki/isa/__init__.py, dma_compute)
RMW_SOURCE = ("AWS's dma_compute docs: 'When one of the source tensors has a vector_offset (indirect indexing), "
              "dma_compute performs read-modify-write ... Scatter RMW: dst(HBM)[indices] = dst(HBM)[indices] + "
              "src(SB) ... Gather RMW: dst(SB) = dst(SB) + src(HBM)[indices] ... Both modes require: Exactly 2 source "
              "tensors ... unique_indices must be True (non-unique indices not yet supported)'")


def _indirect(a: Access) -> bool:
    return a.advanced and any(c[0] == "ind" for c in a.comps)


def _same_place(a: Access, b: Access) -> bool:
    """``a`` and ``b`` address the same elements of the same tensor (a source that 'matches dst')."""
    if a.tensor.root is not b.tensor.root or a.tensor.shape != b.tensor.shape or tuple(a.shape) != tuple(b.shape):
        return False
    return all(np.array_equal(np.broadcast_to(np.asarray(x), a.shape), np.broadcast_to(np.asarray(y), b.shape))
               for x, y in zip(a.grid_arrays(), b.grid_arrays()))


def _rmw(ctx: Any, d: Access, accs: list[Access], unique_indices: bool, oob_mode: Any) -> None:
    """dma_compute's read-modify-write through an indirect view, as AWS documents its two modes: scatter
    (``dst`` an indirect HBM view, one source the same view, the other SBUF data) and gather (``dst`` SBUF, one
    source the same tile, the other an indirect HBM view).  Each index's row is read, added in fp32 and written
    back (unique indices: no two partitions touch one row); ``oob_mode=skip`` leaves out-of-range partitions out.
    Priced as dma_copy's read-modify-write: one DMA reading both sources and writing dst."""
    from nkisim.ops.movement import indirect_in_bounds

    api = "dma_compute"
    if len(accs) != 2:
        raise nki_error("err_param_shape_mismatch",
                        f"'{api}' through an indirect (vector_offset) view takes exactly 2 source tensors, got "
                        f"{len(accs)} ({RMW_SOURCE})")
    if not unique_indices:
        raise nki_error("err_unsupported_dtype_value",
                        f"unique_indices=False of '{api}' through an indirect view: only unique indices are supported "
                        f"({RMW_SOURCE})")
    if d.space == "hbm" and _indirect(d):  # scatter: dst[idx] += data
        match = [i for i, a in enumerate(accs) if _indirect(a) and _same_place(a, d)]
        data = [a for i, a in enumerate(accs) if i not in match[:1]]
        if not match or data[0].space != "sbuf" or _indirect(data[0]):
            raise nki_error("err_operand_type",
                            f"'{api}' scatter read-modify-write: one source must be dst's own indirect view and the "
                            f"other SBUF data ({RMW_SOURCE})")
        view = d
    elif d.space == "sbuf" and not _indirect(d):  # gather: dst += src[idx]
        match = [i for i, a in enumerate(accs) if not _indirect(a) and _same_place(a, d)]
        data = [a for i, a in enumerate(accs) if i not in match[:1]]
        if not match or data[0].space != "hbm" or not _indirect(data[0]):
            raise nki_error("err_operand_type",
                            f"'{api}' gather read-modify-write: one source must be dst itself and the other an "
                            f"indirect (vector_offset) view of HBM ({RMW_SOURCE})")
        view = data[0]
    else:
        raise nki_error("err_operand_type",
                        f"'{api}' through an indirect view reads and writes either an indirect HBM dst (scatter) or "
                        f"an SBUF dst from an indirect HBM source (gather) ({RMW_SOURCE})")
    own, other = accs[match[0]], data[0]
    count = int(np.prod(d.shape))
    for i, a in enumerate(accs):
        check_packed_copy(api, a.dtype, d.dtype)
        if int(np.prod(a.shape)) != count:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str(f'srcs[{i}]', a.shape)}, {shape_str('dst', d.shape)}) of "
                            f"'{api}' has mismatched shapes: every source needs dst's {count} elements")
    skip = oob_mode is not None and int(oob_mode) == 1
    inb = indirect_in_bounds(view, skip)
    valid = None
    if inb is not None:
        valid = inb if view is d else inb.reshape(d.shape) if inb.size == count else None
    d.check_write(accumulate=True)
    vals = None
    if ctx.numerics:
        def get(a: Access) -> np.ndarray:
            if valid is None:
                return np.asarray(read(a))
            return np.asarray(read_masked(a, valid.reshape(a.shape)))
        vals = dma_sum([get(own), get(other)]).reshape(d.shape)
    write(d, vals, valid)
    nbytes = count * other.itemsize
    hbm = count * (d.itemsize if view is d else other.itemsize) * (2 if view is d else 1)
    extra: dict[str, Any] = {"rmw": "add", "hbm_bytes": hbm}
    if d.space == "sbuf":
        extra["rmw_sbuf"] = True
    emit(ctx, DMA_COMPUTE, reads=[other, own], writes=[d], nbytes=nbytes, extra=extra)
def dma_sum(arrays: list[np.ndarray]) -> np.ndarray:
    """The DMA compute engines' sum: every source widened to fp32, added in order in fp32 (flattened)."""
    total = np.zeros(arrays[0].size, F32)
    for a in arrays:
        total += a.astype(F32).reshape(-1)
    return total


@op("nisa.dma_compute", emits=(DMA_COMPUTE,), spaces="hbm|sbuf")
def dma_compute(srcs: Any, reduce_op: Any, *, dst: Any, scales: Any = None, unique_indices: bool = True,
                oob_mode: Any = 0, name: str = "") -> None:
    """``nisa.dma_compute``: ``dst = srcs[0] + srcs[1] + ...`` computed by the DMA engines in fp32 and cast once to
    ``dst``'s dtype, each operand in HBM or SBUF with ``dst``'s element count (any shape).  As AWS documents it today
    only ``nl.add`` with scales of 1.0 and at most 16 sources; through ``.ap(vector_offset=...)`` / ``vector_select``
    views the scatter/gather read-modify-write of ``_rmw``.  Priced as one DMA that moves every source's
    bytes at the DMA compute engine's throughput (the target's ``rmw_throughput``; ``rmw_sbuf_throughput`` into
    SBUF), and at least the HBM bytes it reads and writes at HBM bandwidth."""
    ctx = current()
    api = "dma_compute"
    if not isinstance(srcs, (list, tuple)) or not srcs:
        raise nki_error("err_operand_cannot_be_none", f"'srcs' of '{api}' must be a non-empty list of tensors")
    limit = ctx.target.limit("dma_compute_max_sources")
    if len(srcs) > limit:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"'{api}' takes at most {limit} source tensors, got {len(srcs)}")
    rname = op_name(reduce_op)
    if rname != "add":
        raise nki_error("err_instruction_unsupported_op", f"{rname} is not supported in '{api}' (only nl.add)")
    if scales is not None and (len(scales) != len(srcs) or any(is_tile(s) or float(s) != 1.0 for s in scales)):
        raise nki_error("err_unsupported_dtype_value",
                        f"scales={list(scales)!r} of '{api}': one scale per source, all 1.0 (the only value the DMA "
                        f"engines support today)")
    allowed = ["hbm", "sbuf"]
    d = as_access(operand(api, "dst", dst, allowed, ctx))
    accs = [as_access(operand(api, f"srcs[{i}]", s, allowed, ctx)) for i, s in enumerate(srcs)]
    if any(_indirect(a) for a in [d, *accs]):
        _rmw(ctx, d, accs, unique_indices, oob_mode)
        return
    count = int(np.prod(d.shape))
    for i, s in enumerate(accs):
        check_packed_copy(api, s.dtype, d.dtype)
        if int(np.prod(s.shape)) != count:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str(f'srcs[{i}]', s.shape)}, {shape_str('dst', d.shape)}) of "
                            f"'{api}' has mismatched shapes: every source needs dst's {count} elements")
    d.check_write()
    vals = None
    if ctx.numerics:
        vals = dma_sum([np.asarray(read(s)) for s in accs]).reshape(d.shape)
    write(d, vals)
    src_bytes = sum(int(np.prod(s.shape)) * s.itemsize for s in accs)
    hbm = sum(int(np.prod(s.shape)) * s.itemsize for s in accs if s.space == "hbm") + \
        (count * d.itemsize if d.space == "hbm" else 0)
    extra: dict[str, Any] = {"rmw": "add"}
    if d.space == "sbuf":
        extra["rmw_sbuf"] = True
    if hbm:
        extra["hbm_bytes"] = hbm
    emit(ctx, DMA_COMPUTE, reads=accs, writes=[d], nbytes=src_bytes, extra=extra)
