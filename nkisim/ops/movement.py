"""Moving data within on-chip memory: engine copies (``nisa.tensor_copy``, ``tensor_copy_dynamic_src`` / ``_dst``),
gathers (``local_gather``, ``nl.gather_flattened``, ``nisa.nc_n_gather``), ``nc_stream_shuffle``,
``sequence_bounds`` and ``dropout`` (semantics from the NKI ISA reference).  DMAs are ``ops.dma``'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read, storage
from nkisim.core.tensor import Access, Tensor, as_access, is_tile, shape_str
from nkisim.cost.instructions import (
    DROPOUT,
    GATHER_FLATTENED,
    LOCAL_GATHER,
    NC_STREAM_SHUFFLE,
    SEQUENCE_BOUNDS,
    TENSOR_COPY,
    TENSOR_COPY_DYNAMIC_DST,
    TENSOR_COPY_DYNAMIC_SRC,
)
from nkisim.ops.base import dtype_in, emit, mask_array, new_tile, operand, operands, write_dst
from nkisim.ops.mx import check_packed_copy
from nkisim.ops.outputs import F32, deliver, flat, per_partition, same_elements
from nkisim.ops.registry import op


def _engine(engine: Any, default: str = "dve") -> str:
    return {2: "act", 3: "pool", 5: "dve"}.get(int(engine or 0), default)


def _same_size(inst: str, a_name: str, a: Any, b_name: str, b: Any) -> None:
    if a.shape[0] != b.shape[0] or int(np.prod(a.shape)) != int(np.prod(b.shape)):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str(a_name, a.shape)}, {shape_str(b_name, b.shape)}) of '{inst}' "
                        f"has mismatched shapes")


@op("nisa.tensor_copy_dynamic_src", emits=(TENSOR_COPY_DYNAMIC_SRC,))
def tensor_copy_dynamic_src(src: Any = None, *, dst: Any = None, mask: Any = None, dtype: Any = None,
                            engine: Any = 0, name: str = "") -> Tensor | None:
    """``nisa.tensor_copy_dynamic_src``: copy a tile read at a runtime offset (``src`` indexed with a
    value loaded into SBUF); the indexing itself resolves the offset, the copy is a plain one."""
    ctx = current()
    s = operands("tensor_copy_dynamic_src", src=src)["src"]
    valid = mask_array(mask, s.shape, "tensor_copy_dynamic_src", ctx)
    vals = read(s) if ctx.numerics else None
    if dst is not None:
        _same_size("tensor_copy_dynamic_src", "src", s, "dst", operands("tensor_copy_dynamic_src", dst=dst)["dst"])
    out_dt = s.dtype if dtype is None else dtype
    return deliver(ctx, TENSOR_COPY_DYNAMIC_SRC, s.shape, out_dt, vals, dst, reads=[s], valid=valid,
                   engine=_engine(engine))


@op("nisa.tensor_copy_dynamic_dst", emits=(TENSOR_COPY_DYNAMIC_DST,))
def tensor_copy_dynamic_dst(dst: Any = None, src: Any = None, *, mask: Any = None, engine: Any = 0,
                            name: str = "") -> None:
    """``nisa.tensor_copy_dynamic_dst``: copy a tile into ``dst`` indexed at a runtime offset."""
    ctx = current()
    if dst is None:
        raise nki_error("err_operand_cannot_be_none", "'dst' cannot be None.")
    s = operands("tensor_copy_dynamic_dst", src=src)["src"]
    d = operands("tensor_copy_dynamic_dst", dst=dst)["dst"]
    _same_size("tensor_copy_dynamic_dst", "src", s, "dst", d)
    valid = mask_array(mask, s.shape, "tensor_copy_dynamic_dst", ctx)
    deliver(ctx, TENSOR_COPY_DYNAMIC_DST, s.shape, d.dtype, read(s) if ctx.numerics else None,
            dst, reads=[s], valid=valid, engine=_engine(engine))


@op("nisa.local_gather", emits=(LOCAL_GATHER,))
def local_gather(src_buffer: Any = None, index: Any = None, num_elem_per_idx: int = 1,
                 num_valid_indices: int | None = None, *, dst: Any = None, mask: Any = None, dtype: Any = None,
                 name: str = "") -> Tensor | None:
    """``nisa.local_gather`` (GpSimd): each core of 16 partitions flattens its slice of ``index``
    partition-first and gathers ``num_elem_per_idx`` contiguous elements at each (element) offset from
    every one of its partitions of ``src_buffer``.  Result shape ``[P, *index free dims, 16,
    num_elem_per_idx]`` when every index is valid (the gathered order is the core's index slice read
    column by column), else ``[P, num_valid_indices, num_elem_per_idx]``; or ``dst``'s shape."""
    ctx = current()
    accs = operands("local_gather", "sbuf", src_buffer=src_buffer, index=index)
    s, ix = accs["src_buffer"], accs["index"]
    group = ctx.target.limits.gpsimd_core_partitions  # SBUF partitions each GpSimd core serves
    if s.shape[0] != ix.shape[0] or s.shape[0] % group:
        raise nki_error("err_num_partition_mismatch",
                        f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                        f"({shape_str('src_buffer', s.shape)}, {shape_str('index', ix.shape)}) of 'local_gather'; "
                        f"both must span whole groups of {group} partitions")
    per_core = group * int(np.prod(ix.shape[1:] or (1,)))
    nvalid = per_core if num_valid_indices is None else int(num_valid_indices)
    if not 0 < nvalid <= per_core:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('index', ix.shape)}) of 'local_gather' has mismatched shapes: "
                        f"num_valid_indices={nvalid} exceeds the {per_core} indices each GpSimd core holds")
    k = int(num_elem_per_idx)
    out_shape = (s.shape[0], *ix.shape[1:], group, k) if nvalid == per_core else (s.shape[0], nvalid, k)
    vals = None
    if ctx.numerics:
        src = read(s).reshape(s.shape[0], -1)
        offs = flat(ix, ctx, np.dtype(np.int64))
        vals = np.empty((s.shape[0], nvalid * k), dtype=src.dtype)
        span = np.arange(k)
        for c in range(0, s.shape[0], group):
            flat_idx = offs[c:c + group].flatten(order="F")[:nvalid]
            cols = (flat_idx[:, None] + span[None, :]).reshape(-1)
            if cols.size and (cols.min() < 0 or cols.max() >= src.shape[1]):
                raise nki_error("err_tensor_access_out_of_bound",
                                f"index {int(cols.max())} of 'local_gather' is out of bounds for "
                                f"{shape_str('src_buffer', s.shape)}")
            vals[c:c + group] = src[c:c + group][:, cols]
    shape = out_shape if dst is None else operands("local_gather", dst=dst)["dst"].shape
    valid = mask_array(mask, shape, "local_gather", ctx)
    return deliver(ctx, LOCAL_GATHER, shape, s.dtype if dtype is None else dtype, vals, dst,
                   reads=[s, ix], valid=valid)


