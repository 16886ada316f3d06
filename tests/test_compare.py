"""``compare.diagnose``'s block-wise "matches" check against the whole-array checks it stands for.

A passing case is decided a block at a time (``compare.matches``: the grading process's CPU on an 8 M-element speed
case); it must say "matches" exactly when the whole-array checks would: no NaN/Inf where the answer is finite, not
all zeros against a nonzero answer, every element ``np.isclose`` in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

from nkilab.isolate.replies import CaseRun, RunStatus
from nkilab.judge import compare
from nkilab.judge.compare import diagnose

RTOL, ATOL = 1e-3, 1e-3


def whole_array_match(got: np.ndarray, expected: np.ndarray) -> bool:
    """The verdict "matches" as the whole-array checks reach it (written out here, independently of compare.py)."""
    g, e = got.astype(np.float64), expected.astype(np.float64)
    if g.size == 0:
        return True
    if (~np.isfinite(g) & np.isfinite(e)).any():
        return False
    if not np.any(g) and np.any(e):
        return False
    return bool(np.isclose(g, e, rtol=RTOL, atol=ATOL).all())


def variants() -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    e = rng.standard_normal((6, 50)).astype(np.float32)  # 300 elements: several blocks of 64 below
    out = [("equal", e.copy(), e), ("within tolerance", e + np.float32(5e-4), e), ("empty", e[:0], e[:0]),
           ("1-D", e.reshape(-1).copy(), e.reshape(-1)), ("all zeros, answer zero", np.zeros_like(e), np.zeros_like(e)),
           ("all zeros, answer not", np.zeros_like(e), e), ("bf16-like int answer", np.arange(300, dtype=np.int32),
                                                             np.arange(300, dtype=np.int32))]
    for at in (0, 63, 64, 65, 127, 299):  # a block's first and last elements, and the array's last
        for what, value in (("off", np.float32(1.0)), ("nan", np.float32(np.nan)), ("inf", np.float32(np.inf))):
            g = e.copy()
            g.reshape(-1)[at] = g.reshape(-1)[at] + value if what == "off" else value
            out.append((f"{what} at {at}", g, e))
            ans = e.copy()  # the answer itself NaN/Inf there: equal_nan is not used, an inf equals an inf
            ans.reshape(-1)[at] = value if what != "off" else ans.reshape(-1)[at]
            out.append((f"answer {what} at {at}, got the same", ans.copy(), ans))
            out.append((f"answer {what} at {at}, got finite", e.copy(), ans))
    zero_but_one = np.zeros_like(e)
    zero_but_one.reshape(-1)[200] = 1.0
    out.append(("zeros but one element in a late block", np.zeros_like(e), zero_but_one))
    return out


@pytest.mark.parametrize("name,got,expected", variants(), ids=[v[0] for v in variants()])
def test_the_block_check_says_matches_exactly_when_the_whole_array_checks_do(monkeypatch, name, got, expected):
    monkeypatch.setattr(compare, "BLOCK", 64)
    want = whole_array_match(got, expected)
    if got.size:
        assert compare.matches(got, expected, RTOL, ATOL) is want
    verdict = diagnose(CaseRun(RunStatus.OK, output=got), lambda: expected, [np.ones(3)], RTOL, ATOL, "k.py")
    assert verdict.ok is want
    assert (verdict.message == "matches") is want


def test_a_wrong_output_is_still_described_from_the_whole_array(monkeypatch):
    """A block that fails hands the case to the whole-array diagnosis: its count and first wrong element."""
    monkeypatch.setattr(compare, "BLOCK", 64)
    e = np.arange(256, dtype=np.float32).reshape(2, 128)
    g = e.copy()
    g[1, 100] += 50
    verdict = diagnose(CaseRun(RunStatus.OK, output=g), lambda: e, [np.ones(3)], RTOL, ATOL, "k.py")
    assert not verdict.ok
    assert verdict.message.startswith("1 of 256 elements wrong (0.4%); first at index [1, 100]")
    assert "expected 228, got 278" in verdict.message
