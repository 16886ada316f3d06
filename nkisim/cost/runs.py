"""The descriptors of a DMA: the pieces of a transfer that are contiguous in its source and in its destination.

AWS's NeuronCore-v2 architecture guide (nki/guides/architecture/trainium_inferentia2_arch.rst, "Data movement
between HBM and SBUF using DMAs"): "Each DMA transfer can gather a list of source DMA buffers and then scatter the
data into another list of destination DMA buffers.  Data within a DMA buffer must be continuous in the memory
address map.  There is some performance overhead at both DMA buffer and transfer levels"; an SBUF tile "will
require at least ``tensor.shape[0]``, i.e., P dim size, different DMA buffers, since slices of tensor data from
different SBUF partitions occupy non-contiguous memory ... If the tensor data slice within each SBUF partition is
not contiguous in the F dimension, more DMA buffers will need to be unrolled along the F dim"; and its example,
"loading a 128x512 FP32 HBM tensor to SBUF is best done through 16 DMA transfers (one per DMA engine), each moving
a scatter-gather list of 8 DMA buffers": 128 buffers, one per partition, though the source is one block.

So a DMA pays for one descriptor per piece that is contiguous on every side at once: the elements move in the
transfer's order (row-major over each side's access, element k of the source to element k of the destination), and
a piece ends wherever any side's next element is not at the next address -- in HBM, the next address; on chip,
also the same partition; and never across an indirect (gathered or scattered) index, whose rows the DMA addresses
one by one.  A transposing DMA (``load_transpose2d``, ``dma_transpose``) pairs its elements across the transpose;
AWS prices it by its throughput instead (the target's ``transpose_efficiency``), so its descriptors are its sides'
runs, the larger count of the two.  The count is taken from the addresses themselves, so it holds for every way of
naming the memory alike: a legacy slice, an arange/mgrid index (a transposed view), a reshaped tensor, NKI 0.6
views and ``.ap()`` patterns (lowered to those), indirect indices.

A basic index (slices and integers) breaks its runs at every multiple of one run length, taken from the tensor's
shape and the index's counts and steps alone (memoised), and two such sides combine in closed form; any other side
(an index given as arrays, or under a mask) is walked through its address arrays (what reading it costs already).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: run length (elements) of a basic index: (shape, partition axis or -1 in HBM, counts and steps) -> length
_BASIC: dict[tuple, int] = {}


def _strides(shape: tuple[int, ...], par: int) -> list[int]:
    """Element strides of row-major storage; on chip (``par`` >= 0) over the free dimensions of one partition
    (the partition axis gets stride 0: a run never crosses it)."""
    out = [0] * len(shape)
    s = 1
    for d in range(len(shape) - 1, -1, -1):
        if d == par:
            continue
        out[d] = s
        s *= shape[d]
    return out


def _run_length(shape: tuple[int, ...], par: int, dims: tuple[tuple[int, int], ...]) -> int:
    """Elements per run of a basic index: ``dims`` holds (count, step) per tensor dimension (count 0 for an
    integer index).  From the innermost dimension out, a dimension extends the run while its element stride is the
    run's length (and it is not the partition axis); the first that does not ends it, and every run of the index
    then has that length."""
    key = (shape, par, dims)
    hit = _BASIC.get(key)
    if hit is not None:
        return hit
    strides = _strides(shape, par)
    run = 1
    for d in range(len(dims) - 1, -1, -1):
        c, step = dims[d]
        if c <= 1:
            continue  # an integer or a single position: no step to take
        if d != par and strides[d] * step == run:
            run *= c
        else:
            break
    _BASIC[key] = run
    return run


class Side:
    """One operand of a DMA as the transfer walks it: ``n`` elements (those a mask leaves), split into runs either
    every ``period`` elements (a basic index) or after each position ``breaks`` marks (``breaks[k]``: element k + 1
    starts a new run)."""

    __slots__ = ("n", "period", "breaks", "hbm", "nbytes")

    def __init__(self, n: int, period: int, breaks: np.ndarray | None, hbm: bool, nbytes: int) -> None:
        self.n, self.period, self.breaks, self.hbm, self.nbytes = n, period, breaks, hbm, nbytes

    @property
    def runs(self) -> int:
        if not self.n:
            return 0
        if self.breaks is None:
            return self.n // self.period
        return int(np.count_nonzero(self.breaks)) + 1

    def marks(self) -> np.ndarray:
        """``breaks`` of any side (a basic one's every ``period``-th position)."""
        if self.breaks is not None:
            return self.breaks
        out = np.zeros(max(self.n - 1, 0), dtype=bool)
        out[self.period - 1::self.period] = True
        return out


def _address_breaks(acc: Any, valid: np.ndarray | None) -> np.ndarray:
    """Where the runs of an index given as arrays (or of any index under a mask) end: its element addresses in
    row-major order of the access, a run ending where the address does not step by one, the partition changes,
    or an indirect index moves on."""
    if valid is None:
        breaks = _separable_breaks(acc)
        if breaks is not None:
            return breaks
    t = acc.tensor
    shape = t.shape
    par = -1 if t.buffer.family == "hbm" else t.par_axis
    strides = _strides(shape, par)
    out_shape = acc.shape
    addr = np.zeros(out_shape, dtype=np.int64)
    seg = np.zeros(out_shape, dtype=np.int64)
    for d, a in enumerate(acc.grid_arrays()):
        a = np.asarray(a, dtype=np.int64)
        if d == par:
            seg = seg * shape[d] + a
        elif acc.advanced and acc.comps[d][0] == "ind":
            # each index the DMA reads is a row of its own, wherever it points: number them in access order (the
            # index tile's elements: a row shift of a 0.6 view's free pattern moves on within the same descriptor)
            ishape = tuple(acc.comps[d][1].shape)
            n = int(np.prod(ishape))
            seg = seg * max(n, 1) + np.arange(n, dtype=np.int64).reshape(ishape)
            addr = addr + a * strides[d]
        else:
            addr = addr + a * strides[d]
    addr = np.broadcast_to(addr, out_shape).ravel()
    seg = np.broadcast_to(seg, out_shape).ravel()
    if valid is not None:
        keep = valid.ravel()
        addr, seg = addr[keep], seg[keep]
    return (np.diff(addr) != 1) | (np.diff(seg) != 0)


def _separable_breaks(acc: Any) -> np.ndarray | None:
    """``_address_breaks`` without building an address per element, for an index whose arrays each vary along
    one axis of the access at most (``nl.arange`` grids, transposed or not: what most kernels write).  The address
    and the partition-and-row number are then sums of one term per axis, so whether a run breaks between two
    neighbours depends only on the outermost axis that steps there and its index: the breaks of each axis's
    block are those of the block inside it, repeated, with the step to the next index of the axis between them.
    None for any other index (the caller builds every address)."""
    t = acc.tensor
    shape = t.shape
    par = -1 if t.buffer.family == "hbm" else t.par_axis
    strides = _strides(shape, par)
    out_shape = tuple(acc.shape)
    k = len(out_shape)
    if k == 0 or 0 in out_shape:
        return None
    addr = [np.zeros(n, dtype=np.int64) for n in out_shape]  # each axis's term of the address
    terms: list[tuple[int, int, np.ndarray]] = []  # (radix, axis or -1, values): the row number's digits, in order
    for d, a in enumerate(acc.grid_arrays()):
        a = np.asarray(a, dtype=np.int64)
        varying = [k - a.ndim + j for j, n in enumerate(a.shape) if n != 1]
        if a.ndim > k or len(varying) > 1:
            return None
        axis = varying[0] if varying else -1
        if axis >= 0 and a.shape[axis - (k - a.ndim)] != out_shape[axis]:
            return None
        values = a.reshape(-1)
        if d == par:
            terms.append((shape[d], axis, values))
        elif acc.advanced and acc.comps[d][0] == "ind":
            if acc.comps[d][2] is not None and acc.comps[d][2].grid is not None:
                return None  # a row shift per element: the rows are the index tile's, not the array's
            terms.append((max(a.size, 1), axis, np.arange(a.size, dtype=np.int64)))
            if axis >= 0:
                addr[axis] += values * strides[d]
        elif axis >= 0:
            addr[axis] += values * strides[d]
    seg = [np.zeros(n, dtype=np.int64) for n in out_shape]  # each axis's term of the row number
    weight = 1
    for radix, axis, values in reversed(terms):
        if axis >= 0:
            seg[axis] += values * weight
        weight *= radix
    breaks = (np.diff(addr[-1]) != 1) | (np.diff(seg[-1]) != 0)
    back_addr = back_seg = 0  # from the last to the first element of the block inside the axis
    for j in range(k - 2, -1, -1):
        back_addr += int(addr[j + 1][0] - addr[j + 1][-1])
        back_seg += int(seg[j + 1][0] - seg[j + 1][-1])
        inner = breaks.size + 1
        block = np.empty((out_shape[j], inner), dtype=bool)
        block[:, :inner - 1] = breaks
        block[:-1, inner - 1] = ((np.diff(addr[j]) + back_addr) != 1) | ((np.diff(seg[j]) + back_seg) != 0)
        breaks = block.reshape(-1)[:-1]
    return breaks


def side(acc: Any, valid: np.ndarray | None = None) -> Side:
    """One operand of a DMA (an Access, or a Tensor standing for its whole access); ``valid``: the instruction's
    mask, applied when it fits the access's shape (masked-off elements are not moved)."""
    if getattr(acc, "tensor", None) is None:  # a whole tensor
        acc = acc.full()
    t = acc.tensor
    hbm = t.buffer.family == "hbm"
    n = math.prod(acc.shape)
    if valid is not None:
        if valid.shape != acc.shape:
            try:
                valid = np.broadcast_to(valid, acc.shape) if valid.ndim else None
            except ValueError:  # a mask of the instruction's other operand's shape
                valid = None
        if valid is not None and bool(valid.all()):
            valid = None
    if acc.advanced or valid is not None or getattr(t.buffer, "alloc", None) is not None:
        if valid is not None:
            n = int(np.count_nonzero(valid))
        breaks = _address_breaks(acc, valid) if n else np.zeros(0, dtype=bool)
        return Side(n, 1, breaks, hbm, n * t.itemsize)
    par = -1 if hbm else t.par_axis
    return Side(n, _run_length(t.shape, par, _basic_dims(acc)), None, hbm, n * t.itemsize)


def _basic_dims(acc: Any) -> tuple[tuple[int, int], ...]:
    """(count, step) per dimension of a basic access: it keeps one dimension per slice, in order, of the slice's
    count (core.access), so its shape holds the counts and no bound is evaluated again; an integer index is (0, 1)."""
    dims = []
    shape = acc.shape
    k = 0
    for c in acc.comps:
        if c[0] == "int":
            dims.append((0, 1))
        else:
            dims.append((shape[k], c[3]))
            k += 1
    return tuple(dims)


def descriptors(sides: list[Side], transposing: bool = False) -> int:
    """The pieces contiguous on every side at once (see the module); the sides' largest run count when they
    cannot be paired element by element (a transpose, or sides of different sizes)."""
    sides = [s for s in sides if s.n]
    if not sides:
        return 0
    n = sides[0].n
    if transposing or any(s.n != n for s in sides):
        return max(s.runs for s in sides)
    if all(s.breaks is None for s in sides):
        periods = {s.period for s in sides}
        if len(periods) == 1:
            return n // periods.pop()
        if len(periods) == 2:  # runs break at the multiples of a and of b, together at those of lcm(a, b)
            a, b = periods
            return n // a + n // b - n // math.lcm(a, b)
    marks = np.zeros(max(n - 1, 0), dtype=bool)
    for s in sides:
        marks |= s.marks()
    return int(np.count_nonzero(marks)) + 1


def basic_key(acc: Any) -> tuple | None:
    """What ``side`` of an unmasked operand depends on when it is a basic access (``side``'s second branch): its
    tensor's shape, partition axis (-1 in HBM), the (count, step) of each dimension, its space and element size;
    None for any other operand."""
    if getattr(acc, "tensor", None) is None:  # a whole tensor
        acc = acc.full()
    t = acc.tensor
    if acc.advanced or getattr(t.buffer, "alloc", None) is not None:
        return None
    hbm = t.buffer.family == "hbm"
    return t.shape, -1 if hbm else t.par_axis, _basic_dims(acc), hbm, t.itemsize


#: ``dma_runs`` of unmasked DMAs whose operands are all basic accesses, by their ``basic_key``s: a loop's loads and
#: stores move tiles of the same layout every iteration, only their offsets change, and the runs do not depend on those
BASIC_DMA: dict[tuple, tuple[int, int]] = {}


def dma_runs(reads: Any, writes: Any, mask: np.ndarray | None, transposing: bool = False) -> tuple[int, int]:
    """(the descriptors of a DMA with these operands; the mean bytes of a run of its HBM side with the shortest
    runs, 0 when no side is in HBM)."""
    if mask is None:
        keys: list[Any] = [transposing]
        for a in (*reads, *writes):
            k = basic_key(a)
            if k is None:
                break
            keys.append(k)
        else:
            key = tuple(keys)
            hit = BASIC_DMA.get(key)
            if hit is None:
                if len(BASIC_DMA) > 4096:  # bound the memo for programs with unusually many layouts
                    BASIC_DMA.clear()
                hit = BASIC_DMA[key] = computed_runs(reads, writes, mask, transposing)
            return hit
    return computed_runs(reads, writes, mask, transposing)


def computed_runs(reads: Any, writes: Any, mask: np.ndarray | None, transposing: bool) -> tuple[int, int]:
    """``dma_runs`` computed from the operands, never remembered."""
    sides = [side(a, mask) for a in (*reads, *writes)]
    shortest = 0
    for s in sides:
        if s.hbm and s.n:
            run = s.nbytes // s.runs
            if not shortest or run < shortest:
                shortest = run
    return descriptors(sides, transposing), shortest
