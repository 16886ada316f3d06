"""``make gradescope``: the autograder bundle, run as Gradescope runs it on sample submissions in a scratch
``/autograder`` laid out as Gradescope lays it out, its ``results.json`` checked against Gradescope's documented
format (gradescope-autograders.readthedocs.io, "Autograder Specifications") and for exact scores."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest

from nkilab.authoring.release import assignments_dir
from nkilab.batch import example_class
from nkilab.course import manifest
from nkilab.course.questions import QUESTIONS
from nkilab.isolate.facts import Latency
from nkilab.lms import gradescope

REPO = Path(__file__).resolve().parents[1]
STAGE = "01_vector_add"
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
#: Gradescope's results.json, as its specification describes it
RESULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "score": {"type": "number"}, "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]}, "name": {"type": "string"},
                "number": {"type": "string"}, "output": {"type": "string"}, "tags": {"type": "array"},
                "visibility": VISIBILITY, "extra_data": {"type": "object"},
            },
            "additionalProperties": False,
        }},
        "leaderboard": {"type": "array"},
    },
    "anyOf": [{"required": ["score"]}, {"properties": {"tests": {"items": {"required": ["score"]}}}}],
    "additionalProperties": False,
}

pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("needs_sandbox")]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gradescope")
    proc = subprocess.run([sys.executable, "-m", "nkilab.lms.gradescope", "build", "--assignment", STAGE, "--out",
                           str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / f"{STAGE}.zip"


def test_the_bundle_has_gradescopes_layout_and_no_solution(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = zf.namelist()
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        text = b"".join(zf.read(n) for n in names if n.endswith((".py", ".ipynb", ".json", ".txt")))
    assert "setup.sh" in names and "run_autograder" in names  # at the root of the archive
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert not [n for n in names if n.startswith(("solutions/", "tests/", "notebooks/", "autograder/"))]
    assert "nkilab/lms/gradescope.py" in names and "nkisim/__init__.py" in names
    solution = (REPO / "solutions" / STAGE / "vector_add_stream.py").read_text()
    body = [ln.strip() for ln in solution.splitlines() if "nl.load(a[:, j * chunk" in ln]
    assert body and body[0].encode() not in text  # the reference kernel's own lines are not shipped
    latencies = json.loads(zipfile.ZipFile(bundle).read(gradescope.LATENCIES))
    assert set(latencies) == {f"{q}@trn2" for q in ("vector_add_naive", "vector_add_stream")}
    assert all(Latency.from_json(v).ok and v["latency_us"] > 0 for v in latencies.values())


def run_autograder(bundle: Path, root: Path, notebook: nbformat.NotebookNode | None) -> dict:
    source = root / "source"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(source)
    (root / "submission").mkdir(parents=True)
    if notebook is not None:
        nbformat.write(notebook, root / "submission" / f"{STAGE}.ipynb")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), NKILAB_PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(source / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    return results


def submission(recipe: dict) -> nbformat.NotebookNode:
    """A hand-in built as the example class's are: on the released notebook of the recipe's dialect (the course's,
    NKI 0.6, unless it says legacy)."""
    dialect = recipe.get("dialect", manifest.course().stub_dialect)
    released = nbformat.read(assignments_dir(REPO, dialect) / f"{STAGE}.ipynb", as_version=4)
    reference = example_class.reference_answers(STAGE, dialect=dialect)
    return example_class.build_notebook(released, recipe, reference)


def test_reference_answers_get_full_marks_with_hidden_details_held_back(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, submission({}))
    assert results["score"] == 7.0
    visible = [t for t in results["tests"] if t["visibility"] == "visible"]
    held = [t for t in results["tests"] if t["visibility"] == "hidden"]  # course staff only
    assert [t["max_score"] for t in visible] == [QUESTIONS["vector_add_naive"].points,
                                                 QUESTIONS["vector_add_stream"].points]
    assert all(t["score"] == t["max_score"] and t["status"] == "passed" for t in visible)
    for t in visible:
        assert "hidden case 5/10" not in t["output"] and "hidden cases: 6 of 6 passed" in t["output"]
        assert "estimate (nkisim cost model, trn2)" in t["output"]
    assert len(held) == 2 and all(t["max_score"] == 0 and "hidden case 5/10" in t["output"] and t["status"] == "passed"
                                  for t in held)


def test_the_stub_a_cheat_and_an_empty_submission(bundle, tmp_path):
    stub = run_autograder(bundle, tmp_path / "stub", submission({"default": "stub"}))
    assert stub["score"] == 0.0
    # the staff-only test of hidden details fails when a hidden case failed, though it is worth 0 points
    assert [t["status"] for t in stub["tests"] if t["visibility"] == "hidden"] == ["failed", "failed"]
    cheat = run_autograder(bundle, tmp_path / "cheat", submission({"answers": {
        "q1_kernel": "kernels/mallory_patch_the_runner.py", "q2_kernel": "kernels/mallory_detect_the_timed_run.py"}}))
    assert [t["score"] for t in cheat["tests"] if t["visibility"] == "visible"] == [0.0, 4.0]
    assert "refused your file before running it" in cheat["tests"][0]["output"]
    empty = run_autograder(bundle, tmp_path / "empty", None)
    assert empty["score"] == 0.0 and "no notebook in the submission" in empty["output"]


def test_a_slow_kernel_is_told_why_and_a_legacy_hand_in_is_graded_alike(bundle, tmp_path):
    """Speed feedback that teaches reaches Gradescope's visible output (issue 22 scope 2); a legacy twin's hand-in
    with the lesson's legacy answers earns what the NKI 0.6 ones do (issue 30 scope 2)."""
    slow = run_autograder(bundle, tmp_path / "slow", submission({"answers": {
        "q2_kernel": "kernels/ben_stream_one_chunk_at_a_time.py"}}))
    out = [t for t in slow["tests"] if t["visibility"] == "visible"][1]["output"]
    assert "Where the time goes (estimates): yours vs the reference" in out and "Why: " in out, out
    assert "Your costliest lines: line " in out and f"See {QUESTIONS['vector_add_stream'].speed_lesson}." in out
    legacy = run_autograder(bundle, tmp_path / "legacy", submission({"dialect": "legacy"}))
    assert legacy["score"] == 7.0, [t["output"] for t in legacy["tests"]]


