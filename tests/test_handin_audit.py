"""``nkilab.batch.handin_audit``: after ``nbgrader autograde``, was each hand-in graded, and if not, why -- read from nbgrader's
own log and gradebook -- and what rebuilding it on the release changed. Checked on logs in nbgrader's words and a
real (SQLite) gradebook, without grading anything."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from nkilab.batch.handin_audit import already_graded, attempted, autograded, failure_reason, sanitize_notes

LAB = "01_lab"

#: an autograde log as nbgrader writes it for two students, the second one's kernel dying
LOG = """\
[AutogradeApp | INFO] Creating/updating student with ID 'ann': {}
[AutogradeApp | INFO] Sanitizing /course/submitted/ann/01_lab/01_lab.ipynb
[AutogradeApp | INFO] Writing 2048 bytes to /course/autograded/ann/01_lab/01_lab.ipynb
[AutogradeApp | INFO] Creating/updating student with ID 'bo': {}
[AutogradeApp | INFO] Sanitizing /course/submitted/bo/01_lab/01_lab.ipynb
[AutogradeApp | ERROR] Kernel died while waiting for execute reply.
[AutogradeApp | ERROR] There was an error processing assignment: /course/submitted/bo/01_lab
[AutogradeApp | INFO] Removing failed assignment: /course/autograded/bo/01_lab
"""


def test_attempted_finds_the_students_own_sanitizing_line():
    assert attempted(LOG, "ann", LAB) and attempted(LOG, "bo", LAB)
    assert not attempted(LOG, "cy", LAB)
    assert not attempted(LOG, "an", LAB)  # a prefix of another student's id is not that student
    assert not attempted(LOG, "ann", "01_la")
    assert attempted(LOG.replace("/", "\\"), "ann", LAB)  # a Windows path too


@pytest.mark.parametrize(("error", "reason"), [
    ("Kernel died while waiting for execute reply.", "the notebook's kernel died"),
    ("nbclient.exceptions.DeadKernelError: Kernel died", "the notebook's kernel died"),
    ("UnresponsiveKernelError: kernel became unresponsive", "the notebook's kernel stopped responding"),
    ("nbclient.exceptions.CellTimeoutError: A cell timed out", "the notebook ran out of time"),
    ("RuntimeError: Timeout waiting for execute reply (30s).", "the notebook ran out of time"),
    ("KeyError: 'cells'", "nbgrader could not grade it"),
])
def test_failure_reason_reads_only_that_students_section(error, reason):
    log = LOG.replace("Kernel died while waiting for execute reply.", error)
    assert failure_reason(log, "bo") == reason
    # ann's section ends where bo's begins: bo's trouble is not hers
    assert failure_reason(log, "ann") == "nbgrader could not grade it"


def _notebook(answer: str, extra: bool = False) -> nbformat.NotebookNode:
    answer_cell = nbformat.v4.new_code_cell(answer)
    answer_cell.metadata["nbgrader"] = {"grade": False, "grade_id": "q1_kernel", "solution": True, "locked": False,
                                        "schema_version": 3}
    grade = nbformat.v4.new_code_cell('grade("vector_add_naive", "vector_add_naive.py")')
    grade.metadata["nbgrader"] = {"grade": True, "grade_id": "q1_grade", "points": 3, "solution": False,
                                  "locked": True, "schema_version": 3}
    cells = [answer_cell, grade] + ([nbformat.v4.new_code_cell("print('scratch')")] if extra else [])
    return nbformat.v4.new_notebook(cells=cells)


def _course(root: Path) -> Path:
    for folder, nb in (("release", _notebook("# YOUR CODE HERE")),
                       ("submitted/ann", _notebook("%%writefile vector_add_naive.py\n# mine", extra=True)),
                       ("autograded/ann", _notebook("%%writefile vector_add_naive.py\n# mine"))):
        path = root / folder / LAB
        path.mkdir(parents=True)
        nbformat.write(nb, path / f"{LAB}.ipynb")
    return root


def test_autograded_means_every_notebook_was_written(tmp_path):
    course = _course(tmp_path)
    assert autograded(course, "ann", LAB, [LAB])
    assert not autograded(course, "ann", LAB, [LAB, "02_more"])
    assert not autograded(course, "bo", LAB, [LAB])


def test_sanitize_notes_say_what_rebuilding_on_the_release_changed(tmp_path):
    course = _course(tmp_path)
    notes = sanitize_notes(course, "ann", LAB, [LAB])
    assert notes and "dropped 1 cell(s) the student added" in " | ".join(notes)
    assert sanitize_notes(course, "bo", LAB, [LAB]) == []  # nothing handed in: nothing to say


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory) -> Path:
    """A gradebook with ann's submission scored and bo's submitted but never scored (built once: nbgrader starts
    a new gradebook by running alembic in a process of its own)."""
    db = tmp_path_factory.mktemp("gb") / "gradebook.db"
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.add_assignment(LAB)
        gb.add_notebook(LAB, LAB)
        gb.add_grade_cell("q1_grade", LAB, LAB, max_score=3.0, cell_type="code")
        gb.add_grade_cell("w1_answer", LAB, LAB, max_score=1.0, cell_type="markdown")
        for student in ("ann", "bo", "cy"):
            gb.add_student(student)
            if student != "cy":
                gb.add_submission(LAB, student)
        g = gb.find_grade("q1_grade", LAB, LAB, "ann")
        g.auto_score = 3.0
        gb.db.commit()
    return db


@pytest.mark.processes  # nbgrader starts a new gradebook by running alembic
def test_already_graded_needs_a_score_for_every_code_cell(gradebook, tmp_path):
    db = tmp_path / "gradebook.db"
    shutil.copy(gradebook, db)
    url = f"sqlite:///{db}"
    assert already_graded(url, "ann", LAB, [LAB])  # the written answer (markdown) waits for a TA: still graded
    assert not already_graded(url, "bo", LAB, [LAB])  # submitted, never scored: --resume grades it
    assert not already_graded(url, "cy", LAB, [LAB])  # no submission at all
    assert not already_graded(url, "ann", LAB, [LAB, "02_more"])  # a notebook the gradebook never saw
