"""Loop-invariant compute: what the compiler's middle end computes once instead of in every iteration.

An instruction inside a loop that reads only tiles made before the loop (and not changed in it since), takes the
same scalar operands in every iteration (``extra["scalars"]``, noted by the op registry: ``x * (j + 1)`` reads an
invariant tile but computes another product in every iteration, which no compiler can hoist), and writes a fresh
result tile, computes the same values in every iteration of that loop; the compiler hoists such computation out
of the loop, and the model charges it once per execution of the loop (its later instances take no engine time;
their results are ready when the first one's are).

This is an inference, not an AWS statement: AWS's fused Mamba tutorial (SDK 2.20-2.26, trn1) moves the loads of
``delta`` and ``u`` out of the state loop (mamba_v2) and measures VectorE 99.63% busy for 1.61 ms, about 3.1 us
per (channel tile, state) iteration, against 4.2-4.8 us per iteration for the same instruction sequence in
mamba_v1, whose loads stay inside; the difference is about one 512-element two-input VectorE instruction, the
``delta * u`` product whose inputs became loop-invariant.  Loads are not hoisted this way: the matmul tutorial's
"hoist loads" step (51.8 -> 43.0 ms) is a gain only because the compiler does not move DMAs itself.  Kernels
compiled with ``skip_middle_end_transformations`` keep every instruction where it is.
"""

from __future__ import annotations

from typing import Any

from nkisim.cost.trace import Instruction


def hoisted(trace: list[Instruction], info: dict[int, Any]) -> set[int]:
    """Indices of the instructions the compiler hoists out of their innermost loop (see the module): a compute
    instruction whose read regions were last written outside that loop, that writes only op-result tiles, and
    that an earlier iteration of the same loop execution already issued with the same reads and the same scalar
    operands."""
    if getattr(trace, "skip_middle_end", False):
        return set()
    writer_loops: dict[int, frozenset[int]] = {}  # root -> uids of the loops around its last write
    seen: set[tuple] = set()
    out: set[int] = set()
    prev: tuple | None = None
    uids: frozenset[int] = frozenset()
    for i, ins in enumerate(trace):
        loops = ins.loops
        if loops is not prev and loops != prev:  # consecutive instructions of one iteration: their uids once
            prev, uids = loops, frozenset(uid for uid, _kind, _it in loops)
        if loops and ins.engine != "dma" and not ins.acc and ins.reads and \
                all(w.root in info and info[w.root].site is None and info[w.root].place is None
                    for w in ins.writes):
            inner = loops[-1][0]
            if all(inner not in writer_loops.get(r.root, ()) for r in ins.reads):
                key = (ins.kind, ins.engine, ins.loc, loops[:-1], tuple((r.root, r.box) for r in ins.reads),
                       ins.extra.get("scalars") if ins.extra else None)
                if key in seen:
                    out.add(i)
                else:
                    seen.add(key)
        for w in ins.writes:
            writer_loops[w.root] = uids
    return out
