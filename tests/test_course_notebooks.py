"""Every generated student notebook runs cleanly in a real Jupyter kernel and earns zero on its kernels."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from course_testing import NOTEBOOK_BUDGET_S, REPO, errors_and_stderr, execute, grade_cells

STUDENT_NOTEBOOKS = sorted(p.stem for p in (REPO / "assignments").glob("[0-9][0-9]_*.ipynb"))


def test_every_lesson_has_a_student_notebook() -> None:
    lessons = sorted(p.stem for p in (REPO / "notebooks").glob("[0-9][0-9]_*.py"))
    assert lessons and STUDENT_NOTEBOOKS == lessons


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
