"""Issue 20 scope 4: a trn3 (NeuronCore-v4) target, every number sourced from AWS's architecture docs, trn2 still
the default, and every trn3 estimate labelled "uncalibrated" (no trn3 latency has been published to check it).

The expected numbers are written out here from the documents (trainium3_arch.rst, neuron-core-v4.rst,
nki-dma-bandwidth-guide.rst, nki-dma-overview.rst, nki.language.tile_size), not read back from the file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest
import tomllib

from nkisim import api
from nkisim.core import target as target_mod
from nkisim.runtime.kernel import default_target

TRN3_FILE = target_mod.TARGETS_DIR / "trn3.toml"


def test_trn2_stays_the_default(monkeypatch):
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    assert target_mod.DEFAULT == "trn2" and default_target().name == "trn2"


def test_trn3_numbers_are_the_documented_ones():
    t = target_mod.get("trn3")
    p = t.params
    assert t.nc_version == 4  # nisa.nc_version.gen4, "Trn3 target"
    assert dataclasses.asdict(p.clock_ghz) == {"pe": 2.4, "act": 1.2, "dve": 1.2, "pool": 1.2}  # arch3 engine table
    assert (p.dma.queues, p.dma.bytes_per_ns, p.peak.dma_gbps) == (16, 33, 528.0)  # DMA guides
    assert p.dma.fixed_latency_ns == 1300
    assert t.sbuf_partition_bytes == 256 * 1024 - 16392  # 32 MiB SBUF over 128 partitions, less the reserve
    assert t.psum_partition_bytes == 2 * 1024 * 1024 // 128  # "PSUM capacity remains the same at 2 MiB"
    assert (p.peak.pe_tflops_bf16, p.peak.pe_tflops_fp32) == (79.0, 20.0)  # neuron-core-v4.rst
    assert p.pe.fp32_factor == 4  # 79 / 20 TFLOPS
    assert p.dma.hbm_gbps == pytest.approx(4700 / 8, abs=1)  # 4.7 TB/s over 8 NeuronCores
    assert p.dma.rmw_sbuf_throughput == 1.0  # SBUF read-add-write "the same throughput as" a DMA copy
    assert (p.peak.dve_per_cycle_half, p.peak.dve_per_cycle) == (4, 2)  # 512 / 256 per 128 partitions
    assert p.engine.act_perf_copy_speedup == 2  # ScalarE performance mode, "up to 2x" for BF16/FP16


def test_every_trn3_number_names_its_source():
    """Each ``key = value`` line carries a comment: the document it comes from, or that it is trn2's value."""
    lines = TRN3_FILE.read_text().splitlines()
    bare = [ln for ln in lines if re.match(r"^\w+\s*=", ln) and "#" not in ln]
    assert not bare, bare


#: the parameters only NeuronCore-v4 has: its MX instructions (nc_matmul_mx, quantize_mx)
V4_ONLY = {("limits", "mx_group_partitions"), ("limits", "mx_scale_offsets"), ("engine", "quantize_mx_elements_per_cycle"),
           ("pe", "mx_elements_per_cycle"), ("peak", "pe_tflops_mx"), ("peak", "quantize_mx_per_cycle")}


def test_trn3_has_every_parameter_trn2_has():
    """trn3 has trn2's parameters, and beyond them only the MX instructions' own."""
    trn2 = tomllib.loads((target_mod.TARGETS_DIR / "trn2.toml").read_text())
    trn3 = tomllib.loads(TRN3_FILE.read_text())
    for section, table in trn2.items():
        if isinstance(table, dict):
            assert set(table) == set(trn3[section]) - {k for s, k in V4_ONLY if s == section}, section
    assert all(key in trn3[section] for section, key in V4_ONLY)
    assert trn3["calibrated"] is False and "calibrated" not in trn2


def test_carried_over_fits_are_marked_uncalibrated():
    """The cost model's fitted parameters have no trn3 figure to fit: trn3 keeps trn2's and says so."""
    text = TRN3_FILE.read_text()
    for key in ("sem_ns", "matmul_overhead_cycles", "dge_ns", "fixed_us", "unroll_max_instructions"):
        line = next(ln for ln in text.splitlines() if ln.startswith(key))
        assert "uncalibrated" in line, line


def _add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.tensor_tensor(nl.load(a), nl.load(b), op=nl.add))
    return out


def test_a_kernel_runs_on_trn3_and_its_estimate_differs_from_trn2():
    a = np.random.default_rng(0).random((128, 4096), dtype=np.float32)
    b = np.random.default_rng(1).random((128, 4096), dtype=np.float32)
    est = {}
    for name in ("trn2", "trn3"):
        run = api.launch(nki.jit(_add, platform_target=name), (a, b))
        np.testing.assert_array_equal(run.outputs, a + b)
        est[name] = run.estimate()
    assert est["trn3"].total_us < est["trn2"].total_us  # 33 vs 23 B/ns per DMA engine, VectorE 1.2 vs 0.96 GHz
    assert est["trn3"].calibrated is False and est["trn2"].calibrated is True


def test_trn3_estimates_say_uncalibrated_wherever_they_are_shown(tmp_path):
    a = np.ones((128, 512), np.float32)
    bench = nki.benchmark(warmup=1, iters=1, platform_target="trn3")(_add)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        bench(a, a)
    assert "trn3 (uncalibrated)" in printed.getvalue()
    assert "uncalibrated" in repr(bench.benchmark_result.nc_latency)

    prof = api.profile_kernel(_add, a, a, target="trn3")
    assert "trn3 (uncalibrated)" in prof.summary_text()
    assert "uncalibrated" in prof.line_table_text()
    assert "uncalibrated" in json.dumps(prof.summary())

    trn2 = nki.benchmark(warmup=1, iters=1, platform_target="trn2")(_add)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        trn2(a, a)
    assert "uncalibrated" not in printed.getvalue()
