"""``nisa.tensor_tensor_scan``'s faster forms give the recurrence's bits (issue 29 scope 3: nki-library's cumsum at full
size is 480 scans of 128 x 2,048 elements).

``ops.scan.linear_scan`` computes ``r[i] = op1(op0(x[i], r[i-1]), y[i])`` as ``np.add.accumulate`` for a cumulative
sum and over contiguous columns for the other exact operators; ``ops.scan.scan_by_column`` is the recurrence as it
reads, one column at a time.  They must agree bit for bit on every operator pair, either operand order, and values
that tell orders and roundings apart (NaN, infinities, signed zeros, values whose sums round).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nkisim.ops import scan

F32 = np.float32
OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "fmod")


def _data(rng: np.random.Generator, shape: tuple[int, int], ones: bool = False) -> np.ndarray:
    x = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e4], size=shape)).astype(F32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3e38], dtype=F32)
    pick = rng.random(shape) < 0.05
    x[pick] = rng.choice(special, size=int(pick.sum()))
    return np.ones(shape, F32) if ones else x


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize(("op0", "op1"), list(itertools.product(OPS, OPS)))
def test_linear_scan_equals_the_column_loop_bit_for_bit(op0: str, op1: str) -> None:
    rng = np.random.default_rng(OPS.index(op0) * len(OPS) + OPS.index(op1))
    shape = (128, 37)
    x, y, prev = _data(rng, shape), _data(rng, shape), _data(rng, (128, 1))[:, 0]
    with np.errstate(all="ignore"):
        for r0, r1 in itertools.product((False, True), repeat=2):
            want = scan.scan_by_column(op0, op1, x, y, prev, r0, r1)
            assert _same_bits(scan.linear_scan(op0, op1, x, y, prev, r0, r1), want), (op0, op1, r0, r1)


@pytest.mark.parametrize("reverse0", [False, True])
def test_a_cumulative_sum_from_a_scan_by_ones_equals_the_column_loop(reverse0: bool) -> None:
    rng = np.random.default_rng(7)
    y, prev = _data(rng, (128, 2048)), _data(rng, (128, 1))[:, 0]
    x = _data(rng, (128, 2048), ones=True)
    with np.errstate(all="ignore"):
        want = scan.scan_by_column("multiply", "add", x, y, prev, reverse0, False)
        got = scan.linear_scan("multiply", "add", x, y, prev, reverse0, False)
    assert _same_bits(got, want)
    assert np.isnan(got).any() and np.isinf(got).any()  # the specials reached the running sum


def test_a_scan_by_ones_with_one_other_value_is_not_taken_for_a_cumulative_sum() -> None:
    rng = np.random.default_rng(8)
    y, prev = _data(rng, (128, 64)), np.zeros(128, F32)
    x = np.ones((128, 64), F32)
    x[5, 40] = 1.5
    with np.errstate(all="ignore"):
        assert _same_bits(scan.linear_scan("multiply", "add", x, y, prev), scan.scan_by_column("multiply", "add", x, y,
                                                                                                   prev))
