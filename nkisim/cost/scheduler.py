"""List scheduler over a NeuronCore's engines: the hardware is in-order queues plus semaphores.

* Compute engines (pe, act, dve, pool) run one instruction at a time; the compiler's scheduler may issue one
  into an idle gap before earlier ones whose data was ready (lanes.py), but for a sequential_range loop's.
* A DMA is spread over up to 16 DMA queues (8 partitions each; its rate scales with the queues used)
  but every transfer writes a semaphore on all 16, so the queues share one reservation table.  It
  keeps a few idle gaps so a transfer whose inputs are ready early can run before a store that is
  still waiting: this stands in for the compiler hoisting independent loads (software pipelining).
* Dependencies are RAW/WAR/WAW on overlapping regions (deps.Scoreboard), plus a semaphore cost when
  producer and consumer run on different engines.  DMA completion adds the fixed DMA latency.
* Tiles allocated inside loops map onto K rotating physical buffers (K from ``mod_alloc``'s
  num_free_tiles, else the target's rotation count capped by SBUF capacity), so a tile's
  (i+K)-th allocation waits for the readers of its i-th one: double buffering matters (allocation.py).
* Scheduling edges of NKI 0.6 (``kernel.with_schedule``, ``depends_on``, ``nl.no_reorder``; ``Instruction.order``): an
  instruction waits for the latest instruction of its SPMD instance carrying a label it names, as for a data
  dependency between them (a semaphore wait across engines).
* SPMD instances on the same core are serialised; instances on other cores (``nl.nc``) get their
  own engines, and the launch ends when the slowest core does.

Every step is O(1) amortised per instruction and uses no hashing of objects or wall-clock time, so
the same trace always gives the same schedule.
"""

from __future__ import annotations

from typing import Any

from nkisim.core.target import Params
from nkisim.cost import costs, hoist, lanes, reasons, spill, unroll
from nkisim.cost import instructions as isa
from nkisim.cost.allocation import Buffers
from nkisim.cost.deps import Scoreboard
from nkisim.cost.trace import Instruction

COMPUTE = ("pe", "act", "dve", "pool")
_GAPS = 16  # idle gaps remembered by the DMA reservation table


class Queue:
    """The DMA queues' reservation table: end of the last reservation plus a few earlier idle gaps."""

    __slots__ = ("free", "gaps", "pieces")

    def __init__(self) -> None:
        self.free = 0.0
        self.gaps: list[list[float]] = []
        #: the (start, end) pieces of the last ``place`` (a profile draws the queues from them)
        self.pieces: list[tuple[float, float]] = []

    def place(self, ready: float, dur: float) -> tuple[float, float]:
        """Reserve ``dur`` ns of queue time from ``ready`` on; returns (start, finish).

        A transfer is many independent descriptors, so it may fill earlier idle gaps piecewise and
        finish at the tail; this never ends later than appending it whole.
        """
        left, start, fin = dur, None, ready
        pieces = self.pieces = []
        gaps = self.gaps
        if gaps and any(ready < g[1] for g in gaps):  # else no gap can take any of it: they stay as they are
            kept: list[list[float]] = []
            for g in gaps:
                lo, hi = g
                s0 = lo if lo > ready else ready
                if left > 0 and s0 < hi:
                    take = left if left < hi - s0 else hi - s0
                    start = s0 if start is None else start
                    fin = s0 + take
                    pieces.append((s0, fin))
                    left -= take
                    if s0 > lo:
                        kept.append([lo, s0])
                    if s0 + take < hi:
                        kept.append([s0 + take, hi])
                else:
                    kept.append(g)
            gaps = self.gaps = kept
        if left > 0:
            s0 = max(self.free, ready)
            if s0 > self.free:
                gaps.append([self.free, s0])
            start = s0 if start is None else start
            fin = s0 + left
            pieces.append((s0, fin))
            self.free = fin
        while len(gaps) > _GAPS:
            gaps.pop(lanes.shortest(gaps))
        return (ready if start is None else start), fin


