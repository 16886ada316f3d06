"""Shortcuts on the per-instruction path must not change what a kernel sees.

- ``allocate`` remembers which (shape, dtype, space, target) requests passed its checks; a request
  that fails must fail every time, and a passing shape must still be checked for another space;
- an indexed access resolves its slice bounds once, when it is made (NumPy index, shape and trace
  box from the same values), including negative bounds and steps.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim.core.errors import NKIError

A = np.random.default_rng(3).standard_normal((256, 16), dtype=np.float32)


def test_failing_allocation_fails_every_time() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 1024), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)  # fits SBUF
        t[...] = nl.load(a)
        p = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)  # more than one PSUM bank
        nl.store(out, value=p)
        return out

    for _ in range(2):
        with pytest.raises(NKIError) as info:
            k(np.zeros((128, 1024), np.float32))
        assert info.value.error_id == "err_psum_tile_exceed_bank_size"


@nki.jit
def sliced_loads(a):
    out = nl.ndarray((128, 12), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t = nl.ndarray((128, 4), dtype=a.dtype, buffer=nl.sbuf)
        t[...] = nl.load(a[i * 128:(i + 1) * 128, -4:])
        nl.store(out[0:128, i * 4:(i + 1) * 4], value=t)
    s = nl.load(a[0:128, 0:8:2])
    nl.store(out[0:128, 8:12], value=s)
    return out


def test_slice_bounds_resolved_at_access() -> None:
    out = sliced_loads(A)
    expected = np.concatenate([A[0:128, -4:], A[128:256, -4:], A[0:128, 0:8:2]], axis=1)
    np.testing.assert_array_equal(out, expected)
