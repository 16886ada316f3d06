"""Profiles of a simulated launch: what ``neuron-profile`` shows on hardware, from the cost model.

From one traced launch this builds (1) a Chrome/Perfetto trace JSON with one track per engine and per DMA
queue (opens in ui.perfetto.dev), (2) a summary in neuron-profile's terms (total time, DMA transfers and
bytes, per-engine active time, achieved HBM bandwidth and FLOP rate vs peak), (3) a per-source-line cost table
and (4) a matplotlib engine timeline (``nkisim.cost.timeline``).  Every number is a cost-model *estimate* for
the named target, and every output says so.

One time axis for all of them, from the start of the launch: the model's fixed per-launch cost comes first (a
lane of its own), then the instructions as the scheduler placed them, so the last instruction ends exactly at
the launch's total.  Every "active" time is a union of intervals on that axis, so it never exceeds the launch
(per core: a launch on two cores has two of each engine).
"""

from __future__ import annotations

import json
import linecache
import os
from dataclasses import dataclass
from typing import Any

from nkisim.core.target import Target, resolve
from nkisim.cost import timeline
from nkisim.cost.instructions import NC_MATMUL
from nkisim.cost.model import Estimate, cycle_collection_paused, estimate
from nkisim.cost.scheduler import schedule
from nkisim.cost.timeline import ENGINE_NAMES, LABEL, merged
from nkisim.cost.trace import Instruction

ENGINE_ORDER = ("pe", "dve", "act", "pool", "dma")
#: what each time in a summary means (written into every summary, so a reader never has to guess)
DEFINITIONS = {
    "total_time": "the launch's estimated latency: the fixed launch cost, then the instructions until the last "
                  "one on the slowest core ends",
    "launch_overhead": "the model's fixed cost of every launch (kernel start and completion), during which no "
                       "instruction runs; no kernel change removes it",
    "engine active": "time in which the engine runs an instruction, summed over the launch's cores (at most "
                     "total_time per core)",
    "DMA active": "time in which at least one DMA transfer is in flight (from issue until its data has landed, "
                  "including the fixed DMA latency), summed over cores (at most total_time per core)",
    "DMA queue time": "time the DMA queues spend moving data, summed over all 16 queues of each core: a 128-row "
                      "transfer keeps 16 queues busy at once, a 1-row transfer one (at most 16 x total_time per "
                      "core)",
}


@dataclass
class Event:
    """One scheduled instruction: its engine, times in ns from kernel start (after the launch cost)."""

    index: int
    engine: str
    start_ns: float
    end_ns: float
    instruction: Instruction


@dataclass(frozen=True)
class QueueSpan:
    """A DMA transfer's data moving on one DMA queue: ns from kernel start."""

    index: int | None  # the DMA instruction (None: a spill's transfer, which the trace does not hold)
    core: int
    queue: int
    start_ns: float
    end_ns: float


def _flops(ins: Instruction) -> int:
    if ins.kind is NC_MATMUL and "k" in ins.extra:
        return 2 * int(ins.extra["k"]) * int(ins.extra["m"]) * int(ins.extra["n"])
    return 0


def pe_peak(hw: Target, trace: list[Instruction]) -> float:
    """The Tensor Engine peak (TFLOPS, one NeuronCore) the trace's matmuls are measured against: the slowest rate of
    their input dtypes (``Peak.pe_tflops``, the one home of the dtype-to-rate map; float32 if any is), the bf16 rate
    for a trace with none."""
    rates = {hw.params.peak.pe_tflops(str(i.extra.get("in_dtype", ""))) for i in trace if i.kind is NC_MATMUL}
    return min(rates) if rates else hw.params.peak.pe_tflops("bfloat16")


def union_length(spans: list[tuple[float, float]]) -> float:
    """Total length covered by ``spans`` (overlaps counted once)."""
    return sum(b - a for a, b in merged(spans))


