"""``check(question_id, kernel)``: the student's self-check on the public cases, in plain words.

Prints only to stdout.  Order of findings: the run (errors, timeout), then per case shape/dtype and
the first mismatching tile and index, then -- only if every public case is right -- the modelled
latency against the speed tiers.  Hidden cases run at grading time, not here.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from dataclasses import dataclass

from nkilab.evaluate import Evaluation, evaluate
from nkilab.questions import get

PUBLIC_SEED = 0
#: a per-hidden-case line of a grading report (``case_lines``); feedback shows them only as a count
HIDDEN_CASE_LINE = re.compile(r"^\s*\[(ok  |FAIL)\] hidden case \d+/\d+\b.*$")


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

    def wrong_tiles_figure(self) -> object | None:
        """The picture of which tiles of the first wrong output are wrong (None when no output was wrong)."""
        ev = self.evaluation
        for i, cr in enumerate(ev.cases, 1):
            if not cr.verdict.ok and cr.verdict.wrong_map is not None:
                from nkilab import figures

                wm = cr.verdict.wrong_map
                return figures.wrong_tiles(wm.fractions, wm.shape, f"Which tiles are wrong: public case {i}, "
                                           f"{cr.case.describe(ev.question.arg_names)}, output {list(wm.shape)}")
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


def case_lines(ev: Evaluation) -> list[str]:
    """One line per case; when every case failed with the same message, one line for all of them."""
    q, n = ev.question, len(ev.cases)
    messages = {cr.verdict.message for cr in ev.cases}
    if n > 1 and len(messages) == 1 and not ev.cases[0].verdict.ok:
        return [f"  [FAIL] all {n} cases: {messages.pop()}"]
    lines = []
    for i, cr in enumerate(ev.cases, 1):
        mark = "ok  " if cr.verdict.ok else "FAIL"
        kind = "hidden" if cr.hidden else "public"
        lines.append(f"  [{mark}] {kind} case {i}/{n}  {cr.case.describe(q.arg_names)}: {cr.verdict.message}")
    return lines


def speed_lines(ev: Evaluation) -> list[str]:
    q = ev.question
    c = q.speed_case
    if ev.latency_us is None:
        return [f"Speed: {ev.speed_note}"] if ev.speed_note else []
    line = (f"Speed, {ev.latency_label()}, on {c.describe(q.arg_names)}: {ev.latency_us:.1f} us")
    if ev.reference_us is None:
        return [line + (f" ({ev.speed_note})" if ev.speed_note else "")]
    verdict = {"full": "full speed points", "partial": "partial speed points (half)",
               "none": "no speed points yet"}[ev.tier or "none"]
    return [line + f"; reference solution {ev.reference_us:.1f} us -> {ev.ratio:.2f}x the reference.",
            f"  Tiers: full points at <= {q.full_tier:g}x, half at <= {q.partial_tier:g}x. You would get: {verdict}."]


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
    print(f"check {q.qid} -- {q.title} ({name})")
    if ev.problem:
        print(f"  Problem: {ev.problem}")
    for line in case_lines(ev):
        print(line)
    passed = ev.correct
    # the timed run is the question's speed case, as public as the others: a kernel that fails it (a load too
    # big for SBUF at that size) is not passing, whatever the smaller cases said
    timed_failed = passed and ev.latency_us is None and bool(ev.speed_note)
    if passed:
        for line in speed_lines(ev):
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


def hide_hidden_cases(text: str) -> str:
    """Replace the per-hidden-case lines of a grading report by one count, in place of the first of them."""
    lines = text.splitlines(True)
    hidden = [line for line in lines if HIDDEN_CASE_LINE.match(line)]
    if not hidden:
        return text
    passed = sum("[ok  ]" in line for line in hidden)
    summary = (f"  [{'ok  ' if passed == len(hidden) else 'FAIL'}] hidden cases: {passed} of {len(hidden)} passed "
               "(their sizes and values are not shown in feedback)\n")
    out: list[str] = []
    for line in lines:
        if HIDDEN_CASE_LINE.match(line):
            if summary:
                out.append(summary)
                summary = ""
            continue
        out.append(line)
    return "".join(out)


def truncate_text(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: the head and the tail (where a report's total is) are kept."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - head - tail:,} characters truncated]\n{text[len(text) - tail:]}"
