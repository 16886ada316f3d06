"""The course manifest (``nkilab/course/course.toml``) as typed records, and the stage tables rendered from it.

One source of truth for the course's shape: its stages in order, each stage's questions (kernel, grade cell,
points, speed tiers, the kinds of public and hidden case, the reference solution per dialect) and written answers.
The grading registry takes each question's points, tiers, title and reference from here
(``question_fields``); the READMEs and ``docs/index.md`` carry tables rendered from here between marker comments
(``make release`` regenerates them through ``write_tables``, ``make release-check`` fails when ``stale_tables``
finds one out of date); ``tests/test_manifest.py`` holds the lessons' grade cells, the registry's cases and the
example class to it.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from nkisim.api import Dialect

#: the course manifest: course.toml beside this module, or the file ``NKILAB_COURSE_MANIFEST`` names (an edited copy,
#: as a test uses to see grading follow it)
MANIFEST = Path(os.environ.get("NKILAB_COURSE_MANIFEST") or Path(__file__).with_name("course.toml"))
REPO = Path(__file__).resolve().parents[3]
#: the dialects a kernel may be written in (``nkisim.api.Dialect``: legacy ``import neuronxcc.nki``, SDK <= 2.29, and
#: NKI 0.6, ``import nki``, SDK >= 2.32), which the manifest names by their words (``legacy``, ``nki``); every
#: question's reference exists in each
DIALECTS = tuple(Dialect)


@dataclass(frozen=True)
class QuestionSpec:
    """One kernel question: the student writes ``<qid>.py`` defining ``<qid>``."""

    qid: str
    title: str
    grade_id: str  # the lesson's locked grade cell, e.g. "q1_grade"
    correctness: float
    speed: float
    public: tuple[str, ...]  # case kinds the public cases cover (dtypes and named kinds)
    hidden: tuple[str, ...]
    solutions: dict[Dialect, str]  # dialect -> reference kernel under solutions/
    relaxed: str | None = None  # the question whose reference is this one's relaxed speed reference
    #: the heading of the lesson section that teaches this kernel's speed (speed feedback points there)
    speed_lesson: str = ""

    @property
    def kernel(self) -> str:
        return f"{self.qid}.py"

    @property
    def points(self) -> float:
        return self.correctness + self.speed


@dataclass(frozen=True)
class WrittenSpec:
    """A written answer (markdown), marked by a TA."""

    grade_id: str
    points: float


@dataclass(frozen=True)
class StageSpec:
    number: int
    slug: str  # "06_tensor_engine_matmul": notebooks/<slug>.py, assignments/<slug>.ipynb, solutions/<slug>/
    title: str
    learn: str
    questions: tuple[QuestionSpec, ...]
    written: tuple[WrittenSpec, ...]

    @property
    def points(self) -> float:
        return sum(q.points for q in self.questions) + sum(w.points for w in self.written)

    @property
    def kernel_points(self) -> float:
        return sum(q.points for q in self.questions)


@dataclass(frozen=True)
class Course:
    target: str
    stub_dialect: Dialect
    full_tier: float
    partial_tier: float
    stages: tuple[StageSpec, ...]

    def questions(self) -> dict[str, QuestionSpec]:
        return {q.qid: q for s in self.stages for q in s.questions}

    def stage_of(self, qid: str) -> StageSpec:
        return next(s for s in self.stages if any(q.qid == qid for q in s.questions))


class ManifestError(ValueError):
    pass


def _question(raw: dict[str, Any], where: str) -> QuestionSpec:
    known = {"qid", "title", "grade_id", "correctness", "speed", "public", "hidden", "solutions", "relaxed",
             "speed_lesson"}
    if set(raw) - known:
        raise ManifestError(f"{where}: unknown keys {sorted(set(raw) - known)}")
    try:
        sols = {dialect(d): str(path) for d, path in dict(raw["solutions"]).items()}
    except ManifestError as err:
        raise ManifestError(f"{where}: solutions: {err}") from None
    if not sols:
        raise ManifestError(f"{where}: solutions must name a reference in each dialect")
    return QuestionSpec(str(raw["qid"]), str(raw["title"]), str(raw["grade_id"]), float(raw["correctness"]),
                        float(raw["speed"]), tuple(raw["public"]), tuple(raw["hidden"]), sols, raw.get("relaxed"),
                        str(raw.get("speed_lesson", "")))


def parse(text: str) -> Course:
    """The manifest in ``text`` (TOML), checked: stage numbers from the slugs in order, question ids unique."""
    data = tomllib.loads(text)
    stages = []
    for i, raw in enumerate(data["stage"], 1):
        slug = str(raw["slug"])
        if not re.fullmatch(rf"0*{i}_[a-z0-9_]+", slug):
            raise ManifestError(f"stage {i} has slug {slug!r}: slugs are NN_name, in order")
        qs = tuple(_question(q, f"{slug}/{q.get('qid')}") for q in raw.get("question", []))
        written = tuple(WrittenSpec(str(w["grade_id"]), float(w["points"])) for w in raw.get("written", []))
        stages.append(StageSpec(i, slug, str(raw["title"]), str(raw["learn"]), qs, written))
    missing = [k for k in ("target", "stub_dialect", "full_tier", "partial_tier") if k not in data]
    if missing:  # grading reads each of them from here and nowhere else
        raise ManifestError(f"the course manifest must set {', '.join(missing)}")
    try:
        stub = dialect(data["stub_dialect"])
    except ManifestError as err:
        raise ManifestError(f"stub_dialect: {err}") from None
    course = Course(str(data["target"]), stub, float(data["full_tier"]), float(data["partial_tier"]), tuple(stages))
    qids = [q.qid for s in course.stages for q in s.questions]
    if len(set(qids)) != len(qids):
        raise ManifestError("a question id appears twice")
    for q in course.questions().values():
        if q.relaxed is not None and q.relaxed not in qids:
            raise ManifestError(f"{q.qid}: relaxed reference {q.relaxed!r} is not a question")
        if set(q.hidden) - set(q.public):  # check() runs the public cases: it must see every kind grading does
            raise ManifestError(f"{q.qid}: hidden case kinds {sorted(set(q.hidden) - set(q.public))} have no public "
                                "case")
    return course


#: the dialects as course files, folders and command lines spell them (``Dialect.word``)
DIALECT_WORDS = tuple(d.word for d in Dialect)


def dialect(word: object) -> Dialect:
    """A dialect as a course file, a lesson cell's metadata, a recipe or a command line names it (its word:
    ``legacy``, ``nki``), or the ``Dialect`` itself; ``ManifestError`` for anything else."""
    if isinstance(word, Dialect):
        return word
    if word not in DIALECT_WORDS:
        raise ManifestError(f"{word!r} is not one of the dialects: {', '.join(DIALECT_WORDS)}")
    return Dialect.named(word)


@functools.cache
def course() -> Course:
    return parse(MANIFEST.read_text())


def question_fields(qid: str) -> dict[str, Any]:
    """The registry's fields that come from the manifest, for ``Question(**question_fields(qid), ...)``."""
    c = course()
    q = c.questions()[qid]
    stage = next(s for s in c.stages if q in s.questions)
    lesson = f"stage {stage.number}, section \u201c{q.speed_lesson}\u201d" if q.speed_lesson else ""
    return {"qid": q.qid, "title": q.title, "function": q.qid, "solution": q.solutions[Dialect.LEGACY],
            "solution_nki": q.solutions.get(Dialect.NKI, ""),
            "correctness_points": q.correctness, "speed_points": q.speed, "full_tier": c.full_tier,
            "partial_tier": c.full_tier if q.relaxed else c.partial_tier, "relaxed": q.relaxed,
            "speed_lesson": lesson}


