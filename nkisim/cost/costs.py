"""Per-instruction engine occupancy (ns) from the ISA cost formulas (spec §2.9, §4.2, §4.3).

Engines are busy for ``max(MIN_II, formula) + static overhead`` cycles at their own clock. Lanes
are free: 128 partitions cost the same as one, so only N (elements per partition) matters.
"""

from __future__ import annotations

import math

from nkisim.core.target import Params
from nkisim.cost import instructions as isa
from nkisim.cost.instructions import broadcast_pe_cycles, partition_broadcast  # noqa: F401  (the scheduler's)
from nkisim.cost.trace import Instruction


def evict_ns(ins: Instruction, engine: str, prm: Params) -> float:
    """The copy of a partition broadcast's PSUM result into its SBUF tile on ``engine`` (ScalarE or
    VectorE: TensorE only writes PSUM, spec §1.1), ``max(MIN_II, N)`` plus the access overhead."""
    eng = prm.engine
    return (max(eng.min_ii_cycles, max(ins.n, 1)) + eng.instruction_overhead_cycles) / prm.clock_ghz.of(engine)


def engine_of(ins: Instruction) -> str:
    """The engine an instruction runs on: its own, except that a free-axis ``broadcast_to`` is a copy on
    VectorE (only a partition broadcast needs TensorE)."""
    if ins.kind is isa.BROADCAST_TO and not partition_broadcast(ins):
        return "dve"
    return ins.engine


def compute_ns(ins: Instruction, spaces: tuple[str, ...], prm: Params, engine: str = "") -> float:
    """Occupancy of a compute engine (pe/act/dve/pool; ``engine``, default the instruction's) in ns."""
    eng = prm.engine
    engine = engine or ins.engine
    c = ins.kind.cycles(ins, spaces, prm)
    if engine != "pe":
        if ins.extra.get("stride_bytes", 0) > eng.stride_free_bytes:
            c *= eng.stride_penalty  # spec §4.3: strided SBUF/PSUM access runs at half bandwidth
        c = max(eng.min_ii_cycles, c) + eng.instruction_overhead_cycles
        if ins.extra.get("reduce") and ins.kind in (isa.ACTIVATION, isa.TENSOR_SCALAR, isa.ACTIVATE2, isa.EXPONENTIAL):
            c += eng.min_ii_cycles  # spec §4.3: accumulator read-out, max(64, N) + 64
    return c / prm.clock_ghz.of(engine)


def copy_engines(dialect: str, nc_version: int) -> tuple[str, ...]:
    """The engines a copy the kernel left to the compiler may run on: VectorE and ScalarE ("All three compute engines,
    Vector, Scalar and GpSimd Engine can perform tensor copy", aws-neuron-sdk v2.26 general/nki/api/nki/isa/
    __init__.py ``tensor_copy``).  GpSimd is left out: it shares VectorE's SBUF port on NeuronCore-v2 and is the slowest
    at copies.  An NKI 0.6 ``nisa.tensor_copy`` on NeuronCore-v2 has VectorE only: "On NeuronCore v2, ``tensor_copy``
    is not supported on the Scalar Engine" (the 0.6 docstring, nki/api/nki/isa/__init__.py)."""
    return ("dve",) if dialect == "0.6" and nc_version < 3 else ("dve", "act")


def copy_engine(ins: Instruction, spaces: tuple[str, ...], prm: Params, free: dict[str, float], ready: float,
                engines: tuple[str, ...]) -> tuple[str, float]:
    """(engine, ns) of a copy the kernel left to the compiler (a tile assigned to another, ``nisa.tensor_copy``
    without ``engine=``): the default ``unknown_engine`` means "compiler selects best engine based on engine workload"
    (aws-neuron-sdk v2.26 ``nki.isa.tensor_copy``, its ``engine`` parameter).  The model takes, of ``engines``
    (``copy_engines``), the one that would finish it first.  So a loop of copies feeding TensorE spreads over VectorE
    and ScalarE, as the profile of CS149 2024's conv2d by robertpare17 showed ("scalar-engine SBUF copies" overlapping
    the matmuls, its solution.md:47)."""
    own = ins.engine
    best: tuple[float, str, float] | None = None
    try:
        for k in engines:
            ins.engine = k  # the cycle formulas read the engine the instruction runs on
            ns = compute_ns(ins, spaces, prm, k)
            fin = max(ready, free[k]) + ns
            if best is None or fin < best[0]:
                best = (fin, k, ns)
    finally:
        ins.engine = own
    assert best is not None
    return best[1], best[2]


