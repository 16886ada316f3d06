"""check() predicts the grade (issue 22): nine kernels written to pass every public check the course had while
breaking a rule its hidden cases test (tests/check_truth_mutants/) are each caught by ``check()`` on a public case,
lose points in grading, and fail exactly the cases of the kind whose rule they break -- so what check() says about
a kind is what grading will say.  A failing hidden case is named to the student by its kinds, never its sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from course_testing import grade_in_process

from nkilab import check
from nkilab.course.questions import QUESTIONS, UNEVEN_SPLIT
from nkilab.judge.results import Audience

MUTANTS_DIR = Path(__file__).with_name("check_truth_mutants")
SEED = 2203

LOW_PRECISION = frozenset({"float16", "bfloat16"})
#: kernel file -> (question, the kinds of case whose rule it breaks)
MUTANTS = {
    "vector_add_naive_float32_out": ("vector_add_naive", LOW_PRECISION),
    "vector_add_stream_float32_out": ("vector_add_stream", LOW_PRECISION),
    "tiled_add_float32_out": ("tiled_add", LOW_PRECISION),
    "tiled_add_relu_float32_out": ("tiled_add_relu", LOW_PRECISION),
    "stream_add_1d_float32_out": ("stream_add_1d", LOW_PRECISION),
    "tiled_add_relu_assumes_128_rows": ("tiled_add_relu", frozenset({"under one tile"})),
    "rmsnorm_tiles_in_pairs": ("rmsnorm", frozenset({"odd number of row tiles"})),
    "rmsnorm_fast_tiles_in_pairs": ("rmsnorm_fast", frozenset({"odd number of row tiles"})),
    "rmsnorm_2core_floor_split": ("rmsnorm_2core", frozenset({UNEVEN_SPLIT})),
}


def test_every_mutant_file_is_listed():
    assert sorted(p.stem for p in MUTANTS_DIR.glob("*.py")) == sorted(MUTANTS)


@pytest.mark.parametrize("name", sorted(MUTANTS))
@pytest.mark.processes
def test_check_catches_a_rule_breaking_kernel_that_grading_would_catch(name: str, capsys):
    qid, broken = MUTANTS[name]
    q = QUESTIONS[qid]
    path = MUTANTS_DIR / f"{name}.py"

    # the student's own check: a public case of the broken kind fails, so no "passed", no speed verdict
    result = check(qid, path)
    text = capsys.readouterr().out
    assert not result.passed, text
    assert "Public checks passed" not in text and "You would get" not in text, text
    failing = [cr for cr in result.evaluation.cases if not cr.verdict.ok]
    assert failing and all(q.kinds_of(cr.case) & broken for cr in failing), text

    # grading: the kernel is right on every case, public or hidden, except those of the broken kinds
    report = grade_in_process(qid, path, SEED)
    ev = report.evaluation
    assert ev is not None and ev.problem is None, ev
    for cr in ev.cases:
        assert cr.verdict.ok == (not q.kinds_of(cr.case) & broken), (name, cr.case, cr.verdict.message)
    right = sum(cr.verdict.ok for cr in ev.cases)
    assert report.correctness == pytest.approx(q.correctness_points * right / len(ev.cases), abs=1e-4)
    assert report.speed == 0.0 and report.points < q.points

    # the student's feedback names each failing hidden case by its kinds, one of them the broken one, never its size
    student = report.record.render_text(Audience.STUDENT)
    wrong_hidden = [c for c in report.record.cases if c.hidden and not c.ok]
    public = {c.inputs for c in report.record.cases if not c.hidden}
    assert wrong_hidden, name  # the hidden cases test the rule too
    for c in wrong_hidden:
        line = next(line for line in student.splitlines() if line.strip().startswith(f"hidden case {c.number} ("))
        kinds = line.split("(", 1)[1].split(")", 1)[0].split(", ")
        assert tuple(kinds) == c.kinds and set(kinds) & broken, line
        assert "[" not in line and (c.inputs not in student or c.inputs in public), line
    assert report.record.render_text(Audience.TA).count("[FAIL] hidden case") == len(wrong_hidden)


@pytest.mark.processes
def test_the_reference_solutions_pass_check_as_they_pass_grading(capsys):
    """The other side of the promise, on the questions above: a kernel right on every kind passes check()."""
    for qid in sorted({qid for qid, _ in MUTANTS.values()}):
        assert check(qid, QUESTIONS[qid].solution_path).passed, qid
    assert "Public checks passed" in capsys.readouterr().out