def test_make_gradescope_dialect_legacy_bundles_the_legacy_twin(tmp_path):
    """One word, ``make gradescope DIALECT=legacy``: the bundle holds the legacy twin of the notebook, and lands beside
    the NKI 0.6 bundles in a folder of its own."""
    out = subprocess.run([sys.executable, "-m", "nkilab.lms.gradescope", "build", "--dialect", "legacy", "--assignment",
                          STAGE, "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"make gradescope: wrote {tmp_path / (STAGE + '.zip')}" in out.stdout
    with zipfile.ZipFile(tmp_path / f"{STAGE}.zip") as bundle:
        shipped = bundle.read(f"{STAGE}.ipynb").decode()
    assert shipped == (REPO / "assignments" / "legacy" / f"{STAGE}.ipynb").read_text()
    assert "import neuronxcc.nki as nki" in shipped


def test_adds_through_transposed_views_earn_their_correctness_points_only(bundle, tmp_path):
    """Issue 28's attack, on Gradescope as in the example class (peggy): stage 1's adds move every element (Q1) or
    every 64 bytes (Q2) as a DMA piece of its own; priced by its descriptors it earns its correctness points only
    (7/7 while a DMA was priced by the bounding box of its access)."""
    results = run_autograder(bundle, tmp_path, submission({"answers": {
        "q1_kernel": "kernels/peggy_add_through_transposed_views.py",
        "q2_kernel": "kernels/peggy_stream_columns_across_partitions.py"}}))
    visible = [t for t in results["tests"] if t["visibility"] == "visible"]
    assert [t["score"] for t in visible] == [2.0, 2.0] and results["score"] == 4.0
    assert all("Correctness: 10/10 cases" in t["output"] for t in visible), [t["output"] for t in visible]


@pytest.mark.slow
def test_issue_28_attacks_earn_their_honest_content(bundle, tmp_path):
    """theo's stage 1 on Gradescope: an exception class named after each case (0, and no case named in any test,
    the staff's included) and a byte-order mark before `import os` (refused, 0); the thief's plain-Python cell,
    added beside a slow kernel to replace nkilab.grade, is dropped with every added cell (Gradescope runs no
    notebook kernel): the slow kernel's own 3 of 4."""
    theo = run_autograder(bundle, tmp_path / "theo", submission({"answers": {
        "q1_kernel": "kernels/theo_name_the_hidden_case.py", "q2_kernel": "kernels/theo_bom_import_os.py"}}))
    visible = [t for t in theo["tests"] if t["visibility"] == "visible"]
    assert [t["score"] for t in visible] == [0.0, 0.0]
    assert "raised an exception" in visible[0]["output"] and not re.search(r"Case_\d", json.dumps(theo))
    assert "line 3 (`import os`)" in visible[1]["output"]
    thief = run_autograder(bundle, tmp_path / "thief", submission({
        "answers": {"q2_kernel": "kernels/ben_stream_one_chunk_at_a_time.py"},
        "add": [{"after": "q1_kernel", "file": "cells/theo_thief.py"}]}))
    assert [t["score"] for t in thief["tests"] if t["visibility"] == "visible"] == [3.0, 3.0]
    assert "THEFT" not in json.dumps(thief)
