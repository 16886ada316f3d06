"""Cost model vs AWS's fused Mamba tutorial (trn1) and the performance guide's published gains (issue 20 scope 5).

The tutorial's loop reordering (mamba_v2) runs 31% faster than mamba_v1 on hardware and its sequence tiling
(mamba_v3) 48% faster than v2 at seq_len 8192; the model had both the wrong way round or level.  The figures and
their sources are bench/calibrate.py's (``FIGURES``); the kernels are ours (tests/cost_kernels/mamba.py), checked
against a NumPy scan here.  Numbers asserted are model outputs, never wall-clock times.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from bench import calibrate
from nkisim import api
from tests.cost_kernels import mamba
from tests.once import figure_value

FIGURES = {f.name: f for f in calibrate.FIGURES if f.target == "trn1"}
FAST = ["mamba_v1 256ch seq512", "mamba_v1 4096ch seq512", "mamba_v2 4096ch seq512", "mamba_v2 4096ch seq1024",
        "mamba_v3 4096ch seq1024"]


@pytest.fixture(scope="module")
def model():
    return {n: figure_value(FIGURES[n]) for n in FAST}  # computed once per test run, with test_calibration


def test_the_kernels_compute_the_selective_scan():
    rng = np.random.default_rng(7)
    delta = rng.random((1, 256, 1024), dtype=np.float32) * 0.1
    u = rng.standard_normal((1, 256, 1024), dtype=np.float32)
    a = -rng.random((256, 4), dtype=np.float32)
    b = rng.standard_normal((1, 4, 1024), dtype=np.float32)
    c = rng.standard_normal((1, 4, 1024), dtype=np.float32)
    ref = mamba.reference(*(x.astype(np.float64) for x in (delta, u, a, b, c)))
    for kernel in (mamba.v1(), mamba.v2(), mamba.v3()):
        np.testing.assert_allclose(kernel(delta, u, a, b, c), ref, rtol=1e-4, atol=1e-4)


def test_loop_reordering_is_faster_as_on_hardware(model):
    # published 2340 -> 1610 us (31%); the model had v2 no faster than v1
    assert model["mamba_v1 4096ch seq512"] > 1.15 * model["mamba_v2 4096ch seq512"]


def test_sequence_tiling_is_faster_at_every_published_length(model):
    assert model["mamba_v2 4096ch seq1024"] > model["mamba_v3 4096ch seq1024"]


@pytest.mark.parametrize("name", FAST)
def test_within_1_3x_of_the_published_latency(model, name):
    ratio = model[name] / FIGURES[name].published
    assert 1 / 1.3 <= ratio <= 1.3, (name, model[name])


@pytest.mark.parametrize("name", ["perf guide Opt #6: (mul, add, exp) / fused activation",
                                  "perf guide Opt #5b: two 64-partition reduces / one"])
def test_perf_guide_gains_within_1_3x(name):
    figure = FIGURES[name]
    ratio = figure.model() / figure.published
    assert 1 / 1.3 <= ratio <= 1.3, (name, ratio)


@pytest.mark.slow
def test_sequence_tiling_at_8k_as_on_hardware():
    v2, v3 = (FIGURES[f"mamba_{v} 4096ch seq8192"] for v in ("v2", "v3"))
    got2, got3 = figure_value(v2), figure_value(v3)  # once per test run, with test_calibration
    assert got2 > 1.3 * got3  # published 53.33 -> 27.8 ms (48%)
    for fig, got in ((v2, got2), (v3, got3)):
        assert 1 / 1.3 <= got / fig.published <= 1.3, (fig.name, got)


# --- the two mechanisms the tutorial's profiles call for -------------------------------------------------------
def _invariant_product(skip_middle_end: bool):
    """``x * y`` of two tiles loaded before the loop, recomputed in each of 16 iterations, plus a varying op."""

    def kernel(x, y, z):
        out = nl.ndarray((16, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        a, b = nl.load(x), nl.load(y)
        for i in nl.affine_range(16):
            prod = nisa.tensor_tensor(a, b, op=nl.multiply)  # the same values every iteration
            nl.store(out[i], nisa.tensor_tensor(prod, nl.load(z[i]), op=nl.add))
        return out

    k = nki.jit(kernel, platform_target="trn1")
    return nki.compiler.skip_middle_end_transformations(k) if skip_middle_end else k


def test_loop_invariant_compute_is_charged_once():
    x = np.ones((128, 512), np.float32)
    z = np.ones((16, 128, 512), np.float32)
    hoisted = api.launch(_invariant_product(False), (x, x, z))
    np.testing.assert_array_equal(hoisted.outputs, np.full((16, 128, 512), 2.0))
    kept = api.launch(_invariant_product(True), (x, x, z))  # no middle end: every iteration computes it
    one = 2 * 512 + 60  # a two-input VectorE pass over 512 fp32 elements plus the access overhead, in cycles
    clock = 1.12  # trn1 VectorE GHz
    dve_hoisted = hoisted.estimate().engine_busy_us["dve"]
    dve_kept = kept.estimate().engine_busy_us["dve"]
    assert dve_kept == pytest.approx(32 * one / clock / 1000)  # 16 products + 16 adds
    assert dve_hoisted == pytest.approx(17 * one / clock / 1000)  # one product + 16 adds


def test_compute_whose_scalar_changes_with_the_loop_is_not_hoisted():
    """Issue 28 item 7: ``x * (j + 1)`` reads a tile made before the loop, but its scalar operand changes every
    iteration, so the 64 products differ and no compiler can compute them once; ``x * 3.0`` is the same product
    every time and is charged once.  Both through the eager launch and through the recorded program."""

    def varying(x):
        out = nl.ndarray((64, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        for j in nl.affine_range(64):
            nl.store(out[j], value=nl.multiply(t, j + 1))
        return out

    def invariant(x):
        out = nl.ndarray((64, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        for j in nl.affine_range(64):
            nl.store(out[j], value=nl.multiply(t, 3.0))
        return out

    x = np.ones((128, 512), np.float32)
    one = max(64, 512) + 60  # a one-input VectorE pass over 512 fp32 elements plus the access overhead, in cycles
    dve = {}
    for kernel, want in ((varying, np.arange(1, 65, dtype=np.float32)[:, None, None] * x), (invariant, 3 * x)):
        k = nki.jit(kernel, platform_target="trn2")
        run = api.launch(k, (x,), target="trn2")
        np.testing.assert_array_equal(run.outputs, np.broadcast_to(want, (64, 128, 512)))
        dve[kernel] = run.estimate().engine_busy_us["dve"]
        assert api.estimate(api.trace(k, (x,), target="trn2")).engine_busy_us["dve"] == pytest.approx(dve[kernel])
    assert dve[varying] == pytest.approx(64 * one / 0.96 / 1000)  # every product (trn2 VectorE 0.96 GHz)
    assert dve[invariant] == pytest.approx(one / 0.96 / 1000)  # one


def test_a_partition_broadcast_read_by_vector_engine_stays_in_psum():
    """``B.broadcast_to`` is a TensorE matmul into PSUM; a tensor_tensor reading it there takes one pass (spec
    §4.3) and no copy to SBUF is needed.  Wider than one PSUM bank, it is copied out and read from SBUF."""

    def kernel(x, row):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        n = x.shape[1]
        nl.store(out, nisa.tensor_tensor(nl.load(x), nl.load(row).broadcast_to((128, n)), op=nl.multiply))
        return out

    def dve_us(n):
        x, row = np.full((128, n), 2.0, np.float32), np.arange(n, dtype=np.float32)[None, :]
        run = api.launch(nki.jit(kernel, platform_target="trn1"), (x, row))
        np.testing.assert_array_equal(run.outputs, x * row)
        est = run.estimate()
        return est.engine_busy_us["dve"] + est.engine_busy_us["act"]

    assert dve_us(512) == pytest.approx((512 + 60) / 1.12 / 1000)  # one pass, nothing else on ACT/DVE
    assert dve_us(1024) > 2 * (1024 + 60) / 1.12 / 1000  # two passes plus the eviction copy
