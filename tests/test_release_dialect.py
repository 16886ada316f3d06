"""``make release`` in either dialect (issue 30 scope 2): the course's notebooks are NKI 0.6 (``stub_dialect``) in
``assignments/``, their legacy twins in ``assignments/legacy/``, and ``make release DIALECT=legacy`` writes only the
twins. Run for real (jupytext, nbgrader generate_assignment, the leak scan) into a temporary directory: every legacy
notebook's kernel stubs are legacy with no solution in them, its cells are the 0.6 notebook's (same ids), both
dialects' references are written, and the log names exactly the files written, where they were written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import nbformat
import pytest

from nkilab.authoring.release import MARKERS, REPO, assignments_dir, stages
from nkilab.course import manifest
from nkisim.api import Dialect


def writefile_stubs(nb: nbformat.NotebookNode) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%writefile")]


@pytest.mark.processes
@pytest.mark.slow  # nbgrader generate_assignment for every stage: about half a minute
def test_make_release_legacy_writes_the_twins_and_logs_the_files_it_wrote(tmp_path: Path):
    proc = subprocess.run(["make", "--no-print-directory", "release", "DIALECT=legacy", f"OUT={tmp_path}"], cwd=REPO,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lessons = [p.stem for p in stages(REPO / "notebooks")]
    folder = tmp_path / "assignments" / "legacy"
    assert folder == assignments_dir(tmp_path, "legacy")
    assert sorted(p.stem for p in folder.glob("*.ipynb")) == lessons
    assert not list((tmp_path / "assignments").glob("*.ipynb"))  # only the dialect asked for
    logged = [Path(line.split(" ", 1)[1]) for line in proc.stdout.splitlines() if line.startswith("wrote ")]
    written = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert sorted(p if p.is_absolute() else REPO / p for p in logged) == written  # every file, at its real path
    for stage in lessons:
        nb = nbformat.read(folder / f"{stage}.ipynb", as_version=4)
        assert writefile_stubs(nb), stage
        for src in writefile_stubs(nb):
            assert "import neuronxcc.nki as nki\n" in src and "\nimport nki\n" not in src, (stage, src[:200])
            assert not any(m in src for m in MARKERS), stage
        # the same cells, with the same ids, as the committed NKI 0.6 notebook, and identical to the committed twin
        course = nbformat.read(REPO / "assignments" / f"{stage}.ipynb", as_version=4)
        assert [c.get("id") for c in nb.cells] == [c.get("id") for c in course.cells], stage
        assert (folder / f"{stage}.ipynb").read_text() == (REPO / "assignments" / "legacy" / f"{stage}.ipynb").read_text()
    for spec in manifest.course().questions().values():
        for rel in spec.solutions.values():
            assert (tmp_path / "solutions" / rel).read_text() == (REPO / "solutions" / rel).read_text(), rel


def test_the_repositorys_notebooks_are_06_with_legacy_twins():
    assert manifest.course().stub_dialect is Dialect.NKI and manifest.course().stub_dialect.word == "nki"
    for stage in (p.stem for p in stages(REPO / "notebooks")):
        course = nbformat.read(REPO / "assignments" / f"{stage}.ipynb", as_version=4)
        twin = nbformat.read(REPO / "assignments" / "legacy" / f"{stage}.ipynb", as_version=4)
        assert all("\nimport nki\n" in s for s in writefile_stubs(course)), stage
        assert all("import neuronxcc.nki as nki\n" in s for s in writefile_stubs(twin)), stage