@op("nisa.nc_stream_shuffle", emits=(NC_STREAM_SHUFFLE,))
def nc_stream_shuffle(src: Any = None, dst: Any = None, shuffle_mask: Any = None, *, mask: Any = None,
                      name: str = "") -> None:
    """``nisa.nc_stream_shuffle`` (Vector): within every quadrant of 32 partitions, output partition i
    copies input partition ``shuffle_mask[i]`` (255 leaves it unmodified).  ``src`` and ``dst`` may be
    the same tile; a ``src`` of fewer partitions is read by every quadrant."""
    ctx = current()
    if dst is None or shuffle_mask is None:
        raise nki_error("err_operand_cannot_be_none", f"'{'dst' if dst is None else 'shuffle_mask'}' cannot be None.")
    accs = operands("nc_stream_shuffle", src=src, dst=dst)
    s, d = accs["src"], accs["dst"]
    sel = [int(m.value()) if hasattr(m, "value") else int(m) for m in shuffle_mask]
    quadrant = ctx.target.limits.quadrant_partitions  # partitions a shuffle moves data within
    if len(sel) != quadrant or any(not (0 <= m < quadrant or m == 255) for m in sel):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes (shuffle_mask[{len(sel)}]) of 'nc_stream_shuffle' has mismatched shapes: "
                        f"it must list {quadrant} source partitions (0-{quadrant - 1}, or 255 to skip)")
    s_n, d_n = int(np.prod(s.shape[1:] or (1,))), int(np.prod(d.shape[1:] or (1,)))
    if s_n != d_n:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('src', s.shape)}, {shape_str('dst', d.shape)}) of "
                        f"'nc_stream_shuffle' has mismatched shapes: elements per partition differ")
    src_rows, dst_parts = s.shape[0] if s.shape else 1, d.shape[0]
    vals = valid = None
    if ctx.numerics:
        x = read(s).reshape(src_rows, -1)
        out = np.empty((dst_parts, d_n), dtype=x.dtype)
        keep = np.ones((dst_parts, 1), dtype=bool)
        for p in range(dst_parts):
            m = sel[p % quadrant]
            if m == 255:
                keep[p] = False
                continue
            row = (p // quadrant) * quadrant + m
            if row >= src_rows:
                row = m
            if row >= src_rows:
                raise nki_error("err_tensor_access_out_of_bound",
                                f"shuffle_mask[{p % quadrant}]={m} of 'nc_stream_shuffle' is out of bounds for "
                                f"{shape_str('src', s.shape)}")
            out[p] = x[row]
        # (a dst of any free shape: nki-library's find_nonzero_indices shuffles a [C, 1, chunk + 1] tile)
        vals = out
        valid = None if keep.all() else np.broadcast_to(keep.reshape((dst_parts,) + (1,) * (len(d.shape) - 1)), d.shape)
    if mask is not None:
        mask_array(mask, d.shape, "nc_stream_shuffle", ctx)
    deliver(ctx, NC_STREAM_SHUFFLE, d.shape, d.dtype, vals, dst, reads=[s], valid=valid)


@op("nisa.sequence_bounds", emits=(SEQUENCE_BOUNDS,))
def sequence_bounds(segment_ids: Any = None, *, dst: Any = None, dtype: Any = None, name: str = "") -> Tensor | None:
    """``nisa.sequence_bounds`` (GpSimd): for each element of a ``[1, n]`` row of segment ids, the
    [start, end) of its segment as shape ``[1, 2, n]``; padding (id 0) gets start n and end -1."""
    ctx = current()
    a = operands("sequence_bounds", segment_ids=segment_ids)["segment_ids"]
    parts, n = a.shape[0], int(np.prod(a.shape[1:] or (1,)))
    vals = None
    if ctx.numerics:
        ids = flat(a, ctx, np.dtype(np.float64))
        pos = np.broadcast_to(np.arange(n), ids.shape)
        change = np.ones(ids.shape, dtype=bool)
        change[:, 1:] = ids[:, 1:] != ids[:, :-1]
        start = np.maximum.accumulate(np.where(change, pos, 0), axis=1)
        last = np.ones(ids.shape, dtype=bool)
        last[:, :-1] = ids[:, :-1] != ids[:, 1:]
        end = np.minimum.accumulate(np.where(last, pos + 1, n)[:, ::-1], axis=1)[:, ::-1]
        pad = ids == 0
        vals = np.stack([np.where(pad, n, start), np.where(pad, -1, end)], axis=1).astype(np.float64)
    return deliver(ctx, SEQUENCE_BOUNDS, (parts, 2, n), a.dtype if dtype is None else dtype, vals, dst,
                   reads=[a])


@op("nisa.dropout", emits=(DROPOUT,))
def dropout(data: Any = None, prob: Any = None, *, mask: Any = None, dtype: Any = None, dst: Any = None,
            name: str = "") -> Tensor | None:
    """``nisa.dropout`` (Vector): zero each element with probability ``prob`` (a scalar or a ``[P, 1]``
    tile per partition); kept elements are unscaled.  Draws from the kernel's ``nl.rand`` generator."""
    ctx = current()
    if prob is None:
        raise nki_error("err_operand_cannot_be_none", "'prob' cannot be None.")
    a = operands("dropout", data=data)["data"]
    p = per_partition("dropout", "prob", prob, a.shape[0], ctx)
    valid = mask_array(mask, a.shape, "dropout", ctx)
    vals = None
    if ctx.numerics:
        x = flat(a, ctx, dt.compute_dtype(a.dtype))
        drop = ctx.generator().random(x.shape, dtype=F32) < np.asarray(p, dtype=F32)
        vals = np.where(drop, 0, x)
    reads = [a] + ([operands("dropout", prob=prob)["prob"]] if is_tile(prob) else [])
    return deliver(ctx, DROPOUT, a.shape, a.dtype if dtype is None else dtype, vals, dst, reads=reads,
                   valid=valid)


@op("nl.gather_flattened", emits=(GATHER_FLATTENED,))
def gather_flattened(data: Any = None, indices: Any = None, *, mask: Any = None, dtype: Any = None,
                     name: str = "") -> Tensor:
    """``nl.gather_flattened`` (GpSimd): per partition, the elements of ``data``'s flattened free axes at
    the (uint32) positions in ``indices``; the result has ``indices``' shape."""
    ctx = current()
    accs = operands("gather_flattened", "sbuf", data=data, indices=indices)
    a, ix = accs["data"], accs["indices"]
    if a.shape[0] != ix.shape[0]:
        raise nki_error("err_num_partition_mismatch",
                        f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                        f"({shape_str('data', a.shape)}, {shape_str('indices', ix.shape)}) of 'gather_flattened'")
    vals = gathered("gather_flattened", a, ix, ctx) if ctx.numerics else None
    valid = mask_array(mask, ix.shape, "gather_flattened", ctx)
    return deliver(ctx, GATHER_FLATTENED, ix.shape, a.dtype if dtype is None else dtype, vals,
                   reads=[a, ix], valid=valid)


def gathered(api: str, a: Access, ix: Access, ctx: Any) -> np.ndarray:
    """Per partition, the elements of ``a``'s flattened free axes at the positions in ``ix`` (``ix``'s flattened
    shape): the GpSimd gather of ``nl.gather_flattened`` and ``nisa.nc_n_gather``; an index out of bounds is the
    compiler's error."""
    src = read(a).reshape(a.shape[0], -1)
    pos = flat(ix, ctx, np.dtype(np.int64))
    assert pos is not None  # (numerics runs only)
    if pos.size and (pos.min() < 0 or pos.max() >= src.shape[1]):
        bad = int(pos.max()) if pos.max() >= src.shape[1] else int(pos.min())
        raise nki_error("err_tensor_access_out_of_bound",
                        f"index {bad} of '{api}' is out of bounds for {shape_str('data', a.shape)} (indices run "
                        f"from 0 to {src.shape[1] - 1}, the elements of one partition)")
    return np.take_along_axis(src, pos, axis=1)


def indirect_in_bounds(acc: Any, skip: bool) -> np.ndarray | None:
    """Which elements of an indirectly indexed DMA access address memory inside the tensor.

    None when the access has no indirect index or every element is in bounds.  Otherwise, with
    ``skip`` (``oob_mode=skip``) the boolean array over ``acc.shape`` of the elements to transfer;
    without it the simulator's IndexError naming the flat element offset of the first bad element
    (``index 66048 is out of bounds for axis 0 with size 65536``), a plain IndexError as there.
    """
    if not getattr(acc, "advanced", False) or not any(c[0] == "ind" for c in acc.comps):
        return None
    data = storage(acc.tensor)
    if data is None:
        return None
    dims = data.shape
    arrays = [np.broadcast_to(np.asarray(a), acc.shape) for a in acc.np_index()]
    inb = np.ones(acc.shape, dtype=bool)
    for a, n in zip(arrays, dims):
        inb &= (a >= 0) & (a < n)
    for raw, bound in acc.bounded_indices():  # AWS checks the index itself against its dimension (isa oob_mode)
        ok = (raw >= 0) & (raw < bound)
        if not skip and not ok.all():
            raise IndexError(f"index {int(raw.reshape(-1)[int(np.argmin(ok.reshape(-1)))])} is out of bounds for "
                             f"axis 0 with size {bound}")
        inb &= np.broadcast_to(ok, acc.shape)
    if inb.all():
        return None
    if not skip:
        first = np.unravel_index(int(np.argmin(inb.reshape(-1))), acc.shape)
        strides = np.cumprod((1,) + tuple(dims[::-1]))[:-1][::-1]
        offset = int(sum(int(a[first]) * int(st) for a, st in zip(arrays, strides)))
        raise IndexError(f"index {offset} is out of bounds for axis 0 with size {int(np.prod(dims))}")
    return inb


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
    same_elements(api, ix, "indices", d, "dst")
    vals = gathered(api, a, ix, ctx) if ctx.numerics else None
    out = write_dst(ctx, api, dst, ix.shape, vals)
    emit(ctx, GATHER_FLATTENED, reads=[a, ix], writes=[out])
