"""Tensor Engine operations: matmul (PSUM fp32 accumulation) and transposes."""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core import syntax
from nkisim.core.access import MaskedAccess
from nkisim.core.buffers import psum, sbuf
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.indexing import MaskExpr, check_mask
from nkisim.core.location import warn
from nkisim.core.storage import read
from nkisim.core.tensor import Access, Tensor, as_access, shape_str
from nkisim.cost.instructions import NC_MATMUL, NC_TRANSPOSE, TENSOR_COPY, InstructionKind
from nkisim.ops.base import dtype_in, emit, mask_array, new_tile, operand, operands, write_dst
from nkisim.ops.elementwise import values
from nkisim.ops.registry import op

_MATMUL_DTYPES = (dt.float8_e4m3, dt.float8_e5m2, dt.bfloat16, dt.float16, dt.tfloat32, dt.float32)


def _limit(api: str, pname: str, shape: tuple[int, ...], dim: int, limit: int) -> None:
    if shape[dim] > limit:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"size of dimension {dim} in '{shape_str(pname, shape)}' of '{api}' exceed architecture "
                        f"limitation of {limit}.")


def _rank2(api: str, pname: str, shape: tuple[int, ...]) -> None:
    if len(shape) != 2:
        raise nki_error("err_exceed_max_supported_dimension",
                        f"parameter '{shape_str(pname, shape)}' of '{api}' exceed max supported number of "
                        f"dimensions of 2.")


def _moving_free(api: str, pname: str, shape: tuple[int, ...], limit: int) -> int:
    """Elements per partition of a moving operand: its free dimensions may be several (CS149 2025's
    handout: "``nc_matmul`` can accept a >2D tensor as the moving argument, as long as the hardware
    constraints of PSUM are respected"), and together they stream through the PE array as one free axis,
    so their product is what the limit (and one PSUM bank) holds."""
    if len(shape) <= 2:
        _rank2(api, pname, shape)
        _limit(api, pname, shape, 1, limit)  # the compiler's own message for one free dimension
        return shape[1]
    n = int(np.prod(shape[1:]))
    if n > limit:
        dims = " x ".join(str(d) for d in shape[1:])
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"size of free dimensions ({dims} = {n} elements per partition) in "
                        f"'{shape_str(pname, shape)}' of '{api}' exceed architecture limitation of {limit}.")
    return n


def _operand_valid(api: str, acc: Access) -> np.ndarray | None:
    """The elements of a matmul operand its operand mask keeps (``tile[...][mask]``, AWS's operand masking for
    matmult APIs, nki.api.shared.rst "NKI API Masking"), as a bool array of the operand's shape; None: every one."""
    mask = getattr(acc, "operand_mask", None)
    if mask is None:
        return None
    m = check_mask(mask, api)
    try:
        return np.broadcast_to(m, acc.shape)
    except ValueError:
        raise nki_error("err_param_shape_incompatible_with_numpy",
                        f"Parameter shapes (mask{list(m.shape)}, {acc.label()}{list(acc.shape)}) could not be "
                        f"broadcast together in '{api}'") from None


def _masked_values(acc: Access, kept: np.ndarray | None, ctx: Any, f: np.dtype) -> np.ndarray:
    """An operand's values with what its operand mask drops as zero: a dropped contraction row adds nothing, a
    dropped free position's output is not written.  Dropped positions may lie past the tile's end (a ragged last
    tile), so they are read as a masked op reads them (``ctx.op_mask``)."""
    if kept is None:
        return values(acc, ctx, f)
    saved, ctx.op_mask = ctx.op_mask, kept
    try:
        got = values(acc, ctx, f)
    finally:
        ctx.op_mask = saved
    return got if got is None else np.where(kept, got, f.type(0))