# --------------------------------------------------------------------------- the rendered tables


def _pts(x: float) -> str:
    return f"{x:g}"


def _kernels(stage: StageSpec) -> str:
    return ", ".join(f"`{q.qid}`" for q in stage.questions)


def _questions_with_points(stage: StageSpec) -> str:
    parts = [f"`{q.qid}` ({_pts(q.points)})" for q in stage.questions]
    parts += [f"written ({_pts(w.points)})" for w in stage.written]
    return ", ".join(parts)


def _tiers(q: QuestionSpec, c: Course) -> str:
    if not q.speed:
        return "none: graded on correctness only (the next question grades its speed)"
    if q.relaxed:
        return (f"full ≤ {c.full_tier:g}× `{q.qid}`'s reference, half ≤ {c.full_tier:g}× `{q.relaxed}`'s "
                "(the relaxed reference)")
    return f"full ≤ {c.full_tier:g}×, half ≤ {c.partial_tier:g}×"


def table_notebooks(c: Course) -> str:
    rows = ["| file | stage | you write |", "|---|---|---|"]
    rows += [f"| `{s.slug}.py` | {s.learn} | {_kernels(s)} |" for s in c.stages]
    return "\n".join(rows)


def table_assignments(c: Course) -> str:
    rows = ["| notebook | stage | questions (points) |", "|---|---|---|"]
    rows += [f"| `{s.slug}.ipynb` | {s.number}. {s.title} | {_questions_with_points(s)} |" for s in c.stages]
    total = sum(s.points for s in c.stages)
    rows.append(f"| | **total** | **{_pts(total)}** ({_pts(sum(s.kernel_points for s in c.stages))} autograded) |")
    return "\n".join(rows)


