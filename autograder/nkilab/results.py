"""A grade as a typed record: what it is made of, serialised to JSON, rendered for each reader.

``nkilab.grade`` builds one ``GradeRecord`` per question; everything downstream reads the record, never printed
text: the grade cell's report (``render_text``), the feedback students read (rendered from the record saved in
the cell's outputs under ``MIME``, see ``nkilab.nbgrader_plugins``), the TA's table and CSV
(``summary``), and Gradescope's ``results.json``.  Two readers see different things:

* ``Audience.TA`` sees every case with its inputs and the full message;
* ``Audience.STUDENT`` sees public cases in full and, for hidden cases, only the grader's own verdict category
  (wrong values, wrong dtype or shape, the error's class, did not run) -- never their sizes or values, and never
  a word the kernel's processes said about them.

Every string in a record that came from a child process was cleaned when it arrived (``nkilab.runner``: one
line, no control characters, capped); renderers for HTML escape it, and ``csv_cell`` defuses spreadsheet formulas.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

SCHEMA = "nkilab-grade/1"
#: the MIME type under which a grade cell's output carries its record
MIME = "application/vnd.nkilab.grade+json"


class Audience(str, Enum):
    STUDENT = "student"
    TA = "ta"


class Outcome(str, Enum):
    """A case's verdict category: what a student may learn about a hidden case."""

    PASSED = "passed"
    WRONG_VALUES = "wrong values"
    WRONG_SHAPE = "wrong dtype or shape"
    ERROR = "raised an error"
    NO_ARRAY = "returned no array"
    NOT_RUN = "did not run (time-out or crash)"


class ProblemKind(str, Enum):
    """A whole-run problem, in the grader's own categories."""

    MISSING = "missing file"
    REFUSED = "refused by the screen"
    IMPORT = "import error"
    TIMEOUT = "timed out"
    GARBLED = "malformed results"
    CRASHED = "process died"
    HARNESS = "grading failed"


@dataclass(frozen=True)
class ErrorFacts:
    """An exception as the grader reports it: class, NKI error id, the student's line and its code, message."""

    type: str
    message: str = ""
    error_id: str | None = None
    line: int | None = None
    code: str | None = None


@dataclass(frozen=True)
class CaseRecord:
    number: int  # 1-based, in report order
    hidden: bool
    inputs: str  # e.g. "a, b: float32 [128, 512]" (a hidden case's is shown to the TA only)
    outcome: Outcome
    message: str  # the verdict in words (a hidden case's is shown to the TA only)
    error: ErrorFacts | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.PASSED

    def category(self) -> str:
        """The verdict as a student may read it for a hidden case."""
        if self.outcome is Outcome.ERROR and self.error is not None:
            return f"raised {self.error.type}"
        return self.outcome.value


@dataclass(frozen=True)
class SpeedRecord:
    """The speed verdict: the kernel's latency on the timed case, the reference's, and the tier it earns."""

    case: str  # the timed case's inputs (public)
    label: str  # "estimate (nkisim cost model, trn2)" or "measured (...)"
    latency_us: float | None = None
    reference_us: float | None = None
    tier: str | None = None  # full | partial | none
    full_tier: float = 1.2
    partial_tier: float = 2.0
    note: str | None = None

    @property
    def ratio(self) -> float | None:
        if self.latency_us is None or not self.reference_us:
            return None
        return self.latency_us / self.reference_us


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    text: str  # the grader's sentence (with the student's own import error, which holds nothing hidden)


