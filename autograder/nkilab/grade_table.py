"""The class's grades as a TA reads them: one row per student, one column per assignment, then the why.

nbgrader's ``export`` has totals only, and it shows 0 both for "nothing handed in" and for "the grader
failed", so the scores here come from the gradebook per grade cell, joined with what happened on the way:
the intake status, the repairs the sanitizer made, a salvaged submission, and -- read from the grade record
(``nkilab.results``) the grade cell left in the autograded notebook, never from its printed text -- why a
kernel question lost points (cases failed, the latency ratio that set the speed tier, a time-out or crash).
Every cell of the CSVs goes through ``results.csv_cell``: a student's words cannot become a spreadsheet formula.
"""

from __future__ import annotations

import csv
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from nkilab.questions import QUESTION_CALL
from nkilab.results import MIME, Audience, GradeRecord, csv_cell
from nkilab.sanitize import grade_id, is_grade

CSV_FIELDS = ["student", "assignment", "notebook", "grade_id", "question", "kind", "points", "max_points",
              "status", "detail"]


@dataclass
class CellGrade:
    """One grade cell of one student's notebook."""

    notebook: str
    grade_id: str
    question: str
    kind: str  # "kernel" (autograded code cell) or "written" (manually graded answer)
    points: float | None  # None: waiting for a person
    max_points: float
    detail: str = ""
    record: GradeRecord | None = field(default=None, repr=False)  # a kernel cell's grade record, if it left one


@dataclass
class Submission:
    """One (student, assignment): how it was handed in and graded, and its grade cells."""

    student: str
    assignment: str
    status: str  # graded | salvaged | unreadable | missing | failed
    cells: list[CellGrade] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def auto(self) -> tuple[float, float]:
        kernel = [c for c in self.cells if c.kind == "kernel"]
        return sum(c.points or 0.0 for c in kernel), sum(c.max_points for c in kernel)

    def pending(self) -> int:
        return sum(c.points is None for c in self.cells)


def question_of(source: str, fallback: str) -> str:
    m = QUESTION_CALL.search(source)
    return m.group(1) if m else fallback


def why(rec: GradeRecord | None) -> str:
    """A one-line reason from a grade cell's record (what the TA's table and CSV show)."""
    return "no grading report (the grade cell did not finish)" if rec is None else rec.summary(Audience.TA)