def dma_queues(ins: Instruction, prm: Params) -> int:
    """DMA engines a transfer is spread over: one per 8 partitions, at most 16 (spec §4.4)."""
    d = prm.dma
    return max(1, min(d.queues, math.ceil(max(ins.p, 1) / d.partitions_per_queue)))


def dma_queue_ns(ins: Instruction, nq: int, prm: Params, as_copy: bool = False) -> float:
    """Time one of the ``nq`` DMA queues is busy with its share of the transfer.

    Its share of the transfer's descriptors (one per piece contiguous in its source and destination,
    ``descriptors``), each paying the fixed cost of a DMA buffer (``descriptor_ns``), plus its bytes at the engine's
    rate.  A read-modify-write
    (``dma_copy(dst_rmw_op=...)``) streams at the target's ``rmw_throughput`` of the DMA rate (it reads the
    destination too); a transfer that reads and writes HBM (HBM to HBM, or a read-modify-write of an HBM
    destination) takes at least its HBM bytes (``hbm_bytes``: reads plus writes) at the core's HBM bandwidth,
    whichever is longer (issue 19: no instruction is cheaper than its work).  ``as_copy``: a transposing DMA's time
    as a plain copy of the same bytes (``transpose_efficiency`` left out; what the "dma_transpose" Why: line
    compares with)."""
    d = prm.dma
    eff = 1.0
    if ins.run:
        eff = min(1.0, max(d.strided_efficiency, ins.run / d.full_rate_run_bytes))
    extra = ins.extra
    if not as_copy and is_transpose(ins):
        eff *= transpose_efficiency(ins, prm)  # both are the DMA engine transposing as it copies
    if extra and extra.get("rmw"):
        eff *= d.rmw_sbuf_throughput if extra.get("rmw_sbuf") else d.rmw_throughput
    t = d.issue_ns + descriptor_ns(prm) * descriptors(ins, prm) / nq + (ins.nbytes / nq) / (d.bytes_per_ns * eff)
    hbm = extra.get("hbm_bytes") if extra else None
    if hbm:
        t = max(t, hbm / d.hbm_gbps)  # GB/s = B/ns
    return t


def is_transpose(ins: Instruction) -> bool:
    """A DMA that transposes as it copies (``nl.load_transpose2d``, ``nisa.dma_transpose``)."""
    return ins.kind is isa.LOAD_TRANSPOSE2D or ins.kind is isa.DMA_TRANSPOSE


def transpose_efficiency(ins: Instruction, prm: Params) -> float:
    """The fraction of the DMA rate a transposing DMA moves at: the target's ``transpose_efficiency`` from HBM into
    whole ``[128, 16]`` output blocks, ``sbuf_transpose_efficiency`` from SBUF, ``unaligned_transpose_efficiency``
    for any other output shape (AWS: "DMA transpose can [use] flexible tile sizes ... at the cost of DMA
    performance", trainium2_arch.rst:303)."""
    d = prm.dma
    if ins.extra and ins.extra.get("unaligned"):
        return d.unaligned_transpose_efficiency
    if ins.extra and ins.extra.get("from_sbuf"):
        return d.sbuf_transpose_efficiency  # "SBUF2SBUF transpose can achieve up to 50% of DMA throughput" (:340)
    return d.transpose_efficiency


def runtime_dge(ins: Instruction) -> bool:
    """A DMA in a rolled loop has its descriptors made at run time by the hardware DGE (NeuronCore-v3), unless the
    DGE cannot make them: a transpose outside AWS's hardware-DGE constraints (``static_descriptors``, noted by
    ops.transpose, nki-dge.rst:145-149), or an indirect DMA (hardware DGE "Does not support indirect (gather/scatter)
    operations", nki-dge.rst:125: ``swdge_ns``)."""
    extra = ins.extra
    return bool(ins.loops) and not (extra and (extra.get("static_descriptors") or extra.get("indirect")))


