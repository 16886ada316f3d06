"""NKI 0.6 views lower to basic indices of their tensor (``frontend.v06.adapters.layout.basic_key``), memoised
because a kernel whose Python loops unroll lowers the same views once per instruction.

Checked against NumPy: every view a basic NumPy index makes of a row-major array (its offset and element strides
read from NumPy's own view) is lowered to a key that selects exactly the view's elements of the array, in order,
with one dimension per view dimension; asked again, the same key comes back.
"""

from __future__ import annotations

import numpy as np

from nkisim.frontend.v06.adapters.layout import basic_key, contiguous

RNG = np.random.default_rng(29)


def _random_view(shape: tuple[int, ...]) -> tuple:
    """A basic NumPy index of an array of ``shape``: per dimension an integer or a forward slice with a step."""
    key = []
    for n in shape:
        if RNG.random() < 0.3:
            key.append(int(RNG.integers(0, n)))
        else:
            lo = int(RNG.integers(0, n))
            step = int(RNG.integers(1, 4))
            hi = int(RNG.integers(lo + 1, n + 1))
            key.append(slice(lo, hi, step))
    return tuple(key)


def test_a_view_lowers_to_a_key_selecting_its_elements():
    checked = 0
    for _ in range(400):
        shape = tuple(int(d) for d in RNG.integers(1, 7, size=int(RNG.integers(1, 5))))
        base = np.arange(int(np.prod(shape))).reshape(shape)
        view = base[_random_view(shape)]
        if view.ndim == 0:
            continue
        offset = int(view.flat[0])
        pattern = tuple((s // base.itemsize, c) for s, c in zip(view.strides, view.shape))
        key = basic_key(shape, offset, pattern)
        if key is None:  # (a size-1 dimension's stride may name no dimension of the array: not a basic index)
            continue
        got = base[key]
        assert got.shape == view.shape and np.array_equal(got, view), (shape, offset, pattern, key)
        assert basic_key(shape, offset, pattern) == key
        checked += 1
    assert checked > 200
    assert contiguous((4, 3, 2)) == ((6, 4), (2, 3), (1, 2))
