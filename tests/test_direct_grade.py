"""``DirectGrade`` grades by the notebook's plan (``nkilab.autograde.cells``): the course's notebooks without a Jupyter kernel,
with the same files written and the same report and points in every grade cell as with the (sandboxed) kernel;
grade cells always run in the grader, whatever their form, and a kernel is started only for a test that needs one."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from nkilab.autograde.cells import Kind, needs_kernel, plan
from nkilab.autograde.direct_grade import DirectGrade
from nkilab.batch import example_class
from nkilab.intake.sanitize import grade_id, restore
from nkilab.isolate import processes

REPO = Path(__file__).resolve().parents[1]
STAGE = "01_vector_add"


def _submission(recipe: dict) -> nbformat.NotebookNode:
    release = nbformat.read(REPO / "assignments" / f"{STAGE}.ipynb", as_version=4)
    nb = example_class.build_notebook(release, recipe, example_class.reference_answers(STAGE))
    return restore(nb, release).notebook


def _kinds(nb: nbformat.NotebookNode) -> dict[str, Kind]:
    return {grade_id(nb.cells[s.index]) or str(s.index): s.kind for s in plan(nb)}


def test_grade_cells_run_in_the_grader_and_need_no_kernel():
    """The course's notebook: answers written by the grader, grade cells run by it, set-up left to a kernel that is
    never started (no grade cell needs it); a grade cell of another form is still the grader's."""
    nb = _submission({})
    kinds = _kinds(nb)
    assert kinds["q1_kernel"] is Kind.WRITE and kinds["q1_grade"] is Kind.GRADER and kinds["setup"] is Kind.KERNEL
    assert not needs_kernel(plan(nb))
    cell = next(c for c in nb.cells if grade_id(c) == "q1_grade")
    cell.source = 'from nkilab import grade as g\npoints = g("vector_add_naive", "vector_add_naive.py")\npoints'
    assert _kinds(nb)["q1_grade"] is Kind.GRADER and not needs_kernel(plan(nb))


def test_a_name_a_teachers_cell_imported_from_nkilab_makes_a_grade_cell_the_graders():
    """A teacher who imported ``grade`` under another name in the set-up cell, and a grade cell that only uses that
    name: still run by the grader (a kernel's ``g`` would be the student's to replace)."""
    nb = _submission({})
    setup = next(c for c in nb.cells if grade_id(c) == "setup")
    setup.source += "\nfrom nkilab import grade as mark"
    cell = next(c for c in nb.cells if grade_id(c) == "q1_grade")
    cell.source = 'mark("vector_add_naive", "vector_add_naive.py")'
    assert _kinds(nb)["q1_grade"] is Kind.GRADER


def test_a_plain_python_test_needs_the_kernel_and_a_students_cell_is_never_the_graders():
    nb = _submission({})
    cell = next(c for c in nb.cells if grade_id(c) == "q1_grade")
    cell.source = "assert tiles(256_000) == 2"
    assert _kinds(nb)["q1_grade"] is Kind.KERNEL and needs_kernel(plan(nb))
    answer = next(c for c in nb.cells if grade_id(c) == "q1_kernel")
    answer.source = 'grade = lambda *a: 3.0\ngrade("vector_add_naive", "x.py")'  # no %%writefile: the student's code
    answer.metadata["nbgrader"]["grade"] = True  # even marked as a grade cell
    assert _kinds(nb)["q1_kernel"] is Kind.KERNEL


def _outputs(nb: nbformat.NotebookNode) -> dict[str, tuple[str, str]]:
    found = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid and gid.endswith("_grade"):
            stdout = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
            result = "".join(o["data"]["text/plain"] for o in cell.outputs if o.output_type == "execute_result")
            found[gid] = (stdout, result)
    return found


@pytest.mark.slow
def test_direct_and_kernel_grading_agree(tmp_path, monkeypatch):
    """The same notebook graded without a kernel and with the sandboxed one: the same files, reports and points.
    Each grading is one student's, and has executor servers of its own: none outlives its notebook (issue 28)."""
    monkeypatch.setenv("NKILAB_SEED", "7")
    started: list[int] = []
    start = vars(processes.ExecutorServer)["_start"]  # (the server start, wrapped to see which servers ran)

    def recording(server):
        start(server)
        started.append(server.proc.pid)

    monkeypatch.setattr(processes.ExecutorServer, "_start", recording)
    nb = _submission({"answers": {"q2_kernel": "kernels/mallory_detect_the_timed_run.py"}})
    results, servers = {}, {}
    for direct in (True, False):
        folder = tmp_path / ("direct" if direct else "kernel")
        folder.mkdir()
        started.clear()
        graded, _ = DirectGrade(direct=direct, timeout=300).preprocess(copy.deepcopy(nb),
                                                                       {"metadata": {"path": str(folder)}})
        results[direct] = (_outputs(graded), {p.name: p.read_text() for p in sorted(folder.glob("*.py"))})
        servers[direct] = set(started)
        assert started and processes.running_servers() == []
    assert results[True] == results[False]
    assert not servers[True] & servers[False]
    outputs, files = results[True]
    assert outputs["q1_grade"][1] == "3.0" and outputs["q2_grade"][1] == "4.0"
    assert set(files) == {"vector_add_naive.py", "vector_add_stream.py"}
