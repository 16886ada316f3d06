"""The legacy twin of a lesson, top to bottom (issue 30 scope 1): the course's notebooks are NKI 0.6, and each lesson's
legacy twin (``make release DIALECT=legacy``, ``assignments/legacy/``) keeps CS149's dialect. Stage 5's twin, where the
two dialects differ most (SPMD grids and ``nl.nc(2)`` against logical cores), run under a real Jupyter kernel with the
reference answers in place: every code cell is the legacy one (``import neuronxcc.nki``, no ``import nki``), its grade
cells grade the legacy kernels through the sandboxed grader -- ``vector_add_spmd[4]``, ``rmsnorm_2core[nl.nc(2)]`` --
at full marks, and its two-core demo estimates all three legacy launches (one instance, two in turn on one core, two
cores)."""

from __future__ import annotations

import pytest
from course_testing import outputs_text, run_reference_notebook

from nkilab.authoring.release import REPO, load_source


@pytest.mark.slow
def test_stage5_in_the_legacy_dialect_runs_and_earns_full_marks():
    lesson = load_source(REPO / "notebooks" / "05_multicore_spmd.py", "legacy")
    code = [c.source for c in lesson.cells if c.cell_type == "code"]
    assert sum(c.startswith("%%writefile") for c in code) == 2
    assert all("import nki\n" not in c for c in code) and any("import neuronxcc.nki as nki" in c for c in code)
    nb = run_reference_notebook("05_multicore_spmd", {"q1_grade", "q2_grade"}, dialect="legacy")
    assert "nl.spmd_dim(nl.nc(2), 2) gives the same result: True" in outputs_text(nb, "demo_trn1")
    table = outputs_text(nb, "speedup_demo")
    assert "estimated latency on trn2" in table, table
    rows = [line.split() for line in table.strip().splitlines() if line.split()[0].isdigit()]
    assert [r[0] for r in rows] == ["256", "1024", "4096", "8192"], table
    assert all(r[2] != "nan" for r in rows), table  # [2]: two instances in turn on one core, legacy only
    assert float(rows[-1][-1].rstrip("x")) > 1.7, table  # nl.nc(2): two physical cores
