"""NumPy index helpers shared by tiles and ops: broadcast masks, arange gathers as slices, boxes.

Plain functions of arrays and NumPy indices (no tensors): what an access resolves to, how a mask is
tested cheaply, and the region an access covers as the trace records it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def compact(a: np.ndarray) -> np.ndarray:
    """A broadcast view without its repeated (zero-stride) axes: same all/any answers, far fewer elements.

    Masks like ``i * 128 + ix < n`` are (P, 1) broadcast to (P, F); testing them element by element
    would cost a pass over P * F booleans per instruction.
    """
    if a.ndim and 0 in a.strides:
        return a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
    return a


def all_true(a: np.ndarray) -> bool:
    """``bool(np.all(a))`` computed on the compact form of a broadcast mask."""
    return bool(np.all(compact(a))) if isinstance(a, np.ndarray) else bool(np.all(a))


def arange_slices(idx: tuple, data_shape: tuple[int, ...]) -> tuple | None:
    """The basic slices equivalent to an advanced index made of per-axis aranges, else None.

    Tutorial code indexes with ``i * 128 + nl.arange(128)[:, None]`` and ``nl.arange(F)[None, :]``:
    NumPy then gathers element by element, while the same elements as slices are one strided copy.
    Only exact equivalents qualify: one integer array per data axis, varying along its own axis only,
    an increasing arithmetic progression, inside the axis (negative or out-of-range values keep
    NumPy's gather and its errors).
    """
    nd = len(data_shape)
    if len(idx) != nd:
        return None
    out = []
    for axis, a in enumerate(idx):
        if not isinstance(a, np.ndarray) or a.ndim != nd or a.dtype.kind not in "iu":
            return None
        n = a.shape[axis]
        if n == 0 or a.size != n:
            return None
        flat = a.reshape(n)
        start = int(flat[0])
        step = int(flat[1]) - start if n > 1 else 1
        last = start + step * (n - 1)
        if step < 1 or start < 0 or last >= data_shape[axis]:
            return None
        if n > 2 and not np.array_equal(flat, np.arange(start, last + 1, step)):
            return None
        out.append(slice(start, last + 1, step))
    return tuple(out)


def index_box(np_idx: tuple) -> tuple:
    """The (lo, hi) bounds per dimension of a basic NumPy index (ints and slices): the region an
    access covers, as the trace records it."""
    return tuple((c.start, c.stop) if c.__class__ is slice else (c, c + 1) for c in np_idx)


def rotate_index(v: Any, k: int) -> Any:
    """Logical block index -> physical block of a rotating direct allocation."""
    if isinstance(v, slice):
        if v.stop - v.start <= 0 or v.start // k == (v.stop - 1) // k:
            return slice(v.start % k, (v.start % k) + (v.stop - v.start), v.step)
        return np.arange(v.start, v.stop, v.step or 1) % k
    return v % k


def shape_argument(method: str, args: tuple, kw: dict[str, Any]) -> tuple:
    """The shape given to ``reshape``: as separate integers, one tuple or list, or ``shape=``."""
    if kw:
        if args or set(kw) != {"shape"}:
            raise TypeError(f"{method}() takes the shape as integers, one tuple, or shape=(...)")
        args = (kw["shape"],)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return args
