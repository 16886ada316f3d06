"""The grading child process: import the student's module and compile or run its kernel.

Run as ``python -m nkilab.isolate._child`` (normally inside ``nkilab.isolate.sandbox``).  It reads one job message on stdin and
answers on the pipe whose fd the job names: an ``import`` message, then per the job's role

* ``trace`` (on the simulator): one ``program`` message per signature (shapes and dtypes, no values): the
  kernel compiled to its instruction program (``nkisim.api.trace``), serialised.  The job holds the public
  cases' signatures; once their programs are sent the child says ``phase`` and only then reads the hidden
  cases' signatures from stdin, so nothing it said before can hold them.  The child never sees an input value;
  the grading parent has each program checked and executed on inputs it drew itself (``nkilab.isolate._execute``, in a
  sandbox of its own), so what a kernel does to this process, to NumPy or to the simulator stays here;
* ``run`` (on a Neuron device, or for ``run_inprocess``): one ``case`` message per case (facts + the output
  array), and on a device, for a legacy kernel, ``nki.benchmark``'s;
* ``neff`` (on a Neuron device, for an NKI 0.6 kernel, which has no ``nki.benchmark``): the kernel run once on the
  timed case's shapes with ``NEURON_FRAMEWORK_DEBUG=1`` set by the parent, so AWS's compiler saves its NEFF in this
  process's scratch folder; one ``neff`` message carries the file's bytes, which the parent times on the device
  with AWS's tools (``nkilab.kernels.device``): nothing this process says is a latency;

then ``done``.  It never sees expected outputs, the grading seed or the reference latencies.
"""

from __future__ import annotations

import linecache
import math
import os
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from nkilab.isolate._io import read_message, write_message
from nkilab.kernels import modules
from nkisim.api import Dialect


def on_simulator() -> bool:
    try:
        import nkisim
    except ImportError:
        return False
    return bool(nkisim.using_simulator())


def simulated(fn: Any) -> bool:
    """Whether the loaded kernel is the simulator's (either dialect's ``nki.jit`` served by nkisim) rather than AWS's:
    on a Neuron device a 0.6 kernel is AWS's while a legacy one may still be simulated."""
    return type(fn).__module__.split(".")[0] == "nkisim"


def error_info(err: BaseException, module_path: str | None) -> dict:
    """Plain facts about an exception: type, message, NKI error id, and the line in the student's file."""
    info: dict[str, Any] = {"type": type(err).__name__, "message": str(err).strip()[:MESSAGE_CHARS]}
    capped_mb = memory_cap_mb()
    if isinstance(err, MemoryError) and capped_mb:
        info["message"] += (f" (a kernel run gets at most {capped_mb} MiB of memory here, and the course's "
                            "kernels need far less: is a shape or a loop much larger than intended?)")
    info["error_id"] = getattr(err, "error_id", None)
    loc = getattr(err, "nki_location", None)
    if loc:
        info["file"], info["line"] = str(loc[0]), int(loc[1])
    if module_path is not None:
        target = str(Path(module_path).resolve())
        for frame in reversed(traceback.extract_tb(err.__traceback__)):
            if frame.filename and str(Path(frame.filename).resolve()) == target:
                info.setdefault("file", frame.filename)
                info.setdefault("line", frame.lineno)
                if info["line"] == frame.lineno:  # an error blamed on another line (nki_location) shows that one
                    info["code"] = (frame.line or "").strip()
                break
    if loc and "code" not in info:  # a whole-kernel error, found after the kernel returned: no frame of its own
        info["code"] = linecache.getline(str(loc[0]), int(loc[1])).strip()[:MESSAGE_CHARS]
    return info


def load_kernel(module_path: str, function: str) -> Any:
    """Import the student's file by path and return the kernel, jitted if it was left undecorated."""
    fn = modules.load_kernel(module_path, function)
    if on_simulator() and type(fn).__module__.split(".")[0] not in ("nki", "neuronxcc"):  # (AWS's stays AWS's)
        from nkisim import api

        fn = api.as_kernel(fn)  # a plain function still has to run as an NKI kernel
    return fn


def make_grid(spec: Any, dialect: Dialect | str = Dialect.LEGACY) -> Any:
    """JSON grid spec -> launch grid in the kernel's dialect.

    Legacy: ints stay, {"nc": k} becomes nl.nc(k).  NKI 0.6 has no SPMD grid, only the logical-core degree
    ``kernel[n]``: the grid's {"nc": k} dimensions become ``n`` (their product), and its plain dimensions, which
    legacy runs one instance after another on one core, are the 0.6 kernel's own loop (no bracket when n is 1)."""
    if spec is None:
        return None
    if Dialect.named(dialect) is Dialect.NKI:
        lnc = math.prod(int(x["nc"]) for x in spec if isinstance(x, dict))
        return lnc if lnc > 1 else None
    import neuronxcc.nki.language as nl

    return tuple(nl.nc(int(x["nc"])) if isinstance(x, dict) else int(x) for x in spec)


