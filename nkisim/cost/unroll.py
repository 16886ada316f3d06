"""Which NKI loops the compiler unrolls, and how many copies of an in-loop tile that leaves.

``affine_range`` and ``sequential_range`` loops are "not unrolled until the backend" (spec §2.5), and
the backend does not unroll them all: a loop it keeps rolled runs as a hardware loop whose body
reuses a couple of physical buffers per tile (the K-buffer rotation in scheduler.Buffers), so one
iteration's loads wait for the tile two iterations back to be consumed.  A small loop is unrolled
into straight-line code instead; each unrolled copy of a tile can then get its own buffer (SBUF
permitting), and the scheduler overlaps all iterations, bounded only by DMA and engine throughput.

The published trn1 figures show both behaviours in one kernel family (CS149 2024 vector add):
the 100-iteration FREE_DIM=2 loop (400 instructions) runs at 0.38 us per iteration, which is the
DMA issue rate of a fully overlapped loop, while the 200-iteration ROW_CHUNK=128 loop (800
instructions) and the 25600-iteration ROW_CHUNK=1 loop both run at ~1 us per iteration, the latency
chain of a rolled loop with double buffering.  So the unroll limit is a budget of unrolled
instructions between 400 and 800 (``loops.unroll_max_instructions``; bench/calibrate.py --fit
reports the range that fits).  Kernels decorated with ``skip_middle_end_transformations`` keep every
loop rolled (the CS149 2025 trn2 kernels: FREE_DIM=2 costs as much per iteration as ROW_CHUNK=128).
``static_range`` loops are unrolled at trace time and never reach this module.
"""

from __future__ import annotations

from typing import Any

from nkisim.cost.trace import Instr


def loop_shapes(trace: list[Instr]) -> tuple[dict[int, int], dict[int, int]]:
    """(instructions, trip count) per loop instance, counted over the whole trace.

    Iterations of one loop instance are traced in order, so a change of its iteration value marks
    a new trip; nested loops' instructions count towards every enclosing loop."""
    size: dict[int, int] = {}
    trips: dict[int, int] = {}
    last: dict[int, Any] = {}
    for ins in trace:
        for uid, _kind, it in ins.loops:
            size[uid] = size.get(uid, 0) + 1
            if uid not in last or last[uid] != it:
                trips[uid] = trips.get(uid, 0) + 1
                last[uid] = it
    return size, trips


def unrolled_loops(trace: list[Instr], max_instructions: int) -> tuple[set[int], dict[int, int]]:
    """Loop instances the compiler unrolls (at most ``max_instructions`` unrolled instructions, and
    the kernel does not skip the middle end), with every loop's trip count."""
    size, trips = loop_shapes(trace)
    if getattr(trace, "skip_middle_end", False) or max_instructions <= 0:
        return set(), trips
    return {uid for uid, n in size.items() if n <= max_instructions}, trips


def root_loops(trace: list[Instr], roots: set[int]) -> dict[int, tuple]:
    """The loops each on-chip root in ``roots`` belongs to, outermost first, as ((uid, kind, iteration),
    ...): the common prefix of the loops of every instruction touching it (a tile allocated in loop ``m``
    and filled in an inner loop ``k`` belongs to ``m``, in the iteration of ``m`` it was made in)."""
    prefix: dict[int, tuple] = {}
    for ins in trace:
        loops = None
        for region in (*ins.reads, *ins.writes):
            r = region.root
            if r not in roots:
                continue
            if loops is None:
                loops = ins.loops
            old = prefix.get(r)
            if old is None:
                prefix[r] = loops
            elif old != loops:
                n = 0
                while n < len(old) and n < len(loops) and old[n] == loops[n]:
                    n += 1
                prefix[r] = old[:n]
    return prefix


def tile_copies(trace: list[Instr], loops_of: dict[int, tuple], max_instructions: int) -> dict[int, int]:
    """Unrolled copies of each on-chip root of ``loops_of`` (``root_loops``): the product of the trip
    counts of the unrolled loops around it, innermost outwards up to the first rolled loop."""
    unrolled, trips = unrolled_loops(trace, max_instructions)
    if not unrolled:
        return {}
    out: dict[int, int] = {}
    for r, loops in loops_of.items():
        copies = 1
        for uid, _kind, _it in reversed(loops):
            if uid not in unrolled:
                break
            copies *= trips.get(uid, 1)
        if copies > 1:
            out[r] = copies
    return out
