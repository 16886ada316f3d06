"""Run a student's kernel module in a child process with a timeout; bring the outputs back as arrays.

The student's code is never imported here.  The child runs in the OS sandbox (``nkilab.isolate.sandbox``) when
grading, gets its job on stdin and answers over a pipe this process opened (``nkilab.isolate._io``), and the parent
(this process) does all comparing: a module that patches NumPy, warnings or the harness changes nothing the
parent relies on, and nothing it writes to files is ever read.  An endless loop is killed at the timeout with
its whole sandbox (every process in it); a crash (``os._exit``, segfault) is just a failed run.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nkilab.isolate import sandbox
from nkilab.isolate._execute import MAX_PROGRAM_BYTES
from nkilab.isolate.facts import ErrorFacts, Latency
from nkilab.isolate.processes import Budget, ChildRun, executor_server, spawn
from nkilab.isolate.replies import CaseRun, RunResult, RunStatus, error_facts, read_cases, reported_error
from nkilab.kernels import device, modules
from nkisim.api import Dialect


def _child_env(target: str | None) -> dict[str, str]:
    return sandbox.environment({"NEURON_PLATFORM_TARGET_OVERRIDE": target} if target else {})


#: the most messages one child may send beyond the ones its job calls for (import, phase, done)
SPARE_MESSAGES = 4
#: the header and array bytes a child may send beyond its programs or outputs
SPARE_BYTES = 1 << 20


def _merge(result: RunResult, run: ChildRun) -> None:
    result.timed_out |= run.timed_out
    result.returncode = run.returncode
    result.garbled = result.garbled or run.garbled
    result.stdout += run.stdout
    result.stderr += run.stderr
    result.seconds += run.seconds


def _signature(args: Sequence[np.ndarray]) -> tuple:
    """A case's shapes and dtypes: the ones it declares, when it has not drawn its inputs yet
    (``nkilab.judge.evaluate.CaseData``), else its arrays'."""
    declared = getattr(args, "signature", None)
    if declared is not None:
        return tuple(declared)
    return tuple((tuple(int(s) for s in a.shape), str(a.dtype)) for a in args)


def run_module(module_path: str | os.PathLike, function: str, cases: Sequence[Sequence[np.ndarray]], *,
               timed: int | None = None, bench: tuple[list[tuple[int, ...]], list[str]] | None = None,
               target: str | None = None, timeout: float = 60.0, python: str | None = None,
               grid: tuple | None = None, sandboxed: bool = False,
               limits: sandbox.Limits | None = None, hidden: frozenset[int] = frozenset(),
               gate: Gate | None = None) -> RunResult:
    """Run ``function`` from the file ``module_path`` on each input list; case ``timed`` also reports its
    latency.  ``sandboxed`` runs the student's code in ``nkilab.isolate.sandbox`` (required for grading); the hard
    resource limits apply either way.  ``timeout`` is the whole run's budget (tracing, executing and costing).

    On the simulator the student's code only compiles the kernel: the sandboxed child traces it once per
    signature and sends the programs -- first the signatures of the cases not in ``hidden``, and only after it
    has answered for those, the hidden cases' own, so nothing it says about the first can hold the second --
    and an executor (``nkilab.isolate._execute``, in a sandbox of its own holding only the simulator) checks them
    against this request and executes them on these inputs.  The inputs never reach the student's process, and
    the outputs and latencies are what the programs compute.  On a Neuron device the child runs the kernel
    itself.

    With a ``gate``, the simulator runs case ``timed`` only once every other case has run and ``gate`` says yes
    to their results (see ``Gate``); otherwise that case is ``NOT_RUN``."""
    deadline = time.monotonic() + timeout
    module_path = Path(module_path).resolve()
    limits = limits or sandbox.Limits(cpu_s=int(timeout) + 30)
    result = RunResult(sandboxed=sandboxed)
    source = _source_lines(module_path)
    env = _child_env(target)
    child_module = f"{sandbox.KERNEL_DIR}/{module_path.name}" if sandboxed else str(module_path)
    argv = [python or sys.executable, "-m", "nkilab.isolate._child"]
    cmd = sandbox.command(argv, module_path, env, limits) if sandboxed else sandbox.plain(argv)
    cwd = None if sandboxed else str(module_path.parent)
    job: dict = {"module": child_module, "function": function, "timed": timed, "target": target,
                 "grid": list(grid) if grid is not None else None}

    def timing() -> Latency:
        assert bench is not None
        return device_bench(argv, module_path, cwd, env, job, bench, deadline, limits, sandboxed, result, source)

    try:
        done = _run(result, cmd, cwd, None if sandboxed else env, job, cases, timed, bench, python, source, deadline,
                    limits, hidden, sandboxed, timing, gate)
    finally:
        cmd.close()
    if not result.timed_out and (not done or result.returncode not in (0, None)) and result.import_error is None:
        result.crashed = True
    return result


