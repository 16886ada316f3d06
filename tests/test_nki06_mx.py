"""NeuronCore-v4's MX path in NKI 0.6: ``nisa.quantize_mx``, ``nisa.nc_matmul_mx`` and the x4 packed dtypes.

Our own kernels against ``tests/mx_reference.py`` (an independent NumPy model of OCP MX, itself checked against
ml_dtypes here), every documented refusal at the kernel's own line, the cost model's estimate against the work at
trn3's published MX rates, mutants of the op that these tests must catch, and AWS's MX deep-dive kernels run
unmodified against AWS's own goldens (``bench/aws_mx06.py``; skipped without a local clone of the docs source).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import mx_reference as ref
import numpy as np
import pytest
from test_nki06_errors import err_line

import nkisim
from nkisim import api
from nkisim.core.target import get as get_target
from nkisim.cost import costs
from nkisim.ops import mx as mx_op

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(2026)
BF16 = ml_dtypes.bfloat16
X4 = {"e4m3fn": nl.float8_e4m3fn_x4, "e5m2": nl.float8_e5m2_x4, "e2m1fn": nl.float4_e2m1fn_x4}
HERE = os.path.abspath(__file__)


def refused(body, exc, match):
    """Launch 0.6 kernel ``body``: it must raise ``exc`` matching ``match`` at its ``# ERR`` line (the simulator's
    ``nki_location``, or for Python's own TypeError of a bad keyword the innermost frame of this file)."""
    with pytest.raises(exc, match=match) as info:
        nki.jit(body)(np.ones((1, 1), np.float32))
    err = info.value
    loc = getattr(err, "nki_location", None)
    if loc is None:
        loc = next((e.path, e.lineno + 1) for e in reversed(info.traceback) if str(e.path) == HERE)
    assert os.path.abspath(str(loc[0])) == HERE and loc[1] == err_line(body), loc
    return err


@pytest.fixture(autouse=True)
def _trn3(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")


def test_the_reference_model_agrees_with_ml_dtypes():
    """Every code's value, and nearest-even saturating encoding of random values, ties and every code."""
    for kind, d in (("e4m3fn", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2),
                    ("e2m1fn", ml_dtypes.float4_e2m1fn)):
        table = ref.decode(kind)
        np.testing.assert_array_equal(table, np.arange(len(table), dtype=np.uint8).view(d).astype(np.float64))
        finite = np.sort(table[np.isfinite(table)])
        x = np.concatenate([RNG.uniform(-1.5, 1.5, 4000) * ref.largest(kind), finite, (finite[1:] + finite[:-1]) / 2])
        np.testing.assert_array_equal(table[ref.encode(x, kind)],
                                      np.clip(x, -ref.largest(kind), ref.largest(kind)).astype(d).astype(np.float64))
    assert sorted(set(np.abs(ref.decode("e2m1fn")))) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]


