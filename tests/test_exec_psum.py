"""PSUM accumulation groups of NKI 0.6's ``nc_matmul(dst=)`` (``ops.matmul.into_psum``): once every element of the
destination has started its group, a matmul adds onto it in place (``ops.base.write_dst(add=True)``); elements
still to start are overwritten.  Values checked exactly against NumPy: integer inputs make every fp32 sum exact,
whatever the order; a bf16 destination rounds once per matmul, as NumPy does here step by step.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import nkisim
from nkisim import api

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(29)


def _ints(*shape: int) -> np.ndarray:
    return RNG.integers(-4, 5, size=shape).astype(np.float32)


@nki.jit
def _groups(s, m):
    """Rows 0:64 start with the first matmul, rows 64:128 with the second; then three more add onto all of them."""
    out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    st, mv = nl.load(s), nl.load(m)
    acc = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc[0:64, :], stationary=st[:, 0:64], moving=mv)
    for _ in range(4):
        nisa.nc_matmul(dst=acc, stationary=st, moving=mv)
    res = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nl.store(out, res)
    return out


def test_a_group_adds_in_place_once_every_element_has_started():
    s, m = _ints(128, 128), _ints(128, 32)
    p = s.T.astype(np.float64) @ m
    want = np.concatenate([5 * p[:64], 4 * p[64:]]).astype(np.float32)
    assert np.array_equal(api.launch(_groups, [s, m]).outputs, want)
    program = api.trace(_groups, [s, m])
    assert np.array_equal(api.execute(program, [s, m]).outputs, want)


@nki.jit
def _bf16_group(s, m):
    out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    st, mv = nl.load(s), nl.load(m)
    acc = nl.ndarray((64, 32), dtype=nl.bfloat16, buffer=nl.psum)
    for _ in range(3):
        nisa.nc_matmul(dst=acc, stationary=st, moving=mv)
    res = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nl.store(out, res)
    return out


def test_a_bf16_group_rounds_every_sum():
    s, m = RNG.standard_normal((128, 64)).astype(np.float32), RNG.standard_normal((128, 32)).astype(np.float32)
    p = s.T @ m
    bf = ml_dtypes.bfloat16
    want = p.astype(bf)
    for _ in range(2):
        want = (want.astype(np.float32) + p).astype(bf)
    got = api.launch(_bf16_group, [s, m], target="trn3").outputs
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=0, atol=0.02 * float(np.abs(p).max()))
    assert np.mean(got == want.astype(np.float32)) > 0.95  # (the products' own fp32 rounding may differ in the last bit)
