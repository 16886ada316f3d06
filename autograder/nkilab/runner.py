"""Run a student's kernel module in a child process with a timeout; bring the outputs back as arrays.

The student's code is never imported here.  The child runs in the OS sandbox (``nkilab.sandbox``) when
grading, gets its job on stdin and answers over a pipe this process opened (``nkilab._io``), and the parent
(this process) does all comparing: a module that patches NumPy, warnings or the harness changes nothing the
parent relies on, and nothing it writes to files is ever read.  An endless loop is killed at the timeout with
its whole sandbox (every process in it); a crash (``os._exit``, segfault) is just a failed run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nkilab import sandbox
from nkilab._io import ProtocolError, read_message, write_message

TAIL = 2000  # characters of the child's stdout/stderr kept for messages
GRACE_S = 5.0  # after the child is gone, how long its results may still take to drain


@dataclass
class CaseRun:
    status: str  # ok | error | bad_return | not_run
    output: np.ndarray | None = None
    error: dict | None = None
    returned: str | None = None
    seconds: float = 0.0
    timing: dict | None = None  # the timed case's latency (on the simulator), from that very launch


@dataclass
class RunResult:
    import_error: dict | None = None
    cases: list[CaseRun] = field(default_factory=list)
    bench: dict | None = None  # a device's nki.benchmark result
    timed_out: bool = False
    crashed: bool = False
    garbled: str | None = None  # the results stream was malformed (a forged or interleaved write)
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    sandboxed: bool = False


def _child_env(target: str | None) -> dict[str, str]:
    return sandbox.environment({"NEURON_PLATFORM_TARGET_OVERRIDE": target} if target else {})


def _case_runs(messages: list[tuple[dict, list[np.ndarray]]], n_cases: int, result: RunResult) -> bool:
    """Fill ``result`` from the child's messages (checked, never trusted); True when it said ``done``."""
    done = False
    runs: dict[int, CaseRun] = {}
    for head, arrays in messages:
        kind = head.get("kind")
        if kind == "import" and head.get("status") == "error":
            result.import_error = _as_dict(head.get("error"))
        elif kind == "case":
            i = head.get("index")
            if not isinstance(i, int) or not 0 <= i < n_cases or i in runs or len(arrays) > 1:
                result.garbled = f"a malformed case message (index {str(i)[:20]})"
                break
            status = head.get("status")
            status = status if status in ("ok", "error", "bad_return") else "error"
            run = CaseRun(status, error=_as_dict(head.get("error")), returned=_short(head.get("returned")),
                          seconds=float(head.get("seconds") or 0.0), timing=_as_dict(head.get("timing")))
            if status == "ok":
                if arrays:
                    run.output = arrays[0]
                else:
                    run.status, run.returned = "bad_return", "nothing readable"
            runs[i] = run
        elif kind == "bench":
            result.bench = head
        elif kind == "done":
            done = True
    result.cases = [runs.get(i, CaseRun("not_run")) for i in range(n_cases)]
    return done


def _as_dict(value: object) -> dict | None:
    return {str(k)[:40]: v for k, v in value.items()} if isinstance(value, dict) else None


def _short(value: object) -> str | None:
    return None if value is None else str(value)[:80]


