"""Run a student's kernel module in a child process with a timeout; bring the outputs back as arrays.

The student's code is never imported here.  The child gets only the inputs, writes its outputs to
files, and the parent (this process) does all comparing, so a module that patches NumPy, warnings or
the harness changes nothing the parent relies on.  An infinite loop is killed (whole process group)
at the timeout; a crash (``os._exit``, segfault) is just a failed run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nkilab._io import load_array, read_json, save_array, write_json

TAIL = 2000  # characters of the child's stdout/stderr kept for messages


@dataclass
class CaseRun:
    status: str  # ok | error | bad_return | not_run
    output: np.ndarray | None = None
    error: dict | None = None
    returned: str | None = None
    seconds: float = 0.0


@dataclass
class RunResult:
    import_error: dict | None = None
    cases: list[CaseRun] = field(default_factory=list)
    bench: dict | None = None
    timed_out: bool = False
    crashed: bool = False
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0


def _child_env(target: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONWARNINGS"] = "ignore"
    env.setdefault("OMP_NUM_THREADS", "1")
    here = str(Path(__file__).resolve().parents[1])  # autograder/, so nkilab imports without install
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if target:
        env["NEURON_PLATFORM_TARGET_OVERRIDE"] = target
    return env


def run_module(module_path: str | os.PathLike, function: str, cases: list[list[np.ndarray]], *,
               bench: tuple[list[tuple[int, ...]], list[str]] | None = None, target: str | None = None,
               timeout: float = 60.0, python: str | None = None, grid: tuple | None = None) -> RunResult:
    """Run ``function`` from the file ``module_path`` on each input list; optionally benchmark it."""
    module_path = Path(module_path).resolve()
    result = RunResult()
    with tempfile.TemporaryDirectory(prefix="nkilab-") as tmp:
        folder = Path(tmp)
        job_cases = []
        for i, args in enumerate(cases):
            job_cases.append({"args": [save_array(folder / f"in_{i}_{j}.bin", a) for j, a in enumerate(args)]})
        job = {"module": str(module_path), "function": function, "cases": job_cases, "target": target,
               "grid": list(grid) if grid is not None else None}
        if bench is not None:
            job["bench"] = {"shapes": [list(s) for s in bench[0]], "dtypes": list(bench[1])}
        write_json(folder / "job.json", job)
        out_f = open(folder / "stdout.txt", "wb")  # noqa: SIM115  (closed below)
        err_f = open(folder / "stderr.txt", "wb")  # noqa: SIM115
        start = time.monotonic()
        try:
            proc = subprocess.Popen([python or sys.executable, "-m", "nkilab._child", str(folder)],
                                    cwd=str(module_path.parent), env=_child_env(target), stdin=subprocess.DEVNULL,
                                    stdout=out_f, stderr=err_f, start_new_session=True)
            try:
                result.returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                result.timed_out = True
                _kill_group(proc)
        finally:
            out_f.close()
            err_f.close()
        result.seconds = time.monotonic() - start
        result.stdout = (folder / "stdout.txt").read_text(errors="replace")[-TAIL:]
        result.stderr = (folder / "stderr.txt").read_text(errors="replace")[-TAIL:]
        imp = read_json(folder / "import.json")
        if imp is not None and imp.get("status") == "error":
            result.import_error = imp["error"]
        for i in range(len(cases)):
            facts = read_json(folder / f"case_{i}.json")
            if facts is None:
                result.cases.append(CaseRun("not_run"))
                continue
            run = CaseRun(facts["status"], error=facts.get("error"), returned=facts.get("returned"),
                          seconds=facts.get("seconds", 0.0))
            if "output" in facts:
                try:
                    run.output = load_array(folder, facts["output"])
                except (OSError, ValueError, TypeError):
                    run.status, run.returned = "bad_return", "an unreadable array"
            result.cases.append(run)
        result.bench = read_json(folder / "bench.json")
        if not result.timed_out and imp is None:
            result.crashed = True
        elif not result.timed_out and result.returncode not in (0, None):
            result.crashed = True
    return result


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_inprocess(fn: object, function: str, cases: list[list[np.ndarray]], *,
                  bench: tuple[list[tuple[int, ...]], list[str]] | None = None,
                  target: str | None = None, grid: tuple | None = None) -> RunResult:
    """For ``check(qid, kernel_object)`` in a student's own notebook: no isolation, no timeout."""
    from nkilab import _child

    result = RunResult()
    if _child.on_simulator():
        import neuronxcc.nki as nki

        from nkisim.runtime.kernel import Kernel

        if not isinstance(fn, Kernel):
            fn = nki.jit(fn)
    start = time.monotonic()
    call = _child.launcher(fn, list(grid) if grid is not None else None, target)
    for args in cases:
        facts, out = _child.run_case(call, args, None)
        result.cases.append(CaseRun(facts["status"], output=out, error=facts.get("error"),
                                    returned=facts.get("returned"), seconds=facts.get("seconds", 0.0)))
    if bench is not None:
        try:
            result.bench = _child.benchmark(fn, [list(s) for s in bench[0]], list(bench[1]), target,
                                            list(grid) if grid is not None else None)
        except Exception as err:
            result.bench = {"status": "error", "error": _child.error_info(err, None)}
    result.seconds = time.monotonic() - start
    return result