class Launcher:
    """The call a question makes, ``kernel(*args)`` or ``kernel[grid](*args)`` on the question's target.

    On the simulator it goes through ``nkisim.api`` with ``tensors_only`` (a kernel returning a NumPy array
    computed outside NKI fails, as it would fail to compile on a device), and keeps the latest launch, whose
    cost-model estimate is the timed case's latency."""

    def __init__(self, fn: Any, grid_spec: Any, target: str | None) -> None:
        self.fn, self.grid, self.target = fn, make_grid(grid_spec, modules.kernel_dialect(fn)), target
        self.simulator = simulated(fn)
        self.last: Any = None

    def __call__(self, *args: np.ndarray) -> Any:
        if not self.simulator:
            return (self.fn[self.grid] if self.grid is not None else self.fn)(*args)
        from nkisim import api

        self.last = None
        self.last = api.launch(self.fn, args, grid=self.grid, target=self.target, tensors_only=True)
        return self.last.outputs

    def latency(self) -> dict:
        """Cost-model estimate of the latest launch (the run just checked), labelled with its target."""
        return {"latency_us": float(self.last.latency_us()), "target": self.last.target, "simulator": True}


def run_case(fn: Any, args: list[np.ndarray], module_path: str | None) -> tuple[dict, np.ndarray | None]:
    """Call the kernel once.  Returns (facts, output array or None)."""
    start = time.perf_counter()
    try:
        out = fn(*args)
    except Exception as err:  # the student's error, reported in words by the parent
        return {"status": "error", "error": error_info(err, module_path),
                "seconds": time.perf_counter() - start}, None
    facts: dict[str, Any] = {"seconds": time.perf_counter() - start}
    if isinstance(out, (tuple, list)) and len(out) == 1:
        out = out[0]
    if not isinstance(out, np.ndarray):
        facts.update(status="bad_return", returned=type(out).__name__)
        return facts, None
    facts["status"] = "ok"
    return facts, out


def benchmark(fn: Any, shapes: list[list[int]], dtypes: list[str], target: str | None,
              grid_spec: Any = None) -> dict:
    """On a Neuron device: nki.benchmark's measured p99 latency in µs.  (On the simulator the latency is the
    timed case's own launch, see ``launch_latency``.)"""
    import neuronxcc.nki as nki

    opts: dict[str, Any] = {"warmup": 2, "iters": 10}
    if target:
        opts["platform_target"] = target
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.dtype(d)) for s, d in zip(shapes, dtypes)]
    bench = nki.benchmark(fn, **opts)
    grid = make_grid(grid_spec, modules.kernel_dialect(fn))
    if grid is not None:
        bench = bench[grid]
    bench(*args)
    lat = float(bench.benchmark_result.nc_latency.get_latency_percentile(99))
    where = getattr(bench.benchmark_result.nc_latency, "target", None) or target or "device"
    return {"status": "ok", "latency_us": lat, "target": where, "simulator": False}


#: characters of an error message kept (the message is the student's text; the parent shows it in feedback)
MESSAGE_CHARS = 2000
#: the most output bytes read back in one run
OUTPUT_BUDGET = 1 << 30


def memory_cap_mb() -> int:
    """The address-space limit this process runs under (set by the parent, hard), in MiB; 0 if none."""
    try:
        import resource
    except ImportError:  # Windows
        return 0
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return 0 if soft == resource.RLIM_INFINITY else soft // 2**20


def execute(fn: Any, job: dict, cases: list[list[np.ndarray]], module_path: str | None,
            emit: Any) -> None:
    """Run every case (the timed one with its latency), then, on a device, ``nki.benchmark``.

    ``emit(header, arrays)`` receives one ``case`` message per case.  Shared by the child and ``run_inprocess``."""
    call = Launcher(fn, job.get("grid"), job.get("target"))
    sim = call.simulator
    for i, args in enumerate(cases):
        facts, out = run_case(call, args, module_path)
        if i == job.get("timed") and facts["status"] == "ok" and sim:
            try:
                facts["timing"] = call.latency()
            except Exception as err:
                facts["timing"] = {"status": "error", "error": error_info(err, module_path)}
        emit({"kind": "case", "index": i, **facts}, [out] if out is not None else [])
    # a device: a legacy kernel's measured p99 of nki.benchmark (NKI 0.6 has none: the parent times its NEFF)
    if job.get("bench") and not sim and modules.kernel_dialect(fn) is not Dialect.NKI:
        b = job["bench"]
        try:
            facts = benchmark(fn, b["shapes"], b["dtypes"], job.get("target"), job.get("grid"))
        except Exception as err:
            facts = {"status": "error", "error": error_info(err, module_path)}
        emit({"kind": "bench", **facts}, [])


