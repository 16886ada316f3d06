"""The executor process: run instruction programs that came back from a sandboxed child on the grader's inputs.

Run as ``python -m nkilab.isolate._execute`` inside a bubblewrap sandbox of its own (``nkilab.isolate.runner``): the programs it
runs are hostile data (the child that traced them ran the student's code), so the process that parses and
executes them holds nothing worth reading -- no course directory, no environment, no seed, no kernel file, only
the simulator's code.  Its job names, per program, the request the grader made (target, launch grid, input
shapes and dtypes); each program is parsed, validated (``nkisim.api.validate``: the form) and checked against
that request (``nkisim.api.check_request``: the launch, inputs and outputs are the question's), then executed on
every case of its signature.  The answer is one ``case`` message per case: facts and the output array, the timed
case with its cost-model estimate.  Errors are reported as facts only (class, error id, a line number, the
message); nothing a program names is ever opened, and the parent maps a line number to the student's file from
text it already holds.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any

import numpy as np

from nkilab.isolate._child import make_grid, memory_cap_mb
from nkilab.isolate._io import read_message, write_message
from nkilab.isolate.facts import HELD
from nkisim.api import MAX_PROGRAM_BYTES  # the format's cap on program text; the grader reads no more than this

__all__ = ["MAX_PROGRAM_BYTES", "MESSAGE_CHARS", "error_facts", "run_cases", "timing_facts"]

#: characters of an error message kept
MESSAGE_CHARS = 2000


def error_facts(err: BaseException) -> dict:
    """What the parent may learn of an exception: its class, NKI error id, the line it names, its message.
    The location's file is the program's word and is dropped; only the line number (an int) is kept."""
    info: dict[str, Any] = {"type": type(err).__name__[:60], "message": str(err).strip()[:MESSAGE_CHARS]}
    capped_mb = memory_cap_mb()
    if isinstance(err, MemoryError) and capped_mb:
        info["message"] += (f" (a kernel run gets at most {capped_mb} MiB of memory here, and the course's "
                            "kernels need far less: is a shape or a loop much larger than intended?)")
    error_id = getattr(err, "error_id", None)
    info["error_id"] = str(error_id)[:80] if error_id else None
    loc = getattr(err, "nki_location", None)
    if isinstance(loc, tuple) and len(loc) == 2 and type(loc[1]) is int and 0 < loc[1] < 10**7:
        info["line"] = loc[1]
    return info


def _program(text: np.ndarray, request: dict) -> Any:
    """Parse, validate and check one program against the grader's request (``ProgramError`` otherwise)."""
    from nkisim import api

    if text.dtype != np.uint8 or text.ndim != 1 or text.size > MAX_PROGRAM_BYTES:
        raise api.ProgramError(f"a program must be at most {MAX_PROGRAM_BYTES} bytes of text")
    program = api.program_from_json(text.tobytes())
    target = request.get("target") or program.target  # None: a student's own check, on their default target
    api.validate(program, target)
    # either dialect answers a question: the program's selects the launch rules it is held to (both are the
    # course's), and its grid is the request's grid in that dialect (nc dimensions as logical cores for NKI 0.6)
    dialect = program.dialect
    api.check_request(program, inputs=[(tuple(s), d) for s, d in request["inputs"]],
                      grid=make_grid(request.get("grid"), dialect), target=target, dialect=dialect)
    return program


def timing_facts(launch: Any) -> dict:
    """The timed run's estimate, and where its time went (read at the pipe into ``nkilab.isolate.facts.SpeedFacts``):
    engine busy times, DMA transfers and bytes, instructions, and the costliest lines by number (the parent quotes
    its own copy)."""
    from nkisim import api

    est = launch.estimate()
    lines = [[loc[1], us] for loc, us in est.top_lines(5) if isinstance(loc, tuple) and type(loc[1]) is int]
    return {"latency_us": float(est.total_us), "target": launch.target, "simulator": True,
            "facts": {"busy_us": {k: float(v) for k, v in est.engine_busy_us.items()},
                      "dma_queues": int(api.target(launch.target).params.dma.queues),
                      "cores": max(len(est.core_us), 1),
                      "dma_count": int(est.dma_count), "dma_bytes": int(est.dma_bytes),
                      "instructions": int(est.instructions), "lines": lines,
                      "held": [[r.mechanism, r.line, r.count, r.us] for r in est.reasons
                               if r.us > 0 and r.mechanism in HELD][:5]}}


def _features(program: Any) -> list[int] | None:
    """The program's similarity fingerprints (``nkilab.kernels.similarity``), or None: they are a lead for a TA, never part of
    the grade, so no failure here may touch the case's verdict."""
    from nkilab.kernels.similarity import program_features

    try:
        return program_features(program)
    except Exception:
        return None


def _output(out: Any) -> tuple[dict, np.ndarray | None]:
    if isinstance(out, (tuple, list)) and len(out) == 1:
        out = out[0]
    if not isinstance(out, np.ndarray):
        return {"status": "bad_return", "returned": type(out).__name__[:40]}, None
    return {"status": "ok"}, out


