"""Profiles of a simulated launch: what ``neuron-profile`` shows on hardware, from the cost model.

From one traced launch this builds (1) a Chrome/Perfetto trace JSON with one track per engine and
DMA lane (opens in ui.perfetto.dev), (2) a summary in neuron-profile's terms (total time, DMA
transfers and bytes, per-engine active time, achieved HBM bandwidth and FLOP rate vs peak),
(3) a per-source-line cost table and (4) a matplotlib engine timeline.  Every number is a cost-model
*estimate* for the named target, and every output says so.
"""

from __future__ import annotations

import json
import linecache
import os
from dataclasses import dataclass
from typing import Any

from nkisim.core.target import Target, resolve
from nkisim.cost.instructions import NC_MATMUL
from nkisim.cost.model import Estimate, estimate
from nkisim.cost.scheduler import schedule
from nkisim.cost.trace import Instr

ENGINE_NAMES = {"pe": "Tensor Engine (PE)", "dve": "Vector Engine", "act": "Scalar Engine (ACT)",
                "pool": "GpSimd Engine", "dma": "DMA"}
ENGINE_ORDER = ("pe", "dve", "act", "pool", "dma")
LABEL = "nkisim cost-model estimate (not a hardware measurement)"


@dataclass
class Event:
    """One scheduled instruction: engine lane, times in ns from kernel start."""

    index: int
    engine: str
    lane: int
    start_ns: float
    end_ns: float
    instr: Instr


def _flops(ins: Instr) -> int:
    if ins.kind is NC_MATMUL and "k" in ins.extra:
        return 2 * int(ins.extra["k"]) * int(ins.extra["m"]) * int(ins.extra["n"])
    return 0


