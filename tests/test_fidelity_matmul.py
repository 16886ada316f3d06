"""Issue 20 scope 5: matmul shapes and operands that third-party kernels use and the hardware accepts.

Each test checks against an independent NumPy product; each would fail on the behaviour it replaces (the
refusal of a moving operand with several free dimensions, the refusal of a PSUM operand in ``nl.matmul``).
"""

from __future__ import annotations

import warnings

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim import api

RNG = np.random.default_rng(20)


def _moving_3d(use_nl: bool):
    @nki.jit
    def kernel(s, m):
        k, a, b = m.shape
        out = nl.ndarray((s.shape[1], a, b), dtype=nl.float32, buffer=nl.shared_hbm)
        st = nl.load(s)
        mv = nl.load(m)
        res = nl.matmul(st, mv, transpose_x=True) if use_nl else nisa.nc_matmul(st, mv)
        nl.store(out, nl.copy(res))
        return out

    return kernel


@pytest.mark.parametrize("use_nl", [False, True], ids=["nc_matmul", "nl.matmul"])
def test_moving_operand_with_two_free_dims(use_nl: bool) -> None:
    # CS149 2025: "nc_matmul can accept a >2D tensor as the moving argument, as long as the hardware
    # constraints of PSUM are respected" -- 4 x 128 = 512 fp32 per partition, one PSUM bank
    s = RNG.standard_normal((96, 64), dtype=np.float32)
    m = RNG.standard_normal((96, 4, 128), dtype=np.float32)
    ref = np.einsum("km,kab->mab", s.astype(np.float64), m.astype(np.float64))
    got = _moving_3d(use_nl)(s, m)
    assert got.shape == (64, 4, 128)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_moving_operand_free_dims_are_priced_as_their_product() -> None:
    # the PE array streams the moving operand's 512 elements per partition either way
    def pe_us(shape):
        est = api.launch(_moving_3d(False), (np.zeros((128, 128), np.float32), np.zeros(shape, np.float32))).estimate()
        return est.engine_busy_us["pe"]

    flat = pe_us((128, 1, 512))
    assert pe_us((128, 4, 128)) == pytest.approx(flat)
    assert pe_us((128, 2, 128)) < 0.6 * flat


def test_moving_free_dims_over_one_bank_are_refused() -> None:
    with pytest.raises(ValueError, match=r"size of free dimensions \(3 x 256 = 768"):
        _moving_3d(False)(np.ones((8, 8), np.float32), np.ones((8, 3, 256), np.float32))


def test_nl_matmul_accepts_a_psum_operand_like_nc_matmul() -> None:
    # AWS's attention tutorial v1: ``v_t = nl.transpose(v)`` (a PSUM tile) is the moving operand of nl.matmul
    @nki.jit
    def kernel(s, v):
        out = nl.ndarray((s.shape[0], v.shape[0]), dtype=nl.float32, buffer=nl.shared_hbm)
        v_t = nl.transpose(nl.load(v))
        nl.store(out, nl.copy(nl.matmul(nl.load(s), v_t, transpose_x=False)))
        return out

    s = RNG.standard_normal((128, 96), dtype=np.float32)
    v = RNG.standard_normal((64, 96), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = kernel(s, v)
    np.testing.assert_allclose(got, s.astype(np.float64) @ v.T.astype(np.float64), rtol=1e-4, atol=1e-4)
