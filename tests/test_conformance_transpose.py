"""Issue 12: DMA transposes and the ``constants`` submodules, checked against NumPy.

``nisa.dma_transpose`` from HBM and SBUF (2-D, 3-D and 4-D permutations, hardware DGE on trn2),
``nl.load_transpose2d`` of a source taller than 128 rows, and the errors for the unsupported cases.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest
from neuronxcc.nki.isa.constants import dge_mode
from neuronxcc.nki.language.constants import sizeinbytes

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("shape", [(16, 128), (4, 8, 32), (2, 3, 4, 64)])
@pytest.mark.parametrize("from_sbuf", [False, True])
def test_dma_transpose_default_permutations(shape: tuple[int, ...], from_sbuf: bool) -> None:
    axes = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}[len(shape)]

    @nki.jit
    def kernel(a):
        t = nisa.dma_transpose(nl.load(a) if from_sbuf else a)
        out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out

    a = RNG.standard_normal(shape).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), np.transpose(a, axes))


def test_dma_transpose_hwdge_needs_trn2() -> None:
    def body(a):
        t = nisa.dma_transpose(a, dge_mode=dge_mode.hwdge)
        out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out

    a = RNG.standard_normal((16, 128)).astype(np.float16)
    np.testing.assert_array_equal(nki.jit(body, platform_target="trn2")(a), a.T)
    with pytest.raises(SyntaxError, match="requires min target gen3"):
        nki.jit(body, platform_target="trn1")(a)


def test_dma_transpose_rejects_other_axes() -> None:
    @nki.jit
    def kernel(a):
        t = nisa.dma_transpose(a, axes=(0, 2, 1))
        out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out

    with pytest.raises(ValueError, match="supports axes"):
        kernel(np.zeros((2, 4, 8), np.float32))


def test_load_transpose2d_of_a_tall_source() -> None:
    @nki.jit
    def kernel(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load_transpose2d(a))
        return out

    a = RNG.standard_normal((1024, 128), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a.T)


def test_load_transpose2d_result_over_128_partitions() -> None:
    @nki.jit
    def kernel(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load_transpose2d(a))
        return out

    with pytest.raises(ValueError, match="exceed architecture limitation of 128"):
        kernel(np.zeros((8, 256), np.float32))


def test_sizeinbytes() -> None:
    assert [sizeinbytes(d) for d in (nl.float32, nl.bfloat16, nl.float8_e4m3, nl.int32)] == [4, 2, 1, 4]
