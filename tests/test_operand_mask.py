"""AWS's operand masking for matmuls (v2.26.0 general/nki/api/nki.api.shared.rst:246-262, "NKI API Masking"):
``nl.matmul(lhs_T[i_lhs_f <= 64], rhs[i_rhs_f <= 256], transpose_x=True)`` limits each operand where a ``mask=`` over
the output could not tell the two free axes apart; AWS's RMSNorm-Quant reference in nki-samples (main,
src/nki_samples/reference/rmsnorm_quant/rmsnorm_quant.py:340-343) masks an advanced-indexed gamma tile so
(``broadcasted_gamma_sbuf[p_gam_idx, gam_proc_dim_idx][gam_mask]``).  Checked against NumPy, through the traced
call and through the recorded program executed from its JSON; every other API refuses an operand mask, as the docs
say only matmult APIs support it."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim import api
from nkisim.core.errors import NKIError

RNG = np.random.default_rng(29)


@nki.jit
def broadcast_gamma(g):
    """The RMSNorm-Quant reference's gamma broadcast: ones.T @ gamma[t*512 + f] masked to the gamma's length."""
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    gs = nl.ndarray((1, 1024), dtype=nl.float32, buffer=nl.sbuf)
    gs[...] = nl.load(g)
    ones = nl.ones((1, 128), dtype=nl.float32, buffer=nl.sbuf)
    i_p, i_f = nl.arange(1)[:, None], nl.arange(512)[None, :]
    for t in nl.affine_range(2):
        ps = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        ps[...] = nisa.nc_matmul(ones, gs[i_p, t * 512 + i_f][t * 512 + i_f < 700])
        nl.store(out[:, nl.ds(t * 512, 512)], nl.copy(ps))
    return out


def test_a_masked_moving_operand_in_a_loop_traced_once_and_its_program():
    g = RNG.standard_normal((1, 1024), dtype=np.float32)
    want = np.broadcast_to(np.where(np.arange(1024) < 700, g, 0), (128, 1024))  # psum's zeros where not written
    assert np.array_equal(broadcast_gamma(g), want)
    program = api.trace(broadcast_gamma, [g])
    text = program.to_json()
    assert '"OM"' in text  # the operand mask is recorded, not dropped
    again = api.program_from_json(text)
    api.validate(again)
    assert np.array_equal(api.execute(again, [g]).outputs, want)


@nki.jit
def docs_example(lhs_t, rhs):
    """AWS's example: the stationary's free axis kept below 65 rows, the moving's below 257 columns."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.zeros((128, 512), dtype=nl.float32))
    a, b = nl.load(lhs_t), nl.load(rhs)
    i_p = nl.arange(128)[:, None]
    i_lhs_f, i_rhs_f = nl.arange(128)[None, :], nl.arange(512)[None, :]
    res = nl.matmul(a[i_p, i_lhs_f][i_lhs_f <= 64], b[i_p, i_rhs_f][i_rhs_f <= 256], transpose_x=True)
    i_m, i_n = nl.mgrid[0:128, 0:512]
    nl.store(out[i_m, i_n], nl.copy(res), mask=(i_m <= 64) & (i_n <= 256))
    return out


@nki.jit
def contraction_masked(lhs_t, rhs):
    """A mask on the stationary's partition axis: only the first 64 contraction rows add."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a, b = nl.load(lhs_t), nl.load(rhs)
    i_k = nl.arange(128)[:, None]
    nl.store(out, nl.copy(nisa.nc_matmul(a[i_k < 64], b)))
    return out


def test_the_docs_example_keeps_the_masked_rows_and_columns():
    a = RNG.standard_normal((128, 128), dtype=np.float32)
    b = RNG.standard_normal((128, 512), dtype=np.float32)
    got = docs_example(a, b)
    want = np.zeros((128, 512), np.float32)
    want[:65, :257] = (a.T @ b)[:65, :257]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_a_contraction_mask_adds_only_the_kept_rows():
    a = RNG.standard_normal((128, 128), dtype=np.float32)
    b = RNG.standard_normal((128, 512), dtype=np.float32)
    np.testing.assert_allclose(contraction_masked(a, b), a[:64].T @ b[:64], rtol=1e-4, atol=1e-3)


def test_an_operand_mask_on_any_other_api_is_refused_quoting_the_docs():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        i_f = nl.arange(64)[None, :]
        nl.store(out, nl.exp(t[i_f < 32]))
        return out

    with pytest.raises(NKIError, match="operand masking for the matmult APIs only"):
        k(RNG.standard_normal((128, 64), dtype=np.float32))
