"""Deterministic NeuronCore latency estimate of an instruction trace (what ``nki.benchmark`` reports).

``estimate`` schedules the trace (scheduler.py) with the target's versioned parameters
(nkisim/targets/<target>.toml) and adds the fixed per-launch cost.  It is a model calibrated against
published trn1 measurements (bench/calibrate.py), not a hardware measurement.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field

from nkisim.core.target import Params, Target, resolve
from nkisim.cost.reasons import Reason
from nkisim.cost.scheduler import Schedule, schedule
from nkisim.cost.trace import Instruction


@contextlib.contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Python's cycle collector paused for the block (restored as it was after): scheduling a trace allocates
    hundreds of thousands of small lists, tuples and dicts, which start a collection every 700 allocations, and
    each traverses what the last ones left, a long trace included -- about 30% of the CPU of estimating a
    conv2d or a Mamba kernel, with next to nothing to collect (the schedule makes no reference cycles worth
    freeing early).  Nothing is lost: whatever cycles there are get collected after the block."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass
class Estimate:
    """Modelled latency of one launch and where the time went."""

    target: str
    version: str
    total_us: float
    engine_busy_us: dict[str, float] = field(default_factory=dict)
    dma_count: int = 0  # DMA transfers, spill traffic included
    dma_bytes: int = 0  # their bytes
    spill_dma_count: int = 0  # of which the compiler's spills of SBUF tensors to HBM and back (spill.py)
    spill_bytes: int = 0
    line_us: dict[tuple[str, int], float] = field(default_factory=dict)
    core_us: dict[int, float] = field(default_factory=dict)
    instructions: int = 0
    #: the target's cost model has been checked against published figures (False for trn3: "uncalibrated")
    calibrated: bool = True
    #: the compiler behaviours the model applied (cost/reasons.py), most time held first
    reasons: tuple[Reason, ...] = ()

    def top_lines(self, k: int = 5) -> list[tuple[tuple[str, int], float]]:
        """The ``k`` source lines with the most engine time (ties broken by location)."""
        return sorted(self.line_us.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def estimate(trace: list[Instruction], target: Target | str = "trn2", cores: int = 1,
             prm: Params | None = None, sched: Schedule | None = None) -> Estimate:
    """Latency estimate (µs) of ``trace`` on ``target``; ``cores`` is the NeuronCores the launch spans
    (each gets a ``core_us`` entry, idle ones only the fixed launch cost).

    ``prm`` replaces the target's parameter file (bench/calibrate.py --fit scans candidate values);
    ``sched`` is the trace's schedule when the caller has made it already (a profile draws its timeline
    from the same one)."""
    hw = resolve(target)
    prm = hw.params if prm is None else prm
    if sched is None:
        with cycle_collection_paused():
            sched = schedule(trace, prm)
    fixed = float(prm.kernel.fixed_us)
    # every core of the launch pays the launch cost, also one that got no instance (e.g. nl.nc(2) over
    # a grid of one); the launch ends when the slowest core does
    ends = {c: 0.0 for c in range(max(1, cores))}
    ends.update(sched.core_end)
    core_us = {c: t / 1000.0 + fixed for c, t in sorted(ends.items())}
    total = max(core_us.values(), default=fixed)
    line_us: dict[tuple[str, int], float] = {}
    dma_count = dma_bytes = 0
    for i, ins in enumerate(trace):
        line_us[ins.loc] = line_us.get(ins.loc, 0.0) + (sched.end[i] - sched.start[i]) / 1000.0
        if ins.engine == "dma":
            dma_count += 1
            dma_bytes += ins.nbytes
    return Estimate(target=hw.name, version=prm.version, total_us=total,
                    engine_busy_us={e: v / 1000.0 for e, v in sched.busy.items()},
                    dma_count=dma_count + sched.spill_dmas, dma_bytes=dma_bytes + sched.spill_bytes,
                    spill_dma_count=sched.spill_dmas, spill_bytes=sched.spill_bytes, line_us=line_us,
                    core_us=core_us, instructions=len(trace), calibrated=hw.calibrated,
                    reasons=sched.notes.reasons())