class Dge:
    """The hardware descriptor-generation engine (NC-v3) that makes runtime DMA descriptors.

    A DMA whose addresses depend on a rolled loop's variable needs its descriptors made at run time
    (spec §4.4: ~600 ns per DMA instruction).  The DGE is triggered from an engine sequencer as it
    reaches the DMA in program order, without waiting for the DMA's data ("descriptor generation
    overlaps with earlier compute instructions"), so it works through the DMAs one after another
    and a transfer starts once both its descriptors and its data are ready.
    """

    __slots__ = ("free",)

    def __init__(self, instances: int) -> None:
        self.free = [0.0] * max(1, instances)

    def generate(self, ns: float) -> tuple[float, float]:
        """(start, end) of making one DMA's descriptors on the first free DGE instance."""
        u = min(range(len(self.free)), key=lambda k: (self.free[k], k))
        start = self.free[u]
        self.free[u] = start + ns
        return start, start + ns


class Core:
    """Engine timelines of one NeuronCore."""

    def __init__(self, prm: Params) -> None:
        self.free = {e: 0.0 for e in COMPUTE}
        self.dma = Queue()
        self.dge = Dge(prm.dma.dge_instances)
        self.port = 0.0  # shared VectorE/GpSimdE SBUF port on NC-v2
        self.psum_port = 0.0  # shared VectorE/ScalarE PSUM access on NC-v2
        #: idle gaps before ``free`` of each engine and of the two ports ("port", "psum_port"), which an affine_range
        #: loop's instructions may fill (lanes.py)
        self.gaps: dict[str, lanes.Gaps] = {e: lanes.Gaps() for e in (*COMPUTE, "port", "psum_port")}


class Schedule:
    """Result of scheduling: per-instruction (start, end) and per-core finish times."""

    def __init__(self, n: int) -> None:
        self.start = [0.0] * n
        self.end = [0.0] * n
        #: copies the compiler placed on another engine than the one they name (index -> engine; costs.copy_engine)
        self.engine: dict[int, str] = {}
        #: the compiler behaviours the model applied, for the "Why:" lines (reasons.py)
        self.notes = reasons.Notes()
        self.busy: dict[str, float] = {e: 0.0 for e in (*COMPUTE, "dma")}
        self.core_end: dict[int, float] = {}
        #: per DMA instruction: the (start, end) pieces in which its data moves on the queues (a transfer may
        #: fill earlier idle gaps piecewise), and how many of the 16 queues carry it (its ``start``/``end``
        #: above also cover descriptor generation and the fixed completion latency)
        self.dma_queues: dict[int, tuple[tuple[tuple[float, float], ...], int]] = {}
        #: DMA transfers (and their bytes) the schedule added to the trace's: spilled SBUF tensors moved out to
        #: HBM and back (spill.py), which the DMA statistics count like any other transfer
        self.spill_dmas = 0
        self.spill_bytes = 0
        #: the work spills add, for a profile's timeline: (core, engine, start, end, queue pieces, queues used);
        #: a copy on ScalarE/VectorE has no queue pieces
        self.spill_spans: list[tuple[int, str, float, float, tuple[tuple[float, float], ...], int]] = []


def _on_core(region: tuple[Any, tuple], root: int, core: int, space_of: dict[int, str]) -> tuple[Any, tuple]:
    """SBUF and PSUM are per NeuronCore: rotating (or mod-allocated) physical tiles of different cores
    never alias, so their keys carry the core (core 0 keeps its plain key; HBM is shared by all)."""
    key, box = region
    if core and space_of.get(root) in ("sbuf", "psum"):
        return ("core", core, key), box
    return key, box


