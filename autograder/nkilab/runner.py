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


@dataclass
class _ChildRun:
    """One child process's messages and how it ended."""

    messages: list[tuple[dict, list[np.ndarray]]] = field(default_factory=list)
    timed_out: bool = False
    returncode: int | None = None
    garbled: str | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0


def _spawn(cmd: list[str], cwd: str | None, env: dict[str, str] | None, job: dict, arrays: list[np.ndarray],
           timeout: float, limits: sandbox.Limits) -> _ChildRun:
    """Start ``cmd`` with the job on stdin and a results pipe (its fd in ``job["channel"]``), collect every
    message until it exits or ``timeout`` passes, then kill its whole process group."""
    run = _ChildRun()
    read_end, write_end = os.pipe()
    job = dict(job, channel=write_end)
    with tempfile.TemporaryDirectory(prefix="nkilab-") as tmp:  # the parent's own: stdout/stderr captures
        folder = Path(tmp)
        start = time.monotonic()
        with open(folder / "stdout.txt", "wb") as out_f, open(folder / "stderr.txt", "wb") as err_f, \
                os.fdopen(read_end, "rb") as results:
            try:
                proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=out_f, stderr=err_f,
                                        pass_fds=(write_end,), start_new_session=True,
                                        preexec_fn=sandbox.rlimits(limits))
            finally:
                os.close(write_end)
            reader = threading.Thread(target=_read_all, args=(results, run), daemon=True)
            reader.start()
            threading.Thread(target=_send_job, args=(proc, job, arrays), daemon=True).start()
            try:
                run.returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                run.timed_out = True
            kill_group(proc)  # whatever it left behind goes too (in the sandbox: every process in it)
            reader.join(GRACE_S)
        run.seconds = time.monotonic() - start
        run.stdout = (folder / "stdout.txt").read_text(errors="replace")[-TAIL:]
        run.stderr = (folder / "stderr.txt").read_text(errors="replace")[-TAIL:]
    return run


def _merge(result: RunResult, run: _ChildRun) -> None:
    result.timed_out |= run.timed_out
    result.returncode = run.returncode
    result.garbled = result.garbled or run.garbled
    result.stdout += run.stdout
    result.stderr += run.stderr
    result.seconds += run.seconds


def _signature(args: list[np.ndarray]) -> tuple:
    return tuple((tuple(int(s) for s in a.shape), str(a.dtype)) for a in args)


def run_module(module_path: str | os.PathLike, function: str, cases: list[list[np.ndarray]], *,
               timed: int | None = None, bench: tuple[list[tuple[int, ...]], list[str]] | None = None,
               target: str | None = None, timeout: float = 60.0, python: str | None = None,
               grid: tuple | None = None, sandboxed: bool = False,
               limits: sandbox.Limits | None = None) -> RunResult:
    """Run ``function`` from the file ``module_path`` on each input list; case ``timed`` also reports its
    latency.  ``sandboxed`` runs the student's code in ``nkilab.sandbox`` (required for grading); the hard
    resource limits apply either way.

    On the simulator the student's code only compiles the kernel: the sandboxed child traces it once per
    signature and sends the programs, and a fork of this process, in which no student code has run
    (``nkilab._execute``), validates and executes them on these inputs.  The inputs never reach the student's process, and the
    outputs and latencies are what the programs compute.  On a Neuron device the child runs the kernel itself."""
    module_path = Path(module_path).resolve()
    limits = limits or sandbox.Limits(cpu_s=int(timeout) + 30)
    result = RunResult(sandboxed=sandboxed)
    env = _child_env(target)
    child_module = f"{sandbox.KERNEL_DIR}/{module_path.name}" if sandboxed else str(module_path)
    argv = [python or sys.executable, "-m", "nkilab._child"]
    cmd = sandbox.command(argv, module_path, env, limits) if sandboxed else argv
    cwd = None if sandboxed else str(module_path.parent)
    job: dict = {"module": child_module, "function": function, "timed": timed, "target": target,
                 "grid": list(grid) if grid is not None else None}
    if not _simulated():
        job["cases"] = [len(a) for a in cases]
        if bench is not None:
            job["bench"] = {"shapes": [list(s) for s in bench[0]], "dtypes": list(bench[1])}
        run = _spawn(cmd, cwd, None if sandboxed else env, job, [a for args in cases for a in args], timeout, limits)
        _merge(result, run)
        done = _case_runs(run.messages, len(cases), result)
    else:
        done = _traced_then_executed(result, cmd, cwd, None if sandboxed else env, job, cases, timed, python,
                                     module_path, timeout, limits)
    if not result.timed_out and (not done or result.returncode not in (0, None)) and result.import_error is None:
        result.crashed = True
    return result


