"""``nki.isa`` instructions that are not plain nl.* ops: activation, tensor_tensor/scalar, reduce,
copy, iota, memset, dma_copy, bn_stats/bn_aggr, reciprocal."""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.indexing import Affine
from nkisim.core.storage import read, read_masked, write
from nkisim.core.tensor import Access, Tensor, as_access, is_tile, shape_str
from nkisim.cost.instructions import (
    ACTIVATION,
    DMA_COPY,
    IOTA,
    MEMSET,
    RECIPROCAL,
    SCALAR_TENSOR_TENSOR,
    TENSOR_COPY,
    TENSOR_PARTITION_REDUCE,
    TENSOR_REDUCE,
    TENSOR_SCALAR,
    TENSOR_TENSOR,
)
from nkisim.ops import engines, memory
from nkisim.ops import reduce as red
from nkisim.ops.base import check_partitions, emit, f32, mask_array, new_tile, operand, operands, write_dst
from nkisim.ops.elementwise import values
from nkisim.ops.mx import check_packed_copy, check_packed_fill
from nkisim.ops.optable import ACTIVATIONS, ALU, ARITH_UNARY, op_name
from nkisim.ops.outputs import alu, per_partition
from nkisim.ops.registry import op, spaces_of

F32 = np.dtype(np.float32)


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
        if s.shape[0] != a.shape[0] or int(np.prod(s.shape[1:] or (1,))) != 1:
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
        instr = emit(ctx, ACTIVATION, reads=reads, writes=[out], extra={"func": name})
    else:
        tile = out = new_tile(ctx, a.shape, out_dt, vals, valid)
        instr = tile.producer = emit(ctx, ACTIVATION, reads=reads, writes=[tile.full()], extra={"func": name})
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
        instr.extra["reduce"] = rop
        instr.writes = instr.writes + (emit_region(r),)
    return None if dst is not None else tile


def emit_region(acc: Access) -> tuple:
    from nkisim.ops.base import region

    return region(acc)


