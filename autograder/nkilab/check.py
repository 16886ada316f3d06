"""``check(question_id, kernel)``: the student's self-check on the public cases, in plain words.

Prints only to stdout.  Order of findings: the run (errors, timeout), then per case shape/dtype and
the first mismatching tile and index, then -- only if every public case is right -- the modelled
latency against the speed tiers.  Hidden cases run at grading time, not here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from dataclasses import dataclass

from nkilab.evaluate import Evaluation, evaluate, record
from nkilab.questions import get
from nkilab.results import Audience

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


def check(question_id: str, kernel: str | os.PathLike | object | None = None, *, timeout: float | None = None,
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
    passed = ev.correct
    if passed:
        for line in rec.speed_lines():
            print("  " + line)
        print("Public checks passed; hidden tests run at grading.")
    else:
        if q.rules:
            print(f"  Reminder: {q.rules}.")
        print("Not passing yet: fix the first problem above and run the %%writefile cell and this check again.")
    return CheckResult(q.qid, passed, ev)


def truncate_text(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: the head and the tail (where a report's total is) are kept."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - head - tail:,} characters truncated]\n{text[len(text) - tail:]}"
