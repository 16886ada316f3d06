"""Hidden cases stay hidden: a student running a grade cell sees them only as a count, and a TA can grade on
private hidden cases kept in a grader-side file (``NKILAB_HIDDEN_CASES`` / ``make grade --hidden-cases``)."""

from __future__ import annotations

import json
import re

import pytest

from nkilab import grade_report
from nkilab.batch import example_class
from nkilab.course.questions import HIDDEN_CASES_ENV, QUESTIONS
from nkilab.judge.grade import GRADING_ENV
from nkilab.judge.results import Audience

CLEO = example_class.CLASS_DIR / "kernels" / "cleo_add_float32_out.py"  # float32 output whatever the input
REFERENCE = QUESTIONS["vector_add_naive"].solution_path


@pytest.mark.processes
def test_a_student_running_a_grade_cell_sees_hidden_cases_only_as_a_count(monkeypatch, capsys):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    grade_report("vector_add_naive", CLEO, seed=1)
    student = capsys.readouterr().out
    assert "hidden cases: 4 of 6 passed" in student and "hidden case 8/10" not in student
    assert "float16 [64, 100]" not in student
    # named by its kinds (which the public cases cover), not its sizes
    assert "hidden case 8 (float16, under one tile): wrong dtype or shape" in student
    monkeypatch.setenv(GRADING_ENV, "1")
    grade_report("vector_add_naive", CLEO, seed=1)
    ta = capsys.readouterr().out
    assert "[FAIL] hidden case 8/10  a, b: float16 [64, 100]" in ta


@pytest.mark.processes
def test_private_hidden_cases_replace_the_public_registrys(tmp_path, monkeypatch):
    path = tmp_path / "hidden.json"
    path.write_text(json.dumps({"vector_add_naive": [{"shape": [3, 5]}, {"shape": [100, 64], "dtype": "float32"}]}))
    monkeypatch.setenv(HIDDEN_CASES_ENV, str(path))
    r = grade_report("vector_add_naive", CLEO, seed=1, verbose=False)
    hidden = [(c.case.shape, c.case.dtype) for c in r.evaluation.cases if c.hidden]
    assert hidden == [((3, 5), "float32"), ((100, 64), "float32")]
    assert [c.verdict.ok for c in r.evaluation.cases if c.hidden] == [True, True]  # no low-precision case there
    path.write_text(json.dumps({"vector_add_naive": [{"shape": [64, 100], "dtype": "bfloat16"}]}))
    r = grade_report("vector_add_naive", CLEO, seed=1, verbose=False)
    # (the public float16 and bfloat16 cases fail too: check() said so before grading)
    assert [c.verdict.ok for c in r.evaluation.cases] == [True, True, False, False, False]
    assert grade_report("vector_add_naive", REFERENCE, seed=1, verbose=False).points == 3.0


@pytest.mark.processes
def test_a_typo_in_the_private_file_is_said_not_ignored(tmp_path, monkeypatch, capsys):
    path = tmp_path / "hidden.json"
    path.write_text(json.dumps({"vector_add_naiv": [{"shape": [3, 5]}]}))
    monkeypatch.setenv(HIDDEN_CASES_ENV, str(path))
    assert grade_report("vector_add_naive", REFERENCE, seed=1).points == 0.0
    assert "no question 'vector_add_naiv'" in capsys.readouterr().out


@pytest.fixture(autouse=True)
def _fresh_file_cache():
    from nkilab.course import questions

    questions.load_hidden_cases.cache_clear()
    yield
    questions.load_hidden_cases.cache_clear()


@pytest.mark.processes
def test_an_exception_class_the_kernel_names_never_reaches_feedback(monkeypatch, capsys):
    """theo's kernel raises a class it made with ``type()``, named after the case's shape and dtype: every case is
    reported as "an exception" (only Python's and NKI's own classes are named), to the TA too."""
    theo = example_class.CLASS_DIR / "kernels" / "theo_name_the_hidden_case.py"
    for audience in ("", "1"):
        monkeypatch.setenv(GRADING_ENV, audience)
        r = grade_report("vector_add_naive", theo, seed=1)
        text = capsys.readouterr().out
        assert r.points == 0.0
        named = re.compile(r"Case_\d")  # the class's name (the kernel's own line, quoted for the TA, says Case_{size})
        assert not named.search(text) and not named.search(json.dumps(r.record.to_json())), text
        assert {c.category() for c in r.record.cases} == {"raised an exception"}
    assert "hidden case 8 (float16, under one tile): raised an exception" in r.record.render_text(Audience.STUDENT)