@op("nisa.activation_reduce", emits=(ACTIVATION,))
def activation_reduce(op: Any, data: Any, *, reduce_op: Any, reduce_res: Any, bias: Any = None, scale: Any = 1.0,
                      mask: Any = None, dtype: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.activation_reduce``: activation plus a reduction of all free axes into reduce_res."""
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res, reduce_cmd=3,
                      mask=mask, dtype=dtype, dst=dst)


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
    return int(np.prod(shape[1:])) if len(shape) > 1 else 1


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
    return red.reduce(name, data, axis, dtype=dtype, mask=mask, keepdims=keepdims, api="tensor_reduce",
                      negate=negate, dst=dst)


@op("nisa.tensor_partition_reduce", emits=(TENSOR_PARTITION_REDUCE,), spaces="sbuf")
def tensor_partition_reduce(op: Any, data: Any, *, mask: Any = None, dtype: Any = None, dst: Any = None,
                            name: str = "") -> Tensor | None:
    """``nisa.tensor_partition_reduce``: reduce along the partition axis with ``op`` (GpSimd engine)."""
    return red.partition_reduce(op_name(op), data, mask=mask, dtype=dtype, dst=dst)


@op("nisa.tensor_copy", emits=(TENSOR_COPY,))
def tensor_copy(src: Any, *, mask: Any = None, dtype: Any = None, engine: Any = 0, dst: Any = None,
                name: str = "") -> Tensor | None:
    """``nisa.tensor_copy``: copy (and cast) a tile on Vector, Scalar or GpSimd."""
    ctx = current()
    a = operands("tensor_copy", src=src)["src"]
    eng = {2: "act", 3: "pool", 5: "dve"}.get(int(engine or 0), "dve")
    extra = None if int(engine or 0) else {"any_engine": True}  # the compiler's choice (cost.costs.copy_engine)
    if eng == "pool" and a.space == "psum":
        raise nki_error("err_unsupported_memory",
                        "Expected operand 'src' of 'tensor_copy' to be in address space 'sbuf', but got a tile in "
                        "'psum' instead. (GpSimd cannot access PSUM)")
    valid = mask_array(mask, a.shape, "tensor_copy")
    if dst is not None:
        check_packed_copy("tensor_copy", a.dtype, as_access(dst).dtype)
        out = write_dst(ctx, "tensor_copy", dst, a.shape, read(a) if ctx.numerics else None, valid)
        emit(ctx, TENSOR_COPY, eng, reads=[a], writes=[out], extra=extra)
        return None
    out_dt = a.dtype if dtype is None else dt.normalize(dtype)
    check_packed_copy("tensor_copy", a.dtype, out_dt)
    tile = new_tile(ctx, a.shape, out_dt, read(a) if ctx.numerics else None, valid, fresh=False)
    tile.producer = emit(ctx, TENSOR_COPY, eng, reads=[a], writes=[tile.full()], extra=extra)
    return tile


@op("nisa.iota", emits=(IOTA,))
def iota(expr: Any = None, dtype: Any = None, *, mask: Any = None, dst: Any = None, pattern: Any = None,
         offset: Any = 0, channel_multiplier: Any = 0, name: str = "") -> Tensor | None:
    """``nisa.iota``: an integer index pattern (computed in int32) as an SBUF tile.

    Legacy form: an index expression built from ``nl.arange`` / ``nl.mgrid``.  Pattern form (``dst`` given):
    ``dst[p, i0, i1, ...] = offset + p * channel_multiplier + sum(i_k * step_k)`` for ``pattern = [[step_k,
    count_k], ...]``, whose counts multiply to ``dst``'s elements per partition."""
    ctx = current()
    if pattern is not None:
        if dst is None:
            raise nki_error("err_operand_cannot_be_none", "'dst' cannot be None.")
        d = as_access(operand("iota", "dst", dst, spaces_of("iota"), ctx))
        steps = [(int(s), int(n)) for s, n in pattern]
        parts = d.shape[0] if d.shape else 1
        if int(np.prod([n for _, n in steps])) != int(np.prod(d.shape[1:])):
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('dst', d.shape)}, pattern {[list(p) for p in steps]}) of "
                            f"'iota' has mismatched shapes: the pattern's counts must multiply to dst's elements per "
                            f"partition")
        v = None
        if ctx.numerics:
            v = np.full((parts,) + tuple(n for _, n in steps), int(offset), dtype=np.int64)
            v += (np.arange(parts, dtype=np.int64) * int(channel_multiplier)).reshape((parts,) + (1,) * len(steps))
            for axis, (step, n) in enumerate(steps):
                shape = [1] * (len(steps) + 1)
                shape[axis + 1] = n
                v += (np.arange(n, dtype=np.int64) * step).reshape(shape)
            v = v.astype(np.int32).astype(np.int64).reshape(d.shape)
        emit(ctx, IOTA, writes=[write_dst(ctx, "iota", dst, d.shape, v)])
        return None
    if isinstance(expr, (int, np.integer)):
        expr = Affine(int(expr))
    if not isinstance(expr, Affine):
        raise TypeError("nisa.iota expects an index expression built from nl.arange / nl.mgrid")
    v = np.asarray(expr.value(), dtype=np.int64)
    if v.ndim < 2:
        v = v.reshape((1,) * (2 - v.ndim) + v.shape)
    check_partitions("iota", {"expr": v.shape}, {"expr": v.shape})
    valid = mask_array(mask, v.shape, "iota")
    if dst is not None:
        emit(ctx, IOTA, writes=[write_dst(ctx, "iota", dst, v.shape, v.astype(np.int32).astype(np.int64), valid)])
        return None
    tile = new_tile(ctx, v.shape, dt.normalize(dtype), v.astype(np.int32).astype(np.int64), valid)
    tile.producer = emit(ctx, IOTA, writes=[tile.full()])
    return tile


