"""Renaming: a legacy kernel's tile overwritten whole starts a new value, which the allocator may place elsewhere.

The legacy compiler allocates SBUF to *data*, not to the tensors a kernel declares: "ultimately the Neuron compiler
performs memory allocation for SBUF and PSUM and assigns memory addresses to kernel intermediate data. When the
cumulative size of live data ... overflows ..." (aws-neuron-sdk v2.26 general/nki/programming_model.rst:166-175), and
it "uses a heuristic-driven allocator to decide how many physical tiles are allocated to each tensor. The key
performance goal of the allocator is to achieve instruction parallelism across different engines"
(general/nki/nki_direct_allocation_guide.rst:50-53).  A write that covers the whole tile ends the life of what was in
it, so the value it starts can live in another physical tile, and the next iteration's load need not wait for this
iteration's readers.  The model gives such a tile rotating buffers of its own, one per value in turn: the target's
``renamed_rotation`` of them, SBUF permitting (AWS gives no number; trn2's is fitted to the figure below).

The evidence is a hardware figure: CS149 2025's fused conv2d by xaviergonzalez (bench/published_latencies.csv)
declares its input-row tile once, outside every loop, and loads it 2664 times, each load read by three matmuls; it
ran at 824 us with about 90% of TensorE's peak (its author's profile), which leaves no room for a load that waits for
the previous row's matmuls: the loads overlapped them.

NKI 0.6 is different, and AWS says so: a tensor declared before a loop and loaded in every iteration makes "the
execution ... serialized because the loop carries a dependency on add_buf"; "To preserve performance, it is important
to hoist the tensor down inside the loop" (nki/migration/index.rst, "Removing block dimensions").  So only legacy
kernels' tiles are renamed, and only automatically allocated SBUF tiles (a ``mod_alloc``/``alloc`` placement is the
kernel's own: nki_direct_allocation_guide.rst:303, "the following loop will be serialized because ``t`` has only one
tile alive").
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from nkisim.cost.trace import Instruction


def whole_writes(trace: list[Instruction], candidates: set[int]) -> dict[int, list[int]]:
    """Per candidate root written whole more than once: the trace positions of those writes, in order.

    A write covers the tile when it is to the tile itself (not a view), is not an accumulation (``+=`` reads what is
    there) and its box spans everything any access to the tile spans (the tile's extent as the trace sees it)."""
    if not candidates:
        return {}
    extent: dict[int, list[list[int]]] = {}
    for ins in trace:
        for r in (*ins.reads, *ins.writes):
            if r.root in candidates and r.tensor == r.root:
                ext = extent.get(r.root)
                if ext is None:
                    extent[r.root] = [[lo, hi] for lo, hi in r.box]
                elif len(ext) == len(r.box):
                    for e, (lo, hi) in zip(ext, r.box):
                        e[0], e[1] = min(e[0], lo), max(e[1], hi)
    starts: dict[int, list[int]] = {}
    for i, ins in enumerate(trace):
        if ins.acc:
            continue
        for w in ins.writes:
            ext = extent.get(w.root)
            if ext is not None and w.tensor == w.root and len(w.box) == len(ext) and \
                    all(lo == e[0] and hi == e[1] for (lo, hi), e in zip(w.box, ext)):
                starts.setdefault(w.root, []).append(i)
    return {r: s for r, s in starts.items() if len(s) > 1}


def candidates(trace: Any, info: dict[int, Any], excluded: set[int]) -> set[int]:
    """The roots renaming may apply to: a legacy kernel's automatically allocated SBUF tiles made once (not in a loop,
    not a tile of an unrolled Python loop's site: those rotate already), except ``excluded`` ones."""
    if getattr(trace, "dialect", "legacy") == "0.6":
        return set()
    return {r for r, b in info.items()
            if b.space == "sbuf" and b.place is None and not b.in_loop and r not in excluded}


def generation(starts: list[int], at: int, write: bool) -> int:
    """Which value of a renamed tile an access at trace position ``at`` touches: the number of whole writes before it
    (a read) or up to and including it (a write: the whole write starts the value it writes)."""
    return (bisect_right if write else bisect_left)(starts, at)


def key(root: int, tid: int, box: tuple, starts: list[int], at: int, write: bool,
        k: dict[Any, int]) -> tuple[Any, tuple]:
    """The scheduler's (physical key, box) of an access at trace position ``at`` to renamed ``root`` (``tid``: the
    tensor accessed, the root or an alias of it): the value it touches, on its turn of the site's ``k`` buffers.  An
    alias is compared as "the same partitions, any element" (allocation.Buffers.key)."""
    site = ("renamed", root)
    phys = (("rot", ("sbuf", site), generation(starts, at, write) % k.get(site, 1)), 0)
    return (phys, box) if tid == root else (phys, tuple(box[:1]))
