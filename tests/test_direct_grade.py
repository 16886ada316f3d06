"""``DirectGrade`` grades the course's notebooks without a Jupyter kernel and gives what the kernel gives: the same
files written, the same report and points in every grade cell; anything else goes through the kernel."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from nkilab import example_class
from nkilab.direct_grade import DirectGrade, grade_call, plan
from nkilab.sanitize import grade_id, restore

REPO = Path(__file__).resolve().parents[1]
STAGE = "01_vector_add"


@pytest.mark.parametrize("source,expected", [
    ('from nkilab import grade\n\ngrade("tiled_add", "tiled_add.py")', ("tiled_add", "tiled_add.py")),
    ('# comment\ngrade("q", "k.py")', ("q", "k.py")),
    ('from nkilab import grade\ngrade("q", "k.py")\nprint(1)', None),  # more than the call
    ('from nkilab import grade as g\ng("q", "k.py")', None),
    ('grade("q", "../other/k.py")', None),  # a file outside the notebook's folder
    ('grade("q", path)', None),
    ('grade("q", "k.py", seed=1)', None),
    ("grade(", None),
])
def test_only_the_plain_grade_call_is_run_directly(source, expected):
    assert grade_call(source) == expected


def _submission(recipe: dict) -> nbformat.NotebookNode:
    release = nbformat.read(REPO / "assignments" / f"{STAGE}.ipynb", as_version=4)
    nb = example_class.build_notebook(release, recipe, example_class.reference_answers(STAGE))
    return restore(nb, release).notebook


def test_a_notebook_with_another_grade_cell_goes_through_the_kernel():
    nb = _submission({})
    assert plan(nb) is not None
    cell = next(c for c in nb.cells if grade_id(c) == "q1_grade")
    cell.source += "\nprint('extra')"
    assert plan(nb) is None


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
    monkeypatch.setenv("NKILAB_SEED", "7")
    nb = _submission({"answers": {"q2_kernel": "kernels/mallory_detect_the_timed_run.py"}})
    results = {}
    for direct in (True, False):
        folder = tmp_path / ("direct" if direct else "kernel")
        folder.mkdir()
        graded, _ = DirectGrade(direct=direct, timeout=300).preprocess(copy.deepcopy(nb),
                                                                       {"metadata": {"path": str(folder)}})
        results[direct] = (_outputs(graded), {p.name: p.read_text() for p in sorted(folder.glob("*.py"))})
    assert results[True] == results[False]
    outputs, files = results[True]
    assert outputs["q1_grade"][1] == "3.0" and outputs["q2_grade"][1] == "4.0"
    assert set(files) == {"vector_add_naive.py", "vector_add_stream.py"}
