"""The reference solutions' latencies, which every speed tier is measured against, are the same whether the
reference runs in the grading process (``nkilab.judge.evaluate.reference_latency``'s default: the course's own code,
no sandbox start-up) or in a sandboxed child as a hand-in does: same program, same estimate, same facts."""

from __future__ import annotations

import pytest

from nkilab.course.questions import QUESTIONS, timed_references
from nkilab.judge.evaluate import grading_target, reference_latency

TIMED = sorted({r.qid: r for q in QUESTIONS.values() for r in timed_references(q)}.values(), key=lambda q: q.qid)


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
@pytest.mark.parametrize("q", TIMED, ids=[q.qid for q in TIMED])
def test_in_process_and_sandboxed_references_agree(monkeypatch, q):
    monkeypatch.delenv("NKILAB_REFERENCE_LATENCIES", raising=False)  # measured here, not read from a preset
    target = grading_target(q)
    here = reference_latency(q, target, 120.0)
    child = reference_latency(q, target, 120.0, sandboxed=True)
    assert here.ok and child.ok, (here, child)
    assert here.latency_us == child.latency_us > 0.0
    assert here.target == child.target == target
    assert here.facts == child.facts


def test_a_missing_reference_is_reported_not_raised(monkeypatch, tmp_path):
    q = QUESTIONS["vector_add_naive"]
    monkeypatch.delenv("NKILAB_REFERENCE_LATENCIES", raising=False)
    monkeypatch.setattr(type(q), "solution_path", property(lambda self: tmp_path / "gone.py"), raising=False)
    found = reference_latency(q, "trn2", 60.0)
    assert not found.ok and found.error is not None and found.error.type == "FileNotFoundError"
    assert "run make release" in found.error.message
