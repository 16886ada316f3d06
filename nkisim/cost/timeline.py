"""The engine timeline of a profile (``Profile.figure`` and its Perfetto tracks): lanes named as the lessons
name the hardware.

Per NeuronCore, top to bottom: the fixed launch cost; the Tensor, Vector, Scalar and GpSimd engines (each runs
one instruction at a time); "DMA active", the time in which any transfer is in flight (issue to data landed);
then the 16 DMA queues, each showing when it moves data.  A transfer is spread over one queue per 8 of its
partitions (the cost model's rule), so a 128-row tile lights up all 16 queue lanes and a 1-row tile only the
first.  The cost model keeps the 16 queues in one reservation table (every transfer signals all of them), so
queue lanes never overlap; which queues a narrow transfer uses is not modelled, and it is drawn on the first.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

ENGINE_NAMES = {"pe": "Tensor Engine (PE)", "dve": "Vector Engine", "act": "Scalar Engine (ACT)",
                "pool": "GpSimd Engine", "dma": "DMA"}
LABEL = "nkisim cost-model estimate (not a hardware measurement)"
COLORS = {"launch": "#9e9e9e", "pe": "#d62728", "dve": "#1f77b4", "act": "#2ca02c", "pool": "#9467bd",
          "dma": "#ff7f0e", "queue": "#ffbb78"}
COMPUTE = ("pe", "dve", "act", "pool")
#: a lane with at most this many instructions draws each as its own bar (thin white edges between them)
SEPARATE_BARS = 400


def merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``spans`` as sorted, disjoint intervals."""
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


@dataclass
class Lane:
    """One row of the timeline: its label, what it shows, and its slices (µs from the launch's start, and the
    instruction each one is: None for a lane's own intervals and for the compiler's spill traffic)."""

    name: str
    engine: str  # "launch", an engine, or "queue"
    slice_name: str
    slices: list[tuple[float, float, int | None]] = field(default_factory=list)


def _order(span: tuple[float, float, int | None]) -> tuple[float, float, int]:
    """Slices by time (a spill's, with no instruction index, sorts among them as -1)."""
    return span[0], span[1], -1 if span[2] is None else span[2]


def lanes(prof: Any, core: int) -> list[Lane]:
    """The timeline's rows for ``core`` of ``prof`` (a ``report.Profile``), in drawing order."""
    pre = f"NC{core} " if len(prof.core_ids) > 1 else ""
    out = [Lane(f"{pre}launch overhead (fixed per launch)", "launch", "launch overhead",
                [(0.0, prof.launch_us, None)])]
    off = prof.launch_us
    for eng in COMPUTE:
        lane = Lane(pre + ENGINE_NAMES[eng], eng, eng)
        lane.slices = sorted([(off + ev.start_ns / 1000.0, off + ev.end_ns / 1000.0, ev.index)
                              for ev in prof.events if ev.instruction.core == core and ev.engine == eng] +
                             [(off + s / 1000.0, off + e / 1000.0, None) for c, spilled_on, s, e in prof.spill_events
                              if c == core and spilled_on == eng], key=_order)
        out.append(lane)
    active = Lane(f"{pre}DMA active (a transfer in flight)", "dma", "DMA active")
    active.slices = [(a, b, None) for a, b in merged(prof.spans(core, "dma"))]
    out.append(active)
    for q in range(prof.queues):
        lane = Lane(f"{pre}DMA queue {q}", "queue", f"queue {q}")
        lane.slices = sorted(((off + s.start_ns / 1000.0, off + s.end_ns / 1000.0, s.index)
                              for s in prof.queue_spans if s.core == core and s.queue == q), key=_order)
        out.append(lane)
    return out


def figure(prof: Any, title: str | None = None) -> Any:
    """The timeline as a matplotlib figure; its time axis is exactly the launch, 0 to the estimated total."""
    import matplotlib

    if "ipykernel" not in sys.modules and "MPLBACKEND" not in os.environ:
        matplotlib.use("Agg")  # headless scripts and tests; notebooks keep their inline backend
    import matplotlib.pyplot as plt

    rows = [lane for core in prof.core_ids for lane in lanes(prof, core)]
    total = prof.estimate.total_us
    fig, ax = plt.subplots(figsize=(11, 1.3 + 0.22 * len(rows)))
    for y, lane in enumerate(rows):
        spans = [(a, b) for a, b, _ in lane.slices]
        separate = len(spans) <= SEPARATE_BARS  # each instruction its own bar; past that, their union
        bars = [(a, max(b - a, total * 1e-4)) for a, b in (sorted(spans) if separate else merged(spans))]
        if bars:
            ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=COLORS[lane.engine],
                           hatch="//" if lane.engine == "launch" else None,
                           edgecolor="white" if separate else "none", linewidth=0.4)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([lane.name for lane in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, total)
    ax.axvline(prof.launch_us, color="#555555", linewidth=0.8, linestyle=":")
    ax.set_xlabel("time since the launch started (us)")
    ax.set_title(title or f"Engine timeline: {total:.1f} us on {prof.target} = fixed launch cost "
                          f"{prof.launch_us:.1f} us + instructions {total - prof.launch_us:.1f} us\n({LABEL})",
                 fontsize=9)
    fig.tight_layout()
    return fig