def _simulated() -> bool:
    import nkisim

    return bool(nkisim.using_simulator())


def _traced_then_executed(result: RunResult, cmd: list[str], cwd: str | None, env: dict[str, str] | None,
                          job: dict, cases: list[list[np.ndarray]], timed: int | None, python: str | None,
                          module_path: Path, timeout: float, limits: sandbox.Limits) -> bool:
    """The simulator's grading run (see ``run_module``); True when both processes finished their work."""
    signatures, index = _signatures(cases)
    job = dict(job, role="trace", signatures=[[[list(s), d] for s, d in sig] for sig in signatures])
    run = _spawn(cmd, cwd, env, job, [], timeout, limits)
    _merge(result, run)
    programs, failed, done = _collect_programs(run.messages, len(signatures), result)
    if not done or result.timed_out or result.garbled or result.import_error is not None or \
            run.returncode not in (0, None):
        result.cases = [CaseRun("not_run") for _ in cases]
        return done
    # the executor: no student code, the grader's inputs, the programs (validated there) -- and the same limits
    exec_job, texts = _execution(cases, index, programs, timed, job.get("target"), str(module_path))
    if python is None and hasattr(os, "fork"):
        run = _fork_execute(exec_job, texts, cases, timeout, limits)
    else:
        argv = [python or sys.executable, "-m", "nkilab._execute"]
        run = _spawn(argv, None, _child_env(job.get("target")), exec_job,
                     texts + [a for args in cases for a in args], timeout, limits)
    _merge(result, run)
    done = _case_runs(run.messages, len(cases), result)
    _trace_failures(result, cases, index, failed)
    return done


def _signatures(cases: list[list[np.ndarray]]) -> tuple[list[tuple], dict[tuple, int]]:
    """The distinct signatures of the cases (each is traced once) and each one's position."""
    signatures = list(dict.fromkeys(_signature(args) for args in cases))
    return signatures, {sig: k for k, sig in enumerate(signatures)}


def _collect_programs(messages: list[tuple[dict, list[np.ndarray]]], n: int,
                      result: RunResult) -> tuple[dict[int, np.ndarray], dict[int, dict], bool]:
    """The tracing child's answer, checked: (programs by signature, trace errors by signature, said done)."""
    programs: dict[int, np.ndarray] = {}
    failed: dict[int, dict] = {}
    done = False
    for head, arrays in messages:
        kind = head.get("kind")
        if kind == "import" and head.get("status") == "error":
            result.import_error = _as_dict(head.get("error"))
        elif kind == "program":
            k = head.get("index")
            if not isinstance(k, int) or not 0 <= k < n or k in programs or k in failed:
                result.garbled = f"a malformed program message (index {str(k)[:20]})"
                break
            if head.get("status") == "ok" and len(arrays) == 1 and arrays[0].dtype == np.uint8:
                programs[k] = arrays[0]
            else:
                failed[k] = _as_dict(head.get("error")) or {"type": "RuntimeError", "message": "no program"}
        elif kind == "done":
            done = True
    return programs, failed, done


def _execution(cases: list[list[np.ndarray]], index: dict[tuple, int], programs: dict[int, np.ndarray],
               timed: int | None, target: str | None, source: str | None) -> tuple[dict, list[np.ndarray]]:
    """The executor's job (which program each case runs) and the program texts, in the job's order."""
    order = sorted(programs)
    slot = {k: i for i, k in enumerate(order)}
    job = {"programs": len(order), "cases": [len(a) for a in cases],
           "case_program": [slot.get(index[_signature(args)]) for args in cases], "timed": timed, "target": target,
           "source": source}
    return job, [programs[k] for k in order]