def release_grade_cells(course: Path, assignment: str) -> dict[str, list[tuple[str, str, float, str]]]:
    """notebook -> [(grade_id, kind, points, question)] in notebook order, from ``release/<assignment>``."""
    found: dict[str, list[tuple[str, str, float, str]]] = {}
    for path in sorted((course / "release" / assignment).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        rows = []
        for cell in nb.cells:
            if is_grade(cell):
                gid = grade_id(cell) or "?"
                kind = "kernel" if cell.cell_type == "code" else "written"
                points = float(cell.metadata["nbgrader"].get("points", 0))
                rows.append((gid, kind, points, question_of(cell.source, gid) if kind == "kernel" else gid))
        found[path.stem] = rows
    return found


def _records(course: Path, student: str, assignment: str, notebook: str) -> dict[str, GradeRecord | None]:
    """grade id -> the record its grade cell left in the autograded notebook (None: it left none)."""
    path = course / "autograded" / student / assignment / f"{notebook}.ipynb"
    if not path.exists():
        return {}
    nb = nbformat.read(path, as_version=4)
    found: dict[str, GradeRecord | None] = {}
    for c in nb.cells:
        if c.cell_type != "code" or not is_grade(c):
            continue
        rec = None
        for out in c.get("outputs", []):
            if MIME in out.get("data", {}):
                try:
                    rec = GradeRecord.from_json(out["data"][MIME])
                except ValueError:
                    rec = None
        found[grade_id(c) or ""] = rec
    return found


def collect(course: Path, db_url: str, student: str, assignment: str, status: str, notes: list[str]) -> Submission:
    """Scores for one (student, assignment) from the gradebook (0 for each grade cell when not graded)."""
    return collect_all(course, db_url, [(student, assignment, status, notes)])[0]


def collect_all(course: Path, db_url: str, wanted: list[tuple[str, str, str, list[str]]]) -> list[Submission]:
    """``collect`` for each (student, assignment, status, notes) of ``wanted``, reading the gradebook and each
    assignment's released layout once for them all (a class's table is hundreds of submissions)."""
    layouts: dict[str, dict[str, list[tuple[str, str, float, str]]]] = {}
    subs = []
    with Gradebook(db_url) as gb:
        for student, assignment, status, notes in wanted:
            if assignment not in layouts:
                layouts[assignment] = release_grade_cells(course, assignment)
            subs.append(_collect_one(course, gb, layouts[assignment], student, assignment, status, notes))
    return subs


def _collect_one(course: Path, gb: Gradebook, layout: dict[str, list[tuple[str, str, float, str]]], student: str,
                 assignment: str, status: str, notes: list[str]) -> Submission:
    sub = Submission(student, assignment, status, notes=list(notes))
    for notebook, rows in layout.items():
        records = _records(course, student, assignment, notebook) if status in ("graded", "salvaged") else {}
        for gid, kind, points, question in rows:
            score: float | None = 0.0
            detail = ""
            if status in ("graded", "salvaged"):
                try:
                    g = gb.find_grade(gid, notebook, assignment, student)
                    score = None if g.needs_manual_grade and g.manual_score is None else g.score
                except MissingEntry:
                    score, detail = 0.0, "no grade recorded"
                if kind == "kernel":
                    detail = detail or why(records.get(gid))
                elif score is None:
                    detail = "answered: waiting for a TA"
                else:
                    detail = "not answered" if score == 0 else "graded by a TA"
            else:
                detail = status
            sub.cells.append(CellGrade(notebook, gid, question, kind, score, points, detail,
                                       records.get(gid) if kind == "kernel" else None))
    return sub


def _fmt(x: float) -> str:
    return f"{x:g}"


def _points(x: float) -> str:
    """Points as the grid shows them: at most two decimals (the CSVs keep every digit)."""
    return f"{round(x, 2):g}"


def cell_text(sub: Submission) -> str:
    if sub.status in ("unreadable", "missing", "failed"):
        return {"unreadable": "unreadable", "missing": "-", "failed": "FAILED"}[sub.status]
    got, total = sub.auto()
    mark = "*" if sub.status == "salvaged" else ""
    return f"{_points(got)}/{_points(total)}{mark}"


#: the width of a terminal the table fits (the grid, and every note and reason, wrapped)
WIDTH = 100
#: where a wrapped reason's further lines start
HANG = " " * 6


def wrapped(first: str, text: str) -> list[str]:
    """``first`` then ``text``, wrapped to ``WIDTH`` with the further lines hanging (no word is cut)."""
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=HANG, break_long_words=False,
                         break_on_hyphens=False) or [first.rstrip()]


