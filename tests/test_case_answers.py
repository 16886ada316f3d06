"""The reference's answer for a case is computed only when a run returned an array to compare with it.

A stub's ``check`` (every lesson's starting point), a crashed or refused hand-in and a kernel that returns nothing
are judged from their run alone; the float64 NumPy reference over every case (3 of the 9 s a stage-9 stub's check
took) is paid only by a run that has an output, and then once per case, seed and draw.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from nkilab.course.questions import QUESTIONS, Question
from nkilab.judge import evaluate as ev
from nkilab.kernels.modules import load_kernel

QID = "vector_add_naive"
STUB = """import nki
import nki.language as nl


@nki.jit
def {fn}(a, b):
    raise NotImplementedError
"""
NO_RETURN = """import nki
import nki.language as nl


@nki.jit
def {fn}(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
"""


@pytest.fixture
def answers(monkeypatch):
    """Every (question, shape) the reference was asked to answer."""
    asked: list[tuple] = []
    original = Question.expected

    def counted(self, args, case):
        asked.append((self.qid, case.shape))
        return original(self, args, case)

    monkeypatch.setattr(Question, "expected", counted)
    monkeypatch.setattr(ev, "_CASE_MEMO", OrderedDict())  # this test's own memo: nothing kept from another test
    return asked


def _kernel(tmp_path: Path, text: str):
    q = QUESTIONS[QID]
    path = tmp_path / "kernel.py"
    path.write_text(text.format(fn=q.function))
    return load_kernel(path, q.function)


@pytest.mark.parametrize("text", [STUB, NO_RETURN], ids=["stub", "no_return"])
def test_a_run_without_an_array_is_judged_without_the_reference(tmp_path, answers, text):
    result = ev.evaluate(QUESTIONS[QID], _kernel(tmp_path, text), hidden=True, seed=11, speed=True)
    assert result.cases and not any(c.verdict.ok for c in result.cases)
    assert answers == []


def test_a_run_with_an_array_is_judged_against_the_reference_once_per_case(tmp_path, answers):
    q = QUESTIONS[QID]
    kernel = load_kernel(q.solution_path, q.function)
    first = ev.evaluate(q, kernel, hidden=True, seed=11, speed=False)
    assert first.correct and answers  # every case compared, each answer computed
    asked = list(answers)
    assert len(asked) == len(first.cases) + sum(max(a.size for a in ev.case_data(q, c.case, 11, i).args)
                                                <= ev.MIRROR_MAX_ELEMENTS for i, c in enumerate(first.cases))
    again = ev.evaluate(q, kernel, hidden=True, seed=11, speed=False)
    assert again.correct and answers == asked  # kept with the case's inputs: not computed again


def test_the_lazy_answer_is_the_questions_answer_on_the_cases_inputs(monkeypatch):
    q = QUESTIONS[QID]
    monkeypatch.setattr(ev, "_CASE_MEMO", OrderedDict())
    d = ev.case_data(q, q.public[0], 5, 0)
    assert all(not a.flags.writeable for a in d.args)
    want = q.expected(list(d.args), q.public[0])  # what the eager memo held: the question's own answer
    np.testing.assert_array_equal(d.expected, want)
    assert d.expected.dtype == want.dtype
    assert not d.expected.flags.writeable and d.nbytes == sum(a.nbytes for a in d.args) + want.nbytes