class Profile:
    """A profiled launch; build with ``Profile.from_launch`` (tools: ``nkisim.api.profile_kernel``)."""

    def __init__(self, trace: list[Instruction], target: Target | str, cores: int = 1) -> None:
        self.trace = trace
        self.hw = resolve(target)
        self.target = self.hw.label  # trn3's estimates say "uncalibrated" wherever the target is named
        self.cores = max(1, cores)
        with cycle_collection_paused():
            sched = schedule(trace, self.hw.params)
        self.estimate: Estimate = estimate(trace, self.hw, cores=cores, sched=sched)
        #: the fixed per-launch cost (µs): the timeline's first lane; instructions start after it
        self.launch_us = float(self.hw.params.kernel.fixed_us)
        self.queues = int(self.hw.params.dma.queues)
        ran = [sched.engine.get(i, ins.engine) for i, ins in enumerate(trace)]  # the engine each ran on
        self.events = [Event(i, ran[i] if ran[i] in ENGINE_NAMES else "dve", sched.start[i], sched.end[i], ins)
                       for i, ins in enumerate(trace)]
        self.queue_spans = [QueueSpan(i, trace[i].core, q, s, e)
                            for i, (pieces, nq) in sorted(sched.dma_queues.items()) for s, e in pieces
                            for q in range(nq)]
        #: what the compiler's spills add (spill.py): DMA transfers to HBM and back, PSUM copies; no instruction
        #: of the trace, so their index is None
        self.spill_events = [(core, eng, s, e) for core, eng, s, e, _p, _n in sched.spill_spans]
        self.queue_spans += [QueueSpan(None, core, q, s, e) for core, _eng, _s, _e, pieces, nq in sched.spill_spans
                             for s, e in pieces for q in range(nq)]
        self.dma_queue_busy_us = self.estimate.engine_busy_us.get("dma", 0.0)

    @classmethod
    def from_launch(cls, launch: Any) -> Profile:
        return cls(launch.ctx.trace, launch.ctx.target, launch.ctx.cores)

    @property
    def core_ids(self) -> list[int]:
        return sorted({0, *range(self.cores), *(ev.instruction.core for ev in self.events)})

    def spans(self, core: int, engine: str) -> list[tuple[float, float]]:
        """Busy intervals (µs from the launch's start) of ``engine`` on ``core``; for "dma", the transfers in
        flight."""
        off = self.launch_us
        return [(off + ev.start_ns / 1000.0, off + ev.end_ns / 1000.0) for ev in self.events
                if ev.instruction.core == core and ev.engine == engine] + \
            [(off + s / 1000.0, off + e / 1000.0) for c, eng, s, e in self.spill_events if c == core and eng == engine]

    def queue_spans_us(self, core: int, queue: int) -> list[tuple[float, float]]:
        off = self.launch_us
        return [(off + q.start_ns / 1000.0, off + q.end_ns / 1000.0) for q in self.queue_spans
                if q.core == core and q.queue == queue]

    def active_us(self, engine: str) -> float:
        """Union of ``engine``'s busy intervals per core, summed over cores (see DEFINITIONS)."""
        return sum(union_length(self.spans(c, engine)) for c in self.core_ids)

    # --- summary -----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """neuron-profile style totals (all estimates); ``definitions`` says what each time means."""
        est = self.estimate
        total = est.total_us
        total_s = total * 1e-6
        peak = self.hw.params.peak
        flops = sum(_flops(i) for i in self.trace)
        peak_tflops = pe_peak(self.hw, self.trace) * self.cores
        hbm = sum(i.nbytes for i in self.trace if i.engine == "dma")
        achieved_tflops = flops / total_s / 1e12 if total_s else 0.0
        achieved_gbps = hbm / total_s / 1e9 if total_s else 0.0
        peak_gbps = peak.dma_gbps * self.cores
        active = {e: self.active_us(e) for e in ENGINE_ORDER}
        span = total * len(self.core_ids)
        return {
            "label": LABEL,
            "target": self.target,
            "model_version": est.version,
            "cores": len(self.core_ids),
            "total_time_us": round(total, 3),
            "launch_overhead_us": round(self.launch_us, 3),
            "instructions_time_us": round(total - self.launch_us, 3),
            "instructions": est.instructions,
            "dma_transfer_count": est.dma_count,
            "dma_transfer_bytes": est.dma_bytes,
            "engine_active_time_us": {ENGINE_NAMES[e]: round(active[e], 3) for e in ENGINE_ORDER},
            "engine_utilization": {ENGINE_NAMES[e]: round(active[e] / span, 4) if span else 0.0
                                   for e in ENGINE_ORDER},
            "dma_active_us": round(active["dma"], 3),
            "dma_queues": self.queues * len(self.core_ids),
            "dma_queue_time_us": round(self.dma_queue_busy_us, 3),
            "dma_queue_utilization": round(self.dma_queue_busy_us / (self.queues * span), 4) if span else 0.0,
            "achieved_hbm_gbps": round(achieved_gbps, 2),
            "peak_dma_gbps": peak_gbps,
            "flops": flops,
            "achieved_tflops": round(achieved_tflops, 3),
            "peak_tflops": peak_tflops,
            "pe_utilization": round(achieved_tflops / peak_tflops, 4) if peak_tflops else 0.0,
            "definitions": DEFINITIONS,
            "reasons": [{"mechanism": r.mechanism, "line": r.line, "count": r.count, "held_us": round(r.us, 3),
                         "text": r.text()} for r in est.reasons],
        }

    def summary_text(self) -> str:
        s = self.summary()
        total = s["total_time_us"]
        cores = f" on {s['cores']} cores" if s["cores"] > 1 else ""
        rows = [f"{LABEL} - target {s['target']}{cores} (model {s['model_version']})",
                f"  total_time               {total:>12.2f} us  = fixed launch cost {s['launch_overhead_us']:.2f} us "
                f"+ instructions {s['instructions_time_us']:.2f} us",
                f"  instructions             {s['instructions']:>12d}",
                f"  dma_transfer_count       {s['dma_transfer_count']:>12d}",
                f"  dma_transfer_bytes       {s['dma_transfer_bytes']:>12d}",
                f"  achieved HBM bandwidth   {s['achieved_hbm_gbps']:>12.2f} GB/s (DMA peak {s['peak_dma_gbps']:g})",
                f"  achieved TensorE rate    {s['achieved_tflops']:>12.3f} TFLOPS (peak {s['peak_tflops']:g})"]
        for name, us in s["engine_active_time_us"].items():
            if name == ENGINE_NAMES["dma"]:
                continue
            rows.append(f"  {name + ' active':<24} {us:>12.2f} us  ({100 * s['engine_utilization'][name]:.0f}% of "
                        "the launch)")
        rows.append(f"  {'DMA active':<24} {s['dma_active_us']:>12.2f} us  "
                    f"({100 * s['engine_utilization'][ENGINE_NAMES['dma']]:.0f}%: at least one transfer in flight)")
        rows.append(f"  {'DMA queue time':<24} {s['dma_queue_time_us']:>12.2f} us  summed over {s['dma_queues']} "
                    f"queues (each queue busy {100 * s['dma_queue_utilization']:.0f}% of the launch on average)")
        rows += [f"  Why: {r.text()}" for r in self.estimate.reasons[:6]]
        return "\n".join(rows)

    # --- per-line table ----------------------------------------------------------------------
    def line_table(self, top: int | None = None) -> list[dict[str, Any]]:
        """Engine time per source line, most expensive first."""
        counts: dict[tuple[str, int], int] = {}
        engines: dict[tuple[str, int], set[str]] = {}
        for ev in self.events:
            ins = ev.instruction
            counts[ins.loc] = counts.get(ins.loc, 0) + 1
            engines.setdefault(ins.loc, set()).add(ins.engine if ins.engine == "dma" else ev.engine)
        rows = []
        for loc, us in self.estimate.top_lines(len(self.estimate.line_us)):
            rows.append({"file": loc[0], "line": loc[1], "instructions": counts.get(loc, 0),
                         "engine_time_us": round(us, 3), "engines": sorted(engines.get(loc, ())),
                         "source": linecache.getline(loc[0], loc[1]).strip()})
        return rows[:top] if top else rows

    def line_table_text(self, top: int = 15) -> str:
        out = [f"Per-line engine time ({LABEL}, {self.target}): each line's instructions' busy time, summed; lines "
               f"run at the same time, so the column overlaps and may add up to more than the "
               f"{self.estimate.total_us:.2f} us total",
               f"{'line':>6} {'instrs':>8} {'time (us)':>11}  engines        source"]
        for r in self.line_table(top):
            out.append(f"{r['line']:>6} {r['instructions']:>8} {r['engine_time_us']:>11.2f}  "
                       f"{','.join(r['engines']):<14} {r['source'][:70]}")
        return "\n".join(out)

    # --- Perfetto ----------------------------------------------------------------------------
    def perfetto(self) -> dict[str, Any]:
        """Chrome trace-event JSON (``ph: X`` slices, µs timestamps from the launch's start): per core a track
        for the launch cost, one per compute engine, "DMA active" (transfers in flight) and one per DMA queue."""
        events: list[dict[str, Any]] = []
        for core in self.core_ids:
            events.append({"ph": "M", "name": "process_name", "pid": core,
                           "args": {"name": f"NeuronCore {core} ({self.target}, {LABEL})"}})
            for tid, lane in enumerate(timeline.lanes(self, core), 1):
                events.append({"ph": "M", "name": "thread_name", "pid": core, "tid": tid, "args": {"name": lane.name}})
                events.append({"ph": "M", "name": "thread_sort_index", "pid": core, "tid": tid,
                               "args": {"sort_index": tid}})
                end = 0.0
                for ts, te, idx in lane.slices:
                    ts = max(ts, end)  # slices of one track never overlap (Perfetto would nest or drop them)
                    if te <= ts:
                        continue
                    end = te
                    ev: dict[str, Any] = {"ph": "X", "name": lane.slice_name, "cat": lane.engine, "pid": core,
                                          "tid": tid, "ts": round(ts, 4), "dur": round(te - ts, 4)}
                    if idx is None and lane.engine in (*ENGINE_ORDER, "queue") and lane.engine != "dma":
                        ev["name"] = "spill (the compiler moving a tensor that does not fit)"
                    if idx is not None:
                        ins = self.trace[idx]
                        ev["name"] = ins.op
                        ev["args"] = {"instruction": idx, "line": f"{os.path.basename(ins.loc[0])}:{ins.loc[1]}",
                                      "partitions": ins.p, "elements_per_partition": ins.n, "bytes": ins.nbytes,
                                      "dtypes": list(ins.dtypes), "instance": ins.instance}
                    events.append(ev)
        return {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"label": LABEL, "target": self.target, "total_time_us": self.estimate.total_us,
                              "launch_overhead_us": self.launch_us, "definitions": DEFINITIONS}}

    def write_perfetto(self, path: str) -> str:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.perfetto(), fh)
        return path

    # --- figure ------------------------------------------------------------------------------
    def figure(self, title: str | None = None) -> Any:
        """Matplotlib engine timeline: per core the launch cost, each engine, DMA in flight, each DMA queue."""
        return timeline.figure(self, title)

    # --- files -------------------------------------------------------------------------------
    def write(self, directory: str, name: str = "profile", trace_path: str | None = None,
              overwrite: bool = False) -> dict[str, str]:
        """The profile's files in ``directory``: ``trace_path`` (default ``<name>.json``; a Perfetto trace JSON
        whatever its name), ``<name>_summary.json``, ``<name>_lines.txt`` and ``<name>_timeline.png``."""
        paths = {"perfetto": trace_path or os.path.join(directory, f"{name}.json"),
                 "summary": os.path.join(directory, f"{name}_summary.json"),
                 "lines": os.path.join(directory, f"{name}_lines.txt"),
                 "timeline": os.path.join(directory, f"{name}_timeline.png")}
        if not overwrite:
            for p in paths.values():
                if os.path.exists(p):
                    raise FileExistsError(f"{p} exists; pass overwrite=True to nki.profile to replace it")
        os.makedirs(directory, exist_ok=True)
        os.makedirs(os.path.dirname(os.path.abspath(paths["perfetto"])), exist_ok=True)
        self.write_perfetto(paths["perfetto"])
        with open(paths["summary"], "w", encoding="utf-8") as fh:
            json.dump({**self.summary(), "lines": self.line_table()}, fh, indent=1)
        with open(paths["lines"], "w", encoding="utf-8") as fh:
            fh.write(self.summary_text() + "\n\n" + self.line_table_text(top=50) + "\n")
        fig = self.figure()
        fig.savefig(paths["timeline"], dpi=110)
        import matplotlib.pyplot as plt

        plt.close(fig)
        return paths


