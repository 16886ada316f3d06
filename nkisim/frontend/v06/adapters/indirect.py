"""NKI 0.6's per-partition indirect DMA views (``t.vector_select(0, idx)``, ``t.ap(..., vector_offset=idx)``) as the
legacy front end's indirect access.

Partition ``p`` of such a view reads row ``idx[p]`` of an HBM tensor: element ``v[p, j...]`` is
``flat[offset + idx[p] * row + sum(j_k * s_k)]``.  That is exactly the legacy ``data[idx[i_p, 0], i_f]``: an
``Access`` whose first component is ``('ind', idx[i_p, 0])`` over the storage seen as ``(rows, row)``, and whose free
positions are an arange grid inside one row.  So a 0.6 gather or scatter builds that same ``Access``: the same
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
        if on_chip:
            # rule: limit.scalar_offset_on_chip
            raise NotImplementedError(f"{what}: a tile as the scalar offset of on-chip tensor '{name}' is not supported "
                                      f"by the simulator yet; load it into a register (nisa.register_load)")
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
    if p > 1 and index.strides[0] != math.prod(base.shape[1:]):
        # rule: limit.indirect_pattern
        raise _invalid(f"the offsets '{index.view_base().label()}' must step one partition per index")
    grid = np.arange(coords[0], coords[0] + p, dtype=np.int64).reshape((p,) + (1,) * nfree)
    return Access(base, (Affine(0, None, grid),) + tuple(coords[1:]))


def lower(base: Tensor, offset: int, pattern: tuple[tuple[int, int], ...], ind: Indirect) -> Access:
    """The legacy access ``storage[idx[i_p, 0], i_f]`` that addresses the indirect view.

    The storage is seen as ``(rows, row)`` (or ``(batches, rows, row)`` with an integer batch, for a view starting
    past row 0); the view's free positions must stay inside one row (the row the index picks), as a legacy gather's
    free index does."""
    row = ind.row
    size = math.prod(base.shape)
    free = pattern if ind.scalar else pattern[1:]
    if len(pattern) < 2:
        # rule: limit.indirect_pattern
        raise NotImplementedError(f"a 1-D indirect view of '{base.root.label()}' is not supported by the simulator; "
                                  f"give it a free dimension (a pattern [[row, P], [1, n]])")
    if row <= 0 or size % row:
        # rule: limit.indirect_pattern
        raise NotImplementedError(f"an indirect view of '{base.root.label()}' whose row stride {row} does not divide its "
                                  f"{size} elements is not supported by the simulator")
    first, offset = divmod(offset, row)
    n = ind.rows
    if first and (first % n or (size // row) % n):
        # rule: limit.indirect_pattern
        raise NotImplementedError(f"an indirect view of '{base.root.label()}' starting at row {first}, not at a multiple "
                                  f"of its {n} rows, is not supported by the simulator; index the whole tensor and "
                                  f"add the row to the offsets")
    counts = tuple(c for _, c in free)
    lead = () if ind.scalar else (1,)
    pos = np.full(lead + counts, offset, dtype=np.int64)
    for k, (s, c) in enumerate(free):
        pos += (np.arange(c, dtype=np.int64) * s).reshape(lead + tuple(c if j == k else 1 for j in range(len(counts))))
    if pos.size and (pos.min() < 0 or pos.max() >= row):
        # rule: limit.indirect_pattern
        raise NotImplementedError(f"the free pattern {[list(p) for p in free]} at offset {offset} of an indirect view "
                                  f"of '{base.root.label()}' leaves the row of {row} elements each index selects: not "
                                  f"supported by the simulator (a legacy gather's free index stays inside the row)")
    gather = (_index_access(ind.index, len(free), ind.scalar), Affine(0, None, pos))
    if first or (n < size // row and (size // row) % n == 0):
        # a batch of a (batches, n, row) storage: the legacy data[b, idx[i_p, 0], i_f], an index bounded by n
        shape = (size // row // n, n, row)
        storage = base if base.shape == shape else base.reshape(shape)
        return Access(storage, (first // n,) + gather)
    storage = base if base.ndim == 2 and base.shape[1] == row else base.reshape((size // row, row))
    return Access(storage, gather)

