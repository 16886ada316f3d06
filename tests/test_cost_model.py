"""Cost model: published trn1 vector-add ladders, determinism, targets, SPMD cores, buffer rotation.

Numbers asserted are model outputs (deterministic), never wall-clock times.  The matmul ladder is in
test_cost_matmul_ladder.py (it takes about a minute).
"""

import contextlib
import io

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import numpy as np
import pytest

from nkisim.cost import model, params
from tests.cost_kernels import vector_add


def lat(kernel, *args, target="trn1"):
    b = nki.benchmark(warmup=1, iters=1, platform_target=target)(kernel)
    with contextlib.redirect_stdout(io.StringIO()):
        b(*args)
    return b.benchmark_result.nc_latency.get_latency_percentile(99)


def vec(n):
    return nt.tensor[[n], nl.float32]


V25, V256 = (vec(25600), vec(25600)), (vec(256000), vec(256000))


@pytest.fixture(scope="module")
def trn1_vector_add():
    return {
        "tiled1": lat(vector_add.tiled(1), *V25),
        "tiled128": lat(vector_add.tiled(128), *V25),
        "stream2": lat(vector_add.stream(2), *V25),
        "stream200": lat(vector_add.stream(200), *V25),
        "stream2000": lat(vector_add.stream(2000), *V256),
        "stream1000": lat(vector_add.stream(1000), *V256),
        "direct1000": lat(vector_add.direct(1000, 4), *V256),
    }


PUBLISHED = {"tiled1": 27404, "tiled128": 206, "stream2": 53, "stream200": 19, "stream2000": 34,
             "stream1000": 29, "direct1000": 29}


def test_vector_add_ladders_in_hardware_order(trn1_vector_add):
    v = trn1_vector_add
    assert v["tiled1"] > 100 * v["tiled128"]
    assert v["tiled128"] > v["stream2"] > v["stream200"]
    assert v["stream2000"] > v["stream1000"]  # two tiles pipeline DMA with compute


@pytest.mark.parametrize("name", ["tiled1", "tiled128", "stream200", "stream2000", "stream1000", "direct1000"])
def test_vector_add_within_1_3x_of_trn1(trn1_vector_add, name):
    ratio = trn1_vector_add[name] / PUBLISHED[name]
    assert 1 / 1.3 <= ratio <= 1.3, (name, trn1_vector_add[name])


def test_stream_free_dim_2_is_the_known_outlier(trn1_vector_add):
    # trn1 measured 53 us; the model gives ~2.1x (trn2, compiled without middle-end transforms, shows
    # the same per-iteration cost as tiled R=128, which is what the model reproduces)
    assert 1.3 < trn1_vector_add["stream2"] / PUBLISHED["stream2"] < 2.5


def test_deterministic():
    k = vector_add.stream(200)
    assert lat(k, *V25) == lat(k, *V25)
    a = np.ones(25600, np.float32)
    k2 = vector_add.tiled(128)
    k2(a, a)
    t1 = model.estimate(k2.last_launch.ctx.trace, "trn1").total_us
    k2(a, a)
    assert model.estimate(k2.last_launch.ctx.trace, "trn1").total_us == t1


def test_trn2_differs_as_expected():
    p1, p2 = params.load("trn1"), params.load("trn2")
    assert p1["clock_ghz"]["pe"] > p2["clock_ghz"]["pe"] and p2["dma"]["bytes_per_ns"] > p1["dma"]["bytes_per_ns"]
    # DMA-bound big stream: trn2's faster DMA wins; tiny-instruction latency-bound chain: equal DMA costs
    assert lat(vector_add.stream(2000), *V256, target="trn2") < lat(vector_add.stream(2000), *V256)
    # compute-bound fp32 add on VectorE: trn2's slower clock loses
    e1 = _dve_only("trn1")
    e2 = _dve_only("trn2")
    assert e2 > e1


def _dve_only(target):
    @nki.jit(platform_target=target)
    def k(a):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        t[...] = nl.load(a)
        for _ in nl.sequential_range(50):
            t[...] = nl.add(t, t)
        nl.store(out, value=t)
        return out
    k(np.ones((128, 512), np.float32))
    e = model.estimate(k.last_launch.ctx.trace, target)
    return e.engine_busy_us["dve"]


def test_estimate_reports_breakdown():
    a = np.ones(256000, np.float32)
    k = vector_add.stream(1000)
    k(a, a)
    e = model.estimate(k.last_launch.ctx.trace, "trn1")
    assert e.dma_count == 6 and e.dma_bytes == 3 * 256000 * 4
    assert e.engine_busy_us["dve"] > 0 and e.total_us > e.engine_busy_us["dve"]
    assert e.top_lines(1)[0][1] > 0 and e.version.startswith("trn1")


def test_more_rotating_buffers_is_faster():
    four = lat(vector_add.direct(1000, 4), *V256)
    one = lat(vector_add.direct(1000, 1), *V256)
    assert one > four


def test_spmd_instances_spread_over_cores():
    @nki.jit(platform_target="trn2")
    def k(a):
        out = nl.ndarray((4, 128, 2000), dtype=nl.float32, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        t = nl.load(a[i])
        nl.store(out[i], value=nl.add(t, t))
        return out
    a = np.ones((4, 128, 2000), np.float32)
    k[4](a)
    serial = model.estimate(k.last_launch.ctx.trace, "trn2", cores=1).total_us
    k[nl.nc(2) * 2](a)
    spread = model.estimate(k.last_launch.ctx.trace, "trn2", cores=2).total_us
    assert spread < serial
