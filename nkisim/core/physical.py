"""Physical on-chip memory for directly allocated tensors (``ncc.sbuf.mod_alloc`` / ``ncc.psum.mod_alloc``).

Auto-allocated tiles get their own storage.  Directly allocated ones are NumPy views into one byte
array per memory (128 partitions x bytes per partition), placed where the kernel asked, so two
allocations whose byte ranges overlap really alias each other (CS149's "direct allocation bad"
kernel computes wrong values for that reason), and a block tensor with ``num_free_tiles=(K,)`` has
only K physical blocks: logical block b lives in physical block b % K.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.buffers import PSUM_BANK_BYTES, ModAlloc


def _memory(ctx: Any, space: str) -> np.ndarray:
    mems = ctx.physical
    mem = mems.get(space)
    if mem is None:
        tgt = ctx.target
        width = tgt.sbuf_partition_bytes if space == "sbuf" else tgt.psum_partition_bytes
        mem = np.full((tgt.partitions, width), 0xFF, dtype=np.uint8)  # 0xFF.. reads back as NaN in every float dtype
        mems[space] = mem
    return mem


def physical_blocks(shape: tuple[int, ...], par: int, alloc: ModAlloc) -> tuple[int, ...]:
    """Number of physical blocks kept per block dimension (num_free_tiles, or all of them)."""
    blocks = list(shape[:par])
    for i, k in enumerate(alloc.num_free_tiles[: len(blocks)]):
        if k:
            blocks[i] = min(blocks[i], int(k))
    return tuple(blocks)


def view(ctx: Any, shape: tuple[int, ...], par: int, dtype: np.dtype, alloc: ModAlloc) -> np.ndarray:
    """A typed view of the physical memory laid out as the allocation requests."""
    mem = _memory(ctx, alloc.space)
    d = dt.storage_dtype(dtype)
    blocks = physical_blocks(shape, par, alloc)
    parts = shape[par]
    free = shape[par + 1:]
    free_bytes = int(np.prod(free)) * d.itemsize if free else d.itemsize
    base = int(alloc.base_addr) + (int(alloc.base_bank or 0) * PSUM_BANK_BYTES if alloc.space == "psum" else 0)
    width = mem.shape[1]
    need = base + int(np.prod(blocks)) * free_bytes
    if need > width or alloc.base_partition + parts > 128:
        raise ValueError(f"direct allocation at byte {base} (partition {alloc.base_partition}) of {need - base} "
                         f"bytes per partition does not fit in {alloc.space} ({width} bytes per partition)")
    free_strides = []
    step = d.itemsize
    for s in reversed(free):
        free_strides.append(step)
        step *= s
    free_strides.reverse()
    block_strides = []
    step = free_bytes
    for b in reversed(blocks):
        block_strides.append(step)
        step *= b
    block_strides.reverse()
    strides = tuple(block_strides) + (width,) + tuple(free_strides)
    offset = int(alloc.base_partition) * width + base
    return np.ndarray(blocks + (parts,) + tuple(free), dtype=d, buffer=mem, offset=offset, strides=strides)


def rotation(tensor: Any) -> tuple[int, ...] | None:
    """Physical block counts of a rotating direct allocation (None when indices map 1:1)."""
    alloc = getattr(tensor.buffer, "alloc", None)
    if alloc is None or tensor.par_axis == 0 or tensor.base is not None:
        return None
    blocks = physical_blocks(tensor.shape, tensor.par_axis, alloc)
    return None if blocks == tensor.shape[: tensor.par_axis] else blocks
