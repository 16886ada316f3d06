"""The DMA instructions: ``nisa.dma_copy`` (any two memories, a cast, an optional read-modify-write),
``nl.atomic_rmw`` (a read-modify-write DMA into HBM) and ``nisa.dma_compute`` (the DMA engines' scaled sum of its
sources, and its read-modify-write form through indirect views), each one DMA instruction priced by the queue model.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read, read_masked, write
from nkisim.core.tensor import Access, as_access, is_tile, shape_str
from nkisim.cost.instructions import (
    DMA_COMPUTE,
    DMA_COPY,
)
from nkisim.ops import memory
from nkisim.ops.base import check_partitions, emit, f32, mask_array, operand, operands
from nkisim.ops.movement import indirect_in_bounds
from nkisim.ops.mx import check_packed_copy
from nkisim.ops.optable import ALU, op_name
from nkisim.ops.outputs import F32, alu
from nkisim.ops.registry import op, spaces_of


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
    nbytes = int(math.prod(d.shape)) * s.itemsize
    dst_bytes = int(math.prod(d.shape)) * d.itemsize
    src_bytes = int(math.prod(s.shape)) * s.itemsize
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
    memory.read_indices(emit(ctx, DMA_COPY, reads=reads, writes=[d], nbytes=nbytes, extra=extra or None), (s, d))


def _keep_in_bounds(d: Access, s: Access, valid: np.ndarray | None, oob_mode: Any) -> np.ndarray | None:
    """``valid`` narrowed to the elements whose indirect index is in bounds (``oob_mode=skip``); with
    the default ``oob_mode=error`` an out-of-bounds indirect index raises the simulator's IndexError."""
    skip = oob_mode is not None and int(oob_mode) == 1
    for acc in (d, s):
        inb = indirect_in_bounds(acc, skip)
        if inb is not None and acc.shape == d.shape:
            valid = inb if valid is None else np.logical_and(np.broadcast_to(valid, d.shape), inb)
    return valid


@op("nl.atomic_rmw", emits=(DMA_COPY,))
def atomic_rmw(dst: Any = None, value: Any = None, op: Any = None, *, mask: Any = None, name: str = "") -> None:
    """``nl.atomic_rmw``: ``dst = op(dst, value)`` on HBM as one read-modify-write DMA (the indirect
    index of ``dst`` picks the rows).  Only ``np.add`` is supported, like the hardware."""
    if op_name(op) != "add":
        raise nki_error("err_instruction_unsupported_op", f"{op_name(op)} is not supported in 'atomic_rmw'")
    d = operands("atomic_rmw", "hbm", dst=dst)["dst"]
    if d.space != "hbm":
        raise nki_error("err_unsupported_memory",
                        f"Expected operand 'dst' of 'atomic_rmw' to be in address space 'hbm', but got a tile in "
                        f"'{d.space}' instead.")
    dma_copy(dst=dst, src=value, mask=mask, dst_rmw_op=op)


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
    limit = ctx.target.limits.dma_compute_max_sources
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