def _pe_matmul(api: str, stat: Access, mov: Access, sname: str, mname: str, mask: Any, dst: Any = None,
               accumulate: bool | None = None, is_transpose: bool = False) -> Tensor | None:
    """stationary[K, M].T @ moving[K, N...] -> PSUM fp32 [M, N...] (the TensorE contract): a new PSUM tile, or into
    ``dst`` (``into_psum``).

    The moving operand's free dimensions stream as one (their product at most ``gemm_moving_fmax``) and
    the result keeps them: ``[K, M]`` with ``[K, 4, 128]`` gives ``[M, 4, 128]``."""
    ctx = current()
    _rank2(api, sname, stat.shape)
    for pname, acc in ((sname, stat), (mname, mov)):
        dtype_in(api, pname, acc, _MATMUL_DTYPES)
    if stat.shape[0] != mov.shape[0]:
        raise nki_error("err_param_shape_incompatible_with_matmul",
                        f"Number of partitions mismatch in '{api}': contraction dimension of "
                        f"{shape_str(sname, stat.shape)} and {shape_str(mname, mov.shape)} must match "
                        f"(the contraction dimension is the partition dimension)")
    tgt = ctx.target
    _limit(api, sname, stat.shape, 1, tgt.gemm_stationary_free_max)
    n = _moving_free(api, mname, mov.shape, tgt.gemm_moving_free_max)
    out_shape = (stat.shape[1],) + tuple(mov.shape[1:])
    kept = {pname: _operand_valid(api, acc) for pname, acc in ((sname, stat), (mname, mov))}
    valid = mask_array(mask, out_shape, api)
    sv, mv = kept[sname], kept[mname]
    if sv is not None or mv is not None:  # operand masks: the output elements whose row and column are kept
        rows = np.ones(stat.shape[1], bool) if sv is None else sv.any(axis=0)
        cols = np.ones(n, bool) if mv is None else mv.reshape(mov.shape[0], n).any(axis=0)
        both = (rows[:, None] & cols[None, :]).reshape(out_shape)
        valid = both if valid is None else np.logical_and(valid, both)
    vals = None
    if ctx.numerics:
        f = np.dtype(np.float32)
        k = mov.shape[0]
        # into an array of the result's shape, which the tile then owns: a reshaped product would be a view, and
        # a view is copied into a tile of its own (ops.base.new_tile)
        vals = np.empty(out_shape, f)
        sval, mval = _masked_values(stat, sv, ctx, f), _masked_values(mov, mv, ctx, f).reshape(k, n)
        picked = _one_hot_rows(mval) if is_transpose and ctx.nc_version >= 3 else None
        if picked is not None:  # transpose mode: the stationary's elements themselves, NaN and Inf kept in place
            vals.reshape(stat.shape[1], n)[...] = sval[picked].T
        else:
            np.matmul(sval.T, mval, out=vals.reshape(stat.shape[1], n))
    extra = {"k": stat.shape[0], "m": stat.shape[1], "n": n, "in_dtype": dt.name(mov.dtype)}
    if dst is not None:
        transposed = stat.dtype if is_transpose and ctx.nc_version >= 3 else None
        into_psum(ctx, api, dst, out_shape, vals, valid, [stat, mov], extra, accumulate, transposed=transposed)
        return None
    tile = new_tile(ctx, out_shape, dt.float32, vals, valid, buffer=psum)
    tile.producer = emit(ctx, NC_MATMUL, reads=[stat, mov], writes=[tile.full()], extra=extra)
    return tile


def _one_hot_rows(moving: np.ndarray) -> np.ndarray | None:
    """For each column of a 0/1 ``moving`` matrix with one 1 in it (an identity, or a permutation), the row of that
    1; None for any other matrix.  A transpose-mode matmul against such a matrix moves the stationary's elements:
    "Starting NeuronCore-v3, turning on transpose mode by setting ``is_transpose=True`` enables bit-accurate data
    transpose, which can transpose tensors with NaN/Inf values properly" (isa ``nc_matmul``), where a product with
    the identity would spread a NaN over its whole row (as NeuronCore-v2 does)."""
    ones = moving == 1
    if not (ones.sum(axis=0) == 1).all() or not (ones | (moving == 0)).all():
        return None
    return ones.argmax(axis=0)