def compile_neff(fn: Any, job: dict, module_path: str | None, emit: Any) -> None:
    """Run the kernel once on the timed case's shapes in ``job["workdir"]`` (AWS's compiler saves the NEFF there under
    ``NEURON_FRAMEWORK_DEBUG=1``) and send the NEFF's bytes."""
    from nkilab.kernels import device

    b = job["bench"]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.dtype(d)) for s, d in zip(b["shapes"], b["dtypes"])]
    folder = Path(job["workdir"])
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.chdir(folder)
        grid = make_grid(job.get("grid"), modules.kernel_dialect(fn))
        (fn[grid] if grid is not None else fn)(*args)
        data = device.find_neff(folder).read_bytes()[:device.MAX_NEFF_BYTES]
    except Exception as err:
        emit({"kind": "neff", "status": "error", "error": error_info(err, module_path)}, [])
        return
    emit({"kind": "neff", "status": "ok"}, [np.frombuffer(data, dtype=np.uint8)])


class _Signature:
    """An argument's shape and dtype: all a kernel is traced with."""

    def __init__(self, shape: list[int], dtype: str) -> None:
        self.shape, self.dtype = tuple(int(s) for s in shape), str(dtype)


def trace_programs(fn: Any, job: dict, module_path: str | None, emit: Any, first: int = 0) -> None:
    """Compile the kernel once per signature and send each program (its JSON as bytes) or the error; the
    signatures are numbered from ``first``."""
    from nkisim import api

    grid = make_grid(job.get("grid"), modules.kernel_dialect(fn))
    for k, sig in enumerate(job["signatures"], first):
        start = time.perf_counter()
        try:
            program = api.trace(fn, [_Signature(shape, dtype) for shape, dtype in sig], grid=grid,
                                target=job.get("target"), tensors_only=True)
            text = np.frombuffer(program.to_json().encode(), dtype=np.uint8)
        except Exception as err:
            emit({"kind": "program", "index": k, "status": "error", "error": error_info(err, module_path),
                  "seconds": time.perf_counter() - start}, [])
            continue
        emit({"kind": "program", "index": k, "status": "ok", "seconds": time.perf_counter() - start}, [text])


def main() -> int:
    warnings.simplefilter("ignore")
    job, arrays = read_message(sys.stdin.buffer, [OUTPUT_BUDGET]) or ({}, [])
    channel = os.fdopen(int(job["channel"]), "wb")
    os.set_inheritable(channel.fileno(), False)  # nothing the kernel starts inherits it

    def emit(header: dict, out: list[np.ndarray]) -> None:
        write_message(channel, header, out)

    module_path = job["module"]
    try:
        fn = load_kernel(module_path, job["function"])
    except Exception as err:
        emit({"kind": "import", "status": "error", "error": error_info(err, module_path)}, [])
        emit({"kind": "done"}, [])
        return 0
    emit({"kind": "import", "status": "ok", "dialect": modules.kernel_dialect(fn)}, [])
    if job.get("role") == "neff":
        compile_neff(fn, job, module_path, emit)
        emit({"kind": "done"}, [])
        return 0
    if job.get("role") == "trace":
        # The job's signatures are the public cases'.  Only once their programs (and any error text) are sent
        # does the parent send the hidden cases' signatures: what this process says before then cannot hold them.
        trace_programs(fn, job, module_path, emit)
        if job.get("more"):
            emit({"kind": "phase"}, [])
            more, _ = read_message(sys.stdin.buffer, [1 << 24]) or ({}, [])
            trace_programs(fn, dict(job, signatures=more.get("signatures", [])), module_path, emit,
                           first=len(job["signatures"]))
        emit({"kind": "done"}, [])
        return 0
    cases, k = [], 0
    for n in job["cases"]:
        cases.append(arrays[k:k + n])
        k += n
    execute(fn, job, cases, module_path, emit)
    emit({"kind": "done"}, [])
    return 0


if __name__ == "__main__":
    sys.exit(main())
