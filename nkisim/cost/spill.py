"""Capacity over live tiles: which on-chip tensors the compiler spills, and what spilling costs.

The compiler allocates SBUF and PSUM itself and, when the data live at one time does not fit, "spills
to HBM automatically" (spec §1.1); "Total SBUF oversubscription is not an error: it is handled by
spilling (perf cost)" (spec §3, back-end notes).  The errors are for one tile that cannot fit at all
(more bytes per partition than SBUF has, more than one PSUM bank) and, with
``ncc.enable_stack_allocator``, the stack overflows; ops.creation raises those at the allocating line.

**Liveness.**  A tensor is live from the first to the last instruction that touches it, in program
order; a tile allocated in a loop holds its site's K rotating buffers (allocation.Buffers) while it is
live, since the iterations overlap.  SBUF is counted in bytes per
partition against the target's usable SBUF, PSUM in whole 2 KiB banks against its 8 banks.  Where the
live total exceeds that, the largest tensors live there (the longest-lived among equals) are spilled
until it fits (in-loop sites have already given up their extra rotating buffers, allocation.Buffers;
direct allocations (``mod_alloc``) are placed by the kernel and never spilled).

**Cost** (our model; the spec says spilling costs, not how the compiler schedules it): an instruction
reading a spilled tensor first brings back the part of it on the partitions it touches, and every
write is followed by moving that part out again (not a DMA's: what it loaded is still in HBM, so the
reload reads it from there).  For SBUF that is a DMA to or from HBM; for PSUM a
copy to or from SBUF on ScalarE or VectorE (the engines that can read and write PSUM, spec §1.1).
"""

from __future__ import annotations

from typing import Any

from nkisim.core.target import Params
from nkisim.cost.instructions import RELOAD, SPILL
from nkisim.cost.trace import Instruction


def victims(trace: list[Instruction], bufs: Any, prm: Params) -> dict[int, str]:
    """root -> space of every on-chip tensor spilled to make the live tensors fit (see the module)."""
    bp = prm.buffers
    bank_bytes = int(bp.psum_bank_bytes)
    cap = {"sbuf": int(bp.sbuf_partition_bytes), "psum": int(bp.psum_banks)}

    def units(space: str, per: int, k: int) -> int:
        return (-(-per // bank_bytes) if space == "psum" else per) * k

    size: dict[int, tuple[str, int]] = {}  # root -> (space, units it holds while live)
    bound = {"sbuf": 0, "psum": 0}  # every root allocated outside loops and every in-loop site at once
    sites = set()
    for root, b in bufs.info.items():
        if b.place is not None or b.space not in cap:
            continue
        site = bufs.site_key.get(root)
        if site is None:
            size[root] = (b.space, units(b.space, b.bytes_per_partition, 1))
            bound[b.space] += size[root][1]
            continue
        k = (bufs.psum_k if site[0] == "psum" else bufs.k).get(site[1], 1)
        size[root] = (b.space, units(b.space, b.bytes_per_partition, k))  # its rotating buffers
        if site not in sites:
            sites.add(site)
            bound[b.space] += units(b.space, bufs.site_units.get(site, 0), k)
    over = [space for space in cap if bound[space] > cap[space]]
    if not over:
        return {}  # everything fits even if all were live at once (the common case): no trace pass
    span: dict[int, list[int]] = {}  # root -> [first, last] instruction index
    for i, ins in enumerate(trace):
        for region in (*ins.reads, *ins.writes):
            r = region.root
            if r not in size:
                continue
            s = span.get(r)
            if s is None:
                span[r] = [i, i]
            else:
                s[1] = i
    spilled: dict[int, str] = {}
    for space in over:
        roots = [r for r in span if size[r][0] == space]
        events = sorted([(span[r][0], 1, r) for r in roots] + [(span[r][1] + 1, 0, r) for r in roots])
        live: dict[int, int] = {}
        total = 0
        for _pos, born, r in events:
            if not born:
                if r in live:
                    total -= live.pop(r)
                continue
            live[r] = size[r][1]
            total += live[r]
            while total > cap[space] and live:
                big = max(live, key=lambda x: (live[x], span[x][1] - span[x][0], -x))
                total -= live.pop(big)
                spilled[big] = space
    return spilled


def traffic(ins: Instruction, bufs: Any, spilled: dict[int, str]) -> tuple[list, list]:
    """(bring back before ``ins``, move out after it): (root, space, region, bytes per partition) of the
    spilled tensors ``ins`` reads (or accumulates into) and writes."""
    before, after = [], []
    for region in ins.reads:
        space = spilled.get(region.root)
        if space is not None:
            before.append((region.root, space, region, bufs.info[region.root].bytes_per_partition))
    for region in ins.writes:
        space = spilled.get(region.root)
        if space is not None:
            item = (region.root, space, region, bufs.info[region.root].bytes_per_partition)
            if ins.acc:  # += reads what is there
                before.append(item)
            if ins.engine != "dma":  # what a DMA brought in is still in HBM: the compiler loads it again
                after.append(item)
    return before, after


def transfer(ins: Instruction, per_partition: int, out: bool) -> Instruction:
    """The DMA that moves a spilled SBUF tensor's part on ``ins``'s partitions to HBM (``out``) or back."""
    return Instruction(kind=SPILL if out else RELOAD, engine="dma", loc=ins.loc, p=ins.p, n=max(1, per_partition // 4),
                 dtypes=("float32",), nbytes=ins.p * per_partition, run=per_partition)


def copy_cycles(per_partition: int, prm: Params) -> float:
    """Engine cycles of copying a spilled PSUM tile (fp32 elements) to or from SBUF: max(MIN_II, N) plus
    the access overhead (spec §4.3)."""
    eng = prm.engine
    return max(eng.min_ii_cycles, per_partition // 4) + eng.instruction_overhead_cycles
