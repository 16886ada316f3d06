"""The course's reference solutions (legacy ``neuronxcc.nki``, in ``solutions/``) and the same algorithms written in
NKI 0.6, for the stages whose lessons do not carry their 0.6 twin yet (tests/test_dialects.py holds the lessons'
own): equal outputs, the same instructions (engine, partitions, elements, bytes, in order) and the same estimate.  The legacy kernels keep ``nl.affine_range`` loops, traced once; the 0.6 ones unroll Python loops: a
program's size differs, what it issues and costs does not.

Where a legacy call has no 0.6 spelling the port uses the 0.6 instruction that does the same work: ``psum +=
nl.matmul(...)`` becomes ``nisa.nc_matmul(psum, ...)`` (accumulating), and legacy ``nl.copy`` (a ScalarE copy)
becomes ``nisa.activation(op=nl.copy)`` (0.6's ``nl.copy`` is the VectorE ``tensor_copy``), so only the
instruction's name differs there.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import nkisim
from nkisim import api

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def legacy(stage: str, name: str):
    path = SOLUTIONS / stage / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"solution_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(res_psum, lhsT_tile, rhs_tile)
            res_sbuf = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
            nisa.activation(dst=res_sbuf, op=nl.copy, data=res_psum)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sbuf)
    return result


@nki.jit
def matmul_fast(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TK, TM, TN, BM, BN = 128, 128, 512, 2, 2
    for m in range(M // (BM * TM)):
        lhsT_block = nl.ndarray((TK, K // TK, BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in range(K // TK):
            nisa.dma_copy(dst=lhsT_block[:, k, :], src=lhsT[k * TK:(k + 1) * TK, m * BM * TM:(m + 1) * BM * TM])
        for n in range(N // (BN * TN)):
            rhs_block = nl.ndarray((TK, K // TK, BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in range(K // TK):
                nisa.dma_copy(dst=rhs_block[:, k, :], src=rhs[k * TK:(k + 1) * TK, n * BN * TN:(n + 1) * BN * TN])
            acc = [nl.zeros((TM, TN), nl.float32, buffer=nl.psum) for _ in range(BM * BN)]
            for k in range(K // TK):
                for bm in range(BM):
                    for bn in range(BN):
                        nisa.nc_matmul(acc[bm * BN + bn], lhsT_block[:, k, bm * TM:(bm + 1) * TM],
                                       rhs_block[:, k, bn * TN:(bn + 1) * TN])
            for bm in range(BM):
                for bn in range(BN):
                    row, col = (m * BM + bm) * TM, (n * BN + bn) * TN
                    res = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.activation(dst=res, op=nl.copy, data=acc[bm * BN + bn])
                    nl.store(result[row:row + TM, col:col + TN], value=res)
    return result


def _instructions(launch: api.Launch) -> list[tuple]:
    return [(i.engine, i.p, i.n, i.nbytes) for i in launch.record.ctx.trace]


def _estimate(launch: api.Launch) -> tuple:
    """The estimate; its time per source line only as a total (a port spells the kernel in other lines)."""
    est = launch.estimate()
    return dataclasses.replace(est, line_us={}), round(sum(est.line_us.values()), 6)


RNG = np.random.default_rng(0)
CASES = [
    ("06_tensor_engine_matmul", "matmul_tiled", matmul_tiled,
     [RNG.random((256, 256), np.float32), RNG.random((256, 1024), np.float32)]),
    ("06_tensor_engine_matmul", "matmul_fast", matmul_fast,
     [RNG.random((256, 512), np.float32), RNG.random((256, 1024), np.float32)]),
]


@pytest.mark.parametrize("stage, name, port, args", CASES, ids=[c[1] for c in CASES])
def test_a_solution_and_its_06_port_issue_the_same_instructions_and_estimate(stage, name, port, args):
    old = api.launch(legacy(stage, name), args, target="trn2")
    new = api.launch(port, args, target="trn2")
    np.testing.assert_array_equal(new.outputs, old.outputs)
    assert _instructions(new) == _instructions(old)
    assert _estimate(new) == _estimate(old)


def test_a_ragged_tile_is_a_smaller_tile_in_06():
    """With a ragged last tile the legacy solution masks a 128-row tile and the lesson's 0.6 reference
    (solutions/<stage>/nki/) loads a smaller one: the same values, and -- a masked instruction covers only the
    partitions its mask leaves -- the same instructions and estimate."""
    a, b = RNG.standard_normal((300, 64), np.float32), RNG.standard_normal((300, 64), np.float32)
    old = api.launch(legacy("02_partition_tiling", "tiled_add_relu"), [a, b], target="trn2")
    new = api.launch(legacy("02_partition_tiling/nki", "tiled_add_relu"), [a, b], target="trn2")
    np.testing.assert_array_equal(new.outputs, np.maximum(a + b, 0))
    np.testing.assert_array_equal(new.outputs, old.outputs)
    assert [i.p for i in new.record.ctx.trace][-5:] == [300 - 256] * 5
    assert _instructions(new) == _instructions(old)
    assert _estimate(new) == _estimate(old)
