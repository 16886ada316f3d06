"""NKI 0.6's per-partition indirect DMA views (``t.vector_select(0, idx)``, ``t.ap(..., vector_offset=idx)``) as the
legacy front end's indirect access.

Partition ``p`` of such a view reads row ``idx[p]`` of an HBM tensor: element ``v[p, j...]`` is
``flat[offset + idx[p] * row + sum(j_k * s_k)]``.  That is the legacy ``data[idx[i_p, 0], i_f]``: an ``Access``
whose first component is ``('ind', idx[i_p, 0])`` over the storage seen as ``(rows, row)``, and whose free
positions are a grid of columns; where the free pattern leaves the row (or the view starts rows in), each position's
whole rows are a static shift added to the index (``core.dynamic.IndirectRows``).  So a 0.6 gather or scatter builds
that same ``Access``: the same
checks (``err_indirect_indices_*``), the same program component, the same executor (out-of-range indices,
``oob_mode=skip``) and the same DMA cost; there is no second implementation of indirect addressing.
``t.ap(pattern, scalar_offset=tile, indirect_dim=d)`` on HBM is the same access with one index, ``tile[0, 0]``,
broadcast over the whole view (the legacy ``data[w[0, 0], i_p, i_f]``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.access import Access
from nkisim.core.dynamic import DynamicIndex, IndirectRows
from nkisim.core.indexing import Affine
from nkisim.core.tensor import Tensor
from nkisim.frontend.v06.adapters.errors import error


class Indirect:
    """The index of an indirect view: its SBUF index tile (a (P, 1) view), the row stride, in elements of the
    view's storage, that each index is multiplied by, and how many rows the selected dimension had (a view of one
    batch of a (B, N, F) tensor selects among its N rows, as the legacy ``data[b, idx[i_p, 0], i_f]`` does)."""

    __slots__ = ("index", "row", "rows", "scalar")

    def __init__(self, index: Any, row: int, rows: int, scalar: bool = False) -> None:
        self.index = index
        self.row = int(row)
        self.rows = int(rows)
        #: one index for the whole view (``.ap(scalar_offset=tile)``), read from a (1, 1) tile
        self.scalar = scalar


def _invalid(message: str) -> Exception:
    return error("err_invalid_view", message)


def check_index(what: str, name: str, on_chip: bool, dynamic: bool, offsets: Any, scalar: bool = False) -> None:
    """The preconditions AWS states for a per-partition index (``vector_select``, ``.ap(vector_offset=)``), or with
    ``scalar`` for a (1, 1) tile holding one offset (``.ap(scalar_offset=tile)``)."""
    if scalar:
        if not getattr(offsets, "__nki_view__", False) or offsets.buffer.family != "sbuf" or offsets.shape != (1, 1):
            # rule: view.scalar_offset_shape
            raise _invalid(f"{what}: a scalar offset must be a register or an SBUF tensor of shape (1, 1), got "
                           f"{_describe(offsets)}")
    elif on_chip:
        # rule: view.vector_select_hbm
        raise _invalid(f"{what}: '{name}' is on chip; per-partition indirect addressing reads HBM tensors only "
                       f"(through DMA)")
    if dynamic:
        # rule: view.one_dynamic_select
        raise _invalid(f"{what}: '{name}' already has a dynamic offset (a dynamic select, scalar_offset or "
                       f"vector_select): only one dynamic select per tensor")
    # AWS's docs give the offsets as a [P, 1] tile; nki-library's kernels (validated on the compiler) also pass
    # [P, 1, 1] (rule ap.vector_offset_shape): one offset per partition is what matters
    if not scalar and (not getattr(offsets, "__nki_view__", False) or offsets.buffer.family != "sbuf"
                       or offsets.ndim < 2 or math.prod(offsets.shape[1:]) != 1):
        # rule: view.vector_offset_shape
        raise _invalid(f"{what}: the offsets must be an SBUF tensor with one offset per partition (shape (P, 1)), got "
                       f"{_describe(offsets)}")
    if dt.is_float(offsets.dtype) or not dt.is_int(offsets.dtype):
        # rule: view.vector_offset_shape
        raise _invalid(f"{what}: the offsets '{offsets.view_base().label()}' must hold integers, got {dt.name(offsets.dtype)}")
    if offsets.is_indirect():
        # rule: view.indirect_final
        raise _invalid(f"{what}: the offsets '{offsets.view_base().label()}' are themselves an indirect view")


def _describe(offsets: Any) -> str:
    if not getattr(offsets, "__nki_view__", False):
        return type(offsets).__name__
    return f"'{offsets.view_base().label()}' of shape {list(offsets.shape)} in {offsets.buffer.family.upper()}"


def _index_access(index: Any, nfree: int, scalar: bool = False) -> Access:
    """``idx[i_p, 0]`` of the legacy spelling (``i_p`` of shape ``(P, 1, ..., 1)``, one 1 per free dimension of the
    view), for a (P, 1) view of an SBUF tile (any column of it); ``idx[r, c]``, one element, for a scalar offset."""
    base: Tensor = index.view_base()
    coords = [int(c) for c in np.unravel_index(index.offset, base.shape)]
    if scalar:
        return Access(base, tuple(coords))
    p = index.shape[0]
    step, rest = divmod(index.strides[0], math.prod(base.shape[1:]))
    if p > 1 and (rest or step <= 0):
        # rule: limit.indirect_pattern
        raise NotImplementedError(f"offsets '{index.view_base().label()}' whose partition stride "
                                  f"{index.strides[0]} is not a whole number of partitions are not supported by the "
                                  f"simulator")
    grid = np.arange(coords[0], coords[0] + p * max(step, 1), max(step, 1), dtype=np.int64).reshape((p,) + (1,) * nfree)
    return Access(base, (Affine(0, None, grid),) + tuple(coords[1:]))


def lower(base: Tensor, offset: int, pattern: tuple[tuple[int, int], ...], ind: Indirect) -> Access:
    """The legacy access ``storage[idx[i_p, 0] + shift, r]`` that addresses the indirect view.

    The storage is seen as ``(rows, row)``: the element at free position ``j`` lies ``offset + pattern(j)`` elements
    past the start of the row the index picks, which is ``shift[j]`` rows further on, column ``r[j]`` (AWS's
    pattern is any ``[[stride, count], ...]``, language:486-491 'analogous to torch.as_strided', so it may leave
    the row, or start rows into the storage, as a view ``data[2:40]`` does).  The index is checked against the
    count of the dimension it selects among (``ind.rows``), as AWS's oob_mode describes; every element against
    the storage."""
    if ind.scalar and base.space != "hbm":
        return _lower_on_chip(base, offset, pattern, ind)
    row = ind.row
    size = math.prod(base.shape)
    free = pattern if ind.scalar else pattern[1:]
    if not free:  # one element per partition: a free dimension of one (the gather's grid is two-dimensional)
        free = ((1, 1),)
    if row <= 0:
        # rule: limit.indirect_pattern
        raise NotImplementedError(f"an indirect view of '{base.root.label()}' whose row stride is {row} (an index "
                                  f"that does not move the view) is not supported by the simulator")
    memo = _POSITIONS.get((size, row, ind.scalar, offset, free))
    if memo is None:
        memo = _positions(size, row, ind.scalar, offset, free)
        if len(_POSITIONS) > 1024:
            _POSITIONS.clear()
        _POSITIONS[size, row, ind.scalar, offset, free] = memo
    scale, row, first, shift, col, moves = memo
    index = _index_access(ind.index, len(free), ind.scalar)
    n, total = ind.rows, size // row
    if scale == 1 and not moves and not (first % n or total % n):
        # the free positions stay inside the row: the legacy gather data[b, idx[i_p, 0], i_f] of a
        # (batches, n, row) storage, an index bounded by n (the same program as the legacy spelling)
        if n == total:
            storage = base if base.ndim == 2 and base.shape[1] == row else base.reshape((total, row))
            return Access(storage, (index, Affine(0, None, col)))
        shape = (total // n, n, row)
        storage = base if base.shape == shape else base.reshape(shape)
        return Access(storage, (first // n, index, Affine(0, None, col)))
    shift = shift + first
    if int(shift.min()) == int(shift.max()):  # one shift for every element: a constant
        moved = Affine(int(shift.reshape(-1)[0])) if int(shift.reshape(-1)[0]) else None
    else:
        moved = Affine(0, None, np.ascontiguousarray(shift))
    storage = base if base.ndim == 2 and base.shape[1] == row else base.reshape((total, row))
    return Access(storage, (IndirectRows(index, moved, n, scale), Affine(0, None, col)))


#: (storage size, row stride, scalar offset?, offset, free pattern) -> ``_positions``: an unrolled loop's gathers
#: lower the same indirect views again and again (the index tile's values are read when the access runs)
_POSITIONS: dict[tuple, tuple[int, int, int, np.ndarray, np.ndarray, bool]] = {}


def _positions(size: int, row: int, scalar: bool, offset: int, free: tuple[tuple[int, int], ...]) -> tuple:
    """(scale, storage row, first row, row shift and column of each free position, whether any shift is not 0) of an
    indirect view whose index steps ``row`` elements (``lower``); the arrays are shared, so never written."""
    scale = 1
    if size % row:  # storage rows of a divisor of the stride, each index stepping several of them
        unit = math.gcd(row, size)
        scale, row = row // unit, unit
    first, offset = divmod(offset, row)
    counts = tuple(c for _, c in free)
    # the partition's place (a vector offset's index tile has one), or a unit one before a single free dimension of
    # a scalar offset's view: the core indexes with grids of two dimensions at least
    lead = () if scalar and len(free) > 1 else (1,)
    pos = np.full(lead + counts, offset, dtype=np.int64)
    for k, (s, c) in enumerate(free):
        pos += (np.arange(c, dtype=np.int64) * s).reshape(lead + tuple(c if j == k else 1 for j in range(len(counts))))
    shift, col = np.divmod(pos, row)
    shift.flags.writeable = col.flags.writeable = False
    return scale, row, first, shift, col, bool(shift.any())


def _lower_on_chip(base: Tensor, offset: int, pattern: tuple[tuple[int, int], ...], ind: Indirect) -> Access:
    """A tile's value as an offset of an on-chip tensor (``t.select(1, tile)``, ``t.ap(pattern, scalar_offset=tile,
    indirect_dim=d)``): the legacy dynamic index ``src[i_p, offsets[0, 0] + shift, r]`` (``core.dynamic.
    DynamicIndex``) over each partition's elements seen as ``(rows, row)``, with ``row`` the stride the offset
    scales; on the partition dimension (indirect_dim=0, as a register offset may be), ``src[offsets[0, 0] + i_p,
    f]``."""
    free_size = math.prod(base.shape[1:])
    row = ind.row
    first, start = divmod(offset, free_size)
    if not pattern or (pattern[0][0] != free_size and pattern[0][1] > 1) or free_size % row:
        # rule: limit.indirect_pattern
        raise NotImplementedError(f"a tile as the offset of on-chip tensor '{base.root.label()}' on a view whose "
                                  f"first pair {list(pattern[0]) if pattern else []} is not its partitions is not "
                                  f"supported by the simulator")
    parts = pattern[0][1]
    free = pattern[1:] or ((1, 1),)
    counts = tuple(c for _, c in free)
    pos = np.full((1,) + counts, start, dtype=np.int64)
    for k, (s, c) in enumerate(free):
        pos += (np.arange(c, dtype=np.int64) * s).reshape((1,) + tuple(c if j == k else 1 for j in range(len(counts))))
    grid = np.arange(first, first + parts, dtype=np.int64).reshape((parts,) + (1,) * len(free))
    index = _index_access(ind.index, len(free), True)
    if row == free_size:  # the partition dimension: the offset moves the partitions
        shift, col = np.divmod(pos, row)
        storage = base if base.ndim == 2 else base.reshape((base.shape[0], free_size))
        moved = DynamicIndex(index, Affine(0, None, np.ascontiguousarray(grid + shift)))
        return Access(storage, (moved, Affine(0, None, col)))
    shift, col = np.divmod(pos, row)
    storage = base.reshape((base.shape[0], free_size // row, row))
    moved = DynamicIndex(index, Affine(0, None, np.ascontiguousarray(shift)))
    return Access(storage, (Affine(0, None, grid), moved, Affine(0, None, col)))