def into_psum(ctx: Any, api: str, dst: Any, shape: tuple[int, ...], vals: Any, valid: Any, reads: list,
              extra: dict, accumulate: bool | None, kind: InstructionKind = NC_MATMUL, transposed: Any = None) -> None:
    """A matmul's result written into the PSUM tile ``dst`` (NKI 0.6's ``nc_matmul(dst, ...)``).

    ``accumulate=False`` overwrites, ``True`` adds (in fp32), and ``None`` (the default) lets the first matmul
    into each PSUM element since the tile was allocated overwrite it and every later one add, which is how the
    compiler forms accumulation groups.  Elements a non-matmul instruction wrote (an ``nl.zeros``) do not count
    as started; adding onto an element no matmul started (``accumulate=True``) is undefined on the hardware,
    which AWS's simulator warns about, and so does this one.

    ``dst`` is float32, or bfloat16 from NeuronCore-v4 (isa ``nc_matmul``: "The ``dst`` tile must be a float32 tile
    in NeuronCore-v2 and NeuronCore-v3. Starting NeuronCore-v4, ``dst`` can either be a float32 or bfloat16 tile").
    ``transposed`` is the stationary's dtype of a transpose-mode matmul (``is_transpose=True``, NeuronCore-v3 on),
    whose ``dst`` may also hold that dtype: "This is equivalent to calling ``nisa.nc_matmul`` directly with
    ``is_transpose=True``" and "The output ``dst`` tile must have the same data type as that of ``data``" (isa
    ``nc_transpose``); "FP16/BF16 PSUM output for FP16/BF16 transpose" (nki/guides/architecture/trainium2_arch.rst).
    nki-library 2.29_release's moe_cte transposes bfloat16 blocks so (bwmm_shard_on_I.py:776)."""
    d = as_access(operand(api, "dst", dst, ["psum"], ctx))
    allowed = [dt.float32] + ([dt.bfloat16] if ctx.nc_version >= 4 else [])
    if transposed is not None and transposed not in allowed:
        allowed.append(transposed)
    if d.dtype not in allowed:
        raise nki_error("err_supported_operand_dtype",
                        f"'dst' of '{api}' has dtype {dt.name(d.dtype)}, expected one of the following dtypes: "
                        f"{', '.join(dt.name(a) for a in allowed)}")
    started = d.tensor.matmul_accumulated(d.np_index()) if not d.advanced else None
    every = started is None or bool(started.all())  # every element of the group has started
    adds = accumulate is not False and (accumulate is True or every or bool(started.any()))  # type: ignore[union-attr]
    if accumulate is True and not every:
        warn(f"'{api}' with accumulate=True adds onto PSUM elements of '{d.label()}' that no matmul has written since "
             f"it was allocated (a memset does not start an accumulation group): the result is undefined on the "
             f"hardware; use accumulate=None or False for the first matmul of a group")
    plain_add = adds and (accumulate is True or every)  # dst += vals: no element starts a group here
    if vals is not None and adds and not plain_add:
        old = read(d).astype(np.float32).reshape(shape)
        keep = np.asarray(started).reshape(shape) if np.ndim(started) else np.asarray(started)
        vals = np.where(keep, old, np.float32(0)) + vals
    out = write_dst(ctx, api, d, shape, vals, valid, "psum", add=plain_add)
    emit(ctx, kind, reads=reads, writes=[out], extra=extra, acc=adds)  # (reads as a legacy `psum += ...`)


@op("nl.matmul", emits=(NC_MATMUL, NC_TRANSPOSE, TENSOR_COPY), spaces="psum|sbuf")
def matmul(x: Any, y: Any, *, transpose_x: bool = False, mask: Any = None, name: str = "") -> Tensor:
    """``nl.matmul``: x @ y (or x.T @ y with transpose_x=True), result in PSUM as fp32.

    A PSUM operand (an ``nl.transpose`` result, as in AWS's attention tutorial v1) is copied to SBUF
    first, as for ``nisa.nc_matmul``."""
    ctx = current()
    accs = operands("matmul", x=x, y=y)
    for pname, acc in accs.items():
        if acc.space == "psum":
            accs[pname] = _staged_from_psum("matmul", pname, acc)
    xa, ya = accs["x"], accs["y"]
    if not transpose_x:
        _no_pe_transpose_if_allocated(ctx, "matmul", "x")
        _rank2("matmul", "x", xa.shape)
        _limit("matmul", "x", xa.shape, 1, ctx.target.partitions)
        emit(ctx, NC_TRANSPOSE, reads=[xa], extra={"implicit": True}, p=xa.shape[1], n=xa.shape[0])
        xt = _transposed_view(ctx, xa)
        xm = getattr(xa, "operand_mask", None)
        stat = xt.full() if xm is None else MaskedAccess.of(xt.full(), _transposed_mask(xm, xa.shape))
        return _pe_matmul("matmul", stat, ya, "x", "y", mask)
    return _pe_matmul("matmul", xa, ya, "x", "y", mask)


def _transposed_mask(mask: Any, shape: tuple[int, ...]) -> MaskExpr:
    """The operand mask of ``x`` [M, K] as one of its transpose [K, M] (the matmul contracts over K)."""
    m = np.broadcast_to(check_mask(mask, "matmul"), shape)
    return MaskExpr(np.ascontiguousarray(m.T), mask.ok, mask.reason, True, None, mask.loops)


def _no_pe_transpose_if_allocated(ctx: Any, api: str, pname: str) -> None:
    """Direct-allocation kernels own every PSUM byte, so the compiler cannot place a PE transpose."""
    if ctx.direct_allocation:
        raise nki_error("err_transpose_on_tensor_engine_not_allowed_in_allocated_kernel",
                        f"Transpose on the Tensor Engine is not allowed in a kernel with direct allocation: "
                        f"'{api}' would transpose '{pname}' on the PE array. Pass the operand already transposed "
                        f"(transpose_x=True) or use nisa.nc_transpose(..., engine=nisa.vector_engine)")


