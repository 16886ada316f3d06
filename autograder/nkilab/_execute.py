"""The executor process: run validated instruction programs on the grader's own inputs.

Run in a fork of the grading process (``nkilab.runner``; or as ``python -m nkilab._execute`` where a different
interpreter runs the kernels), never with student code: its job holds the programs the sandboxed child traced
(bytes of JSON, untrusted) and the inputs the parent drew.  Each
program is parsed and validated (``nkisim.api``: the trust boundary) and executed on every case of its
signature; the answer is the same ``case`` messages the device path sends (facts + the output array, the timed
case with its cost-model estimate).  It is a process of its own, under the same hard limits and timeout as the
child, so a valid but enormous program runs out of its memory or time budget there, not in the grader.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any

import numpy as np

from nkilab._child import MESSAGE_CHARS, OUTPUT_BUDGET, error_info
from nkilab._io import read_message, write_message


def _program(text: np.ndarray, target: str | None) -> Any:
    from nkisim import api

    program = api.program_from_json(text.tobytes())
    api.validate(program, target)
    return program


def _output(out: Any) -> tuple[dict, np.ndarray | None]:
    if isinstance(out, (tuple, list)) and len(out) == 1:
        out = out[0]
    if not isinstance(out, np.ndarray):
        return {"status": "bad_return", "returned": type(out).__name__}, None
    return {"status": "ok"}, out


def run_cases(job: dict, texts: list[np.ndarray], cases: list[list[np.ndarray]], emit: Any,
              source: str | None = None) -> None:
    """Execute each case's program (``job["case_program"]``; None: the parent reports that case) and emit it.
    ``source``: the student's file on this machine, for the line of code an error message quotes."""
    from nkisim import api

    programs: dict[int, Any] = {}
    for i, args in enumerate(cases):
        k = job["case_program"][i]
        if k is None:
            continue
        start = time.perf_counter()
        try:
            if k not in programs:
                programs[k] = _program(texts[k], job.get("target"))
            launch = api.execute(programs[k], args, target=job.get("target"))
            facts, out = _output(launch.outputs)
            if i == job.get("timed") and facts["status"] == "ok":
                facts["timing"] = {"latency_us": float(launch.latency_us()), "target": launch.target,
                                   "simulator": True}
        except Exception as err:  # the program's error (an op's check, or the validator's verdict)
            info = error_info(err, None)
            if source and "line" in info and "code" in info and not info["code"]:
                import linecache

                info["code"] = linecache.getline(source, int(info["line"])).strip()[:MESSAGE_CHARS]
            facts, out = {"status": "error", "error": info}, None
        facts["seconds"] = time.perf_counter() - start
        emit({"kind": "case", "index": i, **facts}, [out] if out is not None else [])


def main() -> int:
    warnings.simplefilter("ignore")
    job, arrays = read_message(sys.stdin.buffer, [OUTPUT_BUDGET]) or ({}, [])
    channel = os.fdopen(int(job["channel"]), "wb")
    os.set_inheritable(channel.fileno(), False)

    def emit(header: dict, out: list[np.ndarray]) -> None:
        write_message(channel, header, out)

    n = int(job["programs"])
    texts, k = arrays[:n], n
    cases = []
    for count in job["cases"]:
        cases.append(arrays[k:k + count])
        k += count
    run_cases(job, texts, cases, emit, job.get("source"))
    emit({"kind": "done"}, [])
    return 0


if __name__ == "__main__":
    sys.exit(main())