def run_cases(job: dict, texts: list[np.ndarray], cases: list[list[np.ndarray]], emit: Any) -> None:
    """Execute each case's program (``job["case_program"]``; None: the parent reports that case) and emit it.

    ``job["requests"][k]`` is what the grader asked program ``k`` to be (target, grid, inputs)."""
    from nkisim import api

    programs: dict[int, Any] = {}
    refused: dict[int, dict] = {}
    #: the case whose program is fingerprinted for similarity (``nkilab.kernels.similarity``): the timed one, else the first
    shown = job.get("timed") if job.get("timed") is not None else 0
    early: list[int] | None = None  # a phased job's fingerprints (``nkilab.isolate.runner._phase``), sent with its first case
    if "fingerprint" in job:  # a job of some cases only: the program named is fingerprinted whether or not it runs here
        shown, slot = -1, job["fingerprint"]
        if type(slot) is int and 0 <= slot < len(texts):
            try:
                programs[slot] = _program(texts[slot], job["requests"][slot])
                early = _features(programs[slot])
            except Exception as err:
                refused[slot] = error_facts(err)
    for i, args in enumerate(cases):
        k = job["case_program"][i]
        if k is None:
            continue
        start = time.perf_counter()
        features: list[int] | None = None
        try:
            if k in refused:
                raise api.ProgramError(refused[k]["message"])
            if k not in programs:
                try:
                    programs[k] = _program(texts[k], job["requests"][k])
                except Exception as err:
                    refused[k] = error_facts(err)
                    raise
            if i == shown:
                features = _features(programs[k])
            elif early is not None:
                features, early = early, None
            launch = api.execute(programs[k], args, target=programs[k].target)
            facts, out = _output(launch.outputs)
            if i == job.get("timed") and facts["status"] == "ok":
                facts["timing"] = timing_facts(launch)
        except Exception as err:  # the program's error (an op's check, or the validator's verdict)
            facts, out = {"status": "error", "error": error_facts(err)}, None
        facts["seconds"] = time.perf_counter() - start
        if features is not None:
            facts["program"] = features
        emit({"kind": "case", "index": i, **facts}, [out] if out is not None else [])


def _job_cases(job: dict, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    """The job's program texts and its cases' inputs, in the order the parent wrote them."""
    n = int(job["programs"])
    texts, k = arrays[:n], n
    cases = []
    for count in job["cases"]:
        cases.append(arrays[k:k + count])
        k += count
    return texts, cases


def main() -> int:
    warnings.simplefilter("ignore")
    job, arrays = read_message(sys.stdin.buffer, [1 << 31]) or ({}, [])
    channel = os.fdopen(int(job["channel"]), "wb")
    os.set_inheritable(channel.fileno(), False)

    def emit(header: dict, out: list[np.ndarray]) -> None:
        write_message(channel, header, out)

    texts, cases = _job_cases(job, arrays)
    run_cases(job, texts, cases, emit)
    emit({"kind": "done"}, [])
    return 0


def serve() -> int:
    """The executor as a fork server: one process per notebook graded (``nkilab.isolate.processes.ExecutorServer``),
    so a question pays a fork instead of a Python start-up and the simulator's import (about 0.3 s each).

    The first message names the results channel; every later one is a job, run in a forked worker -- a fresh copy of
    this process, the simulator imported and nothing of an earlier job in it -- that answers on the channel as
    ``main`` does and exits. The server then says how the worker ended (``{"kind": "ended", "code": ...}``), which
    is how the parent knows a job is over even when the worker died without a word. A worker lowers its own CPU
    limit to the job's. At the end of its input the server exits; the parent kills it on any trouble."""
    import resource

    from nkisim import api

    warnings.simplefilter("ignore")
    api.target("trn2")  # parse the targets once, before any fork
    hello, _ = read_message(sys.stdin.buffer, [1 << 20]) or ({}, [])
    channel = os.fdopen(int(hello["channel"]), "wb")
    os.set_inheritable(channel.fileno(), False)
    while (msg := read_message(sys.stdin.buffer, [1 << 31])) is not None:
        job, arrays = msg
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                cpu = int(job.get("cpu_s") or 0)
                if cpu > 0:
                    used = int(resource.getrusage(resource.RUSAGE_SELF).ru_utime) + 1
                    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
                    limit = cpu + used if hard == resource.RLIM_INFINITY else min(cpu + used, hard)
                    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit))

                def emit(header: dict, out: list[np.ndarray]) -> None:
                    write_message(channel, header, out)

                texts, cases = _job_cases(job, arrays)
                run_cases(job, texts, cases, emit)
                emit({"kind": "done"}, [])
                channel.flush()
                code = 0
            finally:
                os._exit(code)
        del job, arrays
        _, status = os.waitpid(pid, 0)
        write_message(channel, {"kind": "ended", "code": os.waitstatus_to_exitcode(status)}, [])
        channel.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["--serve"] else main())
