"""``nkilab.lms.grade_table``: the class's grades as a TA reads them, from a real nbgrader gradebook (SQLite) and the
grade records the grade cells left in the autograded notebooks -- never from printed text. Each rule of the table
and the CSVs is checked on a small course built here, without running any kernel."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from nkilab.judge.results import MIME, CaseRecord, GradeRecord, Outcome
from nkilab.lms import grade_table
from nkilab.lms.grade_table import CellGrade, Submission, collect, table, write_csv, write_lms_csv

LAB = "01_lab"
pytestmark = pytest.mark.processes  # nbgrader starts a new gradebook by running alembic


def _cell(gid: str, source: str, points: float, cell_type: str = "code") -> nbformat.NotebookNode:
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": gid, "points": points, "solution": cell_type != "code",
                                 "locked": cell_type == "code", "schema_version": 3}
    return cell


def _record(passed: int, of: int, points: float) -> dict:
    cases = tuple(CaseRecord(i + 1, i >= 2, f"a: float32 [{i + 1}, 8]", Outcome.PASSED if i < passed else
                             Outcome.WRONG_VALUES, "right" if i < passed else "wrong values") for i in range(of))
    return GradeRecord("vector_add_naive", "Vector add", points, 3.0, points, 3.0, 0.0, 0.0, cases).to_json()


@pytest.fixture
def course(built: Path, tmp_path: Path) -> tuple[Path, str]:
    """A fresh copy of the module's course (a test may change it)."""
    copy = tmp_path / "course"
    shutil.copytree(built, copy)
    return copy, f"sqlite:///{copy / 'gradebook.db'}"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A course with one assignment (a kernel worth 3 and a written answer worth 1) and three students: ann
    (graded: 2 of 4 cases, her answer waiting for a TA), bo (graded: full marks, no answer) and cy (nothing).
    Built once: nbgrader starts a new gradebook by running alembic in a process of its own."""
    tmp_path = tmp_path_factory.mktemp("course")
    release = tmp_path / "release" / LAB
    release.mkdir(parents=True)
    kernel = _cell("q1_grade", 'grade("vector_add_naive", "vector_add_naive.py")', 3.0)
    written = _cell("w1_answer", "Why 128 rows?", 1.0, "markdown")
    nbformat.write(nbformat.v4.new_notebook(cells=[kernel, written]), release / f"{LAB}.ipynb")
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db) as gb:
        gb.add_assignment(LAB)
        gb.add_notebook(LAB, LAB)
        gb.add_grade_cell("q1_grade", LAB, LAB, max_score=3.0, cell_type="code")
        gb.add_grade_cell("w1_answer", LAB, LAB, max_score=1.0, cell_type="markdown")
        for student in ("ann", "bo", "cy"):
            gb.add_student(student)
        for student, auto, manual_needed in (("ann", 1.5, True), ("bo", 3.0, False)):
            gb.add_submission(LAB, student)
            g = gb.find_grade("q1_grade", LAB, LAB, student)
            g.auto_score, g.needs_manual_grade = auto, False
            w = gb.find_grade("w1_answer", LAB, LAB, student)
            w.auto_score, w.needs_manual_grade = (None, True) if manual_needed else (0.0, False)
        gb.db.commit()
    for student, passed, points in (("ann", 2, 1.5), ("bo", 4, 3.0)):
        out = tmp_path / "autograded" / student / LAB
        out.mkdir(parents=True)
        graded = _cell("q1_grade", kernel.source, 3.0)
        graded.outputs = [nbformat.v4.new_output("display_data", data={MIME: _record(passed, 4, points)})]
        nbformat.write(nbformat.v4.new_notebook(cells=[graded, written]), out / f"{LAB}.ipynb")
    return tmp_path


def test_collect_reads_scores_from_the_gradebook_and_reasons_from_the_records(course):
    path, db = course
    ann = collect(path, db, "ann", LAB, "graded", ["dropped 1 cell(s) the student added"])
    assert [(c.grade_id, c.kind, c.question, c.points, c.max_points) for c in ann.cells] == [
        ("q1_grade", "kernel", "vector_add_naive", 1.5, 3.0), ("w1_answer", "written", "w1_answer", None, 1.0)]
    assert ann.cells[0].detail.startswith("2/4 cases right; first wrong: hidden case 3 (wrong values)")  # the TA sees it
    assert ann.cells[1].detail == "answered: waiting for a TA"
    assert ann.auto() == (1.5, 3.0) and ann.pending() == 1
    bo = collect(path, db, "bo", LAB, "graded", [])
    assert bo.cells[1].detail == "not answered" and bo.auto() == (3.0, 3.0) and bo.pending() == 0
    cy = collect(path, db, "cy", LAB, "missing", ["nothing handed in"])
    assert [(c.points, c.detail) for c in cy.cells] == [(0.0, "missing"), (0.0, "missing")]


def test_a_grade_cell_without_a_record_says_so(course):
    path, db = course
    nb_path = path / "autograded" / "bo" / LAB / f"{LAB}.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={MIME: {"schema": "forged"}})]
    nbformat.write(nb, nb_path)
    bo = collect(path, db, "bo", LAB, "graded", [])
    assert bo.cells[0].points == 3.0  # the score is the gradebook's
    assert bo.cells[0].detail == "no grading report (the grade cell did not finish)"


def test_the_table_lines_up_and_says_what_lost_points(course):
    path, db = course
    subs = [collect(path, db, "ann", LAB, "graded", ["dropped 1 cell(s) the student added"]),
            collect(path, db, "bo", LAB, "salvaged", []),
            collect(path, db, "cy", LAB, "missing", ["nothing handed in"]),
            Submission("dee", LAB, "unreadable", notes=[f"{LAB}.ipynb is not valid JSON"])]
    text = table(subs, ["ann", "bo", "cy", "dee"], [LAB])
    lines = text.splitlines()
    assert lines[0].split() == ["student", LAB, "kernels", "written"]
    rows = {line.split()[0]: line.split() for line in lines[2:6]}
    assert rows["ann"] == ["ann", "1.5/3", "1.5/3", "1", "to", "grade"]
    assert rows["bo"] == ["bo", "3/3*", "3/3"]  # * graded outside the notebook kernel
    assert rows["cy"] == ["cy", "-", "0/3"]  # nothing handed in: its kernel's points are still possible
    assert rows["dee"] == ["dee", "unreadable", "0/0"]
    assert len({line.index(LAB) for line in lines[:1]} | {lines[2].index("1.5/3")}) == 1  # the column lines up
    lost = text.split("Kernel points lost, and why:\n")[1].split("\n\n")[0].splitlines()
    assert len(lost) == 1 and lost[0].split()[:4] == ["ann", LAB, "vector_add_naive", "1.5/3"]
    notes = text.split("Hand-ins repaired, salvaged or not graded:\n")[1].splitlines()
    assert [n.split()[0] for n in notes] == ["ann", "dee"]  # cy's "nothing handed in" is the table's "-" already
    assert "not valid JSON" in notes[1]


def test_no_csv_cell_can_start_a_formula(course, tmp_path):
    path, db = course
    evil = Submission("=HYPERLINK(\"http://x\")", LAB, "graded",
                      cells=[CellGrade(LAB, "q1_grade", "vector_add_naive", "kernel", 0.0, 3.0, "-1+1 @SUM(A1)")])
    subs = [collect(path, db, "ann", LAB, "graded", []), evil]
    write_csv(subs, tmp_path / "out" / "by_question.csv")
    write_lms_csv(subs, ["ann", evil.student], [LAB], tmp_path / "out" / "lms.csv")
    for name in ("by_question.csv", "lms.csv"):
        with open(tmp_path / "out" / name, newline="") as fh:
            for row in csv.reader(fh):
                assert not [c for c in row if c.lstrip(" \t").startswith(("=", "+", "-", "@"))], (name, row)
    with open(tmp_path / "out" / "by_question.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["status"] for r in rows] == ["graded", "needs manual grade", "graded"]
    assert rows[2]["student"] == "'=HYPERLINK(\"http://x\")" and rows[2]["detail"] == "'-1+1 @SUM(A1)"


def test_the_lms_export_has_points_possible_totals_and_pending(course, tmp_path):
    path, db = course
    subs = [collect(path, db, s, LAB, st, []) for s, st in (("ann", "graded"), ("bo", "graded"), ("cy", "missing"))]
    write_lms_csv(subs, ["ann", "bo", "cy"], [LAB], tmp_path / "lms.csv")
    with open(tmp_path / "lms.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["student", LAB, "total", "pending"]
    assert rows[1] == ["points possible", "4", "4", ""]
    assert rows[2:] == [["ann", "1.5", "1.5", "1"], ["bo", "3", "3", "0"], ["cy", "0", "0", "0"]]


def test_release_grade_cells_name_each_cells_question(course):
    path, _ = course
    assert grade_table.release_grade_cells(path, LAB) == {
        LAB: [("q1_grade", "kernel", 3.0, "vector_add_naive"), ("w1_answer", "written", 1.0, "w1_answer")]}


def test_the_table_fits_a_100_column_terminal_with_reasons_wrapped_whole():
    """A course of nine long-named assignments and long reasons (today's example class printed 219-222 columns,
    reasons up to 550): the grid heads are the assignments' numbers, named once below it, every line is at most
    100 columns, and each reason is all there, word for word. No hand-in was repaired, so that heading is not
    printed with nothing under it."""
    names = [f"0{i}_{'long_assignment_name'[:10 + i]}" for i in range(1, 10)]
    why = ("10/10 cases right; first wrong: public case 3 (your kernel raised NKIValueError at tiled_add_relu.py "
           "line 11 (`out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)`): Output tensor `out` is "
           "never written to: store results into it with nl.store before returning it); no speed points yet")
    subs = [Submission(st, a, "graded", cells=[
        CellGrade(a, "q1_grade", "a_question_name", "kernel", 1.5 if st == "ann" else 3.0, 3.0, why),
        CellGrade(a, "w1_answer", "w1_answer", "written", None, 1.0)]) for st in ("ann", "bo") for a in names]
    text = table(subs, ["ann", "bo"], names)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert lines[0].split() == ["student", *[n[:2] for n in names], "kernels", "written"]
    assert lines[2].split()[:3] == ["ann", "1.5/3", "1.5/3"]
    assert "Assignments by their numbers: " + ", ".join(names[:2]) in text
    lost = text.split("Kernel points lost, and why:\n")[1]
    reasons = lost.split("\n  ann ")  # one entry per lost question, its reason wrapped under it
    assert len(reasons) == 9
    for entry in reasons:
        assert " ".join(entry.split()).endswith("1.5/3 " + " ".join(why.split())), entry
    assert "Hand-ins repaired" not in text
    # the example class's widest grid (102 columns with two spaces between): unreadable notebooks in three columns,
    # fractions of points in the others, a total with four decimals, seven answers to grade
    odd = [Submission("trudy", a, "unreadable", notes=["not valid JSON"]) for a in names[0:9:4]]
    subs += [*odd, *(Submission("cleo", a, "graded", cells=[
        CellGrade(a, "q1_grade", "q", "kernel", 4.3333 if a in names[1:9:3] else 7.0, 8.0, ""),
        CellGrade(a, "w", "w", "written", None, 1.0)]) for a in names)]
    text = table(subs, ["ann", "bo", "cleo", "trudy"], names)
    assert max(len(line) for line in text.splitlines()) <= 100, max(text.splitlines(), key=len)
    assert text.splitlines()[0].split()[:3] == ["student", "01", "02"]
    assert "unreadable" in text and " 4.33/8 " in text and " 55/72 " in text  # two decimals at most in the grid


def test_a_section_with_nothing_in_it_is_not_printed():
    # cy handed in nothing: the grid's "-" says so; nobody lost a kernel point
    subs = [Submission("bo", LAB, "graded", cells=[CellGrade(LAB, "q1_grade", "q", "kernel", 3.0, 3.0, "")]),
            Submission("cy", LAB, "missing", notes=["nothing handed in"])]
    text = table(subs, ["bo", "cy"], [LAB])
    assert "Hand-ins repaired" not in text and "Kernel points lost" not in text
    assert text.split()[:4] == ["student", LAB, "kernels", "written"]
