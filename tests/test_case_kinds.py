"""check() runs every kind of input grading does (issue 22): the public cases cover each kind of hidden case, so a
kernel that passes them can fail a hidden case only on its values.  The kinds are derived here from the questions'
own definitions (``Question.kinds`` predicates on the cases, and each argument's dtype), not read from the manifest
(tests/test_manifest.py holds the manifest's lists to the same predicates).  Fast: nothing here runs a kernel."""

from __future__ import annotations

import dataclasses

import pytest

from nkilab.course import manifest
from nkilab.course.questions import (
    QUESTIONS,
    ROW_KINDS,
    UNEVEN_SPLIT,
    Case,
    Question,
    grid_size,
    row_tiles,
    split_kinds,
    uncovered_kinds,
)


@pytest.mark.parametrize("qid", list(QUESTIONS))
def test_every_kind_of_hidden_case_has_a_public_case(qid: str):
    q = QUESTIONS[qid]
    assert uncovered_kinds(q) == set(), f"{qid}: hidden cases of kinds no public case has: {uncovered_kinds(q)}"


def test_all_nine_stages_are_covered():
    stages = {manifest.course().stage_of(qid).number for qid in QUESTIONS}
    assert stages == set(range(1, 10))
    assert all(q.hidden and q.public for q in QUESTIONS.values())


def _families(q: Question) -> dict:
    """The standard kinds that apply to ``q``: the row kinds for a question that tiles its first argument's rows
    (it names one of them), the uneven split for a question launched on several instances."""
    found = dict(ROW_KINDS) if set(q.kinds) & set(ROW_KINDS) else {}
    if grid_size(q.grid) > 1:
        found |= split_kinds(grid_size(q.grid))
    return found


def unnamed_kinds(q: Question) -> list[str]:
    """The standard kinds ``q`` does not name that tell its cases apart, other than by splitting them exactly as a
    named kind does (in stage 1, where every case is one tile, "ragged rows" is "under one tile")."""
    cases = q.public + q.hidden + (q.speed_case,)
    named = {tuple(holds(c) for c in cases) for holds in q.kinds.values()}
    named |= {tuple(not x for x in split) for split in named}
    found = []
    for name, holds in _families(q).items():
        split = tuple(holds(c) for c in cases)
        if name not in q.kinds and len(set(split)) > 1 and split not in named:
            found.append(name)
    return found


@pytest.mark.parametrize("qid", list(QUESTIONS))
def test_a_kind_the_cases_differ_in_is_named(qid: str):
    """A kind left unnamed is a kind the coverage test cannot see."""
    assert unnamed_kinds(QUESTIONS[qid]) == []


def test_an_unnamed_kind_is_found():
    """Stage 2's and stage 5's questions as they were classified before issue 22."""
    from nkilab.course.questions import row_kinds

    tiled = dataclasses.replace(QUESTIONS["tiled_add"], kinds=row_kinds("several row tiles", "one column"))
    assert unnamed_kinds(tiled) == ["odd number of row tiles"]
    two = dataclasses.replace(QUESTIONS["rmsnorm_2core"], kinds=row_kinds("one row", "ragged rows",
                                                                           "several row tiles"))
    # ("under one tile" is "not several row tiles" there: no case has exactly 128 rows)
    assert unnamed_kinds(two) == ["odd number of row tiles", UNEVEN_SPLIT]


def _rms(rows: int, cols: int, dtype: str = "float32") -> Case:
    return Case((rows, cols), dtype, arg_shapes=((rows, cols), (cols,)))


#: public cases before issue 22, and the kinds of hidden case they left uncovered: what the test above now refuses
OLD_PUBLIC = {
    "vector_add_naive": ((Case((128, 512)), Case((7, 33))),
                         {"float16", "bfloat16", "one row", "one column", "F = 4096", "a: float16", "b: float16",
                          "a: bfloat16", "b: bfloat16"}),
    "tiled_add_relu": ((Case((129, 64)), Case((1000, 33))),
                       {"float16", "bfloat16", "one row", "under one tile", "odd number of row tiles", "one column",
                        "a: float16", "b: float16", "a: bfloat16", "b: bfloat16"}),
    "rmsnorm": ((_rms(256, 512), _rms(129, 300), _rms(1000, 768, "bfloat16")),
                {"one row", "under one tile", "odd number of row tiles", "one column"}),
    "rmsnorm_2core": ((_rms(256, 512), _rms(129, 300), _rms(1000, 768, "bfloat16")),
                      {"one row", "under one tile", "odd number of row tiles", UNEVEN_SPLIT}),
}


@pytest.mark.parametrize("qid", sorted(OLD_PUBLIC))
def test_the_old_public_cases_are_refused_with_the_kinds_they_missed(qid: str):
    old, missed = OLD_PUBLIC[qid]
    assert uncovered_kinds(dataclasses.replace(QUESTIONS[qid], public=old)) == missed


def test_the_kinds_are_what_they_say():
    q = QUESTIONS["rmsnorm_2core"]
    assert [row_tiles(_rms(r, 8)) for r in (1, 127, 128, 129, 384, 385)] == [1, 1, 1, 2, 3, 4]
    assert q.kind_names(_rms(1, 8)) == ("float32", "one row", "under one tile", "ragged rows",
                                        "odd number of row tiles", UNEVEN_SPLIT)
    assert q.kind_names(_rms(256, 8, "bfloat16")) == ("bfloat16", "several row tiles")
    assert q.kind_names(_rms(384, 1)) == ("float32", "several row tiles", "odd number of row tiles", "one column",
                                          UNEVEN_SPLIT)
    assert grid_size(({"nc": 2}, 2)) == 4 and grid_size((4,)) == 4 and grid_size(None) == 1
    mm = QUESTIONS["matmul_tiled"]
    big = Case((384, 256), arg_shapes=((384, 256), (384, 1536)))
    assert {"odd number of K tiles", "odd number of N tiles"} <= mm.kinds_of(big)
    assert "odd number of M tiles" not in mm.kinds_of(big)


def test_a_private_hidden_case_of_a_new_kind_is_found():
    """A TA's private hidden cases (``--hidden-cases``) are classified by the same predicates."""
    q = QUESTIONS["rmsnorm"]
    assert uncovered_kinds(q, (_rms(700, 64, "float16"),)) == {"float16", "a: float16", "g: float16"}
    assert uncovered_kinds(q, (_rms(5, 7),)) == set()


def test_the_manifest_refuses_a_hidden_kind_without_a_public_case():
    text = manifest.MANIFEST.read_text()
    start = text.index('qid = "tiled_add"')
    public = text.index("public = ", start)
    end = text.index("\n", public)
    broken = text[:public] + 'public = ["float32"]' + text[end:]
    with pytest.raises(manifest.ManifestError, match=r"tiled_add: hidden case kinds \[.*'float16'.*\] have no public"):
        manifest.parse(broken)
