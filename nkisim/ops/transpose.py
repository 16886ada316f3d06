"""DMA transposes: ``nisa.dma_transpose`` and ``nl.load_transpose2d`` (issue 12).

Both move data through the DMA engines into a new SBUF tile whose partition axis is the source's
last axis.  The *source* may span more than 128 rows (a ``[2048, 128]`` HBM tensor transposes into
a ``[128, 2048]`` tile), so only the result's partitions are checked against the 128-partition limit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read, read_masked
from nkisim.core.tensor import Access, Tensor, as_access, shape_str
from nkisim.cost.instructions import DMA_TRANSPOSE, LOAD_TRANSPOSE2D, InstructionKind
from nkisim.ops.base import check_partitions, emit, mask_array, new_tile, operand, write_dst
from nkisim.ops.registry import op, spaces_of

#: the permutation the hardware applies per source rank (ISA reference)
DEFAULT_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
HWDGE = 3  # nisa.dge_mode.hwdge


def _source(inst: str, src: Any) -> Access:
    """The source access (HBM or SBUF), refusing indirect indexing as the compiler does."""
    acc = as_access(operand(inst, "src", src, spaces_of(inst)))
    if acc.advanced and any(c[0] == "ind" for c in acc.comps):
        raise nki_error("err_indirect_indices_are_not_supported_with_nki_api",
                        f"cannot use indirect indexing access with the current NKI API for src {list(acc.shape)}")
    return acc


def _transpose(kind: InstructionKind, acc: Access, axes: tuple[int, ...], mask: Any, dtype: Any,
               dst: Any = None) -> Tensor | None:
    ctx = current()
    inst = kind.name
    shape = tuple(acc.shape[a] for a in axes)
    check_partitions(inst, {"dst": shape}, {"dst": shape})
    if dst is not None:
        d = as_access(operand(inst, "dst", dst, ["sbuf"], ctx))
        if d.shape != shape:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('dst', d.shape)}, {shape_str('src', acc.shape)}) of '{inst}' "
                            f"has mismatched shapes: dst must have exactly the shape of src permuted by axes "
                            f"{list(axes)}, {list(shape)}")
    valid = mask_array(mask, acc.shape, inst, ctx)
    acc.check_bounds(valid)
    vals = None
    if ctx.numerics:
        vals = np.transpose(read(acc) if valid is None else read_masked(acc, valid), axes)
    out_valid = None if valid is None or valid.ndim == 0 else np.transpose(np.broadcast_to(valid, acc.shape), axes)
    nbytes = math.prod(acc.shape) * acc.itemsize
    extra = _dma_facts(ctx, acc, shape)
    if dst is not None:
        emit(ctx, kind, reads=[acc], writes=[write_dst(ctx, inst, dst, shape, vals, out_valid, "sbuf")], nbytes=nbytes,
             extra=extra)
        return None
    tile = new_tile(ctx, shape, acc.dtype if dtype is None else dt.normalize(dtype), vals, out_valid, fresh=False)
    tile.producer = emit(ctx, kind, reads=[acc], writes=[tile.full()], nbytes=nbytes, extra=extra)
    return tile


def _dma_facts(ctx: Any, acc: Access, shape: tuple[int, ...]) -> dict[str, bool] | None:
    """What the cost model needs to know of a DMA transpose of ``acc`` into ``shape`` (None: nothing).

    ``static_descriptors``: the hardware DGE cannot make it -- "Hardware DGE constraints for ``dma_transpose``:
    ``src.shape[0] == 16``, ``src.shape[-1] % 128 == 0``, ``src.dtype`` must be 2 bytes" (aws-neuron-sdk
    nki/deep-dives/nki-dge.rst:145-149) -- so its descriptors are made as on NeuronCore-v2 (host-made, nki-dge.rst:53-56;
    trainium2_arch.rst:353), not by the DGE at run time.  ``unaligned``: its output is not whole ``[128, 16]`` blocks:
    "Having a multiple of 128 and a multiple of 16 in the output SBUF partition and inner-most free dimension sizes is a
    pre-requisite to achieve best DMA throughput efficiency possible with DMA transpose" (trainium2_arch.rst:303).
    ``from_sbuf``: an SBUF-to-SBUF transpose (trainium2_arch.rst:340 prices it apart)."""
    lim = ctx.target.limits
    extra: dict[str, bool] = {}
    rows = lim.hwdge_transpose_rows
    if rows is not None and (acc.shape[0] != rows or acc.shape[-1] % lim.hwdge_transpose_row_multiple
                             or acc.itemsize != lim.hwdge_transpose_itemsize):
        extra["static_descriptors"] = True
    if shape[0] % ctx.target.partitions or shape[-1] % ctx.target.params.dma.transpose_block_free:
        extra["unaligned"] = True
    if acc.space != "hbm":
        extra["from_sbuf"] = True
    return extra or None


@op("nisa.dma_transpose", emits=(DMA_TRANSPOSE,), spaces="hbm|sbuf")
def dma_transpose(src: Any = None, *, axes: Any = None, mask: Any = None, dtype: Any = None, dge_mode: Any = None,
                  dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.dma_transpose``: a transposed copy of an HBM or SBUF tile into SBUF; ``axes`` is
    ``(1, 0)``, ``(2, 1, 0)`` or ``(3, 1, 2, 0)`` (the default for the source's rank).  The hardware
    DGE form (``dge_mode=hwdge``) needs trn2 and 2-byte data; the legacy form (a new tile) also needs a
    16-row source with rows a multiple of 128 long, the newer form (``dst`` given, NKI 0.6) a source of 1, 2, 4,
    8 or 16 rows, a last dimension of at most 128 and, from rank 3, ``shape[0] * shape[-2]`` a multiple of 16."""
    ctx = current()
    acc = _source("dma_transpose", src)
    rank = len(acc.shape)
    if rank not in DEFAULT_AXES:
        raise nki_error("err_exceed_max_supported_dimension",
                        f"parameter '{shape_str('src', acc.shape)}' of 'dma_transpose' must have 2 to 4 dimensions.")
    perm = DEFAULT_AXES[rank] if axes is None else tuple(int(a) for a in axes)
    if perm != DEFAULT_AXES[rank]:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('src', acc.shape)}, axes={list(perm)}) of 'dma_transpose' has "
                        f"mismatched shapes: a rank-{rank} transpose supports axes {DEFAULT_AXES[rank]} only")
    if dge_mode is not None and int(dge_mode) == HWDGE:
        if ctx.nc_version < 3:
            raise nki_error("err_min_arch_support_for_inst",
                            f"inst dma_transpose with dge_mode=hwdge requires min target gen3 (trn2), got {ctx.target}")
        tgt = ctx.target
        rows, multiple = tgt.limits.hwdge_transpose_rows, tgt.limits.hwdge_transpose_row_multiple
        itemsize = tgt.limits.hwdge_transpose_itemsize
        if dst is not None:
            counts = tuple(1 << i for i in range(rows.bit_length()) if 1 << i <= rows)  # 1, 2, 4, 8, 16
            if acc.shape[0] not in counts or acc.shape[-1] > tgt.partitions or acc.itemsize != itemsize or (
                    rank > 2 and (acc.shape[0] * acc.shape[-2]) % rows) or (rank == 2 and acc.shape[0] != rows):
                raise nki_error("err_param_shape_mismatch",
                                f"Parameter shapes ({shape_str('src', acc.shape)}) of 'dma_transpose' has mismatched "
                                f"shapes: a hardware-DGE transpose needs a {itemsize}-byte dtype, a last dimension of "
                                f"at most {tgt.partitions} and {rows} rows (2-D) or {', '.join(map(str, counts))} rows "
                                f"with rows * shape[-2] a multiple of {rows}")
        elif acc.shape[0] != rows or acc.shape[-1] % multiple or acc.itemsize != itemsize:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('src', acc.shape)}) of 'dma_transpose' has mismatched "
                            f"shapes: a hardware-DGE transpose needs {rows} rows, a last dimension that is a multiple "
                            f"of {multiple} and a {itemsize}-byte dtype")
    return _transpose(DMA_TRANSPOSE, acc, perm, mask, dtype, dst)


@op("nl.load_transpose2d", emits=(LOAD_TRANSPOSE2D,), spaces="hbm|sbuf")
def load_transpose2d(src: Any, *, mask: Any = None, dtype: Any = None, name: str = "") -> Tensor:
    """``nl.load_transpose2d``: HBM ``[F, P]`` -> SBUF ``[P, F]`` through the DMA engines."""
    acc = _source("load_transpose2d", src)
    if acc.space != "hbm":
        raise nki_error("err_unsupported_memory",
                        f"Expected operand 'src' of 'load_transpose2d' to be in address space 'hbm', but got a tile "
                        f"in '{acc.space}' instead.")
    if len(acc.shape) != 2:
        raise nki_error("err_exceed_max_supported_dimension",
                        f"parameter '{shape_str('src', acc.shape)}' of 'load_transpose2d' exceed max supported "
                        f"number of dimensions of 2.")
    return _transpose(LOAD_TRANSPOSE2D, acc, (1, 0), mask, dtype)