def _broadcast(core: Core, ins: Instruction, ready: float, prm: Params, sem: float, psum_port: bool,
               out: Schedule, evict: bool = True) -> tuple[float, float, str]:
    """A partition broadcast (spec §2.10: a TensorE matmul with a ones vector): the matmuls write PSUM,
    then ScalarE or VectorE (whichever is free first) copies the result into the SBUF tile, unless it stays in
    PSUM for its readers (``evict`` False, costs.psum_broadcasts).  Returns (start, end, the engine that
    writes the tile)."""
    pe_ns = costs.broadcast_pe_cycles(ins, prm) / prm.clock_ghz.pe
    start = max(ready, core.free["pe"])
    core.free["pe"] = pe_end = start + pe_ns
    out.busy["pe"] += pe_ns
    if not evict:
        return start, pe_end, "pe"
    ev = min(("act", "dve"), key=lambda k: core.free[k])
    ev_ns = costs.evict_ns(ins, ev, prm)
    ev_start = max(pe_end + sem, core.free[ev])
    if psum_port:  # NC-v2: VectorE and ScalarE cannot access PSUM at the same time (spec §4.3)
        ev_start = max(ev_start, core.psum_port)
        core.psum_port = ev_start + ev_ns
    core.free[ev] = end = ev_start + ev_ns
    out.busy[ev] += ev_ns
    return start, end, ev


def _move(core: Core, ins: Instruction, space: str, per: int, ready: float, outwards: bool, prm: Params,
          out: Schedule) -> tuple[float, str]:
    """Move a spilled tensor's part on ``ins``'s partitions out of (``outwards``) or back into its on-chip
    buffer, from ``ready`` on; returns when it is done and on which engine.  SBUF: a DMA to or from HBM;
    PSUM: a copy to or from SBUF on ScalarE or VectorE, whichever is free first (spill.py)."""
    if space == "sbuf":
        t = spill.transfer(ins, per, outwards)
        nq = costs.dma_queues(t, prm)
        dur = costs.dma_queue_ns(t, nq, prm)
        start, fin = core.dma.place(ready, dur)
        out.busy["dma"] += dur * nq
        out.spill_dmas += 1
        out.spill_bytes += t.nbytes
        done = fin + float(prm.dma.fixed_latency_ns)
        out.spill_spans.append((ins.core, "dma", start, done, tuple(core.dma.pieces), nq))
        return done, "dma"
    ev = min(("act", "dve"), key=lambda k: core.free[k])
    ns = spill.copy_cycles(per, prm) / prm.clock_ghz.of(ev)
    start = max(ready + float(prm.engine.sem_ns), core.free[ev])
    core.free[ev] = start + ns
    out.busy[ev] += ns
    out.spill_spans.append((ins.core, ev, start, start + ns, (), 0))
    return start + ns, ev