def trace_path(working_directory: str, save_trace_name: str | None) -> str:
    """Where ``nki.profile`` writes its trace: ``save_trace_name`` as given when absolute, else inside
    ``working_directory`` (default ``profile.ntff``, as the real tool)."""
    name = save_trace_name or "profile.ntff"
    return name if os.path.isabs(name) else os.path.join(working_directory, name)


def write_profile(launch: Any, working_directory: str | None = None, save_trace_name: str = "profile.ntff",
                  overwrite: bool = False, **_: Any) -> dict[str, str]:
    """``nki.profile`` output: the trace exactly where ``save_trace_name`` says (a Perfetto JSON: the simulator
    cannot write neuron-profile's binary NTFF), and beside it ``<name>_summary.json``, ``<name>_lines.txt`` and
    ``<name>_timeline.png``."""
    if not working_directory:
        raise ValueError("nki.profile needs working_directory=<absolute path> to write the profile into")
    if not os.path.isabs(working_directory):
        raise ValueError(f"working_directory must be an absolute path, got {working_directory!r}")
    os.makedirs(working_directory, exist_ok=True)
    trace = trace_path(working_directory, save_trace_name)
    base = os.path.splitext(os.path.basename(trace))[0] or "profile"
    prof = Profile.from_launch(launch)
    paths = prof.write(os.path.dirname(trace), base, trace_path=trace, overwrite=overwrite)
    print(f"nkisim: profile written ({LABEL}, {prof.target}): trace {trace} (Perfetto JSON, open it in "
          f"ui.perfetto.dev; not a neuron-profile NTFF), summary, per-line table and timeline beside it")
    return paths
