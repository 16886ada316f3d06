"""The compiler's scheduler reorders an engine's instructions: its idle gaps, and who may fill them.

A compute engine runs its instruction queue in order, but the compiler writes that queue: AWS's NKI overview says
affine loops allow "the compiler to unroll and optimize code ordering between different iterations of the loop to
improve performance" ("Compiler can reorder and optimize these iterations"), while for a ``sequential_range`` loop
"The NKI compiler does not try to re-order or parallelize the executions of loops, and runs them in sequence order"
(aws-neuron-sdk v2.29.1 nki/get-started/about/index.rst:136-166, "Scheduling options for loop"; the legacy API says
the same: ``affine_range`` iterations "could be parallelized/pipelined on different compute engines", and
``sequential_range`` makes the compiler "perform much more conservative loop-level optimizations", v2.26.0
general/nki/api/nki/language/__init__.py:236-245 and 1421-1422).

The scheduler reorders straight-line code too: "Without this directive, the compiler scheduler is free to reorder
independent operations for better hardware utilization" (``nl.no_reorder``'s docstring, aws-neuron-sdk
nki/api/nki/language/__init__.py:2243-2249; the legacy API has the same directive, ``nki.compiler.no_reorder``, used
by v2.26.0 general/nki/examples/attention/attention_kernels.py:1253).  NKI 0.6 unrolls every loop before the
scheduler sees it, so its kernels are straight-line code; a ``no_reorder`` block's instructions already wait for each
other (``Instruction.order``), so none of them can pass another.

So every instruction may be issued ahead of earlier instructions of its engine, but for those of a legacy kernel's
``sequential_range`` loops (compiled with the middle end, as for the carried rule): it starts in the first idle gap of
the engine (and of the SBUF/PSUM port its engine shares, on NC-v2) where its data is ready and it fits whole; an
instruction of a sequential loop starts after the engine's last one, as before.  The evidence is a hardware pair (bench/
published_latencies.csv): CS149 2024's conv2d by robertpare17 ran 1332 us in fp16 on trn1 with its filter loops
``sequential_range`` and 1060 us with them ``affine_range``, nothing else changed; the second is TensorE's busy time
plus 4%, so the next row's input copies ran while the last row's results were moved out, which only a reordered
queue allows.

Each gap table keeps the engine's end (``free``, owned by the caller) apart from up to ``GAPS`` earlier idle spans.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from heapq import heapify, heappop, heappush
from typing import Any

GAPS = 16  # idle gaps remembered per engine, as for the DMA queues (scheduler.Queue)


def reorders(loops: tuple, middle_end: bool, legacy: bool) -> bool:
    """An instruction in ``loops`` ((uid, kind, iteration), ...) may be issued ahead of earlier ones of its engine
    unless a sequential_range loop holds it (a legacy kernel compiled with the middle end, whose sequential loops
    "run in sequence order")."""
    return not (middle_end and legacy and any(kind == "sequential" for _uid, kind, _it in loops))


def place(core: Any, e: str, ready: float, dur: float, on_port: bool, on_psum: bool,
          in_order: bool) -> tuple[float, float]:
    """Reserve ``dur`` ns of engine ``e`` of ``core`` (scheduler.Core), and of the NC-v2 ports it shares (``on_port``:
    VectorE/GpSimdE's SBUF port, ``on_psum``: VectorE/ScalarE's PSUM access), from ``ready`` on: in the first idle gap
    where it fits, or after the engine's last instruction when ``in_order``.  Returns (start, held): ``held`` is the
    work an in-order instruction could have run in idle time before its start (0 when none)."""
    if not on_port and not on_psum:  # the engine's own table alone (the common case): as below, without the lists
        free, gaps = core.free[e], core.gaps[e]
        start, held = _slot(ready, dur, free, [(free, gaps)], in_order)
        core.free[e] = take(free, gaps, start, dur)
        return start, held
    keys = [e] + (["port"] if on_port else []) + (["psum_port"] if on_psum else [])
    ends = [core.free[e]] + ([core.port] if on_port else []) + ([core.psum_port] if on_psum else [])
    tables = [(end, core.gaps[k]) for k, end in zip(keys, ends)]
    start, held = _slot(ready, dur, max(ends), tables, in_order)
    for k, (end, gaps) in zip(keys, tables):
        new = take(end, gaps, start, dur)
        if k == e:
            core.free[e] = new
        elif k == "port":
            core.port = new
        else:
            core.psum_port = new
    return start, held


def _slot(ready: float, dur: float, busy_until: float, tables: list[tuple[float, list[list[float]]]],
          in_order: bool) -> tuple[float, float]:
    """``place``'s (start, held) over ``tables``: the first idle gap that fits, or after ``busy_until`` (the latest end
    of the tables) when ``in_order``, with the work it could have run in idle time before then."""
    start = max(ready, busy_until)
    if not in_order:
        return earliest(ready, dur, tables), 0.0
    if start > ready:
        early = earliest(ready, dur, tables)
        if early < start:
            return start, min(start - early, dur)
    return start, 0.0


def earliest(ready: float, dur: float, tables: list[tuple[float, list[list[float]]]]) -> float:
    """The earliest start at or after ``ready`` at which ``dur`` ns fit whole in an idle gap or after the end of every
    table ((free, gaps) of the engine and of each port it needs)."""
    t = ready
    while True:
        moved = t
        for free, gaps in tables:
            moved = _fit(free, gaps, moved, dur)
        if moved == t:
            return t
        t = moved


def _fit(free: float, gaps: list[list[float]], at: float, dur: float) -> float:
    """The earliest start at or after ``at`` where ``dur`` fits in one table.  A table's gaps are disjoint and in
    ascending order (``take`` appends past the end and splits in place), so the first gap that fits gives the earliest
    start: a binary search skips the gaps that end before ``at`` (a table may hold hundreds, split ones never pruned)."""
    best = free if free > at else at
    for k in range(bisect_left(gaps, at, key=_hi), len(gaps)):
        lo, hi = gaps[k]
        s = lo if lo > at else at
        if s >= best:
            break
        if s + dur <= hi:
            return s
    return best


class Gaps(list):
    """An engine's (or port's) idle gaps, ``[lo, hi]`` each, disjoint and in ascending order, with a heap of (width,
    lo, hi) beside them so that the shortest is found without measuring them all: splits (``take``) are never pruned,
    so a busy engine's table may hold a thousand gaps, and every new gap past ``GAPS`` forgets the shortest.  The heap
    may hold gaps since split or forgotten; ``_forget`` skips those (a gap is known by its lo, its hi confirms it)."""

    __slots__ = ("heap",)

    def __init__(self) -> None:
        super().__init__()
        self.heap: list[tuple[float, float, float]] = []

    def clear(self) -> None:
        super().clear()
        self.heap.clear()


def take(free: float, gaps: Gaps, start: float, dur: float) -> float:
    """Reserve ``[start, start + dur)`` in a table; returns its new end (``free``).  A start past the end leaves an
    idle gap behind; a start inside a gap splits it."""
    end = start + dur
    heap = gaps.heap
    if start >= free:
        if start > free:
            gaps.append([free, start])
            heappush(heap, (start - free, free, start))
            if len(gaps) > GAPS:
                gaps.pop(_forget(gaps))
        return end
    k = bisect_right(gaps, start, key=_lo) - 1  # the only gap that can hold it: the last one starting by ``start``
    if not (k >= 0 and dur > 0 and end <= gaps[k][1]):  # (an empty reservation: the first gap that holds it)
        k = next((j for j, (lo, hi) in enumerate(gaps) if lo <= start and end <= hi), -1)
        if k < 0:
            raise AssertionError("a reservation outside every idle gap")  # earliest() only returns fitting starts
    lo, hi = gaps[k]
    rest = [g for g in ([lo, start], [end, hi]) if g[1] > g[0]]
    gaps[k:k + 1] = rest
    for g in rest:
        heappush(heap, (g[1] - g[0], g[0], g[1]))
    if len(heap) > 4 * (len(gaps) + GAPS):  # mostly gaps long gone: start afresh
        heap[:] = [(g[1] - g[0], g[0], g[1]) for g in gaps]
        heapify(heap)
    return free


def _forget(gaps: Gaps) -> int:
    """``shortest(gaps)`` from the heap: the least (width, lo) still in the table is the shortest gap, the first in
    the table among equals (its gaps ascend); it leaves the heap, as the caller pops it from the table."""
    heap = gaps.heap
    while True:
        _w, lo, hi = heappop(heap)
        k = bisect_left(gaps, lo, key=_lo)
        if k < len(gaps) and gaps[k][0] == lo and gaps[k][1] == hi:
            return k


def shortest(gaps: list[list[float]]) -> int:
    """The index of the shortest gap, the oldest (first) among equals: the one a full table forgets (the DMA queues'
    in scheduler.Queue, which keeps ``GAPS`` at most).  Widths in one list, then C's ``min`` and ``index``: the first
    occurrence of the least width, as a loop keeping the first strict minimum finds."""
    widths = [hi - lo for lo, hi in gaps]
    return widths.index(min(widths))


def _lo(gap: list[float]) -> float:
    return gap[0]


def _hi(gap: list[float]) -> float:
    return gap[1]