def schedule(trace: list[Instruction], prm: Params) -> Schedule:
    """Schedule ``trace`` on the target described by ``prm``; times are ns from kernel start."""
    eng_p = prm.engine
    sem = float(eng_p.sem_ns)
    dma_lat = float(prm.dma.fixed_latency_ns)
    dep = {e: eng_p.dep_latency_cycles / prm.clock_ghz.of(e) for e in COMPUTE}

    def sync(src: str, dst: str, war: bool = False) -> float:
        if src == dst:
            return 0.0 if (war or src == "dma" or src == "pe") else dep[src]
        if src == "dma" or dst == "dma":
            return 0.0  # the DMA's fixed latency already includes its semaphore (spec §4.4)
        return sem

    board = Scoreboard(sync)
    bufs = Buffers(trace, prm)
    invariant = hoist.hoisted(trace, bufs.info)  # computed once by the first iteration (cost/hoist.py)
    cores: dict[int, Core] = {}
    written = {w.root for ins in trace for w in ins.writes}
    space_of = {root: b.space for root, b in bufs.info.items()}
    shared_port = eng_p.dve_pool_shared_port
    psum_port = eng_p.dve_act_shared_psum
    # skip_middle_end_transformations: "Skip all middle end transformations on the kernel" (nki.compiler docstring,
    # v2.26); a sequential_range loop's "much more conservative loop-level optimizations" are the middle end's, so
    # without it both loop kinds are alike (CS149 2025's handout: "both of these constructs are effectively the same")
    middle_end = not getattr(trace, "skip_middle_end", False)
    dge_ns = prm.dma.dge_ns if not middle_end and getattr(trace, "dge", True) else 0.0
    dge_desc_ns = prm.dma.dge_descriptor_ns
    copy_on = costs.copy_engines(getattr(trace, "dialect", "legacy"), int(prm.limits.nc_version))
    legacy = getattr(trace, "dialect", "legacy") != "0.6"
    out = Schedule(len(trace))
    for starts in bufs.renamed.values():
        out.notes.add("renamed", trace[starts[0]].loc, count=len(starts))
    for loc in bufs.unread.values():
        out.notes.add("unread", loc)
    #: (instance, label) -> (finish, engine) of the latest instruction with that label (``Instruction.order``)
    labelled: dict[tuple[int, Any], tuple[float, str]] = {}
    for i, ins in enumerate(trace):
        core = cores.get(ins.core)
        if core is None:
            core = cores[ins.core] = Core(prm)
        e = costs.engine_of(ins)
        e = e if e in COMPUTE or e == "dma" else "dve"
        bufs.at = i
        if ins.core:
            reads = [(_on_core(bufs.key(r.root, r.tensor, r.box, ins.loc), r.root, ins.core, space_of), False)
                     for r in ins.reads if r.root in written]
            writes = [(_on_core(bufs.key(w.root, w.tensor, w.box, ins.loc, True), w.root, ins.core, space_of), True)
                      for w in ins.writes]
        else:  # core 0 keeps its plain keys (_on_core), without a call per region
            reads = [(bufs.key(r.root, r.tensor, r.box, ins.loc), False) for r in ins.reads if r.root in written]
            writes = [(bufs.key(w.root, w.tensor, w.box, ins.loc, True), True) for w in ins.writes]
        carried: list[tuple[tuple[Any, tuple], bool]] = []
        for _uid, kind, _it in ins.loops if middle_end else ():
            if kind == "sequential":
                carried = unroll.carried(ins, bufs.loop_uids, written)
                break
        ready = 0.0
        for (key, box), is_w in (*reads, *writes):
            ready = max(ready, board.ready(key, box, e, is_w))
        held = max([board.ready(k, b, e, w) for (k, b), w in carried]) if carried else 0.0  # the loop's order
        order = ins.order
        if order is not None:
            for label in order.after:
                hit = labelled.get((ins.instance, label))
                if hit is not None:
                    ready = max(ready, hit[0] + sync(hit[1], e))
        if held > max(ready, core.free.get(e, 0.0)):  # held back by the loop's program order alone (unroll.carried)
            out.notes.add("sequential_range", ins.loc, held - max(ready, core.free.get(e, 0.0)))
        ready = max(ready, held)
        moves = spill.traffic(ins, bufs, bufs.spilled) if bufs.spilled else None
        if moves:  # a spilled tensor's part comes back before the instruction can use it (spill.py)
            for _root, space, _region, per in moves[0]:
                ready = max(ready, _move(core, ins, space, per, ready, False, prm, out)[0])
        if ins.kind is isa.MEMSET and ins.extra.get("zero") and ins.writes and \
                space_of.get(ins.writes[0].root) == "psum":
            # nl.zeros on PSUM before `+= matmul`: the compiler folds it into the first matmul of the
            # accumulation group (overwrite instead of accumulate), so no engine runs it
            start = end = ready
            e = "pe"
        elif e == "dma":
            nq = costs.dma_queues(ins, prm)
            dur = costs.dma_queue_ns(ins, nq, prm)
            if costs.trivial_pieces(ins, prm):
                out.notes.add("trivial_dim", ins.loc)
            if costs.is_transpose(ins):  # its queue time beyond a plain copy's, summed over its queues
                out.notes.add("dma_transpose", ins.loc, (dur - costs.dma_queue_ns(ins, nq, prm, as_copy=True)) * nq)
            dge_start = None
            sw = costs.swdge_ns(ins, prm)
            if sw:  # GpSimd makes an indirect DMA's descriptors once its index is there (costs.swdge_ns)
                sw_start, _ = lanes.place(core, "pool", ready, sw, shared_port, False, False)
                out.busy["pool"] += sw
                out.notes.add("swdge", ins.loc, sw)
                dge_start, ready = sw_start, sw_start + sw
            if dge_ns and costs.runtime_dge(ins):
                # a DMA in a rolled NKI loop has loop-dependent addresses, so its descriptors are made at
                # run time by the hardware DGE (spec §4.4 ~600 ns per instruction) before the transfer
                # can start; the queues meanwhile keep moving earlier transfers' data
                dge_start, dge_end = core.dge.generate(dge_ns + dge_desc_ns * costs.descriptors(ins, prm))
                ready = max(ready, dge_end)
            # every transfer writes a completion semaphore on all 16 queues (spec §4.4), so the queues
            # are modelled as one reservation table; the data rate still scales with the queues used
            start, fin = core.dma.place(ready, dur)
            out.dma_queues[i] = (tuple(core.dma.pieces), nq)
            if dge_start is not None:
                start = dge_start
            end = fin + dma_lat
            out.busy["dma"] += dur * nq
        elif i in invariant:  # the compiler computed it before the loop: its result is ready with its inputs
            start = end = ready
        elif e == "pe" and ins.kind is isa.BROADCAST_TO:
            start, end, e = _broadcast(core, ins, ready, prm, sem, psum_port, out,
                                       not (ins.writes and ins.writes[0].root in bufs.psum_resident))
        else:
            spaces = tuple([space_of.get(r.root, "hbm") for r in (*ins.reads, *ins.writes)])
            if ins.extra.get("any_engine"):  # a copy on whichever engine the compiler picks (costs.copy_engine)
                e, dur = costs.copy_engine(ins, spaces, prm, core.free, ready, copy_on)
                if e != ins.engine:
                    out.notes.add("copy_engine", ins.loc)
                    out.engine[i] = e
            else:
                dur = costs.compute_ns(ins, spaces, prm, e)
                if ins.kind is isa.NC_TRANSPOSE and ins.extra.get("implicit"):  # nl.matmul's inserted transpose of x
                    out.notes.add("inserted_transpose", ins.loc, dur)
            on_port = shared_port and e in ("dve", "pool")
            # NC-v2: VectorE and ScalarE cannot access PSUM at the same time (spec §4.3)
            on_psum = psum_port and e in ("dve", "act") and "psum" in spaces
            barrier = ins.kind is isa.CORE_BARRIER
            start, held = lanes.place(core, e, ready, dur, on_port, on_psum,
                                      barrier or not lanes.reorders(ins.loops, middle_end, legacy))
            if barrier:  # "The barrier will block execution on this engine" (isa core_barrier): nothing issued after
                core.gaps[e].clear()  # it runs on this engine in idle time before it
            if held and not barrier:  # a sequential_range loop's instruction, kept in sequence order: the idle time it could fill
                out.notes.add("sequential_order", ins.loc, held)
            end = start + dur
            out.busy[e] += dur
        out.start[i], out.end[i] = start, end
        for (key, box), is_w in (*reads, *writes, *carried):
            board.record(key, box, e, end, is_w)
        if moves:  # ... and what it wrote goes out again; the next user waits for that
            for root, space, region, per in moves[1]:
                done, mover = _move(core, ins, space, per, end, True, prm, out)
                key, box = _on_core(bufs.key(root, region.tensor, region.box, ins.loc, True), root, ins.core,
                                    space_of)
                board.record(key, box, mover, done, True)
                end = max(end, done)
        if order is not None and order.label is not None:
            key = (ins.instance, order.label)
            hit = labelled.get(key)
            if hit is None or end >= hit[0]:
                labelled[key] = (end, e)
        if end > out.core_end.get(ins.core, 0.0):
            out.core_end[ins.core] = end
    return out
