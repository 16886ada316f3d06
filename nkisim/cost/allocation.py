"""Physical buffers of a trace's on-chip tiles, as the scheduler sees them: which tiles share a buffer.

Tiles allocated inside loops map onto K rotating physical buffers (K from ``mod_alloc``'s num_free_tiles, else the
target's rotation count capped by SBUF capacity), so a tile's (i+K)-th allocation shares the buffer of its i-th one
and waits for its readers (scheduler.py): double buffering matters.  Legacy tiles written whole again and again are
renamed (rename.py), Python loops' tiles are found by allocation site (unroll.py), and what does not fit is spilled
(spill.py).  Its own module because the scheduler's loop and this accounting change for different reasons.
"""

from __future__ import annotations

from typing import Any

from nkisim.core.buffers import BufferInfo
from nkisim.core.target import Params
from nkisim.cost import costs, rename, spill, unroll
from nkisim.cost.trace import Instruction


class Buffers:
    """Maps on-chip root tensors to physical buffer keys (rotation of in-loop allocations)."""

    def __init__(self, trace: list[Instruction], prm: Params) -> None:
        self.prm = prm
        self.info: dict[int, BufferInfo] = {}
        self.phys: dict[int, Any] = {}
        self.count: dict[Any, int] = {}
        self.site_of: dict[int, Any] = {}  # allocation site of in-loop op results (no nl.ndarray site)
        self.site_key: dict[int, tuple] = {}  # in-loop root -> (space, its allocation site)
        per_line: dict[tuple, int] = {}
        sites: dict[Any, int] = {}
        site_roots: dict[Any, list[int]] = {}
        fixed = 0
        bp = prm.buffers
        bank_bytes = int(bp.psum_bank_bytes)
        psum_sites: dict[Any, int] = {}
        psum_fixed = 0
        # an op's result tile that was assigned into another tile (tile[...] = nl.load(...)) never
        # exists on chip: only roots that appear in some region occupy SBUF
        used = {r.root for ins in trace for r in (*ins.reads, *ins.writes)}
        # a legacy tile no instruction reads is live only while it is written: the compiler allocates SBUF to "live
        # data" ("When the cumulative size of live data defined by the NKI kernel overflows the capacity of any
        # on-chip memory", v2.26.0 general/nki/programming_model.rst:172-174), so its rotation holds no SBUF
        legacy = getattr(trace, "dialect", "legacy") != "0.6"
        read = {r.root for ins in trace for r in ins.reads} if legacy else used
        #: in-loop legacy SBUF tiles that nothing reads: root -> the line that writes it (the "unread" Why: line)
        self.unread: dict[int, tuple] = {}
        # tiles a Python loop makes anew in each iteration: every loop of a 0.6 kernel, a legacy kernel's range loops
        first, last = unroll.lifetimes(trace)  # one pass over the trace for both uses below
        unrolled, live = unroll.python_loop_sites(trace, first, last)
        spaces = {b.root: b.space for ins in trace for b in ins.bufs}
        #: partition broadcasts whose result stays in PSUM, read there (costs.psum_broadcasts)
        self.psum_resident = costs.psum_broadcasts(trace, spaces, prm)
        for ins in trace:
            for b in ins.bufs:
                if b.root not in self.info and b.root in used:
                    if b.root in self.psum_resident:
                        b = b._replace(space="psum")
                    if b.root in unrolled:  # a tile of an unrolled Python loop: as a tile of an unrolled NKI loop
                        b = b._replace(in_loop=True, site=unrolled[b.root])
                    self.info[b.root] = b
                    if b.place is not None:
                        continue  # a direct allocation: placed by the kernel, never rotated or spilled
                    if b.space == "sbuf":
                        if b.in_loop:
                            key = b.site or self._result_site(b.root, ins, per_line)
                            size = b.bytes_per_partition
                            if b.root not in read:
                                self.unread[b.root] = ins.loc
                                size = 0
                            sites[key] = max(sites.get(key, 0), size)
                            site_roots.setdefault(key, []).append(b.root)
                            self.site_key[b.root] = ("sbuf", key)
                        else:
                            fixed += b.bytes_per_partition
                    elif b.space == "psum":
                        banks = -(-b.bytes_per_partition // bank_bytes)  # a PSUM tile occupies whole banks
                        if b.in_loop:
                            key = b.site or self.site_of.setdefault(b.root, ins.loc)
                            psum_sites[key] = max(psum_sites.get(key, 0), banks)
                            self.site_key[b.root] = ("psum", key)
                        else:
                            psum_fixed += banks
        #: legacy tiles made once and written whole again and again: root -> trace positions of those writes; each
        #: value rotates over the buffers of an in-loop site of its own (rename.py)
        self.renamed = rename.whole_writes(trace, rename.candidates(trace, self.info, set()))
        for r in self.renamed:
            fixed -= self.info[r].bytes_per_partition
            sites[("renamed", r)] = self.info[r].bytes_per_partition
            self.site_key[r] = ("sbuf", ("renamed", r))
        #: ``key`` of the regions of tiles that are not renamed, which stays what their first access made it
        self.keys: dict[tuple[int, int, tuple], tuple[Any, tuple]] = {}
        self.at = 0  # the trace position being scheduled (which value of a renamed tile an access touches)
        #: the loops each in-loop on-chip root was allocated in (its uids): a root outside a loop is
        #: carried across that loop's iterations
        loops_of = unroll.root_loops(trace, {r for r, b in self.info.items() if b.in_loop and r not in unrolled})
        self.loop_uids = {r: {uid for uid, _kind, _it in loops} for r, loops in loops_of.items()}
        # a site that makes several tiles in one iteration needs as many buffers as are live at once, each
        # rotating: ``per_iteration`` of them per rotation step.  A list of accumulators is live together; the
        # tiles an inner Python loop makes one after another are not (each dies before the next is made), so
        # they rotate like the tiles of the same loop written in NKI 0.6, where every loop is a Python loop
        made: dict[tuple, list[int]] = {}
        for r, key in self.site_key.items():
            made.setdefault((key, loops_of.get(r, ())), []).append(r)
        self.per_iteration: dict[tuple, int] = {}
        for (key, _loops), rs in made.items():
            self.per_iteration[key] = max(self.per_iteration.get(key, 1), unroll.most_live(rs, first, last))
        for r, site in unrolled.items():  # an unrolled site: as many per iteration as are live at once
            self.per_iteration[self.site_key[r]] = live[site]
        sites = {s: v * self.per_iteration.get(("sbuf", s), 1) for s, v in sites.items()}
        psum_sites = {s: v * self.per_iteration.get(("psum", s), 1) for s, v in psum_sites.items()}
        # tiles of loops the compiler unrolls get a buffer per unrolled copy (unroll.py)
        budget = prm.loops.unroll_max_instructions
        in_loops = {r: loops_of[r] for rs in site_roots.values() for r in rs if r in loops_of}
        unrolled_uids, trips = unroll.unrolled_loops(trace, budget)
        copies = unroll.tile_copies(in_loops, unrolled_uids, trips)
        want = {s: max([copies.get(r, 1) for r in rs]) for s, rs in site_roots.items()}
        flat = unroll.straight_line(in_loops, unrolled_uids)
        for s, rs in site_roots.items():  # unrolled loops inside Python loops: every copy of the site, a buffer each
            if s not in live and all(r in flat for r in rs):
                want[s] = max(want[s], -(-len(rs) // self.per_iteration.get(("sbuf", s), 1)))
        for s, rs in site_roots.items():  # an unrolled Python loop's site: a buffer per iteration, as an NKI loop's
            if s in live:
                want[s] = -(-len(rs) // live[s])
        for r in self.renamed:  # a renamed tile's values: as many buffers as the target's allocator gives them
            want[("renamed", r)] = bp.renamed_rotation
        self.k = self._rotations(sites, prm.buffers.sbuf_partition_bytes - fixed,
                                 prm.buffers.sbuf_rotation, want)
        # PSUM has 8 banks per partition (spec §4.3): in-loop accumulators rotate over psum_rotation banks
        # each unless together they would need more banks than are left
        self.psum_k = self._rotations(psum_sites, int(bp.psum_banks) - psum_fixed,
                                      bp.psum_rotation, {})
        #: bytes per partition of one rotation step of each in-loop site (all the tiles it makes in one
        #: iteration), keyed like site_key's values
        self.site_units = {**{("sbuf", k): v for k, v in sites.items()},
                           **{("psum", k): v * bank_bytes for k, v in psum_sites.items()}}
        #: tensors the compiler spills because the live ones do not fit (spill.py): root -> space
        self.spilled = spill.victims(trace, self, prm)

    def _result_site(self, root: int, ins: Instruction, per_line: dict[tuple, int]) -> tuple:
        """An op's result tile has no nl.ndarray site: the n-th new one on a source line in one loop
        iteration gets site (line, n), so ``nl.add(nl.load(x), nl.load(y))`` written on one line has
        three allocation sites, as it would written as three statements (the compiler allocates each
        tile on its own; the line it is written on does not matter)."""
        it = (ins.loc, ins.loops)
        n = per_line.get(it, 0)
        per_line[it] = n + 1
        site = self.site_of[root] = (ins.loc, n) if n else ins.loc
        return site

    @staticmethod
    def _rotations(sites: dict[Any, int], room: int, rot: int, want: dict[Any, int]) -> dict[Any, int]:
        """K per in-loop SBUF allocation site: ``rot`` each (or one per unrolled copy, ``want``, when
        that is more), then shrink the biggest until they fit.  Copies beyond ``rot`` go first: an
        unrolled loop's extra buffers only add overlap, and must not cost another tile its double
        buffering."""
        k = {s: max(rot, want.get(s, 1)) for s in sites}
        while sum(sites[s] * k[s] for s in k) > room:
            grow = [s for s in k if k[s] > rot] or [s for s in k if k[s] > 1]
            if not grow:
                break
            big = max(grow, key=lambda s: (sites[s] * k[s], str(s)))
            k[big] -= 1
        return k

    def key(self, root: int, tid: int, box: tuple, loc: tuple, write: bool = False) -> tuple[Any, tuple]:
        """(physical key, box) for a region (``write``: the instruction at ``at`` writes it); HBM tensors and
        unknown roots keep their own ids."""
        b = self.info.get(root)
        if b is None:
            return (root, tid), box
        starts = self.renamed.get(root)
        if starts is not None:  # a renamed tile: the value the access touches, on its turn of the rotating buffers
            return rename.key(root, tid, box, starts, self.at, write, self.k)
        # any other tile's key depends on the region alone once its physical buffer is chosen (its first access)
        hit = self.keys.get((root, tid, box))
        if hit is None:
            hit = self.keys[(root, tid, box)] = self._key(b, root, tid, box, loc)
        return hit

    def _key(self, b: BufferInfo, root: int, tid: int, box: tuple, loc: tuple) -> tuple[Any, tuple]:
        """``key`` of a tile that is not renamed."""
        if tid != root and b.place is None and b.space != "hbm":
            # an alias of an on-chip tile (``t.reshape(...)``, ``t.view(dtype)``) has its own coordinates: its box
            # is compared with the root's accesses as "the same partitions, any element" (a box of another rank
            # overlaps every box, deps.overlaps), so a read through the alias waits for what wrote the tile
            key, _ = self.key(root, root, box, loc)
            return key, tuple(box[:1])
        space, site, place, in_loop = b.space, b.site, b.place, b.in_loop
        if place is not None:  # direct allocation: the partitions and bytes of the physical memory it touches
            if tid == root and len(box) == len(place.blocks) + 1 + len(place.free):
                parts, span = place.span(box)
            else:  # a view of it: every byte the tensor's tiles span
                end_p, end_b = place.extent()
                parts, span = (place.partition, end_p), (place.base, end_b)
            return ("phys", space), (parts, span)
        if not in_loop:
            return (root, tid), box
        phys = self.phys.get(root)
        if phys is None:
            site = site or self.site_of.get(root, loc)
            site_key = (space, site)
            n = self.count.get(site_key, 0)
            self.count[site_key] = n + 1
            kk = self.psum_k.get(site, 1) if space == "psum" else self.k.get(site or loc, 1)
            kk *= self.per_iteration.get(self.site_key.get(root, ()), 1)
            phys = self.phys[root] = ("rot", site_key, n % kk)
        return (phys, tid if tid != root else 0), box
