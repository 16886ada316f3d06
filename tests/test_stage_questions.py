"""The stage modules make their questions one way (issue 32): ``questions.question`` for a kernel's first version,
``questions.variant`` for the next version of the same kernel, never a ``Question(...)`` block restating the
manifest's fields; and what the manifest says of each question (title, points, tiers, references) is what the
registry holds.  In process: reading the registry and the manifest, no kernel run."""

from __future__ import annotations

import dataclasses
import re

import pytest

from nkilab.course import manifest, questions
from nkilab.course.questions import QUESTIONS, REPO, question, variant

STAGES = REPO / "autograder" / "nkilab" / "course" / "stages"
#: the registry's fields that come from the course manifest (``manifest.question_fields``)
FROM_MANIFEST = ("qid", "title", "function", "solution", "solution_nki", "correctness_points", "speed_points",
                 "full_tier", "partial_tier", "relaxed", "speed_lesson")


def test_no_stage_module_restates_a_question_block():
    for path in sorted(STAGES.glob("s[0-9][0-9]_*.py")):
        text = path.read_text()
        assert not re.search(r"\bQuestion\(|question_fields", text), path.name
        assert "QUESTIONS = [" in text and re.search(r"= (question|variant)\(", text), path.name


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_each_question_holds_what_the_manifest_says_of_it(qid: str):
    fields = manifest.question_fields(qid)
    q = QUESTIONS[qid]
    assert {f: getattr(q, f) for f in FROM_MANIFEST} == {f: fields[f] for f in FROM_MANIFEST}
    spec = manifest.course().questions()[qid]
    assert (q.correctness_points, q.speed_points, q.points) == (spec.correctness, spec.speed, spec.points)


def test_every_question_of_the_manifest_is_made_once_in_stage_order():
    assert list(QUESTIONS) == [q.qid for s in manifest.course().stages for q in s.questions]


def test_a_variant_takes_its_own_manifest_facts_and_its_bases_kernel(monkeypatch, tmp_path):
    """An edited course.toml changes the variant, not its base: the variant's points, tiers and references are its
    own qid's, everything else (cases, reference, kinds) its base's unless the stage says otherwise."""
    base, fast = QUESTIONS["rmsnorm"], QUESTIONS["rmsnorm_fast"]
    assert (fast.public, fast.hidden, fast.reference, fast.kinds) == (base.public, base.hidden, base.reference,
                                                                      base.kinds)
    assert (fast.correctness_points, fast.speed_points) != (base.correctness_points, base.speed_points)
    edited = tmp_path / "course.toml"
    text = manifest.MANIFEST.read_text()
    block = text[text.index('qid = "rmsnorm_fast"'):]
    edited.write_text(text.replace(block, block.replace("speed = 3", "speed = 5", 1), 1)
                      .replace("full_tier = ", "full_tier = 1.1 # ", 1))
    monkeypatch.setattr(manifest, "MANIFEST", edited)
    manifest.course.cache_clear()
    try:
        again = variant(base, "rmsnorm_fast")
        first = question("rmsnorm", **{f.name: getattr(base, f.name) for f in dataclasses.fields(base)
                                       if f.name not in FROM_MANIFEST})
    finally:
        monkeypatch.undo()
        manifest.course.cache_clear()
    assert (again.speed_points, again.full_tier, again.title) == (5.0, 1.1, fast.title)
    assert (first.speed_points, first.full_tier) == (base.speed_points, 1.1)
    assert again.public is base.public and questions.QUESTIONS["rmsnorm_fast"].speed_points == 3.0
