"""nkilab.batch.salvage: a notebook whose kernel died is graded cell by cell in a replay process that runs no code of the
student's -- nbgrader's scoring rule, the outcomes written back with a note, and the answer-cell checksums."""

from __future__ import annotations

import math

import nbformat
import pytest
from nbgrader.utils import compute_checksum

from nkilab.batch import salvage
from nkilab.judge.results import MIME


def _cell(source: str, gid: str, *, grade: bool = False, solution: bool = False, points: float = 0.0):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade_id": gid, "grade": grade, "solution": solution, "points": points,
                                 "locked": not solution, "schema_version": 3}
    return cell


@pytest.mark.parametrize("value,error,expected", [
    (None, True, 0.0),  # an error scores 0, whatever it printed
    (2.5, True, 0.0),
    (2.5, False, 2.5),  # a number is partial credit
    (9.0, False, 4.0),  # clamped to the cell's points
    (-1.0, False, 0.0),
    (math.nan, False, 0.0),
    (True, False, 4.0),  # a bool is not a number: full, as nbgrader scores any other value
    ("text", False, 4.0),
    (None, False, 4.0),
])
def test_score_follows_nbgraders_rule_for_a_code_grade_cell(value, error, expected):
    assert salvage.score(value, error, 4.0) == expected


def test_with_outcomes_puts_each_cells_result_back_and_says_how_it_was_graded():
    nb = nbformat.v4.new_notebook(cells=[_cell("grade('a', 'a.py')", "a_grade", grade=True, points=3.0),
                                         _cell("x = 1", "setup")])
    record = {"question": "a", "points": 2.0}
    outcomes = {"a_grade": salvage.CellOutcome(2.0, 3.0, "2 of 3\n", value="2.0", record=record)}
    out = salvage.with_outcomes(nb, outcomes, "Its kernel died.")
    assert out.cells[0].id == "nkilab-salvage-note" and "Its kernel died." in out.cells[0].source
    graded = out.cells[1]
    assert [o.output_type for o in graded.outputs] == ["stream", "display_data", "execute_result"]
    assert graded.outputs[0].text == "2 of 3\n" and graded.outputs[1].data[MIME] == record
    assert graded.outputs[2].data["text/plain"] == "2.0"
    assert out.cells[2].outputs == []  # a cell with no outcome is left alone
    assert nb.cells[0].outputs == [] and len(nb.cells) == 2  # the restored notebook itself is not changed


def _written(gid: str, released: str, now: str):
    cell = nbformat.v4.new_markdown_cell(released)
    cell.metadata["nbgrader"] = {"grade_id": gid, "grade": True, "solution": True, "points": 1.0, "locked": False,
                                 "schema_version": 3}
    cell.metadata["nbgrader"]["checksum"] = compute_checksum(cell)  # as nbgrader keeps it at release
    cell.source = now
    return cell


def test_answer_cells_unchanged_compares_each_written_answer_with_its_release_checksum():
    nb = nbformat.v4.new_notebook(cells=[_written("w1", "YOUR ANSWER HERE", "YOUR ANSWER HERE"),
                                         _written("w2", "YOUR ANSWER HERE", "My answer."),
                                         _cell("%%writefile a.py\n", "a_kernel", solution=True)])
    assert salvage.answer_cells_unchanged(nb) == {"w1": True, "w2": False}


@pytest.mark.processes
def test_salvage_runs_the_grader_cells_and_scores_a_kernel_cell_zero_saying_why(tmp_path):
    """The replay process: a grade cell using the grading library runs (here it raises: 0 points, the error kept);
    a teacher's plain-Python test needs the notebook's kernel, which salvage never starts: 0 points, said so;
    every grade cell gets an outcome."""
    nb = nbformat.v4.new_notebook(cells=[
        _cell("from nkilab import grade", "imports"),
        _cell("grade('no_such_question', 'k.py')", "q_grade", grade=True, points=2.0),
        _cell("assert 1 + 1 == 2", "plain_check", grade=True, points=1.0),
    ])
    outcomes = salvage.salvage(nb, tmp_path / "work", timeout=120)
    assert set(outcomes) == {"q_grade", "plain_check"}
    q, plain = outcomes["q_grade"], outcomes["plain_check"]
    assert (q.points, q.max_points) == (0.0, 2.0) and "no_such_question" in q.text, q
    assert (plain.points, plain.max_points) == (0.0, 1.0) and salvage.KERNEL_NOT_RUN in plain.text, plain
