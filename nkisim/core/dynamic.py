"""Dynamic indices: a position read from a tile at run time, plus an index expression.

``src[ix, offsets[0, i] + iy]`` (nisa.tensor_copy_dynamic_src and friends) moves a window whose start
is a value in SBUF: the engine reads it into a register when the instruction runs.  The simulator
keeps the tile element and the static part apart and adds them when the access is resolved, so the
value is the one the tile holds at that point of the kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core.indexing import Affine
from nkisim.core.storage import read


class DynamicIndex:
    """``element + offset``: ``element`` a one-element tile (Access or Tensor), ``offset`` an index expression."""

    __slots__ = ("element", "offset")

    def __init__(self, element: Any, offset: Affine) -> None:
        if int(np.prod(element.shape)) != 1:
            raise TypeError(f"a dynamic index is one element of a tile, got a tile of shape {list(element.shape)}: "
                            "index it down to one element (e.g. offsets[0, i])")
        self.element = element
        self.offset = offset

    def __add__(self, other: Any) -> DynamicIndex:
        offset = Affine.lift(other)
        if offset is None:
            return NotImplemented
        return DynamicIndex(self.element, self.offset + offset)

    __radd__ = __add__

    @property
    def loops(self) -> frozenset:
        return self.offset.loops

    @property
    def shape(self) -> tuple[int, ...]:
        grid = self.offset.grid
        return () if grid is None else grid.shape

    def value(self) -> Any:
        """The index at this point of the kernel: the element's current value plus the offset's."""
        vals = read(self.element)
        base = 0 if vals is None else int(np.asarray(vals).reshape(-1)[0])
        return self.offset.value() + base


class IndirectRows:
    """``index + shift`` rows of an indirect access, and the bound the index itself is checked against.

    NKI 0.6's indirect views (``.ap(vector_offset=idx)``, ``.ap(scalar_offset=tile)``, ``vector_select``) take any
    ``[[stride, count], ...]`` free pattern, so a partition's elements may lie past the row its index picks.  Over
    storage seen as ``(rows, row)`` the element at free position ``j`` is row ``idx[p] + shift[j]``, column
    ``r[j]``, with ``offset + pattern(j) = shift[j] * row + r[j]``: the index tile (an ``Access`` read when the
    instruction runs) plus a static index expression.  AWS's out-of-bounds check is on the index ("the index array
    contains values that exceed the dimensions of the target array", isa ``oob_mode``), so ``bound`` is the count
    of the dimension the index selects among (None: the storage's own rows, the legacy ``data[idx[i_p, 0], i_f]``).
    ``scale``: storage rows per index step, where the view's row stride does not divide the storage and the rows
    are a divisor of it (row ``idx[p] * scale + shift[j]``).
    """

    __slots__ = ("index", "shift", "bound", "scale")

    def __init__(self, index: Any, shift: Affine | None, bound: int | None, scale: int = 1) -> None:
        self.index = index
        self.shift = shift
        self.bound = bound
        self.scale = scale
