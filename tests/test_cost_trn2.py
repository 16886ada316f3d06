"""Cost model vs the CS149 Fall 2025 trn2 figures (skip_middle_end_transformations kernels, nki.benchmark
p99 or profiler total_time) and the LayerNorm tutorial on trn1; cost-model gaps (activation reduce,
trn1 PSUM port).  Numbers asserted are model outputs (deterministic), never wall-clock times.
"""

import contextlib
import io

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import numpy as np
import pytest

from nkisim.core.target import get as get_target
from nkisim.cost import scheduler
from tests.cost_kernels import layernorm, trn2_vector_add
from tests.once import figure, figure_value, is_figure_of


def lat(kernel, *args, target="trn2"):
    b = nki.benchmark(warmup=1, iters=1, platform_target=target)(kernel)
    with contextlib.redirect_stdout(io.StringIO()):
        b(*args)
    return b.benchmark_result.nc_latency.get_latency_percentile(99)


def vec(n):
    return nt.tensor[[n], nl.float32]


V25, V256 = (vec(25600), vec(25600)), (vec(256000), vec(256000))
MAT = (nt.tensor[[1024, 1024], nl.float32],)
# transpose_affine: a second CS149-25 student's NCL for the same per-tile dma_copy / nc_transpose /
# tensor_copy / dma_copy loop in affine_range (the student's code is unpublished)
PUBLISHED = {"tiled1": 37318, "tiled128": 378, "stream2": 186, "stream200": 15, "stream2000": 28,
             "stream1000": 27.9, "transpose_static": 46.9, "transpose_affine": 86}


#: the figures of bench/calibrate.py these tests read (the same kernels, trn2_vector_add, on the same placeholders)
TRN2_FIGURES = {"tiled1": "vector_add_tiled R=1 n=25600", "tiled128": "vector_add_tiled R=128 n=25600",
                "stream2": "vector_add_stream F=2 n=25600", "stream200": "vector_add_stream F=200 n=25600",
                "stream2000": "vector_add_stream F=2000 n=256000", "stream1000": "vector_add_stream F=1000 n=256000",
                "transpose_static": "transpose 1024 fp32 static_range",
                "transpose_affine": "transpose 1024 fp32 affine_range (86 NCL)"}


@pytest.fixture(scope="module")
def trn2():
    """Each estimate computed once per test run, shared with test_calibration (tiled1: 25600 iterations)."""
    return {key: figure_value(figure("trn2", name)) for key, name in TRN2_FIGURES.items()}


def test_the_figures_are_these_kernels_on_these_shapes():
    k = trn2_vector_add
    mine = {"tiled1": (k.tiled(1), V25), "tiled128": (k.tiled(128), V25), "stream2": (k.stream(2), V25),
            "stream200": (k.stream(200), V25), "stream2000": (k.stream(2000), V256),
            "stream1000": (k.stream(1000), V256), "transpose_static": (k.transpose(nl.static_range), MAT),
            "transpose_affine": (k.transpose(), MAT)}
    for key, (kernel, args) in mine.items():
        fig = figure("trn2", TRN2_FIGURES[key])
        assert is_figure_of(fig, kernel, args), key
    assert lat(k.tiled(128), *V25) == figure_value(figure("trn2", TRN2_FIGURES["tiled128"]))
    for v in ("v1", "v2"):
        fig = figure("trn1", f"layernorm {v} 4096x8192 (p50)")
        assert is_figure_of(fig, getattr(layernorm, v)(), LN_ARGS), v


def test_trn2_ladders_in_hardware_order(trn2):
    v = trn2
    assert v["tiled1"] > 50 * v["tiled128"]
    assert v["tiled128"] > v["stream2"] > v["stream200"]
    assert v["stream2000"] > v["stream1000"]  # 28 vs 27.9 us: two tiles pipeline
    # rolled loop of a skip_middle_end kernel: every DMA pays runtime descriptor generation
    assert v["transpose_affine"] > 1.5 * v["transpose_static"]


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_trn2_within_1_3x(trn2, name):
    ratio = trn2[name] / PUBLISHED[name]
    assert 1 / 1.3 <= ratio <= 1.3, (name, trn2[name])


def test_rolled_loop_dmas_are_bound_by_descriptor_generation(trn2):
    # one DGE makes the runtime descriptors of every DMA in a rolled loop, one DMA after another:
    # 3 DMAs per vector-add iteration, 2 per transpose tile, ~582 ns each (spec §4.4 "~600 ns"); each of them
    # 128 descriptors, one per partition
    d = get_target("trn2").params.dma
    per_dma = d.dge_ns + d.dge_descriptor_ns * 128
    assert 550 <= per_dma <= 650
    fixed = get_target("trn2").params.kernel.fixed_us
    assert trn2["tiled128"] - fixed == pytest.approx(600 * per_dma / 1000, rel=0.05)
    assert trn2["stream2"] - fixed == pytest.approx(300 * per_dma / 1000, rel=0.05)
    assert trn2["transpose_affine"] - fixed == pytest.approx(128 * per_dma / 1000, rel=0.1)


