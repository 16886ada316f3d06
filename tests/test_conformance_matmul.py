"""Issue 12: ``nc_matmul(perf_mode='double_row_gen3')``, checked against NumPy, and its errors."""

from __future__ import annotations

import ml_dtypes
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

RNG = np.random.default_rng(11)


def _double_row(target: str, perf_mode: str = "double_row_gen3"):
    @nki.jit(platform_target=target)
    def kernel(a, b):
        out = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nisa.nc_matmul(nl.load(a), nl.load(b), perf_mode=perf_mode))
        return out

    return kernel


def test_double_row_contracts_partitions_and_row_pairs() -> None:
    a = RNG.integers(-3, 4, (128, 2, 32)).astype(ml_dtypes.float8_e5m2)
    b = RNG.integers(-3, 4, (128, 2, 256)).astype(ml_dtypes.float8_e5m2)
    ref = np.einsum("kri,krj->ij", a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_array_equal(_double_row("trn2")(a, b), ref)


def test_double_row_needs_trn2() -> None:
    a = np.ones((4, 2, 4), ml_dtypes.float8_e4m3)
    with pytest.raises(SyntaxError, match="requires min target gen3"):
        _double_row("trn1")(a, a)


def test_double_row_needs_fp8_pairs() -> None:
    with pytest.raises(ValueError, match=r"must have shape \[partitions, 2, free\]"):
        _double_row("trn2")(np.ones((4, 3, 4), ml_dtypes.float8_e4m3), np.ones((4, 3, 4), ml_dtypes.float8_e4m3))
    with pytest.raises(TypeError, match="expected one of the following dtypes: float8_e4m3, float8_e5m2"):
        _double_row("trn2")(np.ones((4, 2, 4), np.float16), np.ones((4, 2, 4), np.float16))


def test_unknown_perf_mode() -> None:
    a = np.ones((4, 2, 4), ml_dtypes.float8_e4m3)
    with pytest.raises(SyntaxError, match="perf_mode='quad_row' is not supported"):
        _double_row("trn2", "quad_row")(a, a)


def test_nc_matmul_stages_a_psum_operand_through_sbuf() -> None:
    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((a.shape[0], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nisa.nc_transpose(nl.load(a))  # PE transpose: the result is in PSUM
        nl.store(out, nl.copy(nisa.nc_matmul(t, nl.load(b))))
        return out

    a = RNG.standard_normal((64, 128), dtype=np.float32)
    b = RNG.standard_normal((64, 32), dtype=np.float32)
    with pytest.warns(UserWarning, match="'stationary' of 'nc_matmul' is in PSUM"):
        got = kernel(a.T.copy(), b)
    np.testing.assert_allclose(got, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    ops = [(i.op, i.engine) for i in kernel.last_launch.ctx.trace]
    assert ops.index(("tensor_copy", "act")) < ops.index(("nc_matmul", "pe"))


def test_nc_matmul_still_refuses_hbm_operands() -> None:
    @nki.jit
    def kernel(a):
        out = nl.ndarray((a.shape[1], a.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(nisa.nc_matmul(a, nl.load(a))))
        return out

    with pytest.raises(TypeError, match="address space 'psum|sbuf'"):
        kernel(np.zeros((8, 8), np.float32))
