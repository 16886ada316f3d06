"""The timed run (a question's speed case, usually its largest) runs only once every other case has passed: a
kernel with a failing case earns no speed points (``nkilab.judge.evaluate``), so grading does not pay for its
largest run.  Its program is fingerprinted for similarity all the same, as the timed case's program always was.
And no case's inputs are drawn before a run reads them: a kernel that does not trace (a stub) draws none, a wrong
one not the timed run's.

In process (``run_inprocess``, how ``check`` runs a kernel object and the suite grades mutants) for both a right and
a wrong kernel, and once through the sandbox (``run_module``: the executor's jobs are split around the gate)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from course_testing import solution_variant, write

from nkilab.course.questions import QUESTIONS
from nkilab.isolate.replies import RunStatus
from nkilab.isolate.runner import run_inprocess, run_module
from nkilab.judge.evaluate import TIMED_INDEX, case_data, evaluate
from nkilab.kernels.modules import load_kernel

SEED = 7
Q = QUESTIONS["vector_add_stream"]
RIGHT = solution_variant("01_vector_add", "vector_add_stream")
WRONG = solution_variant("01_vector_add", "vector_add_stream", ("nl.add(a_tile, b_tile)", "nl.subtract(a_tile, b_tile)"))


def _cases() -> tuple[list[list[np.ndarray]], int]:
    """The question's public cases and its timed run (last), as ``evaluate`` builds them."""
    runs = [list(case_data(Q, c, SEED, i).args) for i, c in enumerate(Q.public)]
    runs.append(list(case_data(Q, Q.speed_case, SEED, TIMED_INDEX).args))
    return runs, len(runs) - 1


def test_a_wrong_kernel_is_not_timed_and_a_right_one_is(tmp_path: Path) -> None:
    for body, correct in ((RIGHT, True), (WRONG, False)):
        fn = load_kernel(write(tmp_path, f"k{correct}.py", body), Q.function)
        ev = evaluate(Q, fn, hidden=True, seed=SEED)
        assert ev.correct is correct
        timed = ev.run.cases[-1]
        assert (timed.status is RunStatus.OK) is correct, timed
        assert (ev.latency_us is not None) is correct
        assert ev.program is not None  # fingerprinted either way


def test_the_gate_sees_every_other_case_and_decides(tmp_path: Path) -> None:
    fn = load_kernel(write(tmp_path, "right.py", RIGHT), Q.function)
    cases, timed = _cases()
    asked: list[list[RunStatus]] = []

    def no(cruns) -> bool:
        asked.append([c.status for c in cruns])
        return False

    gated = run_inprocess(fn, Q.function, cases, timed=timed, gate=no)
    assert asked == [[RunStatus.OK] * timed + [RunStatus.NOT_RUN]]  # every case but the timed one had run
    assert gated.cases[timed].status is RunStatus.NOT_RUN and gated.cases[timed].timing is None
    whole = run_inprocess(fn, Q.function, cases, timed=timed)  # no gate: one job, as before
    assert whole.cases[timed].status is RunStatus.OK and whole.cases[timed].timing is not None
    assert gated.program == whole.program  # the timed program's fingerprints, though it did not run
    for a, b in zip(gated.cases[:timed], whole.cases[:timed]):
        assert np.array_equal(a.output, b.output)
    yes = run_inprocess(fn, Q.function, cases, timed=timed, gate=lambda cruns: True)
    assert yes.cases[timed].timing == whole.cases[timed].timing and yes.program == whole.program


@pytest.mark.processes
def test_through_the_sandbox_the_timed_job_waits_for_the_gate(tmp_path: Path) -> None:
    path = write(tmp_path, "vector_add_stream.py", RIGHT)
    cases, timed = _cases()
    results = {}
    for answer in (False, True):
        results[answer] = run_module(path, Q.function, cases, timed=timed, sandboxed=True, timeout=120,
                                     gate=lambda cruns, answer=answer: answer)
    for answer, run in results.items():
        assert not run.crashed and not run.timed_out and run.garbled is None, run
        assert all(c.status is RunStatus.OK for c in run.cases[:timed])
        assert (run.cases[timed].status is RunStatus.OK) is answer
        assert run.program is not None
    assert results[False].program == results[True].program


STUB = """
@nki.jit
def vector_add_stream(a, b):
    raise NotImplementedError("not written yet")
"""


def _drawn(seed: int) -> list[bool]:
    """Which of the question's runs (public, hidden, mirrors, timed: as evaluate builds them) drew their inputs."""
    from nkilab.course.questions import hidden_cases
    from nkilab.judge.evaluate import MIRROR_MAX_ELEMENTS

    cases = list(Q.public) + list(hidden_cases(Q))
    data = [case_data(Q, c, seed, i) for i, c in enumerate(cases)]
    mirrors = [case_data(Q, cases[i], seed, i, negated=True) for i, d in enumerate(data)
               if d.largest <= MIRROR_MAX_ELEMENTS]
    return [d.drawn for d in data + mirrors + [case_data(Q, Q.speed_case, seed, TIMED_INDEX)]]


@pytest.mark.parametrize(("body", "seed"), [(STUB, 424201), (WRONG, 424202), (RIGHT, 424203)])
def test_inputs_are_drawn_only_for_the_runs_that_read_them(tmp_path: Path, body: str, seed: int) -> None:
    fn = load_kernel(write(tmp_path, f"k{seed}.py", body), Q.function)
    ev = evaluate(Q, fn, hidden=True, seed=seed)
    drawn = _drawn(seed)
    if body is STUB:  # its trace raised: nothing ran, nothing drawn
        assert not ev.correct and not any(drawn)
    elif body is WRONG:  # every case but the timed one
        assert not ev.correct and all(drawn[:-1]) and not drawn[-1]
    else:
        assert ev.correct and all(drawn)
