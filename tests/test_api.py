"""The tool API (``nkisim/api.py``): trace a kernel to a program, execute it, estimate it.

``api.estimate(program)`` is the cost model's answer computed from the program alone (no kernel Python, no
values); it must be the same estimate as the launch that produced the program, and its DMA totals must be
what the kernel's loads and stores move, counted here from the shapes with NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernels import matmul

from nkisim import api

K, M, N = 256, 256, 1024  # 2 x 2 output tiles of [128, 512], 2 K-tiles each


def _operands() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.standard_normal((K, M), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)]


def test_a_programs_estimate_is_the_estimate_of_the_launch_that_made_it():
    args = _operands()
    launch = api.launch(matmul.nki_matmul_tiled_, args, target="trn2")
    np.testing.assert_allclose(launch.outputs, args[0].T @ args[1], rtol=1e-4, atol=1e-3)
    eager = launch.estimate()
    from_program = api.estimate(launch.program)
    through_json = api.estimate(api.program_from_json(launch.program.to_json()))
    for est in (from_program, through_json):
        assert est.target == "trn2"
        assert est.total_us == eager.total_us
        assert est.engine_busy_us == eager.engine_busy_us
        assert (est.dma_count, est.dma_bytes, est.instructions) == (eager.dma_count, eager.dma_bytes,
                                                                     eager.instructions)
    assert launch.latency_us() == eager.total_us
    profile = launch.profile()  # the same estimate, with a timeline: one event per instruction
    assert profile.estimate.total_us == eager.total_us and len(profile.events) == eager.instructions


def test_an_estimate_counts_the_bytes_the_kernel_moves():
    """Per output tile and K-tile one [128, 128] and one [128, 512] fp32 load; one [128, 512] store per output
    tile (the tutorial kernel reloads operands for every output tile)."""
    program = api.trace(matmul.nki_matmul_tiled_, _operands(), target="trn2")
    est = api.estimate(program)
    tiles, k_tiles = (M // 128) * (N // 512), K // 128
    loads = tiles * k_tiles * 2
    load_bytes = tiles * k_tiles * (128 * 128 + 128 * 512) * 4
    store_bytes = tiles * 128 * 512 * 4
    assert (est.dma_count, est.dma_bytes) == (loads + tiles, load_bytes + store_bytes)
    busy = est.engine_busy_us  # compute engines are one each; "dma" sums the 16 queues' busy time
    assert busy["pe"] > 0 and est.total_us > max(busy[e] for e in ("pe", "act", "dve", "pool"))


def test_a_program_is_estimated_for_the_target_it_was_traced_for():
    """A program holds the limits of its target (partition counts, buffer sizes): estimating it for another is
    refused with a clear error rather than costed with the wrong limits; traced for trn1, it is trn1's."""
    args = _operands()
    program = api.trace(matmul.nki_matmul_tiled_, args, target="trn2")
    with pytest.raises(api.ProgramError, match="traced for trn2, not trn1"):
        api.estimate(program, target="trn1")
    trn1 = api.estimate(api.trace(matmul.nki_matmul_tiled_, args, target="trn1"))
    assert trn1.target == "trn1"
    assert trn1.total_us == api.launch(matmul.nki_matmul_tiled_, args, target="trn1").latency_us()


def test_calls_lists_every_nki_call_with_what_it_issues():
    """``api.calls()`` is the op registry as tools see it: every call a program may name, each with the
    instructions it may issue and their engines (the docs' API page is built from it)."""
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl

    infos = {c.call: c for c in api.calls()}
    assert {f"nl.{n}" for n in ("load", "store", "add", "exp", "matmul", "ndarray")} <= set(infos)
    assert {f"nisa.{n}" for n in ("nc_matmul", "activation", "tensor_tensor", "iota")} <= set(infos)
    assert all(callable(getattr(nl if c.startswith("nl.") else nisa, c.split(".", 1)[1]))
               for c in infos if not c.startswith("tile."))
    matmul = infos["nisa.nc_matmul"].instructions[0]
    assert (matmul.kind, matmul.engine) == ("nc_matmul", "TensorE") and "cycles" in matmul.cost, matmul
    assert [i.engine for i in infos["nl.exp"].instructions] == ["ScalarE"]
    assert [i.engine for i in infos["nl.load"].instructions] == ["DMA"] and infos["nl.load"].spaces == ("hbm",)
    assert infos["nl.ndarray"].instructions == () and all(c.doc for c in infos.values())
