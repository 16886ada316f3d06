"""Similarity of hand-ins: a lead for a human, never a grade.

Two sides, each a set of fingerprints per (student, question), compared pairwise the same way:

* **the instruction program** the grader's own executor parsed and validated (``program_features``, run in
  ``nkilab.isolate._execute`` on the program of the question's timed case): each call labelled by its operation, its
  operands' kinds (never their numbers: tile sizes and loop bounds are constants of shape) and, Weisfeiler-Lehman
  style, by the labels of the calls it depends on (the last call that touched each tensor it names).  Names,
  comments, constants of shape and the order of instructions that touch no common tensor leave the set unchanged.
* **the source text**, fingerprinted by ``copydetect`` (tokenised by Pygments, names and strings replaced by one
  letter each, k-grams hashed and winnowed: MOSS's algorithm).

A pair's score on one side is ``|(A & B) - common| / |A | B|``: the share of everything the two hand-ins do that
they have in common *and* that is not common ground -- the reference solution, the released stub, and what many
hand-ins of the class share (MOSS's ``-m``).  Two students who both wrote the reference's kernel share nothing
beyond it and score 0; a copy of an unusual kernel scores near its unusual share.

Pairs are ranked by the program's score (the text's where a hand-in left no program), and flagged when the
program's score reaches ``THRESHOLD`` or the text's reaches ``TEXT_THRESHOLD``, sharing at least ``MIN_SHARED``
fingerprints beyond common ground.  The text's bar is higher because a short kernel leaves little room: two honest
students writing a three-line answer in the same natural way share most of its text (in the example class, cleo's
and rosa's one-line vector adds share 71% of their fingerprints beyond the reference's), while their programs are
the reference's and score 0.
"""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: fingerprints kept per program: the smallest hashes (a bottom-k sample, so two programs' samples compare as sets)
MAX_FEATURES = 2048
#: fingerprints are below this (JSON-safe integers)
FEATURE_LIMIT = 1 << 48
#: dependency depth of a call's label
DEPTH = 2
#: a pair is flagged at this program score, or at this text score (see above) ...
THRESHOLD = 0.4
TEXT_THRESHOLD = 0.8
#: ... when it shares at least this many fingerprints beyond common ground
MIN_SHARED = 4
#: a fingerprint found in more than this share of a question's hand-ins (and at least 3) is common ground
COMMON_SHARE = 0.5
#: copydetect's k-gram length (characters of the filtered text) and winnowing window, as its defaults
TEXT_K = 25
TEXT_WINDOW = 1

LEAD = ("Similarity is a lead for a human, never a grade: a high score says where to look, and only a person "
        "reading both hand-ins can say whether work was copied.")


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=6).digest(), "big")


def _operand_label(value: Any) -> str:
    """An operand's kind, never its numbers: operators and dtypes by name, everything else by its kind."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return "num"
    if isinstance(value, str):
        return "str:" + value[:40]
    name = type(value).__name__
    if name in ("Fn", "DType"):
        return f"{name}:{getattr(value, 'name', '')}"
    return name


def program_features(program: Any) -> list[int]:
    """The fingerprint set of a parsed, validated program (``nkisim.api.program_from_json``): sorted hashes, at
    most ``MAX_FEATURES`` (the smallest)."""
    calls = list(program.calls)
    labels = []
    for c in calls:
        kw = ",".join(f"{k}={_operand_label(v)}" for k, v in sorted(c.kwargs, key=lambda kv: kv[0]))
        labels.append(_hash(f"{c.fn}({','.join(_operand_label(a) for a in c.args)};{kw})->{len(c.out)}"))
    last: dict[int, int] = {}
    preds: list[list[int]] = []
    for i, c in enumerate(calls):
        touched = c.tensors() | set(c.out)
        preds.append(sorted({last[t] for t in touched if t in last}))
        for t in touched:
            last[t] = i
    found = set(labels)
    level = labels
    for _ in range(DEPTH):
        level = [_hash(f"{level[i]}<{sorted(level[p] for p in preds[i])}") for i in range(len(calls))]
        found.update(level)
    return sorted(found)[:MAX_FEATURES]


def checked_features(value: object) -> tuple[int, ...] | None:
    """A fingerprint list from a process's message, checked field by field (None: not one)."""
    if not isinstance(value, list) or len(value) > MAX_FEATURES:
        return None
    if not all(type(x) is int and 0 <= x < FEATURE_LIMIT for x in value):
        return None
    if any(a >= b for a, b in zip(value, value[1:])):
        return None
    return tuple(value)