def _run(result: RunResult, cmd: sandbox.Command, cwd: str | None, env: dict[str, str] | None, job: dict,
         cases: Sequence[Sequence[np.ndarray]], timed: int | None, bench: tuple[list[tuple[int, ...]], list[str]] | None,
         python: str | None, source: list[str] | None, deadline: float, limits: sandbox.Limits,
         hidden: frozenset[int], sandboxed: bool, timing: Callable[[], Latency], gate: Gate | None) -> bool:
    """The child's run (and on the simulator, the executor's); True when the processes finished their work.  On a
    device, ``timing`` measures a 0.6 kernel's latency from its NEFF (``device_bench``) once its cases ran."""
    if not _simulated():
        job["cases"] = [len(a) for a in cases]
        if bench is not None:
            job["bench"] = {"shapes": [list(s) for s in bench[0]], "dtypes": list(bench[1])}
        out_bytes = sum(_output_allowance(args) for args in cases)
        run = spawn(cmd, cwd, env, job, [a for args in cases for a in args], deadline, limits,
                    Budget(out_bytes + SPARE_BYTES, len(cases) + SPARE_MESSAGES))
        _merge(result, run)
        done = read_cases(run.messages, len(cases), result, source)
        said = next((h.get("dialect") for h, _ in run.messages if h.get("kind") == "import"), None)
        if done and bench is not None and said == Dialect.NKI.value and not result.timed_out:
            result.bench = timing()
        return done
    return _traced_then_executed(result, cmd, cwd, env, job, cases, timed, python, source, deadline, limits, hidden,
                                 sandboxed, gate)


def _source_lines(path: Path) -> list[str] | None:
    """The kernel file's lines as the parent holds them (the screen read the same file, as UTF-8 with or without
    a byte-order mark): what a reported line number is shown with."""
    try:
        return path.read_bytes()[:MAX_SOURCE_BYTES].decode("utf-8-sig", errors="replace").splitlines()
    except OSError:
        return None


#: the executor server's own CPU limit (seconds): each worker lowers its own to its question's
SERVER_CPU_S = 3600

#: the most of a kernel file the parent reads to quote its lines
MAX_SOURCE_BYTES = 1 << 20


def _output_allowance(args: Sequence[np.ndarray]) -> int:
    """Bytes a case's output may take: eight bytes per element of its largest argument, four times over (a
    wrong but honest output shape still arrives to be reported as wrong), at least 1 MiB."""
    largest = max((math.prod(shape) for shape, _ in _signature(args)), default=0)
    return max(32 * largest, 1 << 20)


def _simulated() -> bool:
    """Grade on the simulator (trace in the sandbox, execute apart), unless this is a Neuron device with AWS's NKI:
    there the child runs each kernel itself, on the device when it is AWS's."""
    import nkisim

    return bool(nkisim.using_simulator()) and not device.on_device()


