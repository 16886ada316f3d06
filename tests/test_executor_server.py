"""The executor's fork server (``nkilab.isolate.processes.ExecutorServer``) and the bytecode the sandbox reads.

One sandboxed server per grading process runs every question's programs, each job in a fresh forked worker: the
same server answers question after question, a worker that dies without a word is reported as a crash while the
server lives on, and any trouble (a job past its deadline, a malformed answer) replaces the server before the next
job. The kernels here are honest; the hostile ones are ``tests/test_sandbox.py``'s, which now run through it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nkilab.course.questions import QUESTIONS
from nkilab.isolate import processes, sandbox
from nkilab.isolate.runner import run_module

pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("needs_sandbox")]


def _cases(n: int = 2) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(1)
    return [[rng.standard_normal((128, 512)).astype(np.float32) for _ in range(2)] for _ in range(n)]


def _pids() -> set[int]:
    return {s.proc.pid for s in processes.running_servers()}


@pytest.mark.processes
def test_one_server_answers_question_after_question():
    q = QUESTIONS["vector_add_naive"]
    cases = _cases()
    first = run_module(q.solution_path, q.function, cases, sandboxed=True, timeout=60)
    assert [c.status for c in first.cases] == ["ok", "ok"]
    np.testing.assert_allclose(first.cases[0].output, cases[0][0] + cases[0][1], rtol=1e-6)
    pids = _pids()
    assert pids
    again = run_module(q.solution_path, q.function, cases, sandboxed=True, timeout=60)
    assert [c.status for c in again.cases] == ["ok", "ok"] and not again.crashed
    assert _pids() == pids  # the same server, a new worker


def _server() -> processes.ExecutorServer:
    argv = [sys.executable, "-m", "nkilab.isolate._execute", "--serve"]
    limits = sandbox.Limits(cpu_s=60)
    return processes.ExecutorServer(lambda: sandbox.command(argv, None, sandbox.environment({}), limits), None, None,
                                    limits)


@pytest.mark.processes
def test_a_worker_that_dies_is_a_crash_and_the_server_lives_on():
    server = _server()
    try:
        budget = processes.Budget(1 << 20, 8)
        dead = server.run({"programs": 0}, [], time.monotonic() + 60, budget)  # no "cases": the worker raises
        assert dead.returncode == 1 and dead.messages == [] and not dead.timed_out
        pid = server.proc.pid
        empty = server.run({"programs": 0, "cases": [], "case_program": [], "requests": []}, [],
                           time.monotonic() + 60, budget)
        assert empty.returncode == 0 and [h["kind"] for h, _ in empty.messages] == ["done"]
        assert server.proc.pid == pid
    finally:
        server.stop()


@pytest.mark.processes
def test_trouble_replaces_the_server():
    server = _server()
    try:
        budget = processes.Budget(1 << 20, 8)
        job = {"programs": 0, "cases": [], "case_program": [], "requests": []}
        assert server.run(job, [], time.monotonic() + 60, budget).returncode == 0
        pid = server.proc.pid
        late = server.run(job, [], time.monotonic() - 1, budget)  # past its deadline before it starts
        assert late.timed_out and server.proc is None
        assert server.run(job, [], time.monotonic() + 60, budget).returncode == 0
        assert server.proc.pid != pid
        # a budget of no messages: the worker's "done" is one too many, so the stream is refused and the server goes
        assert server.run(job, [], time.monotonic() + 60, processes.Budget(1 << 20, 0)).garbled
        assert server.proc is None
    finally:
        server.stop()


def test_the_packages_the_sandbox_reads_are_compiled():
    sandbox.compile_packages()
    for name in ("nkisim", "nkilab"):
        source = Path(importlib.util.find_spec(name).origin)
        cached = Path(importlib.util.cache_from_source(str(source)))
        assert cached.exists() and os.stat(cached).st_mtime >= os.stat(source).st_mtime, cached
