"""Every generated student notebook runs cleanly in a real Jupyter kernel and earns zero on its kernels."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from course_testing import NOTEBOOK_BUDGET_S, REPO, errors_and_stderr, execute, grade_cells

from nkilab.authoring.release import load_source, solution_files
from nkilab.course import manifest
from nkilab.course.questions import QUESTIONS

STUDENT_NOTEBOOKS = sorted(p.stem for p in (REPO / "assignments").glob("[0-9][0-9]_*.ipynb"))


def test_every_lesson_has_a_student_notebook() -> None:
    lessons = sorted(p.stem for p in (REPO / "notebooks").glob("[0-9][0-9]_*.py"))
    assert lessons and STUDENT_NOTEBOOKS == lessons


@pytest.mark.parametrize("stage", STUDENT_NOTEBOOKS)
def test_solutions_are_the_notebook_solution_cells(stage: str) -> None:
    # solutions/<stage>/ holds exactly the lesson's %%writefile solution cells (a 0.6 twin's under nki/), and
    # each question whose kernel the lesson asks for names those files as its references, one per dialect
    files = solution_files(load_source(REPO / "notebooks" / f"{stage}.py"))
    folder = REPO / "solutions" / stage
    assert files and sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.py")) == sorted(files)
    for name, text in files.items():
        assert (folder / name).read_text().endswith(text)
    asked = {q.qid for q in QUESTIONS.values() if q.solution_path.parent == folder}
    specs = manifest.course().questions()
    assert {rel.split("/", 1)[1] for qid in asked for rel in specs[qid].solutions.values()} == set(files), stage


def test_every_question_has_its_reference_kernel() -> None:
    for q in QUESTIONS.values():
        assert q.solution_path.is_file(), q.solution_path
        assert q.solution_path.parent.name in STUDENT_NOTEBOOKS, q.qid


@pytest.mark.slow
@pytest.mark.parametrize("stage", STUDENT_NOTEBOOKS)
def test_student_notebook_runs_and_earns_zero(tmp_path: Path, stage: str) -> None:
    shutil.copy(REPO / "assignments" / f"{stage}.ipynb", tmp_path / "nb.ipynb")
    nb = nbformat.read(tmp_path / "nb.ipynb", as_version=4)
    nb, seconds = execute(nb, tmp_path)
    assert errors_and_stderr(nb) == []
    cells = grade_cells(nb)
    assert cells, f"{stage} has no autograded cells"
    for gid, (value, _points, outputs) in cells.items():
        assert value == 0.0, (stage, gid)
        assert "not written yet" in "".join(o.get("text", "") for o in outputs), (stage, gid)
    assert seconds < NOTEBOOK_BUDGET_S
