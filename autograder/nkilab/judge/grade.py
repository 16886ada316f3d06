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
from typing import Any

from nkilab.course.questions import get
from nkilab.isolate import sandbox
from nkilab.judge import seeds
from nkilab.judge.evaluate import Evaluation, evaluate, grading_target, record
from nkilab.judge.results import MIME, Audience, GradeRecord, Problem, ProblemKind

#: set (to 1) by the grading tools (make grade, Gradescope): reports then list every hidden case for the TA.  A
#: student running a grade cell in their own notebook sees the hidden cases only as a count, as in feedback.
GRADING_ENV = "NKILAB_GRADING"


def grading_seed() -> int:
    """The run's seed: ``NKILAB_SEED`` when a TA pins it by hand, else the TA-only seed file ``make grade`` names
    (``nkilab.judge.seeds``), otherwise fresh randomness (a student's own grade cell, each Gradescope submission)."""
    env = os.environ.get("NKILAB_SEED")
    if env:
        return int(env)
    found = seeds.read_seed(os.environ.get(seeds.SEED_FILE_ENV))
    return found if found is not None else secrets.randbits(32)


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
    record: GradeRecord | None = None

    def text(self, audience: Audience | None = None) -> str:
        """The report as printed: every hidden case for the grading tools, a count of them for a student."""
        assert self.record is not None
        return self.record.render_text(audience or report_audience())


def report_audience() -> Audience:
    """Who reads a printed report: the TA under the grading tools (``NKILAB_GRADING``), else the student."""
    return Audience.TA if os.environ.get(GRADING_ENV) else Audience.STUDENT


def grade_report(question_id: str, module_path: str | os.PathLike | None = None, *, seed: int | None = None,
                 target: str | None = None, timeout: float | None = None, verbose: bool = True) -> GradeReport:
    """Grade one question.  A kernel file runs in the OS sandbox; if that cannot run here, the question scores 0
    with the reason, unless unsandboxed grading was asked for (``NKILAB_NO_SANDBOX=1``), which is then said
    at the top of the report.  A kernel object (already imported by the caller) is graded in this process."""
    q = get(question_id)
    module_path = q.default_module if module_path is None else module_path
    seed = grading_seed() if seed is None else seed
    timeout = grading_timeout() if timeout is None else timeout
    out = sys.stdout if verbose else open(os.devnull, "w")  # noqa: SIM115
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(out):
            warnings.simplefilter("ignore")
            # a kernel file runs in the sandbox; a kernel object is the caller's, already in this process
            sandboxed = sandbox.require() if not callable(module_path) else False
            ev = evaluate(q, module_path, hidden=True, seed=seed, target=target or grading_target(q), timeout=timeout,
                          sandboxed=sandboxed)
            # in proportion to the cases passed (after a timeout or crash, the cases that finished right)
            cpts = q.correctness_points * (ev.passed / len(ev.cases)) if ev.cases else 0.0
            spts = q.speed_points * ev.speed_fraction() if ev.correct else 0.0
            rec = record(ev, correctness=cpts, speed=spts, sandboxed=sandboxed,
                         warnings=() if sandboxed or callable(module_path) else (sandbox.WARNING,))
            report = GradeReport(q.qid, rec.points, q.points, rec.correctness, rec.speed, ev, seed, rec)
            print(report.text(), end="", file=out)
    except Exception as err:  # a harness failure must not zero the cell through stderr
        why = f"grading failed ({type(err).__name__}); 0 points -- tell the course staff"
        rec = GradeRecord(q.qid, q.title, 0.0, q.points, 0.0, q.correctness_points, 0.0, q.speed_points,
                          problem=Problem(ProblemKind.HARNESS, why))
        print(f"{q.qid}: grading failed ({type(err).__name__}: {err}); 0 points -- tell the course staff.", file=out)
        report = GradeReport(q.qid, 0.0, q.points, 0.0, 0.0, None, seed, rec)
    finally:
        if out is not sys.stdout:
            out.close()
    MADE.append(rec)
    if verbose:
        _display(rec)
    return report


#: the records this process made since its reader last cleared it: a grade cell run by the grader
#: (``nkilab.autograde.cells.run_grader_cell``) keeps the ones it made, as a kernel's grade cell displays them
MADE: list[GradeRecord] = []


def _display(rec: GradeRecord) -> None:
    """In a notebook, the record goes into the cell's outputs too (under ``MIME``, invisible): feedback and the
    TA's table are rendered from it, never from the printed text."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    if shell is None:
        return
    from IPython.display import display

    display({MIME: rec.to_json(), "text/plain": ""}, raw=True)


def grade(question_id: str, module_path: str | os.PathLike | None = None, **kwargs: Any) -> float:
    """Points for ``question_id`` (a float, which nbgrader records as partial credit)."""
    return grade_report(question_id, module_path, **kwargs).points
