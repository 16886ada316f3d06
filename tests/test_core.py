"""Core behaviours of the kernel launch: argument/result conversion, SPMD grids, index analysis."""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest
import torch

from nkisim.core.indexing import Affine, Loop


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        rows = i * 128 + nl.arange(128)[:, None]
        cols = nl.arange(a.shape[1])[None, :]
        nl.store(out[rows, cols], nl.add(nl.load(a[rows, cols]), nl.load(b[rows, cols])))
    return out


def test_numpy_in_numpy_out() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random((256, 32), dtype=np.float32), rng.random((256, 32), dtype=np.float32)
    out = add_kernel(a, b)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, a + b)


def test_torch_in_torch_out_bf16() -> None:
    a = torch.randn(128, 16, dtype=torch.bfloat16)
    b = torch.randn(128, 16, dtype=torch.bfloat16)
    out = add_kernel(a, b)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16
    # fp32 compute, one rounding to bf16 == torch's own bf16 add
    torch.testing.assert_close(out, (a.float() + b.float()).bfloat16(), rtol=0, atol=0)


def test_inputs_are_not_modified_and_outputs_are_copies() -> None:
    a = np.ones((128, 8), np.float32)
    out = add_kernel(a, a)
    out[...] = 7
    assert np.all(a == 1)


@nki.jit
def spmd_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    px, py = nl.program_id(0), nl.program_id(1)
    rows = px * 64 + nl.arange(64)[:, None]
    cols = py * 32 + nl.arange(32)[None, :]
    nl.store(out[rows, cols], nl.load(a[rows, cols]) + nl.load(b[rows, cols]))
    return out


def test_spmd_grid_shares_one_output() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.random((128, 64), dtype=np.float32), rng.random((128, 64), dtype=np.float32)
    np.testing.assert_array_equal(spmd_add[2, 2](a, b), a + b)
    assert spmd_add.last_launch.ctx.grid == (2, 2)


def test_affine_bounds_cover_the_whole_loop() -> None:
    loop = Loop("affine", 0, 4, 1)
    expr = Affine(0, {loop: 1}) * 128 + Affine(0, None, np.arange(128)[:, None])
    assert expr.scalar_bounds() == (0, 511)
    loop.current = 2
    assert int(np.min(expr.value())) == 256


def test_trace_records_engines_and_user_lines() -> None:
    a = np.ones((128, 8), np.float32)
    add_kernel(a, a)
    trace = add_kernel.last_launch.ctx.trace
    assert [i.engine for i in trace] == ["dma", "dma", "dve", "dma"]
    assert all(i.loc[0] == __file__ for i in trace)
    assert trace[0].nbytes == 128 * 8 * 4


def test_kernel_called_with_wrong_arity_gives_clear_error() -> None:
    with pytest.raises(TypeError, match="add_kernel"):
        add_kernel(np.ones((128, 8), np.float32))
