"""``check(question_id, kernel)``: the student's self-check on the public cases, in plain words.

Prints only to stdout.  Order of findings: the run (errors, timeout), then per case shape/dtype and
the first mismatching tile and index, then -- only if every public case is right -- the modelled
latency against the speed tiers.  Hidden cases run at grading time, not here.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nkilab.course.questions import get
from nkilab.judge.evaluate import Evaluation, evaluate, record
from nkilab.judge.results import Audience

PUBLIC_SEED = 0


@dataclass
class CheckResult:
    """What ``check`` found.  ``passed`` means every public case matched."""

    question: str
    passed: bool
    evaluation: Evaluation

    @property
    def latency_us(self) -> float | None:
        return self.evaluation.latency_us

    @property
    def reference_us(self) -> float | None:
        return self.evaluation.reference_us

    @property
    def tier(self) -> str | None:
        return self.evaluation.tier

    def __repr__(self) -> str:
        state = "passed" if self.passed else "not passed yet"
        return f"<check {self.question}: public checks {state}>"

    def wrong_tiles_figure(self) -> Any | None:  # a matplotlib Figure
        """The picture of which tiles of the first wrong output are wrong (None when no output was wrong)."""
        ev = self.evaluation
        for i, cr in enumerate(ev.cases, 1):
            if not cr.verdict.ok and cr.verdict.wrong_map is not None:
                from nkilab.course import figures

                wm = cr.verdict.wrong_map
                return figures.wrong_tiles(wm.fractions, wm.shape, f"Which tiles are wrong: public case {i}, "
                                           f"{cr.case.describe(ev.question.arg_names)}, output {list(wm.shape)}",
                                           wm.tile_rows)
        return None


def _show_in_notebook(result: CheckResult) -> None:
    """In a notebook, draw the wrong tiles under the text (a script or test asks ``wrong_tiles_figure()``)."""
    if "ipykernel" not in sys.modules:
        return
    fig = result.wrong_tiles_figure()
    if fig is not None:
        import matplotlib.pyplot as plt
        from IPython.display import display

        display(fig)
        plt.close(fig)


def check(question_id: str, kernel: str | os.PathLike | Any | None = None, *, timeout: float | None = None,
          target: str | None = None) -> CheckResult:
    """Run the public cases of ``question_id`` on ``kernel`` and print what is right or wrong.

    ``kernel`` is the path of the file your ``%%writefile`` cell wrote (default: ``<function>.py``)
    or a kernel object defined in the notebook.  A file runs in a separate process with a timeout.
    """
    q = get(question_id)
    kernel = q.default_module if kernel is None else kernel
    with warnings.catch_warnings(), contextlib.redirect_stderr(sys.stdout):
        warnings.simplefilter("ignore")
        ev = evaluate(q, kernel, hidden=False, seed=PUBLIC_SEED, target=target, timeout=timeout)
    name = ev.module if not callable(kernel) else f"kernel {getattr(kernel, '__name__', '?')}"
    rec = record(ev, correctness=0.0, speed=0.0)
    print(f"check {q.qid} -- {q.title} ({name})")
    if ev.problem:
        print(f"  Problem: {ev.problem}")
    for line in rec.case_lines(Audience.STUDENT):
        print(line)
    for line in undefined_branch_lines(kernel):
        print(line)
    passed = ev.correct
    # the timed run is the question's speed case, as public as the others: a kernel that fails it (a load too
    # big for SBUF at that size) is not passing, whatever the smaller cases said
    timed_failed = passed and ev.latency_us is None and bool(ev.speed_note)
    if passed:
        for line in rec.speed_lines():
            print("  " + line)
    if timed_failed:
        passed = False
        print(f"Not passing yet: the public cases match, but the timed run on {q.speed_case.describe(q.arg_names)} "
              "failed (see Speed above), so this kernel would get no speed points and may fail hidden cases of "
              "that size. Fix it and run the %%writefile cell and this check again.")
    elif passed:
        print("Public checks passed; hidden tests run at grading.")
    else:
        if q.rules:
            print(f"  Reminder: {q.rules}.")
        print("Not passing yet: fix the first problem above and run the %%writefile cell and this check again.")
    result = CheckResult(q.qid, passed, ev)
    if not ev.correct:
        _show_in_notebook(result)
    return result


def undefined_branch_lines(kernel: Any) -> list[str]:
    """A warning per ``if`` on an ``nl.affine_range`` loop variable in the kernel's source: the compiler accepts it
    but its result is undefined (``nkisim.api.AFFINE_BRANCH_ADVICE``).  The kernel runs in another process with
    warnings off, so the file is read here."""
    from nkisim import api

    try:
        if callable(kernel):
            lines, first = inspect.getsourcelines(getattr(kernel, "func", kernel))
            source = textwrap.dedent("".join(lines))
        else:
            source, first = Path(kernel).read_text(), 1
    except (OSError, TypeError, UnicodeDecodeError):
        return []
    return [f"  Warning: line {b.line} (`{b.code}`): control flow depends on the nl.affine_range loop variable "
            f"`{b.variable}`: {api.AFFINE_BRANCH_ADVICE}." for b in api.affine_branches(source, first)]


def truncate_text(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: the head and the tail (where a report's total is) are kept."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - head - tail:,} characters truncated]\n{text[len(text) - tail:]}"