def _transposed_view(ctx: Any, a: Access) -> Tensor:
    vals = None if not ctx.numerics else read(a).T
    t = new_tile(ctx, (a.shape[1], a.shape[0]), a.dtype, vals, fresh=False)
    return t


@op("nisa.nc_matmul", emits=(NC_MATMUL, TENSOR_COPY), spaces="sbuf")
def nc_matmul(stationary: Any, moving: Any, *, is_stationary_onezero: bool = False, is_moving_onezero: bool = False,
              is_transpose: bool = False, tile_position: Any = (), tile_size: Any = (), mask: Any = None,
              perf_mode: Any = None, dst: Any = None, accumulate: bool | None = None, name: str = "") -> Tensor | None:
    """``nisa.nc_matmul``: stationary.T @ moving on the PE array (PSUM fp32 output).

    ``perf_mode='double_row_gen3'`` (trn2, fp8 operands) feeds two rows of each partition per pass:
    operands are ``[K, 2, M]`` and ``[K, 2, N]`` and the contraction runs over both K and the pair.

    ``dst`` (NKI 0.6): the PSUM tile the result goes to, overwritten or accumulated into as ``accumulate`` says
    (``into_psum``); without it the result is a new PSUM tile, accumulated by ``psum[...] += ...``.
    """
    accs = operands("nc_matmul", "psum|sbuf", stationary=stationary, moving=moving)
    for pname, acc in accs.items():
        if acc.space == "psum":
            accs[pname] = _staged_from_psum("nc_matmul", pname, acc)
    if bool(tile_position) != bool(tile_size):
        raise ValueError("nc_matmul: tile_position and tile_size must be given together")
    if perf_mode not in (None, "", "none"):
        return _double_row(accs["stationary"], accs["moving"], str(perf_mode), mask, dst, accumulate)
    return _pe_matmul("nc_matmul", accs["stationary"], accs["moving"], "stationary", "moving", mask, dst, accumulate,
                      is_transpose)


def _staged_from_psum(api: str, pname: str, acc: Access) -> Access:
    """A PSUM operand of ``nc_matmul`` (or ``nl.matmul``), copied to SBUF first.

    The PE array reads SBUF only; the legacy compiler accepts a PSUM operand (flash attention's
    backward pass feeds an ``nc_transpose`` result straight in) by inserting a copy, which is traced
    here so the cost model charges it.  A warning says so, since writing the copy is the fix.
    """
    ctx = current()
    warn(f"'{pname}' of '{api}' is in PSUM: the compiler copies it to SBUF first (an extra "
         f"instruction); copy it yourself (nl.copy / nisa.tensor_copy) to control where that happens")
    t = new_tile(ctx, acc.shape, acc.dtype, read(acc) if ctx.numerics else None, fresh=False)
    t.producer = emit(ctx, TENSOR_COPY, "act", reads=[acc], writes=[t.full()], extra={"implicit": True})
    return t.full()


DOUBLE_ROW_DTYPES = (dt.float8_e4m3, dt.float8_e5m2)


