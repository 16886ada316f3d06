"""The arithmetic of NKI 0.6 views: ``[stride, count]`` patterns over a tensor's flat storage, and how an
instruction's operand is built from one (``lower``).

A view the hardware's access patterns express with basic slices of the storage tensor (the common case:
``t[a:b, c:d:s]``, a partition row, a column) becomes an ``Access`` of slices and integers, which the ops read as a
NumPy view; any other (a transposed, broadcast or pooling-window view) becomes an ``Access`` of per-axis
coordinate arrays, which the ops gather and scatter through.  Offsets that move with a dynamic loop's index
(``scalar_offset=register``) are added to the storage dimension they step along, so they stay symbolic in the
program and the access's bounds are checked over the loop's whole range.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from nkisim.core.access import Access
from nkisim.core.grids import DynSlice
from nkisim.core.indexing import Affine
from nkisim.core.tensor import Tensor
from nkisim.frontend.v06.adapters.errors import error

Pattern = tuple[tuple[int, int], ...]


@functools.lru_cache(maxsize=4096)
def contiguous(shape: tuple[int, ...]) -> Pattern:
    """The row-major pattern of ``shape`` (memoised: every view and every lowering asks, for a few shapes)."""
    out: list[tuple[int, int]] = []
    stride = 1
    for count in reversed(shape):
        out.append((stride, int(count)))
        stride *= int(count)
    return tuple(reversed(out))


def restride(pattern: Pattern, shape: tuple[int, ...]) -> Pattern | None:
    """Strides giving ``shape`` over the same elements as ``pattern`` in row-major order, or None when the
    layout would need a copy (NumPy's no-copy reshape rule)."""
    old = [(s, c) for s, c in pattern if c != 1]
    new_shape = list(shape)
    out: list[int] = [0] * len(new_shape)
    oi = ni = 0
    while ni < len(new_shape) and oi < len(old):
        np_, op = new_shape[ni], old[oi][1]
        nj, oj = ni + 1, oi + 1
        while np_ != op:
            if np_ < op:
                if nj >= len(new_shape):
                    return None
                np_ *= new_shape[nj]
                nj += 1
            else:
                if oj >= len(old):
                    return None
                op *= old[oj][1]
                oj += 1
        for k in range(oi, oj - 1):  # the old dims merged here must be contiguous with each other
            if old[k][0] != old[k + 1][0] * old[k + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][0]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new_shape[k]
        ni, oi = nj, oj
    for k in range(ni, len(new_shape)):  # trailing size-1 dimensions
        out[k] = 1
    if oi != len(old) or any(new_shape[k] != 1 for k in range(ni, len(new_shape))):
        return None
    return tuple((out[k] if new_shape[k] != 1 else (out[k] or 1), new_shape[k]) for k in range(len(new_shape)))


def plain_index(pattern: Pattern, offset: int, on_chip: bool, key: tuple) -> tuple[int, Pattern] | None:
    """(offset, pattern) of the view ``key`` selects of a view of ``pattern`` at ``offset``, for the common key:
    integers, and slices or ``nl.ds`` of integers without a step, each in bounds (an integer drops its dimension,
    but on chip the partition dimension, and at least one dimension, two on chip, stays with size 1).  What
    ``NkiTensor.__getitem__`` computes for such a key, without its checks and normalisation (a kernel whose Python
    loops unroll indexes once per instruction); None for any other key, which it takes the long way (and refuses
    with its errors)."""
    if len(key) > len(pattern):
        return None
    kept: list[tuple[int, int] | None] = []
    dropped: list[tuple[int, int]] = []
    for axis, k in enumerate(key):
        s, c = pattern[axis]
        kc = k.__class__
        if kc is slice:
            if k.step is not None:
                return None
            start, stop = k.start, k.stop
            if start is None:
                start = 0
            elif start.__class__ is not int:
                return None
            elif start < 0:
                start += c
            if stop is None:
                stop = c
            elif stop.__class__ is not int:
                return None
            elif stop < 0:
                stop += c
        elif kc is int:
            i = k + c if k < 0 else k
            if not 0 <= i < c:
                return None
            offset += i * s
            if on_chip and axis == 0:
                kept.append((s, 1))
            else:
                kept.append(None)
                dropped.append((axis, s))
            continue
        elif kc is DynSlice:
            start = k.start
            if start.__class__ is not int:
                return None
            stop = start + k.size
            start = start + c if start < 0 else start
            stop = stop + c if stop < 0 else stop
        else:
            return None
        if not 0 <= start <= stop <= c:
            return None
        offset += start * s
        kept.append((s, stop - start))
    kept.extend(pattern[len(key):])
    floor = 2 if on_chip else 1
    while sum(1 for d in kept if d is not None) < floor and dropped:
        axis, s = dropped.pop()
        kept[axis] = (s, 1)
    return offset, (tuple(d for d in kept if d is not None) if dropped else tuple(kept))  # type: ignore[arg-type]


def strides(shape: tuple[int, ...]) -> list[int]:
    return [s for s, _ in contiguous(shape)]


@functools.lru_cache(maxsize=4096)
def basic_key(shape: tuple[int, ...], offset: int, pattern: Pattern) -> tuple | None:
    """An index of integers and basic slices of a tensor of ``shape`` that addresses exactly the view, with one
    slice per view dimension in order (so the access has the view's shape), or None.  Memoised (the key holds
    integers and slices only, never changed): a kernel whose Python loops unroll lowers the same views again and
    again, once per instruction."""
    n = len(shape)
    size = math.prod(shape)
    if not 0 <= offset < max(size, 1) or len(pattern) > n:
        return None
    st = strides(shape)
    coords = [0] * n
    if size:  # the offset's row-major coordinates
        rem = offset
        for d, s in enumerate(st):
            coords[d], rem = divmod(rem, s)
    key: list[Any] = list(coords)
    d = 0
    for k, (s, c) in enumerate(pattern):
        chosen = None
        for dd in range(d, n - (len(pattern) - k - 1)):
            if c == 1:
                chosen = (dd, 1)
                break
            if s <= 0 or s % st[dd]:
                continue
            step = s // st[dd]
            if coords[dd] + step * (c - 1) < shape[dd]:
                chosen = (dd, step)
                break
        if chosen is None:
            return None
        dd, step = chosen
        lo = coords[dd]
        key[dd] = slice(lo, lo + step * (c - 1) + 1, step)
        d = dd + 1
    return tuple(key)


def dyn_dim(shape: tuple[int, ...], stride: int) -> tuple[int, int]:
    """(storage dimension, multiplier) a dynamic offset of ``stride`` elements moves along: the dimension whose
    stride it is (or divides), so the access stays a basic index whose bound the loop's range checks."""
    st = strides(shape)
    for d, s in enumerate(st):
        if s <= stride and stride % s == 0:
            return d, stride // s
    return len(shape) - 1, stride


def storage_shape(pattern: Pattern, size: int) -> tuple[int, ...] | None:
    """A row-major shape of ``size`` elements whose strides are the pattern's (each dividing the one before), so
    that the view is a basic index of the storage seen in that shape; None if the strides do not nest."""
    steps = sorted({s for s, c in pattern if c > 1}, reverse=True)
    if not steps or steps[-1] <= 0 or size % steps[0]:  # a stride of 0 (a broadcast) is no basic index
        return None
    dims = [size // steps[0]]
    for hi, lo in zip(steps, steps[1:]):
        if hi % lo:
            return None
        dims.append(hi // lo)
    if steps[-1] > 1:
        dims.append(steps[-1])
    return tuple(dims) if len(dims) > 1 else None


def lower(base: Tensor, offset: int, pattern: Pattern, dyn: tuple = ()) -> Tensor | Access:
    shape = base.shape
    if offset == 0 and pattern == contiguous(shape) and not dyn:
        return base
    key = basic_key(shape, offset, pattern)
    if key is None and not dyn and base.space == "hbm":
        # a view of HBM in other dimensions than its own (a 1-D vector seen as (tiles, 128, F)): a basic index of
        # the storage reshaped (a view, no instruction, as legacy's ``a.reshape``), not a grid of every element's
        # coordinates, which would make the program as large as the data
        storage = storage_shape(pattern, math.prod(shape))
        alt = basic_key(storage, offset, pattern) if storage is not None and storage != shape else None
        if alt is not None:
            return Access(base.reshape(storage), alt)
    if key is not None:
        if not dyn and base.buffer.alloc is None:
            return _constant_access(base, key)
        key = list(key)
        for value, stride in dyn:
            d, mult = dyn_dim(shape, stride)
            k, move = key[d], value * mult
            key[d] = slice(k.start + move, k.stop + move, k.step) if isinstance(k, slice) else move + k
        return Access(base, tuple(key))
    if dyn:
        return _dynamic_grid(base, offset, pattern, dyn)
    grids = _GRIDS.get((shape, offset, pattern))
    if grids is None:
        counts = tuple(c for _, c in pattern)
        flat = np.full(counts, offset, dtype=np.int64)
        for k, (s, c) in enumerate(pattern):
            flat += (np.arange(c, dtype=np.int64) * s).reshape([c if j == k else 1 for j in range(len(counts))])
        if flat.size and (flat.min() < 0 or flat.max() >= math.prod(shape)):
            # rule: view.bounds
            raise error("err_view_out_of_bounds",
                            f"access pattern {[list(p) for p in pattern]} at offset {offset} leaves the storage of "
                            f"'{base.root.name}'")
        if len(counts) < 2:  # a 1-D view across the storage's rows: a gather of the flattened storage (one row,
            # the elements): the core indexes with grids of two dimensions at least
            arrays = [np.zeros((1, 1), dtype=np.int64), np.ascontiguousarray(flat[None, :], dtype=np.int64)]
        else:
            arrays = [np.ascontiguousarray(c, dtype=np.int64) for c in open_grids(np.unravel_index(flat, shape))]
        for a in arrays:  # (shared by every access made of the view: never written)
            a.flags.writeable = False
        grids = (len(counts) < 2, tuple(Affine(0, grid=a) for a in arrays))
        if len(_GRIDS) > 1024:
            _GRIDS.clear()
        _GRIDS[shape, offset, pattern] = grids
    if grids[0]:
        return Access(base.reshape((1, math.prod(shape))), grids[1])
    return Access(base, grids[1])


#: (storage shape, offset, pattern) -> (whether the storage is seen as one row, the coordinate grids of the view's
#: elements as index expressions): a view no basic index expresses (a transposed or broadcast view, a pooling
#: window), whose grids an unrolled loop would otherwise build again with NumPy for every instruction
_GRIDS: dict[tuple, tuple[bool, tuple[Affine, ...]]] = {}


#: id of a ``basic_key`` result -> (that key, the partition axis, ``Access.constant_parts`` of an access made of it):
#: the normalised access of each view an unrolled loop lowers again and again (the key is held, so its id is unique)
_CONSTANT: dict[int, tuple[tuple, int, tuple]] = {}


def _constant_access(base: Tensor, key: tuple) -> Access:
    """``Access(base, key)`` for a key of integers and slices (``basic_key``'s) on a tensor without a direct
    allocation, normalised once per (key, partition axis) and made again from its parts (``Access.again``)."""
    hit = _CONSTANT.get(id(key))
    if hit is not None and hit[0] is key and hit[1] == base.par_axis:
        return Access.again(base, hit[2])
    acc = Access(base, key)
    parts = acc.constant_parts()
    if parts is not None:
        if len(_CONSTANT) > 8192:
            _CONSTANT.clear()
        _CONSTANT[id(key)] = (key, base.par_axis, parts)
    return acc


def _dynamic_grid(base: Tensor, offset: int, pattern: Pattern, dyn: tuple) -> Access:
    """A view of any pattern moved by dynamic offsets (registers, dynamic loop indices): the storage seen as rows of
    ``unit`` elements (a divisor of every dynamic stride and of the storage), each element at row ``q + sum(value *
    stride / unit)``, column ``r``, with ``offset + pattern(j) = q * unit + r``; the loops' ranges bound the rows as
    they bound any index.  On chip the partitions stay the first dimension (an offset whose stride is a whole
    number of partitions moves them) and each partition's elements are the rows."""
    size = math.prod(base.shape)
    if base.space == "hbm":
        unit = size
        for _, stride in dyn:
            unit = math.gcd(unit, int(stride))
        counts = tuple(c for _, c in pattern) or (1,)
        flat = _positions(offset, pattern, counts)
        if len(counts) < 2:
            flat = flat[None, :]
        q, r = np.divmod(flat, unit)
        rows = Affine(0, grid=np.ascontiguousarray(q))
        for value, stride in dyn:
            rows = rows + value * (int(stride) // unit)
        return Access(base.reshape((size // unit, unit)), (rows, Affine(0, grid=np.ascontiguousarray(r))))
    parts_size = size // base.shape[0]  # one partition's elements
    if not pattern or (pattern[0][0] != parts_size and pattern[0][1] > 1):
        # rule: limit.dynamic_offset_pattern
        raise NotImplementedError(f"a dynamic offset on a view with pattern {[list(p) for p in pattern]} of on-chip "
                                  f"tensor '{base.root.name}', whose first pair is not its partitions, is not "
                                  f"supported by the simulator")
    first, start = divmod(offset, parts_size)
    unit = parts_size
    for _, stride in dyn:
        if int(stride) % parts_size:
            unit = math.gcd(unit, int(stride))
    free = pattern[1:] or ((1, 1),)
    counts = tuple(c for _, c in free)
    q, r = np.divmod(_positions(start, free, counts)[None], unit)
    parts = Affine(0, grid=np.arange(first, first + pattern[0][1], dtype=np.int64).reshape((-1,) + (1,) * len(counts)))
    rows = Affine(0, grid=np.ascontiguousarray(q))
    for value, stride in dyn:
        if int(stride) % parts_size:
            rows = rows + value * (int(stride) // unit)
        else:
            parts = parts + value * (int(stride) // parts_size)
    storage = base.reshape((base.shape[0], parts_size // unit, unit))
    return Access(storage, (parts, rows, Affine(0, grid=np.ascontiguousarray(r))))


def _positions(offset: int, pattern: Pattern, counts: tuple[int, ...]) -> np.ndarray:
    """``offset + sum(j_k * s_k)`` over the pattern's grid (shape ``counts``)."""
    flat = np.full(counts, offset, dtype=np.int64)
    for k, (s, c) in enumerate(pattern):
        flat += (np.arange(c, dtype=np.int64) * s).reshape([c if j == k else 1 for j in range(len(counts))])
    return flat


def open_grids(coords: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """The coordinate arrays of a view, each cut down to the axes it varies along (length 1 on the others), as
    ``nl.mgrid``'s open grids are: they broadcast back to the view's shape when indexed, address the same
    elements, and take (sum of counts) instead of (product of counts) integers -- a reshaped or broadcast view of
    a large tile would otherwise put megabytes of coordinates into the kernel's program.  An axis no coordinate
    varies along (a broadcast one) keeps its length in the first array, so the access keeps the view's shape."""
    cut = []
    for c in coords:
        for k in range(c.ndim):
            if c.shape[k] > 1 and bool(np.all(c == c.take([0], axis=k))):
                c = c.take([0], axis=k)
        cut.append(c)
    full = coords[0].shape
    for k, n in enumerate(full):
        if n > 1 and all(c.shape[k] == 1 for c in cut):
            cut[0] = np.broadcast_to(cut[0], cut[0].shape[:k] + (n,) + cut[0].shape[k + 1:])
    return cut
