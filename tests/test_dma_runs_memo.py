"""``cost.runs.dma_runs`` remembers the descriptors of unmasked DMAs between basic accesses by their layout alone
(``basic_key``): a loop's loads move tiles of one layout at other offsets every iteration.  Checked here: for
random basic slices (starts, stops, steps, integer indices) of HBM and on-chip tensors, what it returns, first or
remembered, is what ``computed_runs`` computes for those very operands; a key that forgot the steps would not be.
"""

from __future__ import annotations

import numpy as np

from nkisim.core import buffers
from nkisim.core.access import Access
from nkisim.core.tensor import Tensor
from nkisim.cost import runs

RNG = np.random.default_rng(34)
F32 = np.dtype(np.float32)


def _slice(dim: int) -> slice | int:
    if RNG.random() < 0.15:
        return int(RNG.integers(0, dim))
    step = int(RNG.choice([1, 1, 2, 3]))
    start = int(RNG.integers(0, dim // 2))
    count = int(RNG.integers(1, (dim - start - 1) // step + 2))
    return slice(start, start + (count - 1) * step + 1, step)


def _pairs(n: int) -> list[tuple[Access, Access]]:
    """(HBM access, SBUF access) of the same element count, drawn at random offsets and strides."""
    out = []
    hbm = Tensor((64, 48, 40), F32, buffers.shared_hbm, None, "h")
    while len(out) < n:
        src = Access(hbm, tuple(_slice(d) for d in hbm.shape))
        shape = src.shape or (1,)
        sb = Tensor((shape[0], int(np.prod(shape[1:], dtype=int)) * 2), F32, buffers.sbuf, None, "s")
        dst = Access(sb, (slice(0, shape[0]), slice(0, sb.shape[1], 2)))
        if int(np.prod(dst.shape)) == int(np.prod(shape)):
            out.append((src, dst))
    return out


def test_remembered_runs_are_the_computed_ones(monkeypatch):
    monkeypatch.setattr(runs, "BASIC_DMA", {})
    pairs = _pairs(300)
    for _ in range(2):  # (the second pass hits the memo for every layout)
        for src, dst in pairs:
            assert runs.dma_runs((src,), (dst,), None) == runs.computed_runs((src,), (dst,), None, False)
            assert runs.dma_runs((dst,), (src,), None) == runs.computed_runs((dst,), (src,), None, False)
    assert 0 < len(runs.BASIC_DMA) < 4 * len(pairs)


def test_a_key_without_the_steps_is_caught(monkeypatch):
    monkeypatch.setattr(runs, "BASIC_DMA", {})
    key = runs.basic_key
    monkeypatch.setattr(runs, "basic_key", lambda acc: None if (k := key(acc)) is None else
                        (k[0], k[1], tuple((c, 1) for c, _ in k[2]), k[3], k[4]))
    wrong = sum(runs.dma_runs((s,), (d,), None) != runs.computed_runs((s,), (d,), None, False)
                for _ in range(2) for s, d in _pairs(300))
    assert wrong
