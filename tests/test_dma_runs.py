"""Every DMA is priced by its descriptors: the pieces contiguous in its source and in its destination (issue 28
item 2).

AWS (nki/guides/architecture/trainium_inferentia2_arch.rst, "Data movement between HBM and SBUF using DMAs"): a DMA
transfer gathers a list of source DMA buffers and scatters into a list of destination DMA buffers, "Data within a
DMA buffer must be continuous in the memory address map", with "some performance overhead at both DMA buffer and
transfer levels"; an SBUF side needs at least one buffer per partition, and more "if the tensor data slice within
each SBUF partition is not contiguous".  Its example: a 128x512 FP32 load is 16 transfers of 8 DMA buffers each.

Each case below is traced, and the descriptors the cost model recorded for each DMA are compared with pieces counted
here from the addresses themselves: the NumPy index of the same elements into ``np.arange`` of the storage (HBM: flat
addresses; on chip: a partition and an offset in it), every side walked in row-major order of its access, element k
of the source moving to element k of the destination, a piece ending where any side's next element is not the next
address.  The cases cover legacy slices, strided slices, arange (transposed) views, reshapes, 1-D slices into
(R, 1) tiles, indirect rows, masks, ``load_transpose2d`` and NKI 0.6 ``.ap()`` patterns, ``permute`` and
``vector_select``.  Then the stage-1 attack of issue 28: a transposed-view load and store is no longer priced as a
contiguous copy.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkisim
from nkisim import api

nkisim.install()

import neuronxcc.nki as lnki  # noqa: E402
import neuronxcc.nki.isa as lisa  # noqa: E402
import neuronxcc.nki.language as lnl  # noqa: E402
import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(28)


def breaks(addr: np.ndarray, part: np.ndarray | None = None, rows: np.ndarray | None = None) -> np.ndarray:
    """Where the runs of one side end, in row-major order of its access: ``breaks[k]`` when element k + 1 is not at
    the address after element k's, or ``part`` (its partition, on chip) or ``rows`` (an indirect row) changes."""
    addr = np.asarray(addr)
    out = np.diff(addr.ravel()) != 1
    for k in (part, rows):
        if k is not None:
            out |= np.diff(np.broadcast_to(k, addr.shape).ravel()) != 0
    return out


def pieces(*sides: np.ndarray) -> int:
    """Pieces contiguous on every side at once (``sides``: their ``breaks``, element k of each side moving
    together)."""
    marks = np.zeros_like(sides[0])
    for b in sides:
        marks |= b
    return int(marks.sum()) + 1


def hbm(shape: tuple[int, ...]) -> np.ndarray:
    """The flat address of every element of a row-major HBM tensor."""
    return np.arange(int(np.prod(shape))).reshape(shape)


def tile(shape: tuple[int, ...]) -> np.ndarray:
    """The breaks of a whole on-chip tile: at every partition (each partition's free elements are contiguous)."""
    p = np.broadcast_to(np.arange(shape[0]).reshape((-1,) + (1,) * (len(shape) - 1)), shape)
    off = np.broadcast_to(np.arange(int(np.prod(shape[1:]))).reshape((1,) + shape[1:]), shape)
    return breaks(off, p)


def dma_runs(kernel, args, target: str = "trn2") -> list[int]:
    launch = api.launch(kernel, args, target=target)
    return [ins.runs for ins in launch.record.ctx.trace if ins.engine == "dma"]


# --- legacy kernels -------------------------------------------------------------------------------------------------
@lnki.jit
def whole_load(a):
    out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.load(a))
    return out


@lnki.jit
def column_block(a):
    out = lnl.ndarray((128, 512), dtype=a.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.load(a[:, 256:768]))
    return out


@lnki.jit
def strided(a):
    out = lnl.ndarray((128, 512), dtype=a.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.load(a[:, 0:1024:2]))
    return out


@lnki.jit
def positions_between_slices(a):
    """A 4-D tensor read at a position, a block of rows, another position and every other column (the counts of a
    basic access's runs follow its slices past the positions it drops)."""
    out = lnl.ndarray((128, 32), dtype=a.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.load(a[1, 0:128, 2, 0:64:2]))
    return out


@lnki.jit
def transposed_view(a):
    """Loads a (64, 128) tensor as its (128, 64) transpose through an arange view and stores it back the same way."""
    out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    i_p = lnl.arange(a.shape[1])[:, None]
    i_f = lnl.arange(a.shape[0])[None, :]
    t = lnl.load(a[i_f, i_p])
    lnl.store(out[i_f, i_p], value=t)
    return out