def test_descriptor_generation_overlaps_earlier_transfers():
    # four 1 MiB loads in a rolled loop: each one's descriptors are made while the previous one moves
    # its data, so the DGE adds about one DMA's worth of time, not four
    @nki.compiler.skip_middle_end_transformations
    @nki.jit(platform_target="trn2")
    def k(a):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.sequential_range(4):
            t = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(src=a[i], dst=t)
            acc[...] = nl.add(acc, nisa.tensor_reduce(nl.add, t, axis=1, keepdims=True))
        nl.store(out, value=acc)
        return out
    k(np.ones((4, 128, 2048), np.float32))
    trace = k.last_launch.ctx.trace
    prm = get_target("trn2").params
    s = scheduler.schedule(trace, prm)
    loads = [i for i, ins in enumerate(trace) if ins.op == "dma_copy"]
    dge = prm.dma.dge_ns + prm.dma.dge_descriptor_ns * trace[loads[0]].runs
    assert trace[loads[0]].runs == 128  # a contiguous (128, 2048) block of HBM into 128 partitions
    # the second load's descriptors are made while the first one's data moves
    assert s.start[loads[1]] < s.end[loads[0]] - prm.dma.fixed_latency_ns
    assert s.start[loads[1]] == pytest.approx(s.start[loads[0]] + dge)


def test_skip_middle_end_is_what_charges_dge():
    @nki.jit(platform_target="trn2")
    def plain(a_vec, b_vec):
        return _tiled_body(a_vec, b_vec)
    assert lat(plain, *V25) < lat(trn2_vector_add.tiled(128), *V25)


def _tiled_body(a_vec, b_vec):
    out = nl.ndarray(shape=a_vec.shape, dtype=a_vec.dtype, buffer=nl.hbm)
    for m in nl.affine_range(a_vec.shape[0] // 128):
        a_tile = nl.ndarray((128, 1), dtype=a_vec.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((128, 1), dtype=b_vec.dtype, buffer=nl.sbuf)
        nisa.dma_copy(src=a_vec[m * 128:(m + 1) * 128], dst=a_tile)
        nisa.dma_copy(src=b_vec[m * 128:(m + 1) * 128], dst=b_tile)
        res = nisa.tensor_scalar(a_tile, nl.add, b_tile)
        nisa.dma_copy(src=res, dst=out[m * 128:(m + 1) * 128])
    return out


LN_ARGS = (nt.tensor[[4096, 8192], nl.float32], 1e-5, vec(8192), vec(8192))


@pytest.fixture(scope="module")
def ln():
    """bench/calibrate.py's layernorm figures (the same kernels and LN_ARGS), shared with test_calibration."""
    return {v: figure_value(figure("trn1", f"layernorm {v} 4096x8192 (p50)")) for v in ("v1", "v2")}


def test_layernorm_v1_slower_than_v2(ln):
    # published p50 2311 vs 1969 us (1.17x) on the script's 4096x8192 shape; the model gives ~1.29x
    assert 1.05 < ln["v1"] / ln["v2"] < 1.4
    assert 1 / 1.3 <= ln["v1"] / 2311 <= 1.3 and 1 / 1.3 <= ln["v2"] / 1969 <= 1.3


def test_layernorm_kernels_compute_layernorm():
    rng = np.random.default_rng(0)
    x = rng.random((200, 1000), dtype=np.float32)
    g, b = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g + b
    for k in (layernorm.v1(), layernorm.v2()):
        np.testing.assert_allclose(k(x, 1e-5, g, b), ref, rtol=2e-3, atol=2e-3)


def _act(reduce, target="trn1"):
    @nki.jit(platform_target=target)
    def k(a):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        if reduce:
            nisa.activation(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=r,
                            reduce_cmd=nisa.reduce_cmd.reset_reduce)
        else:
            r[...] = nisa.activation(op=nl.exp, data=t[:, 0:1])
        nl.store(out, value=r)
        return out
    k(np.ones((128, 32), np.float32))
    trace = k.last_launch.ctx.trace
    s = scheduler.schedule(trace, get_target(target).params)
    i = next(i for i, ins in enumerate(trace) if ins.op == "activation")
    return s.end[i] - s.start[i]


def test_activation_reduce_costs_min_ii_more():
    # spec §4.3: max(64, N) + 64 ScalarE cycles (N = 32 and 1 both sit on the MIN_II floor), 1.4 GHz
    assert _act(True) - _act(False) == pytest.approx(64 / 1.4, rel=1e-6)


def _psum_pair(target):
    @nki.jit(platform_target=target)
    def k(a):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        p[...] = nisa.nc_matmul(x[:, 0:128], x)
        s1 = nisa.activation(op=nl.exp, data=p)
        s2 = nisa.tensor_copy(p, engine=nisa.vector_engine)
        nl.store(out, value=nl.add(s1, s2))
        return out
    k(np.ones((128, 512), np.float32))
    trace = k.last_launch.ctx.trace
    s = scheduler.schedule(trace, get_target(target).params)
    act = next(i for i, ins in enumerate(trace) if ins.op == "activation")
    dve = next(i for i, ins in enumerate(trace) if ins.op == "tensor_copy")
    return max(s.start[act], s.start[dve]) >= min(s.end[act], s.end[dve])


def test_trn1_vector_and_scalar_share_the_psum_port():
    assert _psum_pair("trn1")  # serialised on NC-v2
    assert not _psum_pair("trn2")  # concurrent on NC-v3
