"""The course's reference solutions (legacy ``neuronxcc.nki``, in ``solutions/``) and the same algorithms written in
NKI 0.6: equal outputs, the same instructions (engine, partitions, elements, bytes, in order) and the same
estimate.  The legacy kernels keep ``nl.affine_range`` loops, traced once; the 0.6 ones unroll Python loops: a
program's size differs, what it issues and costs does not.

The 0.6 twins of stages 6-9 live in their lessons (``dialect="nki"`` cells, ``solutions/<stage>/nki/``) and
tests/test_dialects.py holds them to the same instructions and estimate; the ports here are the ones no lesson
carries yet.
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
import nki.language as nl  # noqa: E402

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def legacy(stage: str, name: str):
    path = SOLUTIONS / stage / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"solution_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


@nki.jit
def vector_add_naive(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


@nki.jit
def tiled_add(a, b):
    N, F = a.shape
    P = nl.tile_size.pmax
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in range(N // P):
        s = nl.add(nl.load(a[t * P:(t + 1) * P, :]), nl.load(b[t * P:(t + 1) * P, :]))
        nl.store(out[t * P:(t + 1) * P, :], value=s)
    return out


@nki.jit
def tiled_add_relu(a, b):
    """The ragged last tile is a smaller tile (0.6 has no masks): rows t*P .. min((t+1)*P, N)."""
    N, F = a.shape
    P = nl.tile_size.pmax
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in range((N + P - 1) // P):
        lo, hi = t * P, min((t + 1) * P, N)
        s = nl.add(nl.load(a[lo:hi, :]), nl.load(b[lo:hi, :]))
        nl.store(out[lo:hi, :], value=nl.maximum(s, 0.0))
    return out


def _instructions(launch: api.Launch) -> list[tuple]:
    return [(i.engine, i.p, i.n, i.nbytes) for i in launch.record.ctx.trace]


def _estimate(launch: api.Launch) -> tuple:
    """The estimate; its time per source line only as a total (a port spells the kernel in other lines)."""
    est = launch.estimate()
    return dataclasses.replace(est, line_us={}), round(sum(est.line_us.values()), 6)


RNG = np.random.default_rng(0)
CASES = [
    ("01_vector_add", "vector_add_naive", vector_add_naive, [RNG.random((128, 512), np.float32)] * 2),
    ("02_partition_tiling", "tiled_add", tiled_add, [RNG.random((512, 256), np.float32)] * 2),
    ("02_partition_tiling", "tiled_add_relu", tiled_add_relu, [RNG.standard_normal((384, 64), np.float32)] * 2),
]


@pytest.mark.parametrize("stage, name, port, args", CASES, ids=[c[1] for c in CASES])
def test_a_solution_and_its_06_port_issue_the_same_instructions_and_estimate(stage, name, port, args):
    old = api.launch(legacy(stage, name), args, target="trn2")
    new = api.launch(port, args, target="trn2")
    np.testing.assert_array_equal(new.outputs, old.outputs)
    assert _instructions(new) == _instructions(old)
    assert _estimate(new) == _estimate(old)


def test_a_ragged_tile_is_a_smaller_tile_in_06():
    """With a ragged last tile the legacy solution masks a 128-row tile and the port loads a smaller one: the same
    values (the estimates then differ: fewer partitions move)."""
    a, b = RNG.standard_normal((300, 64), np.float32), RNG.standard_normal((300, 64), np.float32)
    np.testing.assert_array_equal(tiled_add_relu(a, b), legacy("02_partition_tiling", "tiled_add_relu")(a, b))
    np.testing.assert_array_equal(tiled_add_relu(a, b), np.maximum(a + b, 0))