@lnki.jit
def vector_into_column(v):
    out = lnl.ndarray(v.shape, dtype=v.dtype, buffer=lnl.shared_hbm)
    t = lnl.ndarray((128, 1), dtype=v.dtype, buffer=lnl.sbuf)
    lisa.dma_copy(src=v[0:128], dst=t)
    lisa.dma_copy(src=t, dst=out[0:128])
    return out


@lnki.jit
def reshaped(v):
    out = lnl.ndarray((128, 8), dtype=v.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.load(v.reshape((128, 8))))
    return out


@lnki.jit
def gather_rows(data, idx):
    out = lnl.ndarray((128, data.shape[1]), dtype=data.dtype, buffer=lnl.shared_hbm)
    i_p = lnl.arange(128)[:, None]
    i_f = lnl.arange(data.shape[1])[None, :]
    ix = lnl.load(idx)
    lnl.store(out, lnl.load(data[ix[i_p, 0], i_f]))
    return out


@lnki.jit
def ragged(a):
    """A (100, 512) tensor through a 128-row tile masked to its 100 rows."""
    out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    i_p = lnl.arange(128)[:, None]
    i_f = lnl.arange(a.shape[1])[None, :]
    t = lnl.load(a[i_p, i_f], mask=(i_p < a.shape[0]))
    lnl.store(out[i_p, i_f], value=t, mask=(i_p < a.shape[0]))
    return out


@lnki.jit
def transpose2d(a):
    out = lnl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.load_transpose2d(a))
    return out


# --- NKI 0.6 kernels ------------------------------------------------------------------------------------------------
@nki.jit
def ap_transposed(a):
    """The (64, 128) tensor read as its transpose by an explicit access pattern, written back the same way."""
    rows, cols = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((cols, rows), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.ap([[1, cols], [cols, rows]]))
    nisa.dma_copy(dst=out.ap([[1, cols], [cols, rows]]), src=t)
    return out


@nki.jit
def permuted(a):
    rows, cols = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((cols, rows), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.permute((1, 0)))
    nisa.dma_copy(dst=out.permute((1, 0)), src=t)
    return out


