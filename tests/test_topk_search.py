"""Issue 29 scope 3: ``max8`` and ``nc_match_replace8`` search only the elements that can be in their answer.

nki-library's top-k kernels chain hundreds of ``max8`` / ``nc_match_replace8`` rounds on wide tiles (its topk sweep
case [1024-5-4058-2048-2] issues 40,960); sorting and scanning whole rows each round took 300 s there.  The search now
runs over a few groups of each row (``ops.topk.top8``) and over the elements at least as large as the smallest value
sought (``ops.topk.first_matches``).  Here both are checked bit for bit against whole-row NumPy references written
out in this file (ties, NaN, -inf, masks, absent values, widths around the thresholds), and a kernel's top-k chain on
a [128, 3000] tile is checked against NumPy's sort with the whole-row search disabled, so it cannot be what ran.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim.ops import topk

RNG = np.random.default_rng(29)


def _top8_reference(x: np.ndarray) -> np.ndarray:
    return -np.sort(-x, axis=1)[:, :8]


def _matches_reference(x: np.ndarray, vals: np.ndarray, keep: np.ndarray | None, consume: bool) -> np.ndarray:
    """Value by value, element by element: each value's first available occurrence in its row (0 if none)."""
    idx = np.zeros(vals.shape, dtype=np.int64)
    for r in range(x.shape[0]):
        avail = np.ones(x.shape[1], bool) if keep is None else keep[r].copy()
        for j in range(vals.shape[1]):
            hits = np.flatnonzero((x[r] == vals[r, j]) & avail)
            if hits.size:
                idx[r, j] = hits[0]
                if consume:
                    avail[hits[0]] = False
    return idx


def _rows(kind: str, p: int, n: int) -> np.ndarray:
    if kind == "normal":
        return RNG.standard_normal((p, n)).astype(np.float32)
    if kind == "ties":
        return RNG.integers(-3, 4, (p, n)).astype(np.float32)  # zeros too: -0.0 and 0.0 compare equal
    x = RNG.standard_normal((p, n)).astype(np.float32)
    if kind == "knocked out":  # a top-k chain's later rounds: many -inf
        x[RNG.random((p, n)) < 0.6] = -np.inf
    elif kind == "nan":
        x[RNG.random((p, n)) < 0.01] = np.nan
    elif kind == "few finite":
        x[:] = -np.inf
        x[:, :3] = 1.0
    elif kind == "padding rows":  # a ragged last tile: rows of one repeated value among rows of data
        x[::3] = np.float32(-3.4e38)
    return x


KINDS = ["normal", "ties", "knocked out", "nan", "few finite", "padding rows"]
WIDTHS = [8, 127, 128, 130, 2029, 2048, 3053, 16384]


@pytest.mark.parametrize("kind", KINDS)
def test_top8_equals_the_whole_row_sort_bit_for_bit(kind: str) -> None:
    for n in WIDTHS:
        x = _rows(kind, 64, n)
        ref, got = _top8_reference(x), topk.top8(x)
        assert np.array_equal(ref, got, equal_nan=True), (kind, n)
        finite = ~np.isnan(ref)
        assert np.array_equal(ref[finite].view(np.uint32), got[finite].view(np.uint32)), (kind, n)


@pytest.mark.parametrize("kind", KINDS)
def test_first_matches_equal_the_element_by_element_search(kind: str) -> None:
    for n in (8, 300, 3053):
        x = _rows(kind, 16, n)
        vals = _top8_reference(x)
        vals[::3, 5] = 99.0  # absent
        vals[1::4, 2] = vals[1::4, 1]  # the same value twice: consumed in turn
        for keep in (None, RNG.random(x.shape) < 0.8):
            for consume in (True, False):
                got = topk.first_matches(x, vals, keep, consume)
                assert np.array_equal(got, _matches_reference(x, vals, keep, consume)), (kind, n, consume)


def test_a_kernels_top_k_chain_on_a_wide_tile_searches_only_the_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    def whole_rows(*args: object) -> np.ndarray:
        raise AssertionError("a top-k round searched whole rows")

    monkeypatch.setattr(topk, "first_matches_rows", whole_rows)
    sorted_whole = np.sort

    def no_whole_row_sort(a: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        assert np.asarray(a).shape[-1] <= 8 * 16, "max8 sorted whole rows"
        return sorted_whole(a, *args, **kwargs)

    monkeypatch.setattr(topk.np, "sort", no_whole_row_sort)
    rounds = 4

    @nki.jit
    def kernel(a):
        vals = nl.ndarray((a.shape[0], 8 * rounds), dtype=nl.float32, buffer=nl.shared_hbm)
        idx = nl.ndarray((a.shape[0], 8 * rounds), dtype=nl.uint32, buffer=nl.shared_hbm)
        data = nl.load(a)
        v = nl.ndarray((a.shape[0], 8 * rounds), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.ndarray((a.shape[0], 8 * rounds), dtype=nl.uint32, buffer=nl.sbuf)
        for r in nl.static_range(rounds):
            nisa.max8(dst=v[:, r * 8:(r + 1) * 8], src=data)
            data[...] = nisa.nc_match_replace8(data=data, vals=v[:, r * 8:(r + 1) * 8], imm=float("-inf"),
                                               dst_idx=i[:, r * 8:(r + 1) * 8])
        nl.store(vals, v)
        nl.store(idx, i)
        return vals, idx

    a = RNG.standard_normal((128, 3000)).astype(np.float32)
    vals, idx = kernel(a)
    order = np.argsort(-a, axis=1, kind="stable")[:, :8 * rounds]
    np.testing.assert_array_equal(vals, np.take_along_axis(a, order, axis=1))
    np.testing.assert_array_equal(idx, order)


def test_only_rows_of_one_repeated_value_are_searched_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    x = _rows("padding rows", 30, 2029)
    vals = _top8_reference(x)
    searched: list[int] = []
    whole_rows = topk.first_matches_rows

    def counted(x: np.ndarray, *args: object) -> np.ndarray:
        searched.append(x.shape[0])
        return whole_rows(x, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(topk, "first_matches_rows", counted)
    got = topk.first_matches(x, vals, None, True)
    assert searched == [10]  # the padding rows x[::3], and only those
    assert np.array_equal(got, _matches_reference(x, vals, None, True))
