"""A lesson switched to NKI 0.6, top to bottom (issue 21 scope 3): stage 5's notebook as its NKI 0.6 students get it
(every kernel cell the ``dialect="nki"`` twin, ``import nki``), run under a real Jupyter kernel with the reference
answers in place. Its grade cells grade the 0.6 kernels through the sandboxed grader -- ``rmsnorm_2core`` launched
as ``kernel[2]``, two logical cores, ``vector_add_spmd`` without brackets -- and must give full marks, and the
two-core demo must estimate the 0.6 kernel on two cores (its one-core-grid column has no 0.6 launch: nan)."""

from __future__ import annotations

import pytest
from course_testing import outputs_text, run_reference_notebook

from nkilab.release import REPO, load_source


@pytest.mark.slow
def test_stage5_in_nki_06_runs_and_earns_full_marks():
    lesson = load_source(REPO / "notebooks" / "05_multicore_spmd.py", "nki")
    kernels = [c.source for c in lesson.cells if c.source.startswith("%%writefile")]
    assert len(kernels) == 2 and all("import nki\n" in k and "neuronxcc" not in k for k in kernels)
    nb = run_reference_notebook("05_multicore_spmd", {"q1_grade", "q2_grade"}, dialect="nki")
    table = outputs_text(nb, "speedup_demo")
    assert "estimated latency on trn2" in table, table
    rows = [line.split() for line in table.strip().splitlines() if line.split()[0].isdigit()]
    assert [r[0] for r in rows] == ["256", "1024", "4096", "8192"], table
    assert all(r[2] == "nan" for r in rows), table  # [2]: no grid of instances on one core in NKI 0.6
    assert float(rows[-1][-1].rstrip("x")) > 1.7, table  # kernel[2]: two logical cores