def _double_row(stat: Access, mov: Access, mode: str, mask: Any, dst: Any = None,
                accumulate: bool | None = None) -> Tensor | None:
    """The double-row fp8 matmul of NeuronCore-v3: out[M, N] = sum over (k, r) of stat[k, r, M] * mov[k, r, N]."""
    ctx = current()
    if mode != "double_row_gen3":
        raise nki_error("err_instruction_unsupported_op",
                        f"perf_mode={mode!r} is not supported in 'nc_matmul' (supported: 'double_row_gen3')")
    if ctx.nc_version < 3:
        raise nki_error("err_min_arch_support_for_inst",
                        f"inst nc_matmul with perf_mode=double_row_gen3 requires min target gen3 (trn2), "
                        f"got {ctx.target}")
    for pname, acc in (("stationary", stat), ("moving", mov)):
        if len(acc.shape) != 3 or acc.shape[1] != 2:
            raise nki_error("err_param_shape_incompatible_with_matmul",
                            f"'{shape_str(pname, acc.shape)}' of 'nc_matmul' with perf_mode=double_row_gen3 must "
                            f"have shape [partitions, 2, free]")
        if acc.dtype not in DOUBLE_ROW_DTYPES:
            raise nki_error("err_supported_operand_dtype",
                            f"'{pname}' of 'nc_matmul' has dtype {dt.name(acc.dtype)}, expected one of the following "
                            f"dtypes: float8_e4m3, float8_e5m2 (perf_mode=double_row_gen3)")
    if stat.shape[0] != mov.shape[0]:
        raise nki_error("err_param_shape_incompatible_with_matmul",
                        f"Number of partitions mismatch in 'nc_matmul': contraction dimension of "
                        f"{shape_str('stationary', stat.shape)} and {shape_str('moving', mov.shape)} must match")
    _limit("nc_matmul", "stationary", stat.shape, 2, ctx.target.gemm_stationary_free_max)
    _limit("nc_matmul", "moving", mov.shape, 2, ctx.target.gemm_moving_free_max)
    out_shape = (stat.shape[2], mov.shape[2])
    valid = mask_array(mask, out_shape, "nc_matmul")
    vals = None
    if ctx.numerics:
        f = np.dtype(np.float32)
        vals = np.einsum("kri,krj->ij", values(stat, ctx, f), values(mov, ctx, f))
    extra = {"k": stat.shape[0], "m": out_shape[0], "n": out_shape[1], "in_dtype": dt.name(mov.dtype),
             "perf_mode": mode}
    if dst is not None:
        into_psum(ctx, "nc_matmul", dst, out_shape, vals, valid, [stat, mov], extra, accumulate)
        return None
    tile = new_tile(ctx, out_shape, dt.float32, vals, valid, buffer=psum)
    tile.producer = emit(ctx, NC_MATMUL, reads=[stat, mov], writes=[tile.full()], extra=extra)
    return tile


@op("nl.transpose", emits=(NC_TRANSPOSE,))
def transpose(x: Any, *, dtype: Any = None, mask: Any = None, name: str = "") -> Tensor:
    """``nl.transpose``: 2-D partition/free transpose on the Tensor Engine (each dim <= 128)."""
    return _transpose("transpose", "x", x, dtype, mask, "pe")


@op("nisa.nc_transpose", emits=(NC_TRANSPOSE,))
def nc_transpose(data: Any, *, mask: Any = None, dtype: Any = None, engine: Any = 0, dst: Any = None,
                 name: str = "") -> Tensor | None:
    """``nisa.nc_transpose``: TensorE (<=128x128, to PSUM) or VectorE (<=32x32, to SBUF)."""
    acc = operands("nc_transpose", data=data)["data"]
    shape = acc.shape
    eng = int(engine or 0)
    if eng == 0:
        if dst is not None:  # NKI 0.6: the default engine follows where dst is (PSUM: the PE array)
            eng = 1 if as_access(dst).space == "psum" else 5
        else:
            small = current().target.limits.dve_transpose_max
            eng = 5 if len(shape) >= 2 and shape[0] <= small and int(np.prod(shape[1:])) <= small else 1
    return _transpose("nc_transpose", "data", data, dtype, mask, "dve" if eng == 5 else "pe", dst)


def _transpose(api: str, pname: str, x: Any, dtype: Any, mask: Any, engine: str, dst: Any = None) -> Tensor | None:
    ctx = current()
    a = operands(api, **{pname: x})[pname]
    if engine == "pe" and dst is None:  # an NKI 0.6 transpose names its PSUM dst: nothing for the compiler to place
        _no_pe_transpose_if_allocated(ctx, api, pname)
    shape = a.shape
    if len(shape) > 2:
        if api == "nc_transpose":  # extra free axes are collapsed first
            shape = (shape[0], int(np.prod(shape[1:])))
        else:
            _rank2(api, pname, shape)
    limit = ctx.target.limits.dve_transpose_max if engine == "dve" else ctx.target.partitions
    for d in range(2):
        _limit(api, pname, shape, d, limit)
    out_shape = (shape[1], shape[0])
    valid = mask_array(mask, out_shape, api)
    vals = None if not ctx.numerics else read(a).reshape(shape).T
    if dst is not None:
        out = write_dst(ctx, api, dst, out_shape, vals, valid, "psum" if engine == "pe" else "psum|sbuf")
        emit(ctx, NC_TRANSPOSE, engine, reads=[a], writes=[out])
        return None
    out_dt = a.dtype if dtype is None else dt.normalize(dtype)
    tile = new_tile(ctx, out_shape, out_dt, vals, valid, buffer=psum if engine == "pe" else sbuf, fresh=False)
    tile.producer = emit(ctx, NC_TRANSPOSE, engine, reads=[a], writes=[tile.full()])
    return tile


syntax.provide(transpose=op("tile.transpose", emits=(NC_TRANSPOSE,))(transpose))  # t.T