class Profile:
    """A profiled launch; build with ``Profile.from_launch`` (tools: ``nkisim.api.profile_kernel``)."""

    def __init__(self, trace: list[Instr], target: Target | str, cores: int = 1) -> None:
        self.trace = trace
        self.hw = resolve(target)
        self.target = self.hw.label  # trn3's estimates say "uncalibrated" wherever the target is named
        self.cores = cores
        sched = schedule(trace, self.hw.params)
        self.estimate: Estimate = estimate(trace, self.hw, cores=cores, sched=sched)
        self.events = self._lanes(sched.start, sched.end)

    @classmethod
    def from_launch(cls, launch: Any) -> Profile:
        return cls(launch.ctx.trace, launch.ctx.target, launch.ctx.cores)

    def _lanes(self, start: list[float], end: list[float]) -> list[Event]:
        """Give overlapping instructions of one engine (DMA queues) separate lanes, first fit."""
        lanes: dict[tuple[int, str], list[float]] = {}
        events = []
        order = sorted(range(len(self.trace)), key=lambda i: (start[i], i))
        for i in order:
            ins = self.trace[i]
            eng = ins.engine if ins.engine in ENGINE_NAMES else "dve"
            ends = lanes.setdefault((ins.core, eng), [])
            lane = next((k for k, e in enumerate(ends) if e <= start[i] + 1e-9), None)
            if lane is None:
                lane = len(ends)
                ends.append(0.0)
            ends[lane] = end[i]
            events.append(Event(i, eng, lane, start[i], end[i], ins))
        events.sort(key=lambda ev: ev.index)
        return events

    # --- summary -----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """neuron-profile style totals (all estimates)."""
        est = self.estimate
        total_s = est.total_us * 1e-6
        prm = self.hw.params
        peak = prm.get("peak", {})
        flops = sum(_flops(i) for i in self.trace)
        fp32 = any(i.kind is NC_MATMUL and i.extra.get("in_dtype") == "float32" for i in self.trace)
        peak_tflops = float(peak.get("pe_tflops_fp32" if fp32 else "pe_tflops_bf16", 0.0)) * self.cores
        hbm = sum(i.nbytes for i in self.trace if i.engine == "dma")
        achieved_tflops = flops / total_s / 1e12 if total_s else 0.0
        achieved_gbps = hbm / total_s / 1e9 if total_s else 0.0
        peak_gbps = float(peak.get("dma_gbps", 0.0)) * self.cores
        return {
            "label": LABEL,
            "target": self.target,
            "model_version": est.version,
            "total_time_us": round(est.total_us, 3),
            "instructions": est.instructions,
            "dma_transfer_count": est.dma_count,
            "dma_transfer_bytes": est.dma_bytes,
            "engine_active_time_us": {ENGINE_NAMES[e]: round(est.engine_busy_us.get(e, 0.0), 3)
                                      for e in ENGINE_ORDER},
            "engine_utilization": {ENGINE_NAMES[e]: round(est.engine_busy_us.get(e, 0.0) / est.total_us, 4)
                                   if est.total_us else 0.0 for e in ENGINE_ORDER if e != "dma"},
            "achieved_hbm_gbps": round(achieved_gbps, 2),
            "peak_dma_gbps": peak_gbps,
            "achieved_tflops": round(achieved_tflops, 3),
            "peak_tflops": peak_tflops,
            "pe_utilization": round(achieved_tflops / peak_tflops, 4) if peak_tflops else 0.0,
        }

    def summary_text(self) -> str:
        s = self.summary()
        rows = [f"{LABEL} - target {s['target']} (model {s['model_version']})",
                f"  total_time               {s['total_time_us']:>12.2f} us",
                f"  instructions             {s['instructions']:>12d}",
                f"  dma_transfer_count       {s['dma_transfer_count']:>12d}",
                f"  dma_transfer_bytes       {s['dma_transfer_bytes']:>12d}",
                f"  achieved HBM bandwidth   {s['achieved_hbm_gbps']:>12.2f} GB/s (DMA peak {s['peak_dma_gbps']:g})",
                f"  achieved TensorE rate    {s['achieved_tflops']:>12.3f} TFLOPS (peak {s['peak_tflops']:g})"]
        for name, us in s["engine_active_time_us"].items():
            rows.append(f"  {name + ' active':<24} {us:>12.2f} us")
        return "\n".join(rows)

    # --- per-line table ----------------------------------------------------------------------
    def line_table(self, top: int | None = None) -> list[dict[str, Any]]:
        """Engine time per source line, most expensive first."""
        counts: dict[tuple[str, int], int] = {}
        engines: dict[tuple[str, int], set[str]] = {}
        for ins in self.trace:
            counts[ins.loc] = counts.get(ins.loc, 0) + 1
            engines.setdefault(ins.loc, set()).add(ins.engine)
        rows = []
        for loc, us in self.estimate.top_lines(len(self.estimate.line_us)):
            rows.append({"file": loc[0], "line": loc[1], "instructions": counts.get(loc, 0),
                         "engine_time_us": round(us, 3), "engines": sorted(engines.get(loc, ())),
                         "source": linecache.getline(loc[0], loc[1]).strip()})
        return rows[:top] if top else rows

    def line_table_text(self, top: int = 15) -> str:
        out = [f"Per-line engine time ({LABEL}, {self.target})",
               f"{'line':>6} {'instrs':>8} {'time (us)':>11}  engines        source"]
        for r in self.line_table(top):
            out.append(f"{r['line']:>6} {r['instructions']:>8} {r['engine_time_us']:>11.2f}  "
                       f"{','.join(r['engines']):<14} {r['source'][:70]}")
        return "\n".join(out)

    # --- Perfetto ----------------------------------------------------------------------------
    def perfetto(self) -> dict[str, Any]:
        """Chrome trace-event JSON (``ph: X`` slices, µs timestamps), one thread per engine lane."""
        events: list[dict[str, Any]] = []
        tids: dict[tuple[int, str, int], int] = {}
        for ev in self.events:
            key = (ev.instr.core, ev.engine, ev.lane)
            if key not in tids:
                tids[key] = len(tids) + 1
        for (core, eng, lane), tid in sorted(tids.items(), key=lambda kv: kv[1]):
            lane_name = ENGINE_NAMES[eng] + (f" queue {lane}" if eng == "dma" else (f" {lane}" if lane else ""))
            events.append({"ph": "M", "name": "thread_name", "pid": core, "tid": tid, "args": {"name": lane_name}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": core, "tid": tid,
                           "args": {"sort_index": ENGINE_ORDER.index(eng) * 100 + lane}})
        for core in sorted({k[0] for k in tids}):
            events.append({"ph": "M", "name": "process_name", "pid": core,
                           "args": {"name": f"NeuronCore {core} ({self.target}, {LABEL})"}})
        for ev in self.events:
            ins = ev.instr
            events.append({
                "ph": "X", "name": ins.op, "cat": ev.engine, "pid": ins.core,
                "tid": tids[(ins.core, ev.engine, ev.lane)],
                "ts": round(ev.start_ns / 1000.0, 4), "dur": round(max(ev.end_ns - ev.start_ns, 0.0) / 1000.0, 4),
                "args": {"line": f"{os.path.basename(ins.loc[0])}:{ins.loc[1]}", "partitions": ins.p,
                         "elements_per_partition": ins.n, "bytes": ins.nbytes, "dtypes": list(ins.dtypes),
                         "instance": ins.instance},
            })
        return {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"label": LABEL, "target": self.target, "total_time_us": self.estimate.total_us}}

    def write_perfetto(self, path: str) -> str:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.perfetto(), fh)
        return path

    # --- figure ------------------------------------------------------------------------------
    def figure(self, max_events: int = 20000) -> Any:
        """Matplotlib engine timeline (one row per engine, DMA lanes stacked)."""
        import sys

        import matplotlib

        if "ipykernel" not in sys.modules and "MPLBACKEND" not in os.environ:
            matplotlib.use("Agg")  # headless scripts and tests; notebooks keep their inline backend
        import matplotlib.pyplot as plt

        rows: dict[tuple[int, str, int], int] = {}
        for ev in self.events:
            rows.setdefault((ev.instr.core, ev.engine, ev.lane if ev.engine == "dma" else 0), 0)
        keys = sorted(rows, key=lambda k: (k[0], ENGINE_ORDER.index(k[1]), k[2]))
        ypos = {k: i for i, k in enumerate(keys)}
        colors = {"pe": "#d62728", "dve": "#1f77b4", "act": "#2ca02c", "pool": "#9467bd", "dma": "#ff7f0e"}
        fig, ax = plt.subplots(figsize=(11, 1.2 + 0.35 * len(keys)))
        spans: dict[tuple[int, str, int], list[tuple[float, float]]] = {k: [] for k in keys}
        for ev in self.events[:max_events]:
            k = (ev.instr.core, ev.engine, ev.lane if ev.engine == "dma" else 0)
            spans[k].append((ev.start_ns / 1000.0, max(ev.end_ns - ev.start_ns, 1.0) / 1000.0))
        for k, bars in spans.items():
            ax.broken_barh(bars, (ypos[k] - 0.4, 0.8), facecolors=colors[k[1]])
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels([f"NC{c} {ENGINE_NAMES[e]}" + (f" q{lane}" if e == "dma" else "")
                            for c, e, lane in keys], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("time (us)")
        ax.set_title(f"Engine timeline: {self.estimate.total_us:.1f} us on {self.target} ({LABEL})", fontsize=10)
        fig.tight_layout()
        return fig


def write_profile(launch: Any, working_directory: str | None = None, save_trace_name: str = "profile.json",
                  overwrite: bool = False, **_: Any) -> dict[str, str]:
    """``nki.profile`` output: Perfetto trace, summary JSON, per-line table and timeline PNG."""
    if not working_directory:
        raise ValueError("nki.profile needs working_directory=<absolute path> to write the profile into")
    if not os.path.isabs(working_directory):
        raise ValueError(f"working_directory must be an absolute path, got {working_directory!r}")
    os.makedirs(working_directory, exist_ok=True)
    prof = Profile.from_launch(launch)
    base = os.path.splitext(save_trace_name)[0] if save_trace_name else "profile"
    paths = {"perfetto": os.path.join(working_directory, f"{base}.json"),
             "summary": os.path.join(working_directory, f"{base}_summary.json"),
             "lines": os.path.join(working_directory, f"{base}_lines.txt"),
             "timeline": os.path.join(working_directory, f"{base}_timeline.png")}
    if not overwrite:
        for p in paths.values():
            if os.path.exists(p):
                raise FileExistsError(f"{p} exists; pass overwrite=True to nki.profile to replace it")
    prof.write_perfetto(paths["perfetto"])
    with open(paths["summary"], "w", encoding="utf-8") as fh:
        json.dump({**prof.summary(), "lines": prof.line_table()}, fh, indent=1)
    with open(paths["lines"], "w", encoding="utf-8") as fh:
        fh.write(prof.summary_text() + "\n\n" + prof.line_table_text(top=50) + "\n")
    fig = prof.figure()
    fig.savefig(paths["timeline"], dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    print(f"nkisim: profile written to {working_directory} ({LABEL}, {prof.target})")
    return paths
