"""Index grids and slices: ``nl.arange``, ``nl.mgrid``, ``nl.ds`` and how a slice's bounds become affine forms.

They build ``indexing.Affine`` forms (a grid is an affine form with an integer array part) and hold nothing of a
loop's state, so they live apart from the affine algebra and the masks in ``core.indexing``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core.indexing import Affine


def arange(start: int, stop: int | None = None) -> Affine:
    """``nl.arange``: a 1-D index grid; reshape with ``[:, None]`` / ``[None, :]`` before use."""
    if stop is None:
        start, stop = 0, start
    return Affine(0, None, np.arange(int(start), int(stop), dtype=np.int64))


class Grid(tuple):
    """Result of ``nl.mgrid[...]``: unpacks to index expressions, also reachable as .p/.x/.y/.z."""

    @property
    def p(self) -> Affine:
        return self[0]

    @property
    def x(self) -> Affine:
        return self[1]

    @property
    def y(self) -> Affine:
        return self[2]

    @property
    def z(self) -> Affine:
        return self[3]


class _MGrid:
    """``nl.mgrid[0:128, 0:512]``: open (broadcastable) index grids, like numpy's ogrid."""

    def __getitem__(self, key: Any) -> Grid | Affine:
        single = not isinstance(key, tuple)
        keys = (key,) if single else key
        n = len(keys)
        out = []
        for axis, k in enumerate(keys):
            if not isinstance(k, slice) or isinstance(k.step, complex):
                raise TypeError("nl.mgrid takes integer slices such as nl.mgrid[0:128, 0:512]")
            vals = np.arange(k.start or 0, k.stop, k.step or 1, dtype=np.int64)
            shape = [1] * n
            shape[axis] = vals.size
            out.append(Affine(0, None, vals.reshape(shape)))
        return out[0] if single else Grid(out)


mgrid = _MGrid()


class DynSlice:
    """``nl.ds(start, size)``: the slice ``start:start+size`` (start may be a loop expression)."""

    __slots__ = ("start", "size")

    def __init__(self, start: Any, size: int) -> None:
        self.start, self.size = start, int(size)

    def __repr__(self) -> str:
        return f"ds({self.start!r}, {self.size})"


def ds(start: Any, size: int) -> DynSlice:
    """``nl.ds``: the slice ``start:start + size``, where ``start`` may be a loop index expression."""
    return DynSlice(start, size)


def slice_bound(v: Any, default: int, size: int, loops: set) -> tuple[Affine, int]:
    """A slice bound as an index expression, and its value at this iteration (what the access's
    shape and NumPy index are made of: computed here once instead of evaluated again)."""
    if v is None:
        return Affine.constant(default), default
    if v.__class__ is int:  # plain integers: the common case needs no lifting
        if v < 0:
            v += size
        return Affine.constant(v), v
    if v.__class__ is Affine and v.grid is None and v.affine and (v.terms or v.const >= 0):
        if v.loops:  # a loop index expression (``k * 128``), the other common case: used as it is
            loops.update(v.loops)
        return v, int(v.value())
    a = Affine.lift(v)
    if a is None:
        raise TypeError(f"slice bounds must be integers or loop indices, got {type(v).__name__}")
    if a.grid is not None:
        raise TypeError("slice bounds cannot be nl.arange expressions")
    if not a.terms and a.affine and a.const < 0:
        a = Affine(a.const + size)
    if a.loops:
        loops.update(a.loops)
    return a, int(a.value())


def slice_step(step: Any) -> int:
    step = int(step)
    if step <= 0:
        raise TypeError("NKI slices must have a positive step")
    return step