def _grid(heads: list[str], rows: list[list[str]], gap: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows + [heads]) for i in range(len(heads))]
    lines = [gap.join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
    lines.append(gap.join("-" * w for w in widths))
    lines += [gap.join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return lines


def _short(assignments: list[str]) -> list[str] | None:
    """Column heads for a grid too wide with the assignments' names: their stage numbers (``01_vector_add`` ->
    ``01``), when every name has a distinct one."""
    numbers = [a.split("_", 1)[0] for a in assignments]
    if all(n.isdigit() for n in numbers) and len(set(numbers)) == len(numbers):
        return numbers
    return None


def table(subs: list[Submission], students: list[str], assignments: list[str]) -> str:
    """The per-student, per-assignment table of autograded (kernel) points, then what lost points and why: at most
    ``WIDTH`` columns (assignments by their numbers when their names would not fit, reasons wrapped), and no
    heading without lines under it."""
    by = {(s.student, s.assignment): s for s in subs}
    rows = []
    for st in students:
        row = [st]
        got = total = 0.0
        pending = 0
        for a in assignments:
            s = by.get((st, a))
            row.append(cell_text(s) if s else "-")
            if s:
                g, t = s.auto()
                got, total, pending = got + g, total + t, pending + s.pending()
        row += [f"{_points(got)}/{_points(total)}", f"{pending} to grade" if pending else ""]
        rows.append(row)
    lines = _grid(["student", *assignments, "kernels", "written"], rows)
    short = _short(assignments)
    legend = []
    if max(len(line) for line in lines) > WIDTH and short is not None:
        lines = _grid(["student", *short, "kernels", "written"], rows)
        if max(len(line) for line in lines) > WIDTH:  # (an "unreadable" in many columns): one space between
            lines = _grid(["student", *short, "kernels", "written"], rows, " ")
        legend = wrapped("", "Assignments by their numbers: " + ", ".join(assignments) + ".")
    lines += ["", *legend]
    lines += wrapped("", "x/y: autograded kernel points; * graded outside the notebook kernel (it died); - nothing "
                          "handed in; 'to grade': written answers waiting for a TA (nbgrader formgrader).")
    lost = [(s, c) for s in subs for c in s.cells
            if s.status in ("graded", "salvaged") and c.kind == "kernel" and (c.points or 0) < c.max_points]
    # column widths from the names present (assignment and question names grow with the course)
    who = max((len(s.student) for s in subs), default=6)
    what = max((len(s.assignment) for s in subs), default=22)
    which = max((len(c.question) for _, c in lost), default=18)
    if lost:
        lines += ["", "Kernel points lost, and why:"]
        for s, c in lost:
            lines += wrapped(f"  {s.student:<{who}} {s.assignment:<{what}} {c.question:<{which}} "
                              f"{_fmt(c.points or 0)}/{_fmt(c.max_points)}  ", c.detail)
    noted = []
    for s in subs:
        if s.status == "missing" and s.notes in ([], ["nothing handed in"]):
            continue  # the table's "-" says it already
        if s.notes or s.status in ("unreadable", "missing", "failed"):
            for note in s.notes or [s.status]:
                noted += wrapped(f"  {s.student:<{who}} {s.assignment:<{what}} ", note)
    if noted:
        lines += ["", "Hand-ins repaired, salvaged or not graded:", *noted]
    return "\n".join(lines)


def write_csv(subs: list[Submission], path: Path) -> None:
    """One row per grade cell of every (student, assignment) in the class, ungraded ones included."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        out = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        out.writeheader()
        for s in subs:
            for c in s.cells:
                row = {"student": s.student, "assignment": s.assignment, "notebook": c.notebook,
                       "grade_id": c.grade_id, "question": c.question, "kind": c.kind,
                       "points": "" if c.points is None else f"{c.points:g}", "max_points": f"{c.max_points:g}",
                       "status": s.status if c.points is not None else "needs manual grade", "detail": c.detail}
                out.writerow({k: csv_cell(v) for k, v in row.items()})


def write_lms_csv(subs: list[Submission], students: list[str], assignments: list[str], path: Path) -> None:
    """One row per student, one column per assignment (points so far) and the total, after a "points possible"
    row: the shape an LMS gradebook import (Canvas, Moodle) takes.  Written answers still waiting for a TA
    count 0 here and are counted in ``pending``, so a TA knows to import again after marking."""
    by = {(s.student, s.assignment): s for s in subs}
    possible = {a: max((sum(c.max_points for c in s.cells) for s in subs if s.assignment == a), default=0.0)
                for a in assignments}
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow([csv_cell(v) for v in ["student", *assignments, "total", "pending"]])
        out.writerow(["points possible", *(f"{possible[a]:g}" for a in assignments), f"{sum(possible.values()):g}",
                      ""])
        for st in students:
            got = [by.get((st, a)) or Submission(st, a, "missing") for a in assignments]
            points = [sum(c.points or 0.0 for c in s.cells) for s in got]
            out.writerow([csv_cell(st), *(f"{p:g}" for p in points), f"{sum(points):g}", sum(s.pending() for s in got)])
