"""nkilab.kernels.latency: the lessons' latencies, labelled as what they are -- on the simulator a cost-model estimate for
the named target, equal to what the simulator's own profile and the legacy nki.benchmark report."""

from __future__ import annotations

import contextlib
import io

import numpy as np

from nkilab.kernels import latency
from nkisim import api


def _kernels():
    import nki
    import nki.isa as nisa
    import nki.language as nl

    @nki.jit
    def copy(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in range(a.shape[0] // 128):
            t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])
            nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t)
        return out

    return copy


def _legacy():
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl

    @nki.jit
    def copy(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0] // 128):
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(a[i * 128:(i + 1) * 128, :]))
        return out

    return copy


def test_the_simulator_provides_both_dialects_here_and_the_label_says_estimate():
    assert latency.on_simulator("nki") and latency.on_simulator("legacy")
    assert latency.latency_label("trn2") == "estimate: nkisim cost model, trn2"
    assert latency.latency_label("trn1", "legacy") == "estimate: nkisim cost model, trn1"
    assert latency.simulated(_kernels()) and latency.simulated(_legacy())
    assert not latency.simulated(lambda a: a)


def test_a_06_kernels_latency_is_the_profiles_estimate_and_grows_with_the_work():
    kernel = _kernels()
    small, big = np.ones((256, 64), np.float32), np.ones((1024, 64), np.float32)
    us = latency.latency_us(kernel, small, target="trn2")
    assert us == api.profile_kernel(kernel, small, target="trn2").estimate.total_us and us > 0
    assert latency.latency_us(kernel, big, target="trn2") > us
    assert latency.latency_us(kernel, small, target="trn1") != us  # the target is named, and it matters


def test_a_legacy_kernels_latency_is_what_nki_benchmark_reports():
    import neuronxcc.nki as nki

    kernel, a = _legacy(), np.ones((512, 256), np.float32)
    bench = nki.benchmark(kernel)
    with contextlib.redirect_stdout(io.StringIO()):
        bench(a)
    assert latency.latency_us(kernel, a, target="trn2") == bench.benchmark_result.nc_latency.get_latency_percentile(99)