# --------------------------------------------------------------------------- the text side


@dataclass(frozen=True)
class Text:
    """A kernel's source as copydetect fingerprints it: the hashes and, for each, where it occurs (character
    offsets in the filtered text), with the offsets that map filtered positions back to the source."""

    source: str
    hashes: frozenset[int]
    fingerprint: Any  # copydetect.CodeFingerprint (kept for highlighting)


def text_fingerprint(source: str) -> Text:
    """copydetect's fingerprint of ``source`` (Python), read from memory: no file is opened."""
    from copydetect import CodeFingerprint

    fp = CodeFingerprint("kernel.py", TEXT_K, TEXT_WINDOW, filter=True, language="python", fp=io.StringIO(source))
    return Text(source, frozenset(int(h) for h in fp.hashes), fp)


def shared_spans(text: Text, hashes: Iterable[int]) -> list[tuple[int, int]]:
    """Character spans of ``text.source`` covered by the fingerprints ``hashes`` (merged, in order)."""
    import numpy as np
    from copydetect.utils import get_copied_slices

    fp = text.fingerprint
    idx = [i for h in hashes for i in fp.hash_idx.get(h, ())]
    if not idx:
        return []
    starts, ends = get_copied_slices(np.array(idx, dtype=int), fp.k)
    if len(fp.offsets) > 0:
        shift = fp.offsets[:, 1][np.clip(np.searchsorted(fp.offsets[:, 0], starts), 0, fp.offsets.shape[0] - 1)]
        starts = starts + shift
        shift = fp.offsets[:, 1][np.clip(np.searchsorted(fp.offsets[:, 0], ends), 0, fp.offsets.shape[0] - 1)]
        ends = ends + shift
    n = len(text.source)
    return [(int(max(0, a)), int(min(n, b))) for a, b in zip(starts, ends) if b > a]


# --------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class Side:
    """One side's comparison of a pair: the score and how many fingerprints they share beyond common ground."""

    score: float
    shared: int
    total: int


@dataclass(frozen=True)
class Pair:
    question: str
    first: str
    second: str
    program: Side | None
    text: Side | None
    flagged: bool

    @property
    def score(self) -> float:
        """What pairs are ranked by: the program's score, else the text's."""
        side = self.program or self.text
        return side.score if side is not None else 0.0

    def key(self) -> tuple[float, float, str, str]:
        return (-self.score, -(self.text.score if self.text else 0.0), self.first, self.second)


def common_ground(sets: Mapping[str, frozenset[int] | tuple[int, ...]], given: Iterable[int] = ()) -> set[int]:
    """``given`` (the reference's and the stub's fingerprints) and every fingerprint in more than ``COMMON_SHARE``
    of ``sets`` (at least 3 of them)."""
    counts = Counter(h for s in sets.values() for h in set(s))
    limit = max(3, int(COMMON_SHARE * len(sets)) + 1)
    return set(given) | {h for h, n in counts.items() if n >= limit}


def side(a: Iterable[int], b: Iterable[int], common: set[int]) -> Side:
    sa, sb = set(a), set(b)
    union = sa | sb
    shared = (sa & sb) - common
    return Side(len(shared) / len(union) if union else 0.0, len(shared), len(union))


def rank(question: str, programs: Mapping[str, tuple[int, ...]], texts: Mapping[str, Text],
         program_common: Iterable[int] = (), text_common: Iterable[int] = (),
         threshold: float = THRESHOLD, text_threshold: float = TEXT_THRESHOLD) -> list[Pair]:
    """Every pair of students with a program or a text for ``question``, most similar first."""
    pc = common_ground(programs, program_common)
    tc = common_ground({s: t.hashes for s, t in texts.items()}, text_common)
    students = sorted(set(programs) | set(texts))
    pairs = []
    for i, s1 in enumerate(students):
        for s2 in students[i + 1:]:
            p = side(programs[s1], programs[s2], pc) if s1 in programs and s2 in programs else None
            t = side(texts[s1].hashes, texts[s2].hashes, tc) if s1 in texts and s2 in texts else None
            flagged = any(x is not None and x.score >= bar and x.shared >= MIN_SHARED
                          for x, bar in ((p, threshold), (t, text_threshold)))
            pairs.append(Pair(question, s1, s2, p, t, flagged))
    return sorted(pairs, key=Pair.key)
