"""Which NKI loops the compiler unrolls, and how many copies of an in-loop tile that leaves.

``affine_range`` and ``sequential_range`` loops are "not unrolled until the backend" (spec §2.5), and
the backend does not unroll them all: a loop it keeps rolled runs as a hardware loop whose body
reuses a couple of physical buffers per tile (the K-buffer rotation in allocation.Buffers), so one
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
Python loops (``range``, ``static_range``; every loop of an NKI 0.6 kernel) are unrolled at trace time: no loop
is recorded, and their tiles are found by allocation site (``python_loop_sites``), then get the buffers of an
unrolled loop's tiles.  An unrolled NKI loop inside a Python loop is as many copies of one straight line
(``straight_line``).
"""

from __future__ import annotations

from typing import Any

from nkisim.cost.trace import Instruction


def loop_shapes(trace: list[Instruction]) -> tuple[dict[int, int], dict[int, int]]:
    """(instructions, trip count) per loop instance, counted over the whole trace.

    Iterations of one loop instance are traced in order, so a change of its iteration value marks
    a new trip; nested loops' instructions count towards every enclosing loop."""
    size: dict[int, int] = {}
    trips: dict[int, int] = {}
    last: dict[int, Any] = {}
    # consecutive instructions of one iteration share their loops: each stretch is counted at once (a stretch adds
    # to every enclosing loop's size, and its first instruction alone can start a trip)
    stretches: list[tuple[tuple, int]] = []
    prev: tuple | None = None
    count = 0
    for ins in trace:
        loops = ins.loops
        if loops is prev or loops == prev:
            count += 1
            continue
        if count:
            stretches.append((prev, count))  # type: ignore[arg-type]
        prev, count = loops, 1
    if count:
        stretches.append((prev, count))  # type: ignore[arg-type]
    for loops, count in stretches:
        for uid, _kind, it in loops:
            size[uid] = size.get(uid, 0) + count
            if uid not in last or last[uid] != it:
                trips[uid] = trips.get(uid, 0) + 1
                last[uid] = it
    return size, trips


def unrolled_loops(trace: list[Instruction], max_instructions: int) -> tuple[set[int], dict[int, int]]:
    """Loop instances the compiler unrolls (at most ``max_instructions`` unrolled instructions, and
    the kernel does not skip the middle end), with every loop's trip count."""
    size, trips = loop_shapes(trace)
    if getattr(trace, "skip_middle_end", False) or max_instructions <= 0:
        return set(), trips
    return {uid for uid, n in size.items() if n <= max_instructions}, trips


def root_loops(trace: list[Instruction], roots: set[int]) -> dict[int, tuple]:
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


def tile_copies(loops_of: dict[int, tuple], unrolled: set[int], trips: dict[int, int]) -> dict[int, int]:
    """Unrolled copies of each on-chip root of ``loops_of`` (``root_loops``): the product of the trip
    counts of the unrolled loops around it, innermost outwards up to the first rolled loop (``unrolled``, ``trips``:
    ``unrolled_loops``, counted once by the caller for this and ``straight_line``)."""
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


def straight_line(loops_of: dict[int, tuple], unrolled: set[int]) -> set[int]:
    """The on-chip roots of ``loops_of`` every loop around which the compiler unrolls: they lie in straight-line
    code, and so does every other tile of their allocation site that a Python loop around those loops made (a
    Python loop is unrolled when the kernel is traced, so its iterations are copies of one NKI loop, not one
    loop's iterations): each such tile is an unrolled copy of the site, as a tile of one unrolled loop is
    (``unrolled``: ``unrolled_loops``' first part)."""
    return {r for r, loops in loops_of.items() if loops and all(uid in unrolled for uid, _kind, _it in loops)}