def device_bench(argv: list[str], module_path: Path, cwd: str | None, env: dict[str, str], job: dict,
                 bench: tuple[list[tuple[int, ...]], list[str]], deadline: float, limits: sandbox.Limits,
                 sandboxed: bool, result: RunResult, source: list[str] | None) -> Latency:
    """An NKI 0.6 kernel's device latency, measured as AWS documents for 0.6 (``nkilab.kernels.device``): a second child
    compiles the kernel on the timed case's shapes with ``NEURON_FRAMEWORK_DEBUG=1`` and sends the NEFF it left
    (bytes, nothing else read from it); this process writes them to a folder of its own and times them with nrtpy
    or ``neuron-explorer``.  The result is the parent's measurement, never the child's word."""
    with tempfile.TemporaryDirectory(prefix="nkilab-neff-") as tmp:
        workdir = f"{sandbox.SCRATCH}/neff" if sandboxed else str(Path(tmp) / "compile")
        neff_env = dict(env, NEURON_FRAMEWORK_DEBUG="1", NKI_ARTIFACTS_DIR=f"{workdir}/artifacts")
        cmd = sandbox.command(argv, module_path, neff_env, limits) if sandboxed else sandbox.plain(argv)
        neff_job = dict(job, role="neff", workdir=workdir,
                        bench={"shapes": [list(s) for s in bench[0]], "dtypes": list(bench[1])})
        try:
            run = spawn(cmd, cwd, None if sandboxed else neff_env, neff_job, [], deadline, limits,
                        Budget(device.MAX_NEFF_BYTES + SPARE_BYTES, SPARE_MESSAGES))
        finally:
            cmd.close()
        result.seconds += run.seconds  # (its exit status is not the graded run's: a failed compile is no latency)
        got = next(((h, a) for h, a in run.messages if h.get("kind") == "neff"), None)
        if run.timed_out or got is None:
            return Latency.failed("the kernel's compile for timing did not finish")
        head, arrays = got
        if head.get("status") != "ok" or len(arrays) != 1 or arrays[0].dtype != np.uint8 or arrays[0].ndim != 1:
            return Latency(error=error_facts(head.get("error"), source) or ErrorFacts("RuntimeError", "no NEFF"))
        neff = Path(tmp) / "kernel.neff"
        neff.write_bytes(arrays[0].tobytes())
        rng = np.random.default_rng(0)  # the timed case's shapes, as the compile used them
        inputs = [rng.standard_normal(s).astype(np.dtype(d)) for s, d in zip(bench[0], bench[1])]
        try:
            return measured(device.time_neff(neff, inputs, timeout=max(deadline - time.monotonic(), 1.0)))
        except device.DeviceError as err:
            return Latency.failed(str(err), "DeviceError")


def measured(m: device.Measurement) -> Latency:
    """A device's measurement (the parent's own, never a child's word) as the grader's latency record."""
    return Latency(m.latency_us, m.instance, simulator=False, how=m.how)


def _traced_then_executed(result: RunResult, cmd: sandbox.Command, cwd: str | None, env: dict[str, str] | None,
                          job: dict, cases: Sequence[Sequence[np.ndarray]], timed: int | None, python: str | None,
                          source: list[str] | None, deadline: float, limits: sandbox.Limits,
                          hidden: frozenset[int], sandboxed: bool, gate: Gate | None = None) -> bool:
    """The simulator's grading run (see ``run_module``); True when both processes finished their work."""
    signatures, index, public = _signatures(cases, hidden)
    wire = [[[list(s), d] for s, d in sig] for sig in signatures]
    job = dict(job, role="trace", signatures=wire[:public], more=public < len(signatures))
    followup: tuple[dict, list[np.ndarray]] | None = ({"signatures": wire[public:]}, []) \
        if public < len(signatures) else None
    budget = Budget(len(signatures) * MAX_PROGRAM_BYTES + SPARE_BYTES, len(signatures) + SPARE_MESSAGES)
    run = spawn(cmd, cwd, env, job, [], deadline, limits, budget, followup)
    _merge(result, run)
    programs, failed, done = _collect_programs(run, len(signatures), public, result, source)
    if not done or result.timed_out or result.garbled or result.import_error is not None or \
            run.returncode not in (0, None):
        result.cases = [CaseRun(RunStatus.NOT_RUN) for _ in cases]
        return done
    # the executor: its own sandbox holding only the simulator, the grader's inputs, the programs; one fork server
    # per notebook graded (nkilab.isolate.processes.ExecutorServer), a fresh worker per question under the question's CPU limit
    exec_job, texts = _execution(cases, index, signatures, programs, timed, job)
    argv = [python or sys.executable, "-m", "nkilab.isolate._execute", "--serve"]
    exec_env = _child_env(job.get("target"))
    server_limits = dataclasses.replace(limits, cpu_s=max(limits.cpu_s, SERVER_CPU_S))
    key = (tuple(argv), tuple(sorted(exec_env.items())), sandboxed)
    if sandboxed:
        server = executor_server(key, lambda: sandbox.command(argv, None, exec_env, server_limits), None, None,
                                 server_limits)
    else:
        server = executor_server(key, lambda: sandbox.plain(argv), tempfile.gettempdir(), exec_env, server_limits)
    messages: list[tuple[dict, list[np.ndarray]]] = []
    done, ran = True, False
    for keep in _phases(len(cases), timed, gate):
        if keep is None:  # the gate, on every case but the timed one
            read_cases(messages, len(cases), result, source)
            _trace_failures(result, cases, index, failed)
            if result.garbled or not gate(result.cases):  # type: ignore[misc]
                break
            continue
        phase_job, phase_cases = _phase(exec_job, cases, keep)
        if not any(phase_cases) and phase_job.get("fingerprint") is None:  # nothing traced to run or fingerprint
            continue
        out_bytes = sum(_output_allowance(cases[i]) for i in keep)
        run = server.run(dict(phase_job, cpu_s=limits.cpu_s), texts + [a for args in phase_cases for a in args], deadline,
                         Budget(out_bytes + SPARE_BYTES, len(keep) + SPARE_MESSAGES))
        _merge(result, run)
        messages += run.messages
        ran = True
        said_done = any(head.get("kind") == "done" for head, _ in run.messages)
        if not said_done or run.timed_out or run.garbled or run.returncode not in (0, None):
            done = done and said_done
            break
    said = read_cases(messages, len(cases), result, source)
    _trace_failures(result, cases, index, failed)
    return done and (said or not ran)  # (no job at all when no case's signature traced)


