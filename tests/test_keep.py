"""A reference solution's estimated latency is computed once and kept (``nkilab.course.keep``): every later process of a
``make grade``, a lesson run or a test run reads it; an edit to what it depends on computes it afresh; a failed
run is never kept."""

from __future__ import annotations

import json

import pytest

from nkilab.course import keep, manifest
from nkilab.course.questions import QUESTIONS
from nkilab.isolate.facts import Latency
from nkilab.judge import evaluate


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty keep folder, no preset, no value remembered by this process; counts the reference's measurements."""
    monkeypatch.setenv(keep.CACHE_ENV, str(tmp_path / "kept"))
    monkeypatch.delenv(evaluate.PRESET_ENV, raising=False)
    monkeypatch.setattr(evaluate, "_REFERENCE_CACHE", {})
    measured: list[str] = []
    real = evaluate.measure_reference

    def counting(q, *args):
        measured.append(q.qid)
        return real(q, *args)

    monkeypatch.setattr(evaluate, "measure_reference", counting)
    return measured


def test_a_reference_latency_is_measured_once_and_read_back(fresh, monkeypatch):
    q = QUESTIONS["vector_add_naive"]
    first = evaluate.reference_latency(q, "trn2", 60.0)
    assert first.ok and first.latency_us > 0 and fresh == ["vector_add_naive"]
    (kept,) = (keep.cache_dir() / "references").glob("vector_add_naive-*.json")
    assert Latency.from_json(json.loads(kept.read_text())) == first
    monkeypatch.setattr(evaluate, "_REFERENCE_CACHE", {})  # another process: nothing remembered in memory
    assert evaluate.reference_latency(q, "trn2", 60.0) == first
    assert fresh == ["vector_add_naive"]  # read from the keep, not measured again
    evaluate.reference_latency(q, "trn3", 60.0)  # another target is another estimate
    assert fresh == ["vector_add_naive", "vector_add_naive"]


def test_an_edited_manifest_measures_again(fresh, monkeypatch, tmp_path):
    q = QUESTIONS["vector_add_naive"]
    evaluate.reference_latency(q, "trn2", 60.0)
    edited = tmp_path / "course.toml"
    edited.write_text(manifest.MANIFEST.read_text() + "\n# a TA's edit\n")
    monkeypatch.setattr(manifest, "MANIFEST", edited)
    monkeypatch.setattr(evaluate, "_REFERENCE_CACHE", {})
    evaluate.reference_latency(q, "trn2", 60.0)
    assert fresh == ["vector_add_naive", "vector_add_naive"]


def test_a_failed_run_is_not_kept(fresh, monkeypatch):
    q = QUESTIONS["vector_add_naive"]
    monkeypatch.setattr(evaluate, "timed_latency", lambda res, index: None)  # the reference's timed run failed
    assert not evaluate.reference_latency(q, "trn2", 60.0).ok
    assert not list((keep.cache_dir() / "references").glob("*.json"))


def test_a_corrupt_entry_is_measured_again(fresh, monkeypatch):
    q = QUESTIONS["vector_add_naive"]
    first = evaluate.reference_latency(q, "trn2", 60.0)
    (kept,) = (keep.cache_dir() / "references").glob("*.json")
    kept.write_text('{"status": "ok", "latency_us": ')
    monkeypatch.setattr(evaluate, "_REFERENCE_CACHE", {})
    assert evaluate.reference_latency(q, "trn2", 60.0) == first and len(fresh) == 2