@dataclass(frozen=True)
class GradeRecord:
    question: str
    title: str
    points: float
    max_points: float
    correctness: float
    correctness_max: float
    speed: float
    speed_max: float
    cases: tuple[CaseRecord, ...] = ()
    problem: Problem | None = None
    timing: SpeedRecord | None = None
    sandboxed: bool = True
    warnings: tuple[str, ...] = field(default_factory=tuple)

    # ------------------------------------------------------------------ reading
    @property
    def passed(self) -> int:
        return sum(c.ok for c in self.cases)

    @property
    def correct(self) -> bool:
        return self.problem is None and bool(self.cases) and self.passed == len(self.cases)

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["schema"] = SCHEMA
        return data

    @classmethod
    def from_json(cls, data: Any) -> GradeRecord:
        """A record from its JSON form; ``ValueError`` for anything that is not one (checked field by field)."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError("not a grade record")
        try:
            cases = tuple(CaseRecord(int(c["number"]), bool(c["hidden"]), _s(c["inputs"]), Outcome(c["outcome"]),
                                     _s(c["message"]), _error(c.get("error"))) for c in data.get("cases") or ())
            p = data.get("problem")
            problem = Problem(ProblemKind(p["kind"]), _s(p["text"])) if p else None
            t = data.get("timing")
            timing = SpeedRecord(_s(t["case"]), _s(t["label"]), _f(t.get("latency_us")), _f(t.get("reference_us")),
                                 t.get("tier") if t.get("tier") in ("full", "partial", "none") else None,
                                 float(t["full_tier"]), float(t["partial_tier"]),
                                 _s(t["note"]) if t.get("note") else None) if t else None
            return cls(_s(data["question"]), _s(data["title"]), float(data["points"]), float(data["max_points"]),
                       float(data["correctness"]), float(data["correctness_max"]), float(data["speed"]),
                       float(data["speed_max"]), cases, problem, timing, bool(data.get("sandboxed", True)),
                       tuple(_s(w) for w in data.get("warnings") or ()))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"not a grade record ({type(err).__name__})") from None

    def dumps(self) -> str:
        return json.dumps(self.to_json())

    # ------------------------------------------------------------------ text
    def render_text(self, audience: Audience) -> str:
        """The grade cell's report: every case for the TA; hidden cases as a count and categories for a student."""
        lines = list(self.warnings)
        lines.append(f"{self.question} -- {self.title}")
        if self.problem is not None:
            lines.append(f"  Problem: {self.problem.text}")
        lines += self.case_lines(audience)
        n = len(self.cases)
        lines.append(f"  Correctness: {self.passed}/{n} cases -> {_g(self.correctness)}/{_g(self.correctness_max)} "
                     "points")
        if self.correct:
            lines += ["  " + line for line in self.speed_lines()]
            lines.append(f"  Speed: {_g(self.speed)}/{_g(self.speed_max)} points")
        else:
            lines.append(f"  Speed: 0/{_g(self.speed_max)} points (speed counts only when every case is correct)")
        lines.append(f"Score: {_g(self.points)} / {_g(self.max_points)}")
        return "\n".join(lines) + "\n"

    def case_lines(self, audience: Audience) -> list[str]:
        """One line per case a reader may see; a student sees hidden cases as a count and their categories."""
        n = len(self.cases)
        shown = [c for c in self.cases if audience is Audience.TA or not c.hidden]
        messages = {c.message for c in self.cases}
        if (audience is Audience.TA or len(shown) == n) and n > 1 and len(messages) == 1 and not self.cases[0].ok:
            return [f"  [FAIL] all {n} cases: {messages.pop()}"]
        lines = []
        for c in shown:
            mark = "ok  " if c.ok else "FAIL"
            kind = "hidden" if c.hidden else "public"
            lines.append(f"  [{mark}] {kind} case {c.number}/{n}  {c.inputs}: {c.message}")
        hidden = [c for c in self.cases if c.hidden]
        if audience is Audience.STUDENT and hidden:
            ok = sum(c.ok for c in hidden)
            lines.append(f"  [{'ok  ' if ok == len(hidden) else 'FAIL'}] hidden cases: {ok} of {len(hidden)} passed "
                         "(their sizes and values are not shown in feedback)")
            lines += [f"         hidden case {c.number}: {c.category()}" for c in hidden if not c.ok]
        return lines

    def speed_lines(self) -> list[str]:
        t = self.timing
        if t is None:
            return []
        if t.latency_us is None:
            return [f"Speed: {t.note}"] if t.note else []
        line = f"Speed, {t.label}, on {t.case}: {t.latency_us:.1f} us"
        if t.reference_us is None or t.ratio is None:
            return [line + (f" ({t.note})" if t.note else "")]
        verdict = {"full": "full speed points", "partial": "partial speed points (half)",
                   "none": "no speed points yet"}[t.tier or "none"]
        return [line + f"; reference solution {t.reference_us:.1f} us -> {t.ratio:.2f}x the reference.",
                f"  Tiers: full points at <= {t.full_tier:g}x, half at <= {t.partial_tier:g}x. You would get: "
                f"{verdict}."]

    def summary(self, audience: Audience = Audience.TA) -> str:
        """One line: why the question earned what it did (the TA's table and CSV)."""
        parts = []
        if self.problem is not None:
            parts.append(self.problem.text)
        if self.cases and not (self.problem is not None and self.passed == 0):
            parts.append(f"{self.passed}/{len(self.cases)} cases right")
            wrong = [c for c in self.cases if not c.ok]
            if wrong:
                first = wrong[0]
                what = first.category() if first.hidden and audience is Audience.STUDENT else first.message
                parts.append(f"first wrong: {'hidden' if first.hidden else 'public'} case {first.number} ({what})")
        t = self.timing
        if self.correct and t is not None and t.ratio is not None:
            parts.append(f"latency {t.ratio:.2f}x the reference's, {t.label} -> {_g(self.speed)}/{_g(self.speed_max)} "
                         "speed points")
        elif self.correct and t is not None and t.note:
            parts.append(t.note)
        elif not self.correct and self.cases and self.problem is None:
            parts.append("no speed points until every case is right")
        return "; ".join(parts)


def _s(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _f(value: Any) -> float | None:
    if value is None:
        return None
    x = float(value)
    if not math.isfinite(x):
        raise ValueError("not a finite number")
    return x


def _error(value: Any) -> ErrorFacts | None:
    if value is None:
        return None
    line = value.get("line")
    return ErrorFacts(_s(value["type"]), _s(value.get("message") or ""),
                      _s(value["error_id"]) if value.get("error_id") else None,
                      int(line) if line is not None else None, _s(value["code"]) if value.get("code") else None)


def _g(x: float) -> str:
    return f"{x:g}"


#: a spreadsheet reads a cell starting with one of these as a formula (CSV injection)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: object) -> str:
    """``value`` as a CSV cell no spreadsheet will evaluate: a leading formula character is quoted away with an
    apostrophe (the OWASP advice; leading blanks do not hide one), and control characters become spaces."""
    text = "" if value is None else str(value)
    text = "".join(" " if (ord(ch) < 32 and ch != "\t") or 0x7F <= ord(ch) <= 0x9F else ch for ch in text)
    return "'" + text if text.lstrip(" \t").startswith(FORMULA_START) else text
