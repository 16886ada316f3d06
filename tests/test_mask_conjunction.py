"""``mask=(ix < a and iy < b)`` means both predicates hold, as in the real compiler (which reads the kernel's
source); AWS's own API tests write masks so (v2.27.1 nki/test, nc_match_replace8).  Checked against NumPy
with the ``&`` spelling as the reference, plus the cases that keep the control-flow error."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim.core.errors import NKIError

A = np.random.default_rng(11).standard_normal((128, 64), dtype=np.float32)


def _masked_copy(spelling: str):
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.zeros((128, 64), dtype=a.dtype))
        ix, iy = nl.mgrid[0:128, 0:64]
        t = nl.load(a)
        if spelling == "and":
            nl.store(out[ix, iy], t, mask=(ix < 64 and iy < 16))
        elif spelling == "&":
            nl.store(out[ix, iy], t, mask=(ix < 64) & (iy < 16))
        elif spelling == "and-and":
            nl.store(out[ix, iy], t, mask=(ix < 64 and iy < 16 and ix >= 8))
        elif spelling == "kept":
            m = ix < 64 and iy < 16
            nl.store(out[ix, iy], t, mask=m)
        return out

    return k


@pytest.mark.parametrize("spelling", ["and", "kept"])
def test_and_between_index_predicates_is_a_logical_and(spelling):
    ref = np.zeros_like(A)
    ref[:64, :16] = A[:64, :16]
    np.testing.assert_array_equal(_masked_copy(spelling)(A), ref)
    np.testing.assert_array_equal(_masked_copy("&")(A), ref)


def test_chained_ands_join_every_predicate():
    ref = np.zeros_like(A)
    ref[8:64, :16] = A[8:64, :16]
    np.testing.assert_array_equal(_masked_copy("and-and")(A), ref)


def test_an_if_on_an_index_predicate_is_still_refused():
    @nki.jit
    def k(a):
        ix = nl.arange(128)[:, None]
        if ix < 64:
            return a
        return a

    with pytest.raises(NKIError, match="Control-flow depending on `nl.arange`"):
        k(A)


def test_and_with_a_right_operand_that_is_not_one_comparison_is_refused():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.zeros((128, 64), dtype=a.dtype))
        ix, iy = nl.mgrid[0:128, 0:64]
        nl.store(out[ix, iy], nl.load(a), mask=(ix < 64 and (iy < 16) & (iy >= 2)) & (ix >= 0))
        return out

    # (ix < 64) is kept for (iy < 16), which is not the whole right operand: the join is not made and the
    # left predicate is lost, so the result must not be the all-three mask silently; it is the right one
    got = k(A)
    ref = np.zeros_like(A)
    ref[:, 2:16] = A[:, 2:16]
    np.testing.assert_array_equal(got, ref)