@nki.jit
def select_rows(data, indices):
    p, f = indices.shape[0], data.shape[1]
    out = nl.ndarray((p, f), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((p, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    rows = nl.ndarray((p, f), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=data.vector_select(0, idx))
    nisa.dma_copy(dst=out, src=rows)
    return out


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_aws_example_a_128x512_load_is_one_descriptor_per_partition():
    """AWS's own example: "loading a 128x512 FP32 HBM tensor to SBUF ... 16 DMA transfers ..., each moving a
    scatter-gather list of 8 DMA buffers" -- 128 pieces, one per partition, though the source is one block."""
    load, store = dma_runs(whole_load, [_f32(128, 512)])
    assert pieces(breaks(hbm((128, 512))), tile((128, 512))) == 128
    assert load == store == 128


T64 = hbm((64, 128)).T  # a (64, 128) tensor's addresses seen as its (128, 64) transpose

LEGACY = [
    ("a column block of a wider tensor", column_block, lambda: [_f32(128, 1024)],
     lambda: [pieces(breaks(hbm((128, 1024))[:, 256:768]), tile((128, 512))),
              pieces(tile((128, 512)), breaks(hbm((128, 512))))]),
    ("every other column", strided, lambda: [_f32(128, 1024)],
     lambda: [pieces(breaks(hbm((128, 1024))[:, 0:1024:2]), tile((128, 512))),
              pieces(tile((128, 512)), breaks(hbm((128, 512))))]),
    ("positions between slices", positions_between_slices, lambda: [_f32(2, 128, 3, 64)],
     lambda: [pieces(breaks(hbm((2, 128, 3, 64))[1, :, 2, 0:64:2]), tile((128, 32))),
              pieces(tile((128, 32)), breaks(hbm((128, 32))))]),
    ("a transposed arange view, loaded and stored", transposed_view, lambda: [_f32(64, 128)],
     lambda: [pieces(breaks(T64), tile((128, 64))), pieces(tile((128, 64)), breaks(T64))]),
    ("a 1-D slice into a (128, 1) tile and back", vector_into_column, lambda: [_f32(1024)],
     lambda: [pieces(breaks(hbm((1024,))[0:128]), tile((128, 1)))] * 2),
    ("a reshaped vector", reshaped, lambda: [_f32(1024)],
     lambda: [pieces(breaks(hbm((128, 8))), tile((128, 8)))] * 2),
    ("a masked ragged tile", ragged, lambda: [_f32(100, 512)],
     lambda: [pieces(breaks(hbm((100, 512))), tile((100, 512)))] * 2),
    # a transposing DMA pairs its elements across the transpose: its sides' runs, the larger count
    ("load_transpose2d", transpose2d, lambda: [_f32(64, 128)],
     lambda: [max(pieces(breaks(hbm((64, 128)))), pieces(tile((128, 64)))),
              pieces(tile((128, 64)), breaks(hbm((128, 64))))]),
]


@pytest.mark.parametrize("case", LEGACY, ids=[c[0] for c in LEGACY])
def test_legacy_accesses(case):
    _name, kernel, args, expected = case
    assert dma_runs(kernel, args()) == expected()


def test_counts_that_set_the_price():
    """The counts above, spelled out: a row-strided block is a piece per row; every other column is a piece per
    element; a transposed view is a piece per element; a (128, 1) tile is a piece per partition; a masked tile
    moves its 100 rows only."""
    assert dma_runs(column_block, [_f32(128, 1024)]) == [128, 128]
    assert dma_runs(strided, [_f32(128, 1024)]) == [128 * 512, 128]
    assert dma_runs(transposed_view, [_f32(64, 128)]) == [64 * 128] * 2
    assert dma_runs(vector_into_column, [_f32(1024)]) == [128, 128]
    assert dma_runs(ragged, [_f32(100, 512)]) == [100, 100]


def test_indirect_rows_are_one_piece_each_even_when_adjacent():
    """A gathered row is addressed by its own index: rows 5, 6, 7 in a row are still three pieces (the DMA cannot
    know they touch before it reads the indices)."""
    data = _f32(64, 32)
    idx = np.concatenate([[5, 6, 7], RNG.integers(0, 64, 125)]).astype(np.int32).reshape(128, 1)
    got = dma_runs(gather_rows, [data, idx])
    rows = np.arange(128).reshape(128, 1)
    gathered = pieces(breaks(hbm((64, 32))[idx[:, 0]], rows=rows), tile((128, 32)))
    assert gathered == 128 and pieces(breaks(hbm((64, 32))[idx[:, 0]])) < 128  # contiguity alone would merge 5, 6, 7
    assert got == [pieces(breaks(hbm((128, 1))), tile((128, 1))), gathered,
                   pieces(tile((128, 32)), breaks(hbm((128, 32))))]


NKI06 = [
    ("an .ap() transposed pattern", ap_transposed, lambda: [_f32(64, 128)],
     lambda: [pieces(breaks(T64), tile((128, 64))), pieces(tile((128, 64)), breaks(T64))]),
    ("permute", permuted, lambda: [_f32(64, 128)],
     lambda: [pieces(breaks(T64), tile((128, 64))), pieces(tile((128, 64)), breaks(T64))]),
]


@pytest.mark.parametrize("case", NKI06, ids=[c[0] for c in NKI06])
def test_nki06_views(case):
    _name, kernel, args, expected = case
    assert dma_runs(kernel, args()) == expected() == [64 * 128] * 2


def test_nki06_vector_select_rows():
    data = _f32(64, 32)
    idx = np.arange(128, dtype=np.int32).reshape(128, 1) % 64  # 0..63 twice: adjacent rows, still one piece each
    assert dma_runs(select_rows, [data, idx]) == [128, 128, 128]


# --- the attack: a vector add through transposed views (stage 1) ----------------------------------------------------
@lnki.jit
def add_transposed(a, b):
    out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    i_p = lnl.arange(a.shape[1])[:, None]
    i_f = lnl.arange(a.shape[0])[None, :]
    lnl.store(out[i_f, i_p], value=lnl.add(lnl.load(a[i_f, i_p]), lnl.load(b[i_f, i_p])))
    return out


@lnki.jit
def add_plain(a, b):
    out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, value=lnl.add(lnl.load(a), lnl.load(b)))
    return out


def test_a_transposed_view_is_not_priced_as_a_contiguous_copy():
    """Issue 28: each element of a transposed view is a 4-byte piece of its own; the add through such views was
    estimated exactly as fast as the plain one (one contiguous copy).  Each of its DMAs now pays 16,384 descriptors
    (the plain one's 128) at the documented fixed cost, spread over the 16 queues at best."""
    a, b = _f32(128, 128), _f32(128, 128)
    prm = api.target("trn2").params
    per_run = prm.dma.descriptor_bytes / prm.dma.bytes_per_ns
    lat = {}
    for k in (add_plain, add_transposed):
        launch = api.launch(k, [a, b], target="trn2")
        np.testing.assert_allclose(launch.outputs, a + b, rtol=1e-6)
        lat[k] = launch.latency_us()
    attack = [i for i in api.launch(add_transposed, [a, b], target="trn2").record.ctx.trace if i.engine == "dma"]
    assert [i.runs for i in attack] == [128 * 128] * 3
    assert lat[add_transposed] - lat[add_plain] >= 3 * (128 * 128 - 128) * per_run / 16 / 1000 * 0.99
    assert lat[add_transposed] > 2 * lat[add_plain]
