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
    """The earliest start at or after ``at`` where ``dur`` fits in one table."""
    best = free if free > at else at
    for lo, hi in gaps:
        s = lo if lo > at else at
        if s < best and s + dur <= hi:
            best = s
    return best


def take(free: float, gaps: list[list[float]], start: float, dur: float) -> float:
    """Reserve ``[start, start + dur)`` in a table; returns its new end (``free``).  A start past the end leaves an
    idle gap behind; a start inside a gap splits it."""
    end = start + dur
    if start >= free:
        if start > free:
            gaps.append([free, start])
            if len(gaps) > GAPS:
                gaps.pop(shortest(gaps))
        return end
    for k, (lo, hi) in enumerate(gaps):
        if lo <= start and end <= hi:
            rest = [g for g in ([lo, start], [end, hi]) if g[1] > g[0]]
            gaps[k:k + 1] = rest
            return free
    raise AssertionError("a reservation outside every idle gap")  # earliest() only returns fitting starts


def shortest(gaps: list[list[float]]) -> int:
    """The index of the shortest gap, the oldest (first) among equals: the one a full table forgets (an engine's
    here, the DMA queues' in scheduler.Queue)."""
    best, width = 0, gaps[0][1] - gaps[0][0]
    for k in range(1, len(gaps)):
        g = gaps[k]
        if g[1] - g[0] < width:
            best, width = k, g[1] - g[0]
    return best