#: asked once every case but the timed one has run, with their runs (the timed case's ``NOT_RUN``): whether the
#: timed run is wanted. The grader says no for a kernel with a failing case, which earns no speed points, so a wrong
#: kernel does not pay for its largest run (``nkilab.judge.evaluate``).
Gate = Callable[[list[CaseRun]], bool]


def _phases(n: int, timed: int | None, gate: Gate | None) -> list[list[int] | None]:
    """The executor's jobs, as the cases each runs, with ``None`` where the gate is asked: one job for every case,
    or with a gate and a timed case, every other case, the gate, then the timed case alone."""
    if gate is None or timed is None or not 0 <= timed < n:
        return [list(range(n))]
    return [[i for i in range(n) if i != timed], None, [timed]]


def _phase(exec_job: dict, cases: Sequence[Sequence[np.ndarray]],
           keep: list[int]) -> tuple[dict, list[list[np.ndarray]]]:
    """``exec_job`` for the cases in ``keep`` only (the others' programs None, their inputs not sent) and its
    cases' inputs.  A job without the timed case still fingerprints the timed case's program for similarity, and
    the job of the timed case alone does not again."""
    timed = exec_job.get("timed")
    program = exec_job["case_program"]
    wanted = {i for i in keep if program[i] is not None}  # a case whose signature did not trace is the parent's
    job = dict(exec_job, cases=[len(a) if i in wanted else 0 for i, a in enumerate(cases)],
               case_program=[k if i in wanted else None for i, k in enumerate(program)])
    if timed is not None and len(keep) < len(cases):
        job["fingerprint"] = program[timed] if timed not in keep else None
    return job, [list(args) if i in wanted else [] for i, args in enumerate(cases)]


def _signatures(cases: Sequence[Sequence[np.ndarray]], hidden: frozenset[int] = frozenset()) \
        -> tuple[list[tuple], dict[tuple, int], int]:
    """The distinct signatures of the cases (each is traced once), each one's position, and how many come
    first because a case not in ``hidden`` has them (the rest belong to hidden cases only)."""
    public = list(dict.fromkeys(_signature(args) for i, args in enumerate(cases) if i not in hidden))
    rest = [sig for sig in dict.fromkeys(_signature(args) for args in cases) if sig not in set(public)]
    signatures = public + rest
    return signatures, {sig: k for k, sig in enumerate(signatures)}, len(public)


def _collect_programs(run: ChildRun, n: int, public: int, result: RunResult,
                      source: list[str] | None) -> tuple[dict[int, np.ndarray], dict[int, ErrorFacts], bool]:
    """The tracing child's answer, checked: (programs by signature, trace errors by signature, said done).

    Programs ``0 .. public-1`` must arrive before the hidden signatures were sent, the others after."""
    programs: dict[int, np.ndarray] = {}
    failed: dict[int, ErrorFacts] = {}
    done = False
    for m, (head, arrays) in enumerate(run.messages):
        kind = head.get("kind")
        late = run.phase_at is not None and m >= run.phase_at
        if kind == "import" and head.get("status") == "error" and not late:
            result.import_error = reported_error(head.get("error"), source)
        elif kind == "program":
            k = head.get("index")
            if type(k) is not int or not 0 <= k < n or k in programs or k in failed or late != (k >= public):
                result.garbled = "a malformed program message"
                break
            if head.get("status") == "ok" and len(arrays) == 1 and arrays[0].dtype == np.uint8 \
                    and arrays[0].ndim == 1 and arrays[0].size <= MAX_PROGRAM_BYTES:
                programs[k] = arrays[0]
            else:
                failed[k] = error_facts(head.get("error"), source) or ErrorFacts("RuntimeError", "no program")
        elif kind == "done":
            done = True
    return programs, failed, done


