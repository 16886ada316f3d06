"""``grade(question_id, module_path) -> float``: the points for one kernel question (nbgrader grade cells).

Correctness over the public and hidden cases (inputs drawn from a grading-time seed) earns
``correctness_points`` in proportion to the cases passed; speed points need *every* case right, then
come from the latency tier relative to the reference solution on the same target.  Everything prints
to stdout and no exception escapes: a grade cell must never write to stderr (nbgrader zeroes it).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import warnings
from dataclasses import dataclass

from nkilab import sandbox
from nkilab.check import case_lines, hide_hidden_cases, speed_lines
from nkilab.evaluate import Evaluation, evaluate, grading_target
from nkilab.questions import get

#: set (to 1) by the grading tools (make grade, Gradescope): reports then list every hidden case for the TA.  A
#: student running a grade cell in their own notebook sees the hidden cases only as a count, as in feedback.
GRADING_ENV = "NKILAB_GRADING"


def grading_seed() -> int:
    """``NKILAB_SEED`` when set (reproducible regrades), otherwise fresh randomness per grading run."""
    env = os.environ.get("NKILAB_SEED")
    return int(env) if env else secrets.randbits(32)


def grading_timeout() -> float | None:
    """``NKILAB_TIMEOUT_S`` when set (a class-wide limit per kernel run), otherwise each question's own."""
    env = os.environ.get("NKILAB_TIMEOUT_S")
    return float(env) if env else None


@dataclass
class GradeReport:
    question: str
    points: float
    max_points: float
    correctness: float
    speed: float
    evaluation: Evaluation | None
    seed: int


def grade_report(question_id: str, module_path: str | os.PathLike | None = None, *, seed: int | None = None,
                 target: str | None = None, timeout: float | None = None, verbose: bool = True) -> GradeReport:
    """Grade one question.  The kernel runs in the OS sandbox; if that cannot run here, the question scores 0
    with the reason, unless unsandboxed grading was asked for (``NKILAB_NO_SANDBOX=1``), which is then said
    at the top of the report."""
    q = get(question_id)
    module_path = q.default_module if module_path is None else module_path
    seed = grading_seed() if seed is None else seed
    timeout = grading_timeout() if timeout is None else timeout
    out = sys.stdout if verbose else open(os.devnull, "w")  # noqa: SIM115
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(out):
            warnings.simplefilter("ignore")
            sandboxed = sandbox.require()
            if not sandboxed:
                print(sandbox.WARNING, file=out)
            ev = evaluate(q, module_path, hidden=True, seed=seed, target=target or grading_target(q), timeout=timeout,
                          sandboxed=sandboxed)
            # in proportion to the cases passed (after a timeout or crash, the cases that finished right)
            cpts = q.correctness_points * (ev.passed / len(ev.cases)) if ev.cases else 0.0
            spts = q.speed_points * ev.speed_fraction() if ev.correct else 0.0
            report = GradeReport(q.qid, round(cpts + spts, 4), q.points, round(cpts, 4), round(spts, 4), ev, seed)
            _print(report, out)
    except Exception as err:  # a harness failure must not zero the cell through stderr
        print(f"{q.qid}: grading failed ({type(err).__name__}: {err}); 0 points -- tell the course staff.", file=out)
        report = GradeReport(q.qid, 0.0, q.points, 0.0, 0.0, None, seed)
    finally:
        if out is not sys.stdout:
            out.close()
    return report


def _print(r: GradeReport, out) -> None:
    ev = r.evaluation
    assert ev is not None
    q = ev.question
    print(f"{q.qid} -- {q.title}", file=out)
    if ev.problem:
        print(f"  Problem: {ev.problem}", file=out)
    n = len(ev.cases)
    lines = "".join(line + "\n" for line in case_lines(ev))
    print(lines if os.environ.get(GRADING_ENV) else hide_hidden_cases(lines), end="", file=out)
    print(f"  Correctness: {ev.passed}/{n} cases -> {r.correctness:g}/{q.correctness_points:g} points", file=out)
    if ev.correct:
        for line in speed_lines(ev):
            print("  " + line, file=out)
        print(f"  Speed: {r.speed:g}/{q.speed_points:g} points", file=out)
    else:
        print(f"  Speed: 0/{q.speed_points:g} points (speed counts only when every case is correct)", file=out)
    print(f"Score: {r.points:g} / {r.max_points:g}", file=out)


def grade(question_id: str, module_path: str | os.PathLike | None = None, **kwargs) -> float:
    """Points for ``question_id`` (a float, which nbgrader records as partial credit)."""
    return grade_report(question_id, module_path, **kwargs).points