def table_solutions(c: Course) -> str:
    rows = ["| stage | reference kernel | correctness + speed | speed tiers (estimated latency vs the reference) | "
            "hidden cases cover |", "|---|---|---|---|---|"]
    for s in c.stages:
        for q in s.questions:
            files = ", ".join(f"`{p}` ({d})" for d, p in q.solutions.items())
            rows.append(f"| {s.number} | {files} | {_pts(q.correctness)} + {_pts(q.speed)} | {_tiers(q, c)} | "
                        f"{', '.join(q.hidden)} |")
    return "\n".join(rows)


def table_docs_index(c: Course) -> str:
    rows = ["| stage | you learn | you write |", "|---|---|---|"]
    rows += [f"| [{s.number}. {s.title}](lessons/{s.slug}.html) | {s.learn} | {_kernels(s)} |" for s in c.stages]
    return "\n".join(rows)


def table_example_class(c: Course, handed_in: dict[str, dict[str, str]] | None = None) -> str:
    """Which student hands in which stage (``handed_in``: student -> stage slug -> short story), one column per
    stage; the example class's coverage, rendered from its ``submissions.json``."""
    handed_in = handed_in if handed_in is not None else example_class_coverage()
    head = "| student | " + " | ".join(str(s.number) for s in c.stages) + " |"
    rows = [head, "|---|" + "---|" * len(c.stages)]
    for student, stages in handed_in.items():
        rows.append(f"| {student} | " + " | ".join(stages.get(s.slug, "") for s in c.stages) + " |")
    return "\n".join(rows)


def example_class_coverage(class_dir: Path = REPO / "autograder" / "example_class") -> dict[str, dict[str, str]]:
    """student -> stage -> "✓" (the lesson's answers), "●" (some answers of their own) or "✗" (a broken notebook)."""
    data = json.loads((class_dir / "submissions.json").read_text())["students"]
    out: dict[str, dict[str, str]] = {}
    for student, entry in data.items():
        out[student] = {}
        for stage, recipe in entry.items():
            if not stage[:2].isdigit():
                continue
            own = bool(recipe.get("answers")) or recipe.get("default") == "stub" or any(
                recipe.get(k) for k in ("add", "delete", "copy", "edit", "strip_metadata", "extra_files", "file_name"))
            mark = "✗" if recipe.get("corrupt") else "●" if own else "✓"
            which = dialect(recipe.get("dialect", course().stub_dialect))  # the coverage table marks the other one
            out[student][stage] = mark + ("" if which is course().stub_dialect else " legacy"
                                          if which is Dialect.LEGACY else " 0.6")
    return out


def example_class_size(c: Course, class_dir: Path = REPO / "autograder" / "example_class") -> str:
    """How many students the example class has ("18 students"), counted in its roster: a number in the prose
    that cannot go stale when a student is added."""
    rows = (class_dir / "roster.csv").read_text().splitlines()[1:]
    return f"{sum(bool(r.strip()) for r in rows)} students"


#: file (relative to the repository) -> the tables it carries, each between ``<!-- course:NAME -->`` and
#: ``<!-- /course:NAME -->`` (on lines of their own for a table; inside a sentence for a count)
TABLES: dict[str, dict[str, Callable[[Course], str]]] = {
    "notebooks/README.md": {"stages": table_notebooks},
    "assignments/README.md": {"stages": table_assignments},
    "solutions/README.md": {"references": table_solutions},
    "docs/index.md": {"stages": table_docs_index},
    "autograder/example_class/README.md": {"coverage": table_example_class, "class_size": example_class_size},
    "README.md": {"class_size": example_class_size},
}


def _region(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- course:{name} -->)(\n?)(.*?)(<!-- /course:{name} -->)", re.S)


def render_file(text: str, tables: dict[str, Callable[[Course], str]], c: Course, where: str = "") -> str:
    """``text`` with each marked region replaced by its table (or, for a region within a line, its words); a
    missing marker is an error."""
    for name, render in tables.items():
        pattern = _region(name)
        if not pattern.search(text):
            raise ManifestError(f"{where}: no <!-- course:{name} --> ... <!-- /course:{name} --> region")
        def fill(m: re.Match[str], rendered: str = render(c)) -> str:
            return m.group(1) + m.group(2) + rendered + m.group(2) + m.group(4)

        text = pattern.sub(fill, text)
    return text


def stale_tables(repo: Path = REPO, c: Course | None = None) -> list[str]:
    """The files whose marked tables differ from the manifest's."""
    c = c or course()
    out = []
    for rel, tables in TABLES.items():
        path = repo / rel
        text = path.read_text()
        if render_file(text, tables, c, rel) != text:
            out.append(rel)
    return out


def write_tables(repo: Path = REPO, c: Course | None = None) -> list[str]:
    """Rewrite every marked table from the manifest; returns the files changed."""
    c = c or course()
    changed = []
    for rel, tables in TABLES.items():
        path = repo / rel
        text = path.read_text()
        new = render_file(text, tables, c, rel)
        if new != text:
            path.write_text(new)
            changed.append(rel)
    return changed
