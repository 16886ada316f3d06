"""``make release`` for either dialect (issue 21 scope 3): the course setting ``stub_dialect`` picks the dialect of
the student notebooks, ``make release DIALECT=nki OUT=dir`` writes a 0.6 set elsewhere.  Run for real (jupytext,
nbgrader generate_assignment, the leak scan) into a temporary directory: every student notebook's kernel stubs are
NKI 0.6 with no solution in them, both dialects' references are written, and the repository's own assignments/
(which follow the manifest) cannot be overwritten with the other dialect by mistake."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from nkilab import manifest
from nkilab.release import MARKERS, REPO, stages

pytestmark = pytest.mark.slow  # nbgrader generate_assignment once per stage: about a minute


def test_make_release_writes_06_student_notebooks_and_both_references(tmp_path: Path):
    proc = subprocess.run(["make", "--no-print-directory", "release", "DIALECT=nki", f"OUT={tmp_path}"], cwd=REPO,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lessons = [p.stem for p in stages(REPO / "notebooks")]
    assert sorted(p.stem for p in (tmp_path / "assignments").glob("*.ipynb")) == lessons
    for stage in lessons:
        nb = nbformat.read(tmp_path / "assignments" / f"{stage}.ipynb", as_version=4)
        stubs = [c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%writefile")]
        assert stubs, stage
        for src in stubs:
            assert "\nimport nki\n" in src and "neuronxcc" not in src, (stage, src[:200])
            assert not any(m in src for m in MARKERS), stage
        # the same cells, with the same ids, as the committed legacy notebook
        legacy = nbformat.read(REPO / "assignments" / f"{stage}.ipynb", as_version=4)
        assert [c.get("id") for c in nb.cells] == [c.get("id") for c in legacy.cells], stage
    for spec in manifest.course().questions().values():
        for rel in spec.solutions.values():
            assert (tmp_path / "solutions" / rel).read_text() == (REPO / "solutions" / rel).read_text(), rel


def test_the_repositorys_notebooks_follow_the_manifest():
    other = next(d for d in manifest.DIALECTS if d != manifest.course().stub_dialect)
    proc = subprocess.run([sys.executable, "-m", "nkilab.release", "--dialect", other], cwd=REPO / "autograder",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "follow the manifest's stub_dialect" in proc.stderr, proc.stderr