def python_loop_sites(trace: list[Instruction], first: dict[int, int],
                      last: dict[int, int]) -> tuple[dict[int, Any], dict[Any, int]]:
    """The on-chip tiles of a kernel's unrolled Python loops: root -> allocation site, and per site the most of its
    tiles live at once.

    A Python loop (every loop of an NKI 0.6 kernel; a legacy kernel's ``range`` and ``static_range`` loops) is
    unrolled before the trace sees it: each iteration allocates its tiles anew, and no loop says so.  A site -- the
    ``nl.ndarray`` call, or the line of the instruction that first writes an op's result -- outside every NKI loop
    (a tile of an ``affine_range`` or ``sequential_range`` body is that loop's, ``in_loop``) that makes two or more
    tiles is such a loop's site: its tiles get what the tiles of an unrolled NKI loop get (``tile_copies``),
    a buffer per iteration as far as SBUF has room, rotating when it has not, where one iteration holds as many of
    them as are ever live at once (first to last use: the accumulators of one iteration, several results of one
    line; ``first``/``last`` are ``lifetimes(trace)``).  A PSUM tile rotates over ``psum_rotation`` banks like an
    NKI loop's: the tiles of a Python loop are not all live at once, and PSUM has 8 banks, so the compiler reuses
    the banks of dead ones; kept apart as fixed allocations, 36 filter transposes held 36 banks and left an
    accumulator of the kernel's main loop one bank, no double buffering (stage 8's conv2d, legacy).  Both dialects
    spell the same loop alike.  A tile made once stays a fixed allocation."""
    site: dict[int, Any] = {}
    for ins in trace:
        for b in ins.bufs:
            if b.place is None and not b.in_loop and b.space in ("sbuf", "psum") and b.root not in site:
                site[b.root] = (b.space, b.site or ins.loc)
    roots: dict[Any, list[int]] = {}
    for r, s in site.items():
        if r in first:
            roots.setdefault(s, []).append(r)
    unrolled: dict[int, Any] = {}
    live: dict[Any, int] = {}
    for (_space, s), rs in roots.items():
        if len(rs) < 2:
            continue
        live[s] = most_live(rs, first, last)
        unrolled.update((r, s) for r in rs)
    return unrolled, live


def lifetimes(trace: list[Instruction]) -> tuple[dict[int, int], dict[int, int]]:
    """Per on-chip root, the trace positions of its first and last access (read or write)."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, ins in enumerate(trace):
        for r in (*ins.reads, *ins.writes):
            first.setdefault(r.root, i)
            last[r.root] = i
    return first, last


def most_live(roots: list[int], first: dict[int, int], last: dict[int, int]) -> int:
    """The most of ``roots`` live at once (first to last use); a root never accessed counts as live throughout, so
    a tile nobody reads is not assumed to share a buffer.  One root is one, whether accessed or not (the scheduler
    asks for every site, most of which make one tile); a first use sorts before a last use at the same position."""
    if len(roots) == 1:
        return 1
    known = [r for r in roots if r in first]
    events = sorted([(first[r], 0) for r in known] + [(last[r], 1) for r in known])
    now = most = 0
    for _, ends in events:
        if ends:
            now -= 1
        else:
            now += 1
            if now > most:
                most = now
    return most + len(roots) - len(known)


def carried(ins: Instruction, loop_uids: dict[int, set[int]], written: set[int]) -> list[tuple[tuple[Any, tuple], bool]]:
    """Whole-tensor accesses of the tensors ``ins`` touches that a ``sequential_range`` loop around it
    carries (allocated outside that loop): the compiler "respect[s] inter-loop dependency" there, so
    they are accessed in program order (every access after the last write, every write after the
    reads) whichever part of the tensor each touches, unlike affine_range's per-region dependencies.
    Keyed per loop and core: a pseudo-region with an empty box, which overlaps every other."""
    out = []
    seq = [uid for uid, kind, _it in ins.loops if kind == "sequential"]
    for regions, is_w in ((ins.reads, False), (ins.writes, True)):
        for r in regions:
            if not is_w and r.root not in written:
                continue
            own = loop_uids.get(r.root, ())
            for uid in seq:
                if uid not in own:
                    out.append(((("carried", uid, ins.core, r.root), ()), is_w))
    return out
