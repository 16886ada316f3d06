"""A grade as a typed record: what it is made of, serialised to JSON, rendered for each reader.

``nkilab.judge.grade`` builds one ``GradeRecord`` per question; everything downstream reads the record, never printed
text: the grade cell's report (``render_text``), the feedback students read (rendered from the record saved in
the cell's outputs under ``MIME``, see ``nkilab.autograde.nbgrader_plugins``), the TA's table and CSV
(``summary``), and Gradescope's ``results.json``.  Two readers see different things:

* ``Audience.TA`` sees every case with its inputs and the full message;
* ``Audience.STUDENT`` sees public cases in full and, for hidden cases, only their kinds (as the course manifest
  names them: "float16", "ragged rows") and the grader's own verdict category (wrong values, wrong dtype or shape,
  the error's class, did not run) -- never their sizes or values, and never a word the kernel's processes said
  about them.

Every string in a record that came from a child process was cleaned when it arrived (``nkilab.isolate.runner``: one
line, no control characters, capped); renderers for HTML escape it, and ``csv_cell`` defuses spreadsheet formulas.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

# the records read at the pipe, which a grade record holds (re-exported: renderers and tests name them from here)
from nkilab.isolate.facts import CostlyLine as CostlyLine
from nkilab.isolate.facts import ErrorFacts, SpeedFacts
from nkilab.isolate.facts import Held as Held

SCHEMA = "nkilab-grade/2"  # 2: each case carries its kinds
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
class CaseRecord:
    number: int  # 1-based, in report order
    hidden: bool
    inputs: str  # e.g. "a, b: float32 [128, 512]" (a hidden case's is shown to the TA only)
    outcome: Outcome
    message: str  # the verdict in words (a hidden case's is shown to the TA only)
    error: ErrorFacts | None = None
    #: the case's kinds (``Question.kind_names``: its dtype, then "ragged rows", ...): what a student may learn of a
    #: hidden case, since the public cases cover every kind (a failing hidden case differs from them on values)
    kinds: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.PASSED

    def category(self) -> str:
        """The verdict as a student may read it for a hidden case."""
        if self.outcome is Outcome.ERROR and self.error is not None:
            return f"raised {self.error.type}"
        return self.outcome.value

    def label(self) -> str:
        """The case as a student may read it: ``public case 2`` / ``hidden case 5 (float16, ragged rows)``."""
        kinds = f" ({', '.join(self.kinds)})" if self.kinds else ""
        return f"{'hidden' if self.hidden else 'public'} case {self.number}{kinds}"


#: an engine as the lessons name it
ENGINE_NAMES = {"pe": "TensorE", "act": "ScalarE", "dve": "VectorE", "pool": "GpSimd", "dma": "DMA queues"}
#: what a bottleneck on each engine usually asks for
ENGINE_ADVICE = {
    "dma": "move more bytes per transfer (whole 128-partition tiles, long free-dimension chunks) and fewer transfers",
    "dve": "give VectorE fewer, larger instructions (bigger tiles), or move elementwise work to ScalarE's activation",
    "act": "give ScalarE fewer, larger instructions, or fuse steps into one activation (bias and scale included)",
    "pool": "keep GpSimd for what only it does: its elementwise throughput is the lowest of the engines",
    "pe": "keep the Tensor Engine fed: load each stationary tile once and stream many moving tiles past it",
}


@dataclass(frozen=True)
class SpeedRecord:
    """The speed verdict: the kernel's latency on the timed case, the reference's, and the tier it earns; and
    where both runs' time went, for feedback that says why."""

    case: str  # the timed case's inputs (public)
    label: str  # "estimate (nkisim cost model, trn2)" or "measured on trn2.48xlarge (nrtpy benchmark, ...)"
    latency_us: float | None = None
    reference_us: float | None = None
    tier: str | None = None  # full | partial | none
    full_tier: float = 1.2
    partial_tier: float = 2.0
    note: str | None = None
    kernel: SpeedFacts | None = None
    reference: SpeedFacts | None = None
    lesson: str = ""
    #: a question with two references (CS149's tiers): half the points within partial_tier x this one's latency
    relaxed: str | None = None  # the question whose reference solution is the relaxed reference
    relaxed_us: float | None = None

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
    #: the fingerprints of the kernel's instruction program, from the grader's own executor (``nkilab.kernels.similarity``):
    #: what the class report compares hand-ins by; never shown to a student
    program: tuple[int, ...] = ()

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
                                     _s(c["message"]), ErrorFacts.from_json(c.get("error")), _strings(c["kinds"]))
                          for c in data.get("cases") or ())
            p = data.get("problem")
            problem = Problem(ProblemKind(p["kind"]), _s(p["text"])) if p else None
            t = data.get("timing")
            timing = SpeedRecord(_s(t["case"]), _s(t["label"]), _f(t.get("latency_us")), _f(t.get("reference_us")),
                                 t.get("tier") if t.get("tier") in ("full", "partial", "none") else None,
                                 float(t["full_tier"]), float(t["partial_tier"]),
                                 _s(t["note"]) if t.get("note") else None, SpeedFacts.from_json(t.get("kernel")),
                                 SpeedFacts.from_json(t.get("reference")), _s(t.get("lesson") or ""),
                                 _s(t["relaxed"]) if t.get("relaxed") else None, _f(t.get("relaxed_us"))) if t else None
            return cls(_s(data["question"]), _s(data["title"]), float(data["points"]), float(data["max_points"]),
                       float(data["correctness"]), float(data["correctness_max"]), float(data["speed"]),
                       float(data["speed_max"]), cases, problem, timing, bool(data.get("sandboxed", True)),
                       tuple(_s(w) for w in data.get("warnings") or ()), _features(data.get("program")))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"not a grade record ({type(err).__name__})") from None

    def dumps(self) -> str:
        return json.dumps(self.to_json())

    # ------------------------------------------------------------------ text
    def render_text(self, audience: Audience) -> str:
        """The grade cell's report: every case for the TA; hidden cases as a count, kinds and categories for a student."""
        lines = list(self.warnings)
        lines.append(f"{self.question} -- {self.title}")
        if self.problem is not None:
            lines.append(f"  Problem: {self.problem.text}")
        lines += self.case_lines(audience)
        n = len(self.cases)
        lines.append(f"  Correctness: {self.passed}/{n} cases -> {_g(self.correctness)}/{_g(self.correctness_max)} "
                     "points")
        if not self.speed_max:
            pass  # graded on correctness only: no speed line
        elif self.correct:
            lines += ["  " + line for line in self.speed_lines(graded=True)]
            lines.append(f"  Speed: {_g(self.speed)}/{_g(self.speed_max)} points")
        else:
            lines.append(f"  Speed: 0/{_g(self.speed_max)} points (speed counts only when every case is correct)")
        lines.append(f"Score: {_g(self.points)} / {_g(self.max_points)}")
        return "\n".join(lines) + "\n"

    def case_lines(self, audience: Audience) -> list[str]:
        """One line per case a reader may see; a student sees hidden cases as a count, and each failing one by its kinds
        and category."""
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
            lines += [f"         {c.label()}: {c.category()}" for c in hidden if not c.ok]
        return lines

    def speed_lines(self, graded: bool = False) -> list[str]:
        """The speed verdict and why: ``graded`` words it as the grade it is (the grade cell's report and the
        feedback); otherwise as what the kernel would get (``check()``, before grading)."""
        t = self.timing
        if t is None:
            return []
        if t.latency_us is None:
            return [f"Speed: {t.note}"] if t.note else []
        line = f"Speed, {t.label}, on {t.case}: {t.latency_us:.1f} us"
        if t.reference_us is None or t.ratio is None:
            return [line + (f" ({t.note})" if t.note else "")]
        verdict = {"full": "full speed points", "partial": "partial speed points (half)",
                   "none": "no speed points" if graded else "no speed points yet"}[t.tier or "none"]
        tiers = f"full points at <= {t.full_tier:g}x, half at <= {t.partial_tier:g}x"
        if t.relaxed is not None:
            relaxed = "unavailable" if t.relaxed_us is None else f"{t.relaxed_us:.1f} us"
            tiers = (f"full points at <= {t.full_tier:g}x the reference, half at <= {t.partial_tier:g}x the relaxed "
                     f"reference ({t.relaxed}'s reference solution: {relaxed})")
        return [line + f"; reference solution {t.reference_us:.1f} us -> {t.ratio:.2f}x the reference.",
                f"  Tiers: {tiers}. " + (f"Graded: {verdict}." if graded else f"You would get: {verdict}."),
                *self.why_lines()]

    def why_lines(self) -> list[str]:
        """Why the kernel takes the time it does, beside the reference: counts, bytes, each engine's share of the
        span, the bottleneck with what usually fixes it, and the kernel's costliest lines."""
        t = self.timing
        if t is None or t.kernel is None or t.latency_us is None:
            return []
        k, r = t.kernel, t.reference
        out = ["  Where the time goes (estimates): " + ("yours vs the reference" if r else "your kernel")]

        def row(name: str, mine: str, theirs: str) -> str:
            return f"    {name:<22}{mine:>11}" + (f"{theirs:>11}" if r else "")  # 48 columns: a phone's width

        out.append(row("DMA transfers", f"{k.dma_count:,}", f"{r.dma_count:,}" if r else ""))
        out.append(row("bytes moved by DMA", _bytes(k.dma_bytes), _bytes(r.dma_bytes) if r else ""))
        out.append(row("instructions", f"{k.instructions:,}", f"{r.instructions:,}" if r else ""))
        for engine, name in ENGINE_NAMES.items():
            mine = k.share(engine, t.latency_us)
            theirs = r.share(engine, t.reference_us or 0.0) if r else 0.0
            if mine >= 0.01 or theirs >= 0.01:
                out.append(row(f"{name} busy", f"{100 * mine:.0f}%", f"{100 * theirs:.0f}%" if r else ""))
        neck = k.bottleneck(t.latency_us)
        busy = k.share(neck, t.latency_us)
        out.append(f"  Busiest: {ENGINE_NAMES[neck]}, {100 * busy:.0f}% of the span.")
        advice = []
        if r and k.dma_count > 2 * max(r.dma_count, 1):
            advice.append(f"{k.dma_count:,} DMA transfers against the reference's {r.dma_count:,}: every transfer pays "
                          "a fixed cost, so fewer, larger ones (whole 128-partition tiles, long chunks) are faster.")
        if r and k.dma_bytes > 1.5 * max(r.dma_bytes, 1):
            advice.append(f"{k.dma_bytes / max(r.dma_bytes, 1):.1f}x the reference's bytes through DMA: load each input "
                          "once and reuse the tile while it is on chip.")
        if r and k.instructions > 2 * max(r.instructions, 1):
            advice.append(f"{k.instructions:,} instructions against the reference's {r.instructions:,}: larger tiles "
                          "mean fewer instructions, each paying its fixed cost once.")
        waits = [h for h in k.held if h.mechanism == "sequential_range"]
        queued = [h for h in k.held if h.mechanism == "sequential_order"]
        held_us = sum(h.us for h in waits + queued)
        sequential = bool(waits or queued) and held_us >= 0.05 * t.latency_us  # the engines wait on the loop's order
        if sequential:
            said = []
            if waits:
                said.append(f"keep their accesses to a tensor made outside the loop in program order: "
                            f"{sum(h.count for h in waits):,} instructions "
                            f"({', '.join(f'line {n}' for n in sorted({h.line for h in waits})[:3])}) waited for an "
                            "earlier iteration's access to another part of it")
            if queued:
                said.append(f"keep their instructions in order on each engine: {sum(h.count for h in queued):,} "
                            f"({', '.join(f'line {n}' for n in sorted({h.line for h in queued})[:3])}) waited behind "
                            "earlier work while their engine had idle time they could have used")
            advice.append(f"Your sequential_range loops {'; and they '.join(said)}. The compiler \"does not try to "
                          "re-order or parallelize the executions of loops\" declared sequential; use nl.affine_range "
                          "where iterations do not depend on each other, so one iteration's work overlaps the next's.")
        inserted = [h for h in k.held if h.mechanism == "inserted_transpose"]
        if inserted and sum(h.us for h in inserted) >= 0.05 * t.latency_us:  # TensorE time the compiler added
            advice.append(f"Your nl.matmul calls without transpose_x=True "
                          f"({', '.join(f'line {n}' for n in sorted({h.line for h in inserted})[:3])}) each get a "
                          f"transpose of x inserted on the Tensor Engine: {sum(h.count for h in inserted):,} "
                          f"transposes, {sum(h.us for h in inserted):.1f} us of its time. nl.matmul(x, y) \"lowers to "
                          "nc_matmul(transpose(x), y)\"; keep x with its contraction dimension on the partitions "
                          "(transpose it once, where it is made) and pass transpose_x=True.")
        if busy < 0.6 and (t.ratio or 0) > t.full_tier and not sequential:
            same = r is not None and not advice
            shared = ", ".join(f"line {n}" for n in k.shared[:3])
            advice.append(("The same work as the reference, spread over more time: " if same else
                           "No engine is busy most of the time: ") + "the engines wait on each other. Let the loads, "
                          "compute and stores of different tiles overlap" + (
                              f": the tile made outside the loop ({shared}) is overwritten in every iteration, so "
                              "each iteration waits for the last one to finish with it; allocate it inside the loop "
                              "body, so iterations do not share one buffer." if shared else "."))
        if not advice and busy >= 0.6 and (t.ratio or 0) > t.full_tier:
            advice.append(f"{ENGINE_NAMES[neck]} is the bottleneck: {ENGINE_ADVICE[neck]}.")
        out += [f"  Why: {a}" for a in advice]
        if k.lines:  # each line's engine time, summed over its instructions: they run at once, so it overlaps
            out.append("  Your costliest lines: " + "; ".join(
                f"line {c.line} (`{c.code}`) {c.us:.1f} us" if c.code else f"line {c.line} {c.us:.1f} us"
                for c in k.lines[:3]) + f" (engine busy time of each line's instructions: lines run at the same "
                f"time, so these overlap and may add up to more than the kernel's {t.latency_us:.1f} us).")
        if t.lesson:
            out.append(f"  See {t.lesson}.")
        return out

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
                if first.hidden and audience is Audience.STUDENT:
                    parts.append(f"first wrong: {first.label()}: {first.category()}")
                else:
                    parts.append(f"first wrong: {'hidden' if first.hidden else 'public'} case {first.number} "
                                 f"({first.message})")
        t = self.timing
        if self.correct and t is not None and t.ratio is not None:
            parts.append(f"latency {t.ratio:.2f}x the reference's, {t.label} -> {_g(self.speed)}/{_g(self.speed_max)} "
                         "speed points")
        elif self.correct and t is not None and t.note:
            parts.append(t.note)
        elif not self.correct and self.cases and self.problem is None and self.speed_max:
            parts.append("no speed points until every case is right")
        return "; ".join(parts)


def _s(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):  # (a list in JSON; a tuple in ``to_json``'s dict before dumping)
        raise TypeError("expected a list")
    return tuple(_s(v) for v in value)


def _f(value: Any) -> float | None:
    if value is None:
        return None
    x = float(value)
    if not math.isfinite(x):
        raise ValueError("not a finite number")
    return x


def _features(value: Any) -> tuple[int, ...]:
    """A record's program fingerprints: sorted distinct non-negative integers below 2**48 (``nkilab.kernels.similarity``)."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or len(value) > 4096:
        raise TypeError("expected a list of fingerprints")
    if not all(type(x) is int and 0 <= x < 1 << 48 for x in value) or any(a >= b for a, b in zip(value, value[1:])):
        raise ValueError("not fingerprints")
    return tuple(value)


def _bytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB" if n >= 2**10 else f"{n} B"


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