def _trace_failures(result: RunResult, cases: list[list[np.ndarray]], index: dict[tuple, int],
                    failed: dict[int, dict]) -> None:
    """A case whose signature did not trace fails with the trace's error (the student's, at their line)."""
    for i, args in enumerate(cases):
        k = index[_signature(args)]
        if k in failed:
            result.cases[i] = CaseRun("error", error=failed[k])


def _fork_execute(job: dict, texts: list[np.ndarray], cases: list[list[np.ndarray]], timeout: float,
                  limits: sandbox.Limits) -> _ChildRun:
    """``nkilab._execute`` in a fork of this process: the grader's own code and inputs are already here, so the
    executor starts in milliseconds instead of a fresh interpreter's half second.  The fork runs no student
    code; it gets the same hard limits and timeout as any run, and answers over a pipe like the children."""
    from nkilab import _execute
    from nkisim import api  # noqa: F401  (loaded here once, so no fork has to import the simulator again)

    run = _ChildRun()
    read_end, write_end = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the executor
        code = 1
        try:
            os.close(read_end)
            os.setsid()
            sandbox.rlimits(limits)()
            with os.fdopen(write_end, "wb") as channel:
                def emit(header: dict, arrays: list[np.ndarray]) -> None:
                    write_message(channel, header, arrays)

                _execute.run_cases(job, texts, cases, emit, job.get("source"))
                emit({"kind": "done"}, [])
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as results:
        reader = threading.Thread(target=_read_all, args=(results, run), daemon=True)
        reader.start()
        reader.join(timeout)
        reaped = (0, 0)
        if reader.is_alive():
            run.timed_out = True
        else:  # the results stream ended: the fork is exiting, give it a moment before the kill
            end = time.monotonic() + GRACE_S
            while time.monotonic() < end and (reaped := os.waitpid(pid, os.WNOHANG)) == (0, 0):
                time.sleep(0.002)
        if reaped == (0, 0):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            reaped = os.waitpid(pid, 0)
        status = reaped[1]
        run.returncode = os.waitstatus_to_exitcode(status)
        reader.join(GRACE_S)
    run.seconds = time.monotonic() - start
    return run


def _send_job(proc: subprocess.Popen, job: dict, arrays: list[np.ndarray]) -> None:
    try:
        assert proc.stdin is not None
        write_message(proc.stdin, job, arrays)
        proc.stdin.close()
    except (OSError, ValueError):  # the child died before reading its job: reported as a crash
        pass


def _read_all(results, run: _ChildRun) -> None:
    budget = [1 << 30]
    try:
        while (msg := read_message(results, budget)) is not None:
            run.messages.append(msg)
    except ProtocolError as err:
        run.garbled = str(err)
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
    start = time.monotonic()
    messages: list[tuple[dict, list[np.ndarray]]] = []
    job = {"grid": list(grid) if grid is not None else None, "target": target, "timed": timed}
    if _child.on_simulator():  # as the grader does it: traced once per signature, the programs executed
        from nkilab import _execute
        from nkisim import api

        signatures, index = _signatures(cases)
        traced: list[tuple[dict, list[np.ndarray]]] = [({"kind": "done"}, [])]
        _child.trace_programs(api.as_kernel(fn), dict(job, signatures=[[[list(s), d] for s, d in sig]
                                                                       for sig in signatures]),
                              None, lambda head, arrays: traced.insert(-1, (head, arrays)))
        programs, failed, _ = _collect_programs(traced, len(signatures), result)
        exec_job, texts = _execution(cases, index, programs, timed, target, None)
        _execute.run_cases(exec_job, texts, cases, lambda head, arrays: messages.append((head, arrays)))
        _case_runs(messages, len(cases), result)
        _trace_failures(result, cases, index, failed)
        result.seconds = time.monotonic() - start
        return result
    if bench is not None:
        job["bench"] = {"shapes": [list(s) for s in bench[0]], "dtypes": list(bench[1])}
    _child.execute(fn, job, cases, None, lambda head, arrays: messages.append((head, arrays)))
    _case_runs(messages, len(cases), result)
    result.seconds = time.monotonic() - start
    return result