def _execution(cases: Sequence[Sequence[np.ndarray]], index: dict[tuple, int], signatures: list[tuple],
               programs: dict[int, np.ndarray], timed: int | None, job: dict) -> tuple[dict, list[np.ndarray]]:
    """The executor's job (which program each case runs, and what each program was asked to be) and the program
    texts, in the job's order."""
    order = sorted(programs)
    slot = {k: i for i, k in enumerate(order)}
    requests = [{"target": job.get("target"), "grid": job.get("grid"), "inputs": [[list(s), d] for s, d in signatures[k]]}
                for k in order]
    exec_job = {"programs": len(order), "cases": [len(a) for a in cases], "requests": requests,
                "case_program": [slot.get(index[_signature(args)]) for args in cases], "timed": timed}
    return exec_job, [programs[k] for k in order]


def _trace_failures(result: RunResult, cases: Sequence[Sequence[np.ndarray]], index: dict[tuple, int],
                    failed: dict[int, ErrorFacts]) -> None:
    """A case whose signature did not trace fails with the trace's error (the student's, at their line)."""
    for i, args in enumerate(cases):
        k = index[_signature(args)]
        if k in failed:
            result.cases[i] = CaseRun(RunStatus.ERROR, error=failed[k])


def run_inprocess(fn: Any, function: str, cases: Sequence[Sequence[np.ndarray]], *, timed: int | None = None,
                  bench: tuple[list[tuple[int, ...]], list[str]] | None = None,
                  target: str | None = None, grid: tuple | None = None, gate: Gate | None = None) -> RunResult:
    """For ``check(qid, kernel_object)`` in a student's own notebook: no isolation, no timeout (``gate`` as for
    ``run_module``)."""
    from nkilab.isolate import _child

    result = RunResult()
    start = time.monotonic()
    messages: list[tuple[dict, list[np.ndarray]]] = []
    job: dict[str, Any] = {"grid": list(grid) if grid is not None else None, "target": target, "timed": timed}
    if _child.simulated(fn) or (_child.on_simulator() and not device.on_device()):  # as the grader does it: traced
        # once per signature, the programs executed
        from nkilab.isolate import _execute
        from nkisim import api

        signatures, index, _ = _signatures(cases)
        traced = ChildRun()
        _child.trace_programs(api.as_kernel(fn), dict(job, signatures=[[[list(s), d] for s, d in sig]
                                                                       for sig in signatures]),
                              None, lambda head, arrays: traced.messages.append((head, arrays)))
        traced.messages.append(({"kind": "done"}, []))
        source = _own_source(fn)
        programs, failed, _ = _collect_programs(traced, len(signatures), len(signatures), result, source)
        exec_job, texts = _execution(cases, index, signatures, programs, timed, job)
        for keep in _phases(len(cases), timed, gate):
            if keep is None:  # the gate, on every case but the timed one
                read_cases(messages, len(cases), result, source)
                _trace_failures(result, cases, index, failed)
                if not gate(result.cases):  # type: ignore[misc]
                    break
                continue
            phase_job, phase_cases = _phase(exec_job, cases, keep)
            _execute.run_cases(phase_job, texts, phase_cases, lambda head, arrays: messages.append((head, arrays)))
        read_cases(messages, len(cases), result, source)
        _trace_failures(result, cases, index, failed)
        result.seconds = time.monotonic() - start
        return result
    if bench is not None:
        job["bench"] = {"shapes": [list(s) for s in bench[0]], "dtypes": list(bench[1])}
    _child.execute(fn, job, [list(args) for args in cases], None, lambda head, arrays: messages.append((head, arrays)))
    read_cases(messages, len(cases), result, _own_source(fn))
    if bench is not None and not _child.simulated(fn) and modules.kernel_dialect(fn) is Dialect.NKI:  # AWS's NKI 0.6
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal(s).astype(np.dtype(d)) for s, d in zip(bench[0], bench[1])]
        try:
            result.bench = measured(device.measure_kernel(fn, inputs, _child.make_grid(job["grid"], Dialect.NKI)))
        except device.DeviceError as err:
            result.bench = Latency.failed(str(err), "DeviceError")
    result.seconds = time.monotonic() - start
    return result


def _own_source(fn: Any) -> list[str] | None:
    """The lines of the file (or notebook cell) that defined ``fn``: a student's own run quotes its own code."""
    import inspect
    import linecache

    try:
        inner = inspect.unwrap(getattr(fn, "func", fn))
        name = inner.__code__.co_filename
    except (AttributeError, TypeError, ValueError):
        return None
    lines = linecache.getlines(name)
    return [line.rstrip("\n") for line in lines] or None
