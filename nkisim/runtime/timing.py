"""``nki.benchmark`` and ``nki.profile`` on the simulator.

The real tools compile, run on a device and report measured latency.  Here the kernel is traced in
cost-only mode (no numerics, so large shapes are cheap) and the trace goes to the cost model.  Every
number is an *estimate* of NeuronCore latency for the named target, and is labelled as such.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from nkisim.core.errors import NKIError
from nkisim.core.location import attach_location
from nkisim.runtime.kernel import GridLaunch, Kernel, LaunchResult, run

PERCENTILES = (0, 1, 10, 25, 50, 90, 99, 100)


def estimate_latency_us(result: LaunchResult) -> float:
    """Modelled latency (µs) of a traced launch, from the cost model."""
    from nkisim.cost import model

    return model.estimate(result.ctx.trace, result.ctx.target, cores=result.ctx.cores).total_us


class LatencyStats:
    """``benchmark_result.nc_latency``: the same API as neuron-bench's result object."""

    def __init__(self, latency_us: float, target: str) -> None:
        self.latency_us = latency_us
        self.target = target

    def get_latency_percentile(self, percentile: int) -> float:
        """Latency in µs.  The model is deterministic, so every percentile is the same estimate."""
        if int(percentile) not in PERCENTILES:
            raise ValueError(f"percentile must be one of {PERCENTILES}")
        return self.latency_us

    def __repr__(self) -> str:
        return f"<estimated NC latency {self.latency_us:.2f} us on {self.target} (nkisim cost model)>"


class BenchmarkResult:
    def __init__(self, latency_us: float, target: str, launch: LaunchResult) -> None:
        self.nc_latency = LatencyStats(latency_us, target)
        self.launch = launch


class Benchmarked:
    """What ``nki.benchmark(kernel)`` returns: call it like the kernel, then read .benchmark_result."""

    def __init__(self, kernel: Any, warmup: int = 10, iters: int = 100, **options: Any) -> None:
        self.kernel = kernel
        self.warmup, self.iters, self.options = warmup, iters, options
        self.benchmark_result: BenchmarkResult | None = None

    def __getitem__(self, grid: Any) -> Benchmarked:
        k = self.kernel.kernel if isinstance(self.kernel, GridLaunch) else self.kernel
        return Benchmarked(GridLaunch(_as_kernel(k), grid), self.warmup, self.iters, **self.options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        kern, grid = (self.kernel.kernel, self.kernel.grid) if isinstance(self.kernel, GridLaunch) \
            else (_as_kernel(self.kernel), None)
        try:
            res = run(kern, grid, args, kwargs, numerics=False, target=self.options.get("platform_target"))
        except NKIError as err:
            raise err.with_traceback(attach_location(err)) from None
        if "--disable-dge" in str(self.options.get("additional_compile_opt") or "").split():
            res.ctx.trace.dge = False  # descriptors made ahead of time (nkisim.cost.trace.Trace.dge)
        latency = estimate_latency_us(res)
        self.benchmark_result = BenchmarkResult(latency, res.ctx.target.label, res)
        print(f"nkisim: estimated NC latency {latency:.2f} us on {res.ctx.target.label} "
              f"(cost model estimate, not a hardware measurement)")
        self._write_artefacts(kern, res, latency)
        return None

    def _write_artefacts(self, kern: Kernel, res: LaunchResult, latency: float) -> None:
        """The files ``save_neff_name=`` / ``save_trace_name=`` ask for, so scripts that move or open
        them afterwards keep working.  The simulator compiles nothing: the "NEFF" is a JSON note naming
        the kernel and its estimate, and the trace is the cost model's Perfetto timeline (JSON)."""
        neff, trace = self.options.get("save_neff_name"), self.options.get("save_trace_name")
        if neff:
            _write_neff(neff, kern, res, latency)
        if trace:
            from nkisim.cost import report

            report.Profile.from_launch(res).write_perfetto(trace)


def _write_neff(path: str, kern: Kernel, res: LaunchResult, latency: float) -> None:
    """A JSON stand-in for the NEFF a device run would leave at ``path``."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"format": "nkisim simulated NEFF (not a compiled Neuron executable)",
                   "kernel": getattr(kern.func, "__name__", "kernel"), "target": res.ctx.target.name,
                   "estimated_latency_us": latency}, fh, indent=1)


def _as_kernel(k: Any) -> Kernel:
    return k if isinstance(k, Kernel) else Kernel(k)


def benchmark(kernel: Callable | None = None, **options: Any) -> Any:
    """``nki.benchmark``: modelled latency of a kernel; inputs only give shapes (may be nt.tensor)."""
    if kernel is None:
        return lambda k: Benchmarked(k, **options)
    return Benchmarked(kernel, **options)


def profile(func: Callable | None = None, **options: Any) -> Any:
    """``nki.profile``: like benchmark, and writes a profile (see nkisim.cost.report) when available."""
    if func is None:
        return lambda f: Profiled(f, **options)
    return Profiled(func, **options)


class Profiled(Benchmarked):
    def _write_artefacts(self, kern: Kernel, res: LaunchResult, latency: float) -> None:
        """``nki.profile``'s files: the trace exactly where ``save_trace_name`` says (default ``profile.ntff``
        in ``working_directory``; a Perfetto JSON, as the simulator writes no binary NTFF) with the summary,
        per-line table and timeline beside it (cost.report); the NEFF (a JSON stand-in) under
        ``save_neff_name``; and with ``num_execs``/``profile_nth`` one trace per profiled execution (the first
        at ``save_trace_name``, ``<name>_exec_<n><ext>`` beside it after) plus a ``json_reports`` entry each.
        The model is deterministic, so every profiled execution has the same trace."""
        from nkisim.cost import report

        opts = self.options
        paths = report.write_profile(res, **opts)
        wd = opts["working_directory"]
        if opts.get("save_neff_name"):
            _write_neff(os.path.join(wd, os.path.basename(opts["save_neff_name"])), kern, res, latency)
        if "num_execs" not in opts and "profile_nth" not in opts:
            return
        execs, nth = int(opts.get("num_execs", 1)), max(int(opts.get("profile_nth", 1)), 1)
        first = paths["perfetto"]
        stem, ext = os.path.splitext(first)
        prof = report.Profile.from_launch(res)
        os.makedirs(os.path.join(wd, "json_reports"), exist_ok=True)
        for n in range(nth, max(execs, nth) + 1, nth):
            path = first if n == 1 else f"{stem}_exec_{n}{ext}"
            if n != 1:
                prof.write_perfetto(path)
            name = os.path.splitext(os.path.basename(path))[0]
            with open(os.path.join(wd, "json_reports", f"{name}.json"), "w", encoding="utf-8") as fh:
                json.dump(prof.summary(), fh, indent=1)