def run_module(module_path: str | os.PathLike, function: str, cases: list[list[np.ndarray]], *,
               timed: int | None = None, bench: tuple[list[tuple[int, ...]], list[str]] | None = None,
               target: str | None = None, timeout: float = 60.0, python: str | None = None,
               grid: tuple | None = None, sandboxed: bool = False,
               limits: sandbox.Limits | None = None) -> RunResult:
    """Run ``function`` from the file ``module_path`` on each input list; case ``timed`` also reports its
    latency.  ``sandboxed`` runs it in ``nkilab.sandbox`` (required for grading); the hard resource limits
    apply either way."""
    module_path = Path(module_path).resolve()
    limits = limits or sandbox.Limits(cpu_s=int(timeout) + 30)
    result = RunResult(sandboxed=sandboxed)
    argv = [python or sys.executable, "-m", "nkilab._child"]
    env = _child_env(target)
    child_module = f"{sandbox.KERNEL_DIR}/{module_path.name}" if sandboxed else str(module_path)
    cmd = sandbox.command(argv, module_path, env, limits) if sandboxed else argv
    read_end, write_end = os.pipe()
    job = {"module": child_module, "function": function, "cases": [len(a) for a in cases], "timed": timed,
           "target": target, "grid": list(grid) if grid is not None else None, "channel": write_end}
    if bench is not None:
        job["bench"] = {"shapes": [list(s) for s in bench[0]], "dtypes": list(bench[1])}
    messages: list[tuple[dict, list[np.ndarray]]] = []
    with tempfile.TemporaryDirectory(prefix="nkilab-") as tmp:  # the parent's own: stdout/stderr captures
        folder = Path(tmp)
        start = time.monotonic()
        with open(folder / "stdout.txt", "wb") as out_f, open(folder / "stderr.txt", "wb") as err_f, \
                os.fdopen(read_end, "rb") as results:
            try:
                proc = subprocess.Popen(cmd, cwd=None if sandboxed else str(module_path.parent),
                                        env=None if sandboxed else env, stdin=subprocess.PIPE, stdout=out_f,
                                        stderr=err_f, pass_fds=(write_end,), start_new_session=True,
                                        preexec_fn=sandbox.rlimits(limits))
            finally:
                os.close(write_end)
            reader = threading.Thread(target=_read_all, args=(results, messages, result), daemon=True)
            reader.start()
            threading.Thread(target=_send_job, args=(proc, job, [a for args in cases for a in args]),
                             daemon=True).start()
            try:
                result.returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                result.timed_out = True
            kill_group(proc)  # whatever it left behind goes too (in the sandbox: every process in it)
            reader.join(GRACE_S)
        result.seconds = time.monotonic() - start
        result.stdout = (folder / "stdout.txt").read_text(errors="replace")[-TAIL:]
        result.stderr = (folder / "stderr.txt").read_text(errors="replace")[-TAIL:]
    done = _case_runs(list(messages), len(cases), result)
    if not result.timed_out and (not done or result.returncode not in (0, None)) and result.import_error is None:
        result.crashed = True
    return result


def _send_job(proc: subprocess.Popen, job: dict, arrays: list[np.ndarray]) -> None:
    try:
        assert proc.stdin is not None
        write_message(proc.stdin, job, arrays)
        proc.stdin.close()
    except (OSError, ValueError):  # the child died before reading its job: reported as a crash
        pass


def _read_all(results, messages: list, result: RunResult) -> None:
    budget = [1 << 30]
    try:
        while (msg := read_message(results, budget)) is not None:
            messages.append(msg)
    except ProtocolError as err:
        result.garbled = str(err)
    except (OSError, ValueError):
        pass


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group ``proc`` leads (it was started with ``start_new_session``), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_inprocess(fn: object, function: str, cases: list[list[np.ndarray]], *, timed: int | None = None,
                  bench: tuple[list[tuple[int, ...]], list[str]] | None = None,
                  target: str | None = None, grid: tuple | None = None) -> RunResult:
    """For ``check(qid, kernel_object)`` in a student's own notebook: no isolation, no timeout."""
    from nkilab import _child

    result = RunResult()
    if _child.on_simulator():
        from nkisim import api

        fn = api.as_kernel(fn)
    start = time.monotonic()
    messages: list[tuple[dict, list[np.ndarray]]] = []
    job = {"grid": list(grid) if grid is not None else None, "target": target, "timed": timed}
    if bench is not None:
        job["bench"] = {"shapes": [list(s) for s in bench[0]], "dtypes": list(bench[1])}
    _child.execute(fn, job, cases, None, lambda head, arrays: messages.append((head, arrays)))
    _case_runs(messages, len(cases), result)
    result.seconds = time.monotonic() - start
    return result