# --- quantize_mx ----------------------------------------------------------------------------------------------
def _quantize_kernel(x4):
    def kernel(a):
        p, f = a.shape
        src = nl.ndarray((p, f), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        q = nl.ndarray((p, f // 4), dtype=x4, buffer=nl.sbuf)
        s = nl.ndarray((p, f // 4), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.memset(dst=s, value=7)  # rows quantize_mx does not write keep this
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)
        out = nl.ndarray((p, f // 4), dtype=nl.uint32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=q.view(nl.uint32))
        scales = nl.ndarray((p, f // 4), dtype=nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=scales, src=s)
        return out, scales

    return kernel


def _quantize_input(p: int = 64, f: int = 32) -> np.ndarray:
    x = RNG.standard_normal((p, f)) * 2.0 ** RNG.integers(-6, 6, (p, 1))
    x[0:8, 0:4] = 0  # an all-zero group
    x[8:16, 4:8] *= 2.0 ** 90  # a huge group
    x[16:24, 8:12] *= 2.0 ** -120  # a group whose scale clamps at 2^-127
    x[40, 20] = np.inf  # a group that saturates (OCP's saturating conversion)
    return x.astype(BF16)


@pytest.mark.parametrize("kind", ["e4m3fn", "e5m2"])
def test_quantize_mx_follows_the_scale_rule(kind):
    x = _quantize_input()
    data, scales = nki.jit(_quantize_kernel(X4[kind]))(x)
    want_data, want_scales = ref.quantize(x.astype(np.float64), kind)
    rows = ref.scale_rows(x.shape[0] // 8)
    np.testing.assert_array_equal(scales[rows], want_scales)
    assert want_scales[0, 0] == 0  # the all-zero group: 2^-127
    untouched = np.ones(scales.shape[0], bool)
    untouched[rows] = False
    assert np.all(scales[untouched] == 7)
    np.testing.assert_array_equal(ref.unpack(data, kind), ref.unpack(want_data, kind))
    assert np.all(np.isfinite(ref.unpack(data, kind)))
    assert ref.unpack(data, kind)[40, 5, 0] == ref.largest(kind)  # inf saturates to the largest value


@pytest.mark.parametrize("kind", ["e4m3fn", "e5m2"])
def test_quantize_mx_round_trips_within_an_ulp_of_each_groups_largest_value(kind):
    x = (RNG.standard_normal((32, 64)) * 3).astype(BF16)
    data, scales = nki.jit(_quantize_kernel(X4[kind]))(x)
    back = ref.dequantize(data, scales[ref.scale_rows(4)], kind).reshape(32, 64)
    mant = ref.KINDS[kind][1]
    amax = np.repeat(np.repeat(np.abs(x.astype(np.float64)).reshape(4, 8, 16, 4).max(axis=(1, 3)), 8, 0), 4, 1)
    assert np.all(np.abs(back - x.astype(np.float64)) <= amax * 2.0 ** -mant)  # 2x scale: largest keeps mant bits


# --- nc_matmul_mx ---------------------------------------------------------------------------------------------
def _matmul_kernel(s_x4, m_x4, dst_dtype, k_tiles):
    def kernel(stat, s_scale, mov, m_scale):
        k, m = stat.shape
        n = mov.shape[1]
        kt = k // k_tiles
        acc = nl.ndarray((m, n), dtype=dst_dtype, buffer=nl.psum)
        for t in range(k_tiles):
            st = nl.ndarray((kt, m), dtype=s_x4, buffer=nl.sbuf)
            nisa.dma_copy(dst=st, src=stat[t * kt:(t + 1) * kt, :].view(s_x4))
            mv = nl.ndarray((kt, n), dtype=m_x4, buffer=nl.sbuf)
            nisa.dma_copy(dst=mv, src=mov[t * kt:(t + 1) * kt, :].view(m_x4))
            ss = nl.ndarray((s_scale.shape[1], m), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
            nisa.dma_copy(dst=ss, src=s_scale[t, :, :].view(nl.float8_e8m0fnu))
            ms = nl.ndarray((m_scale.shape[1], n), dtype=nl.uint8, buffer=nl.sbuf)
            nisa.dma_copy(dst=ms, src=m_scale[t, :, :])
            nisa.nc_matmul_mx(dst=acc, stationary=st, moving=mv, stationary_scale=ss, moving_scale=ms,
                              accumulate=t > 0)
        res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=res)
        return out

    return kernel


def _mx_operands(k: int, m: int, n: int, k_tiles: int, s_kind: str, m_kind: str):
    kt = k // k_tiles
    stat, s_scale = ref.random_mx(RNG, k, m, s_kind)
    mov, m_scale = ref.random_mx(RNG, k, n, m_kind)
    tiles = [(ref.spread(s_scale[t * kt // 8:(t + 1) * kt // 8], kt), ref.spread(m_scale[t * kt // 8:(t + 1) * kt // 8],
                                                                                 kt)) for t in range(k_tiles)]
    spread_s = np.stack([a for a, _ in tiles])
    spread_m = np.stack([b for _, b in tiles])
    want = ref.matmul(stat, s_scale, s_kind, mov, m_scale, m_kind)
    return (stat, spread_s, mov, spread_m), want


@pytest.mark.parametrize("dst", ["float32", "bfloat16"])
@pytest.mark.parametrize("s_kind, m_kind", [("e4m3fn", "e4m3fn"), ("e5m2", "e5m2"), ("e2m1fn", "e2m1fn"),
                                            ("e2m1fn", "e5m2")])
def test_nc_matmul_mx_accumulates_the_dequantised_product_over_k_tiles(s_kind, m_kind, dst):
    """K = 2 tiles of 64 partitions (two quadrants each, so scales sit in rows 0-3 and 32-35), M = 32, N = 48;
    ``accumulate=t > 0`` sums both tiles into PSUM (fp32, or bf16 as NeuronCore-v4 allows)."""
    args, want = _mx_operands(128, 32, 48, 2, s_kind, m_kind)
    got = nki.jit(_matmul_kernel(X4[s_kind], X4[m_kind], getattr(nl, dst), 2))(*args)
    if dst == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    else:  # each accumulation step rounds to bf16 (8 bits of mantissa)
        np.testing.assert_allclose(got, want, rtol=2 ** -6, atol=2 ** -7 * np.abs(want).max())


def test_quantize_then_matmul_is_the_product_of_the_quantised_inputs():
    x = (RNG.standard_normal((64, 128)) * 0.5).astype(BF16)

    def kernel(a):
        src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        q = nl.ndarray((64, 32), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((64, 32), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)
        acc = nl.ndarray((32, 32), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul_mx(dst=acc, stationary=q, moving=q, stationary_scale=s, moving_scale=s)
        res = nl.ndarray((32, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        out = nl.ndarray((32, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=res)
        return out

    got = nki.jit(kernel)(x)
    data, scales = ref.quantize(x.astype(np.float64), "e4m3fn")
    want = ref.matmul(data, scales, "e4m3fn", data, scales, "e4m3fn")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, x.astype(np.float64).reshape(64, 32, 4).transpose(0, 2, 1).reshape(256, 32).T
                               @ x.astype(np.float64).reshape(64, 32, 4).transpose(0, 2, 1).reshape(256, 32),
                               rtol=0.1, atol=0.15 * 16)  # and close to the unquantised product


# --- mutants the tests above must catch -------------------------------------------------------------------------
def test_mutants_of_the_op_fail_the_reference(monkeypatch):
    args, want = _mx_operands(64, 16, 16, 1, "e2m1fn", "e5m2")
    kernel = _matmul_kernel(X4["e2m1fn"], X4["e5m2"], nl.float32, 1)
    np.testing.assert_allclose(nki.jit(kernel)(*args), want, rtol=1e-5)
    unpack = mx_op.unpack
    for name, mutant in (("scale_rows", lambda groups, q, g: np.arange(groups)),  # scales read contiguously
                         ("unpack", lambda bits, d: unpack(bits, d)[..., ::-1] if d == nl.float4_e2m1fn_x4
                          else unpack(bits, d))):  # fp4 nibbles in the wrong order
        with monkeypatch.context() as m:
            m.setattr(mx_op, name, mutant)
            got = nki.jit(kernel)(*args)
            assert not np.allclose(got, want, rtol=1e-3), name
    x = _quantize_input()
    with monkeypatch.context() as m:  # the OCP sample scale (half the hardware's): the largest values saturate
        m.setattr(mx_op, "SCALE_BIAS", 126)
        _data, scales = nki.jit(_quantize_kernel(X4["e4m3fn"]))(x)
        assert not np.array_equal(scales[ref.scale_rows(8)], ref.quantize(x.astype(np.float64), "e4m3fn")[1])


# --- refusals ---------------------------------------------------------------------------------------------------
def _x4_tile(p, f, x4=nl.float8_e4m3fn_x4):
    return nl.ndarray((p, f), dtype=x4, buffer=nl.sbuf)


def test_memset_of_an_x4_tile_takes_zero_only():
    def zero(a):
        t = _x4_tile(32, 4)
        nisa.memset(dst=t, value=0)
        out = nl.ndarray((32, 4), dtype=nl.uint32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t.view(nl.uint32))
        return out

    assert np.all(nki.jit(zero)(np.ones((1, 1), np.float32)) == 0)

    def body(a):
        t = _x4_tile(32, 4)
        nisa.memset(dst=t, value=1)  # ERR
    refused(body, ValueError, "only value=0")


def test_dma_cannot_cast_x4():
    def body(a):
        t = _x4_tile(32, 4)
        nisa.memset(dst=t, value=0)
        out = nl.ndarray((32, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)  # ERR
    refused(body, Exception, "bit for bit")


def test_x4_tiles_refuse_arithmetic():
    def body(a):
        t = _x4_tile(32, 4)
        nisa.memset(dst=t, value=0)
        u = nl.ndarray((32, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=u, data=t, op0=nl.add, operand0=1.0)  # ERR
    refused(body, Exception, "packed MX dtype")


def _quantize_body(p=64, f=32, dst=nl.float8_e4m3fn_x4, scale=nl.uint8, src_dtype=nl.bfloat16, dst_f=None):
    src = nl.ndarray((p, f), dtype=src_dtype, buffer=nl.sbuf)
    nisa.memset(dst=src, value=1.0)
    q = nl.ndarray((p, dst_f or f // 4), dtype=dst, buffer=nl.sbuf)
    s = nl.ndarray((p, dst_f or f // 4), dtype=scale, buffer=nl.sbuf)
    return src, q, s


def test_quantize_mx_refusals():
    def partitions(a):
        src, q, s = _quantize_body(p=48)
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)  # ERR
    refused(partitions, ValueError, "multiple of 32")

    def free_size(a):
        src, q, s = _quantize_body(f=30, dst_f=8)
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)  # ERR
    refused(free_size, ValueError, "multiple of 4")

    def scale_dtype(a):
        src, q, s = _quantize_body(scale=nl.bfloat16)
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)  # ERR
    refused(scale_dtype, TypeError, "float8_e8m0fnu, uint8")

    def fp4_output(a):
        src, q, s = _quantize_body(dst=nl.float4_e2m1fn_x4)
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)  # ERR
    refused(fp4_output, TypeError, "float8_e5m2_x4, float8_e4m3fn_x4")

    def fp32_source(a):
        src, q, s = _quantize_body(src_dtype=nl.float32)
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)  # ERR
    refused(fp32_source, TypeError, "bfloat16, float16")

    def unknown_keyword(a):
        src, q, s = _quantize_body()
        nisa.quantize_mx(dst=q, src=src, dst_scale=s, mask=None)  # ERR
    refused(unknown_keyword, TypeError, "mask")


def _mm_body(k=64, m=32, n=64, dst_dtype=nl.float32, scale=nl.uint8, s_x4=nl.float8_e5m2_x4):
    st, mv = _x4_tile(k, m, s_x4), _x4_tile(k, n)
    for t in (st, mv):
        nisa.memset(dst=t, value=0)
    ss = nl.ndarray((k, m), dtype=scale, buffer=nl.sbuf)
    ms = nl.ndarray((k, n), dtype=scale, buffer=nl.sbuf)
    acc = nl.ndarray((m, n), dtype=dst_dtype, buffer=nl.psum)
    return acc, st, mv, ss, ms


def test_nc_matmul_mx_refusals():
    def partitions(a):
        acc, st, mv, ss, ms = _mm_body(k=48)
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=mv, stationary_scale=ss, moving_scale=ms)  # ERR
    refused(partitions, ValueError, "multiple of 32")

    def odd_stationary(a):
        acc, st, mv, ss, ms = _mm_body(m=31)
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=mv, stationary_scale=ss, moving_scale=ms)  # ERR
    refused(odd_stationary, ValueError, "must be even")

    def short_scales(a):
        acc, st, mv, ss, ms = _mm_body(k=128)
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=mv, stationary_scale=ss[0:64, :],  # ERR
                          moving_scale=ms)
    refused(short_scales, ValueError, "need \\[100, 32\\]")

    def scale_dtype(a):
        acc, st, mv, ss, ms = _mm_body(scale=nl.float32)
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=mv, stationary_scale=ss, moving_scale=ms)  # ERR
    refused(scale_dtype, TypeError, "float8_e8m0fnu, uint8")

    def plain_fp8(a):
        acc, st, mv, ss, ms = _mm_body(s_x4=nl.float8_e4m3fn)
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=mv, stationary_scale=ss, moving_scale=ms)  # ERR
    refused(plain_fp8, TypeError, "float4_e2m1fn_x4")

    def column_tiling(a):
        acc, st, mv, ss, ms = _mm_body()
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=mv, stationary_scale=ss, moving_scale=ms,  # ERR
                          tile_position=(0, 64), tile_size=(64, 64))
    refused(column_tiling, ValueError, "only row tiling")


def test_scales_pack_at_quadrant_offsets_0_4_8_12_only():
    """A scale tile sliced at row 12 of a shared allocation works (quantize writes rows 12-15, 44-47, matmul reads
    them); at row 2 or 16 it is refused."""
    x = (RNG.standard_normal((64, 64))).astype(BF16)

    def kernel(a):
        src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        q = nl.ndarray((64, 16), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
        packed = nl.ndarray((64, 16), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.memset(dst=packed, value=0)
        nisa.quantize_mx(dst=q, src=src, dst_scale=packed[12:, :])
        acc = nl.ndarray((16, 16), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul_mx(dst=acc, stationary=q, moving=q, stationary_scale=packed[12:, :],
                          moving_scale=packed[12:, :])
        res = nl.ndarray((16, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        out = nl.ndarray((16, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=res)
        return out

    data, scales = ref.quantize(x.astype(np.float64), "e5m2")
    np.testing.assert_allclose(nki.jit(kernel)(x), ref.matmul(data, scales, "e5m2", data, scales, "e5m2"), rtol=1e-5)

    def at_row_2(a):
        src, q, s = _quantize_body()
        nisa.quantize_mx(dst=q, src=src, dst_scale=s[2:, :])  # ERR
    refused(at_row_2, ValueError, "quadrant offsets 0, 4, 8, 12 only")

    def at_row_16(a):
        acc, st, mv, ss, ms = _mm_body()
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=mv, stationary_scale=ss[16:, :], moving_scale=ms)  # ERR
    refused(at_row_16, ValueError, "quadrant offsets 0, 4, 8, 12 only")


@pytest.mark.parametrize("target", ["trn2", "trn1"])
def test_the_mx_path_is_refused_before_trn3(target, monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", target)

    def quantize(a):
        src, q, s = _quantize_body()
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)  # ERR
    err = refused(quantize, Exception, "requires min target gen4")
    assert target in str(err) and "trn3" in str(err)

    def matmul(a):
        acc = nl.ndarray((32, 32), dtype=nl.float32, buffer=nl.psum)
        st = nl.ndarray((32, 32), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((32, 32), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=st, stationary_scale=s, moving_scale=s)  # ERR
    refused(matmul, Exception, "requires min target gen4")


# --- cost -------------------------------------------------------------------------------------------------------
def test_the_estimate_is_not_below_the_work_at_trn3s_mx_rates():
    """An MX matmul of [128 x 128 x4] by [128 x 512 x4] takes at least its flops at 315 TFLOPS, a quantize of
    [128, 2048] at least its elements at 4 per partition per VectorE cycle; the estimate says uncalibrated."""
    x = (RNG.standard_normal((128, 2048))).astype(BF16)

    def kernel(a):
        src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        q = nl.ndarray((128, 512), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
        s = nl.ndarray((128, 512), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul_mx(dst=acc, stationary=q[:, 0:128], moving=q, stationary_scale=s[:, 0:128], moving_scale=s)
        res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=res)
        return out

    launch = api.launch(nki.jit(kernel), [x], target="trn3")
    prm = get_target("trn3").params
    trace = launch.record.ctx.trace
    mm = next(i for i in trace if i.kind.name == "nc_matmul_mx")
    qz = next(i for i in trace if i.kind.name == "quantize_mx")
    flops = 2 * (128 * 4) * 128 * 512
    assert costs.compute_ns(mm, ("sbuf", "sbuf"), prm) >= flops / (prm.peak.pe_tflops_mx * 1e3)
    assert costs.compute_ns(qz, ("sbuf",), prm) >= 2048 / prm.peak.quantize_mx_per_cycle / prm.clock_ghz.dve
    est = launch.estimate()
    assert est.engine_busy_us["pe"] * 1e3 >= flops / (prm.peak.pe_tflops_mx * 1e3)
    assert est.calibrated is False and launch.target_label == "trn3 (uncalibrated)"


# --- AWS's MX deep dive ------------------------------------------------------------------------------------------
MIRROR = os.environ.get("NKILAB_AWS_SDK_MIRROR", "/work/.mirror/aws-neuron+aws-neuron-sdk/repo")


@pytest.mark.slow
def test_aws_mx_deep_dive_kernels_pass_against_awss_goldens(tmp_path: Path) -> None:
    """``bench/conformance.py --aws-examples`` on a clone of the docs source: every MX case passes (12: the eight
    runs of AWS's mx_toplevel.py and four with float8_e4m3fn)."""
    if not os.path.isdir(MIRROR):
        pytest.skip(f"no local mirror of aws-neuron-sdk at {MIRROR}")
    clone = tmp_path / "sdk"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{MIRROR}", str(clone)], check=True, timeout=600)
    if not (clone / "nki" / "deep-dives" / "src" / "mxfp-matmul").is_dir():
        pytest.skip("this docs source has no MX deep dive")
    driver = ROOT / "bench" / "aws_mx06.py"
    cases = subprocess.run([sys.executable, str(driver), "--list"], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    cases = [c for c in cases if c]
    assert len(cases) == 12
    failed = []
    for case in cases:
        proc = subprocess.run([sys.executable, str(driver), str(clone), case], capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            failed.append(case + ": " + (proc.stderr.strip().splitlines() or ["?"])[-1])
    assert not failed, failed


def test_an_mx_kernel_compiles_to_a_program_that_replays_and_prices_the_same():
    """x4 dtypes and both MX instructions survive the program format: JSON, validation, replay and estimate."""
    def kernel(a, w, ws):
        src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        q = nl.ndarray((64, 32), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((64, 32), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
        nisa.quantize_mx(dst=q, src=src, dst_scale=s)
        st = nl.ndarray((64, 16), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=st, src=w.ap(dtype=nl.float4_e2m1fn_x4, pattern=[[16, 64], [1, 16]], offset=0))
        ss = nl.ndarray((36, 16), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.dma_copy(dst=ss, src=ws)
        acc = nl.ndarray((16, 32), dtype=nl.bfloat16, buffer=nl.psum)
        nisa.nc_matmul_mx(dst=acc, stationary=st, moving=q, stationary_scale=ss, moving_scale=s)
        res = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        out = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=res)
        return out

    x = RNG.standard_normal((64, 128)).astype(BF16)
    w = RNG.integers(0, 256, (64, 32), dtype=np.uint8)  # fp4 x4 data as bytes: two values per byte
    ws = ref.spread(RNG.integers(125, 130, (8, 16)).astype(np.uint8))
    k = nki.jit(kernel)
    launch = api.launch(k, [x, w, ws], target="trn3")
    data, scales = ref.quantize(x.astype(np.float64), "e4m3fn")
    want = ref.matmul(w.view(np.uint16), ws[ref.scale_rows(8)], "e2m1fn", data, scales, "e4m3fn")
    np.testing.assert_allclose(launch.outputs, want, rtol=2 ** -7, atol=2 ** -8 * np.abs(want).max())
    program = api.program_from_json(launch.program.to_json())
    api.validate(program, target="trn3")
    replay = api.execute(program, [x, w, ws], target="trn3")
    np.testing.assert_array_equal(replay.outputs, launch.outputs)
    assert replay.estimate().total_us == launch.latency_us()