def swdge_ns(ins: Instruction, prm: Params) -> float:
    """GpSimd time making a DMA's descriptors at run time (software DGE), 0 for none: an indirect DMA's, whose rows
    come from its index tile's values ("The GpSimd Engine generates DMA descriptors during NEFF execution. This is
    the only mode that supports indirect (gather/scatter) operations", nki-dge.rst:77-79; "Consumes GpSimd Engine
    cycles for descriptor generation", :89), the target's ``swdge_ns`` per DMA."""
    return prm.dma.swdge_ns if ins.extra and ins.extra.get("indirect") else 0.0


def descriptor_ns(prm: Params) -> float:
    """The fixed cost of one descriptor (a DMA buffer: a piece of a transfer contiguous in its source and
    destination) on one queue: the time its engine takes to stream the target's ``descriptor_bytes`` (AWS's DMA
    bandwidth guide: below 256 B per partition a transfer is "severely overhead-bound")."""
    d = prm.dma
    return d.descriptor_bytes / d.bytes_per_ns


def descriptors(ins: Instruction, prm: Params | None = None) -> int:
    """DMA descriptors of a transfer: its pieces contiguous in source and destination (``cost.runs``, recorded
    when the DMA was issued).  A transfer the compiler makes itself (a spill or reload: one partition's bytes each,
    contiguous in HBM) has none recorded: one per partition's bytes.

    A transfer of a one-partition tile (``[1, N]``: its partition dimension is trivial) is cut into pieces of the
    target's ``trivial_dim_piece_bytes`` when ``prm`` is given: AWS's RMSNorm-Quant design doc says of its ``[1, H]``
    gamma load, "The code intends to load the entire ``[1, H]`` tensor in a single operation. However, it should be
    noted that the compiler performs optimizations for trivial dimensions, which can result in several small (e.g.,
    4-byte) DMA buffer loads" (aws-neuron-sdk nki/library/specs/design-rmsnorm-quant.rst:281)."""
    pieces = trivial_pieces(ins, prm) if prm is not None else 0
    if pieces:
        return max(ins.runs, pieces)
    if ins.runs:
        return ins.runs
    if ins.nbytes <= 0:
        return 1
    piece = ins.nbytes / max(ins.p, 1)
    if ins.run:
        piece = min(piece, ins.run)
    return max(1, math.ceil(ins.nbytes / max(piece, 1)))


def trivial_pieces(ins: Instruction, prm: Params) -> int:
    """The pieces of the target's ``trivial_dim_piece_bytes`` a DMA of a one-partition on-chip tile is cut into (0:
    it is not such a DMA, or a piece would hold all of it); ``descriptors`` says why."""
    piece = prm.dma.trivial_dim_piece_bytes
    if not piece or ins.p != 1 or ins.nbytes <= piece or not ins.bufs:
        return 0
    return math.ceil(ins.nbytes / piece)


def psum_broadcasts(trace: list[Instruction], spaces: dict[int, str], prm: Params) -> set[int]:
    """Roots of partition broadcasts the compiler leaves in PSUM instead of copying them to SBUF.

    A partition broadcast is a TensorE matmul with a ones vector (spec §2.10), so its result is written to PSUM;
    ScalarE and VectorE read PSUM like SBUF (spec §1.1), and an elementwise op with one input in PSUM takes one
    pass (``tensor_tensor`` max(MIN_II, N), spec §4.3).  So when the result fits one PSUM bank and only ScalarE and
    VectorE instructions read it, each reading at most one PSUM operand (the ISA allows one), no copy to SBUF is
    needed and none is charged; its readers read PSUM.  ``spaces``: root -> memory space of the on-chip roots."""
    limit = int(prm.limits.psum_free_max)
    made: dict[int, bool] = {}
    for ins in trace:
        if ins.kind is isa.BROADCAST_TO and ins.writes and partition_broadcast(ins):
            root = ins.writes[0].root
            made[root] = ins.n <= limit and root not in made  # made once, one bank
    if not made:
        return set()
    for ins in trace:
        reads = {r.root for r in ins.reads}
        ours = reads & made.keys()
        if not ours:
            if ins.kind is not isa.BROADCAST_TO:  # another instruction writing it: it needs its SBUF tile
                for w in ins.writes:
                    if w.root in made:
                        made[w.root] = False
            continue
        in_psum = len(ours) + sum(1 for r in reads - ours if spaces.get(r) == "psum")
        if engine_of(ins) not in ("act", "dve") or in_psum > 1 or any(w.root in made for w in ins.writes):
            for r in ours:
                made[r] = False
    return {r for r, ok in made.items() if ok}