@op("nisa.memset", emits=(MEMSET,))
def memset(shape: Any = None, value: Any = 0, dtype: Any = None, *, mask: Any = None, engine: Any = 0,
           dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.memset``: fill ``dst`` with a constant (NKI 0.6), or a new tile of ``shape`` (legacy; its first
    dim is the partition dim)."""
    from nkisim.ops import creation

    ctx = current()
    eng = {3: "pool"}.get(int(engine or 0), "dve")
    if dst is not None:
        d = as_access(operand("memset", "dst", dst, spaces_of("memset"), ctx))
        check_packed_fill("memset", d.dtype, value)
        shp = d.shape
        valid = mask_array(mask, shp, "memset")
        out = write_dst(ctx, "memset", dst, shp, np.full(shp, value, dtype=np.float64) if ctx.numerics else None,
                        valid)
        emit(ctx, MEMSET, eng, writes=[out], extra={"zero": value == 0})
        return None
    shape = creation.plain_shape(shape)
    check_packed_fill("memset", dt.normalize(dtype), value)
    check_partitions("memset", {"shape": shape}, {"shape": shape})
    valid = mask_array(mask, shape, "memset")
    tile = new_tile(ctx, shape, dt.normalize(dtype), np.full(shape, value, dtype=np.float64)
                    if ctx.numerics else None, valid)
    tile.producer = emit(ctx, MEMSET, eng, writes=[tile.full()], extra={"zero": value == 0})
    return tile


@op("nisa.dma_copy", emits=(DMA_COPY,), spaces="hbm|psum|sbuf")
def dma_copy(*args: Any, dst: Any = None, src: Any = None, mask: Any = None, dst_rmw_op: Any = None,
             oob_mode: Any = None, dge_mode: Any = None, name: str = "") -> None:
    """``nisa.dma_copy``: DMA between any memories, with a cast and optional read-modify-write.

    Accepts the keyword form of SDK 2.22+ and the positional ``dma_copy(src, dst)`` of SDK 2.21.
    """
    ctx = current()
    if args:
        src, dst = (args + (dst,))[:2] if len(args) == 1 else args[:2]
    for pname, v in (("dst", dst), ("src", src)):
        if v is None:
            raise nki_error("err_operand_cannot_be_none", f"'{pname}' cannot be None.")
    if dge_mode is not None and int(dge_mode) == 3 and ctx.nc_version < 3:  # hardware DGE arrived with NC-v3
        raise nki_error("err_min_arch_support_for_inst",
                        f"inst dma_copy with dge_mode=hwdge requires min target gen3 (trn2), got {ctx.target}")
    # only on-chip operands are limited to 128 partitions: an HBM-to-HBM copy may move any rows
    allowed = spaces_of("dma_copy")
    d, s = (as_access(operand("dma_copy", k, v, allowed, ctx)) for k, v in (("dst", dst), ("src", src)))
    check_packed_copy("dma_copy", s.dtype, d.dtype)
    check_partitions("dma_copy", {k: v for k, v in (("dst", d), ("src", s)) if v.space != "hbm"})
    valid = mask_array(mask, d.shape, "dma_copy")
    valid = _keep_in_bounds(d, s, valid, oob_mode)
    d.check_bounds(valid)
    s.check_bounds(None if valid is None or s.shape != d.shape else valid)
    d.check_write(accumulate=dst_rmw_op is not None)
    vals = None
    if ctx.numerics:
        raw = read(s) if valid is None or valid.ndim == 0 or s.shape != d.shape else read_masked(s, valid)
        vals = memory.values_for(d.shape, s.shape, raw, dst_name="dst", src_name="src", expr="dma_copy")
        if dst_rmw_op is not None:
            vals = ALU[alu(dst_rmw_op, "dma_copy")].fn(f32(d, ctx), vals.astype(np.float32))
    else:
        memory.fit_shape(s.shape, d.shape, "dst", "src", "dma_copy")
    write(d, vals, valid)
    # what the DMA moves: the source's bytes (and, with dst_rmw_op, the destination's read as well: a
    # read-modify-write reads dst, reads src and writes dst); what it reads and writes in HBM bounds it too
    nbytes = int(np.prod(d.shape)) * s.itemsize
    dst_bytes = int(np.prod(d.shape)) * d.itemsize
    src_bytes = int(np.prod(s.shape)) * s.itemsize
    hbm = (src_bytes if s.space == "hbm" else 0) + (dst_bytes if d.space == "hbm" else 0)
    extra: dict[str, Any] = {}
    reads = [s]
    if dst_rmw_op is not None:
        extra["rmw"] = alu(dst_rmw_op, "dma_copy")
        if d.space == "sbuf":
            extra["rmw_sbuf"] = True  # NeuronCore-v4 adds a read-add-write unit beside SBUF (trainium3_arch.rst)
        reads.append(d)
        hbm += dst_bytes if d.space == "hbm" else 0
    if hbm > max(src_bytes, dst_bytes):  # only a DMA with HBM on both sides (or a read-modify-write of HBM)
        extra["hbm_bytes"] = hbm
    emit(ctx, DMA_COPY, reads=reads, writes=[d], nbytes=nbytes, extra=extra or None)


def _keep_in_bounds(d: Access, s: Access, valid: np.ndarray | None, oob_mode: Any) -> np.ndarray | None:
    """``valid`` narrowed to the elements whose indirect index is in bounds (``oob_mode=skip``); with
    the default ``oob_mode=error`` an out-of-bounds indirect index raises the simulator's IndexError."""
    from nkisim.ops.movement import indirect_in_bounds

    skip = oob_mode is not None and int(oob_mode) == 1
    for acc in (d, s):
        inb = indirect_in_bounds(acc, skip)
        if inb is not None and acc.shape == d.shape:
            valid = inb if valid is None else np.logical_and(np.broadcast_to(valid, d.shape), inb)
    return valid


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
