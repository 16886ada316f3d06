"""NKI 0.6 indirect views with any free pattern (issue 29 scope 4).

AWS's ``.ap()`` takes any ``[[stride, count], ...]`` pattern with either offset ("analogous to torch.as_strided",
nki/api/nki/language/__init__.py ``NkiTensor.ap``), and ``vector_select`` any view of an HBM tensor: partition ``p``
of such a view reads element ``flat[start + idx[p] * row + sum(j_k * s_k)]``, wherever that lies.  Each kernel here
is checked against that formula computed with NumPy (``strided``); the index is checked against the dimension it
selects among (AWS's oob_mode: "the index array contains values that exceed the dimensions of the target array"),
a DMA whose free pattern walks on into the next row is priced as the same contiguous runs as a gather of rows that
long, and the program's JSON round trip reads the indices when it runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkisim
from nkisim import api

nkisim.install()

import neuronxcc.nki as lnki  # noqa: E402
import neuronxcc.nki.language as lnl  # noqa: E402
import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(2929)
DATA = RNG.standard_normal((64, 32)).astype(np.float32)


def strided(flat: np.ndarray, start: int, row: int, idx: np.ndarray, free: list[tuple[int, int]]) -> np.ndarray:
    """torch.as_strided's reading of an indirect view: ``out[p, j...] = flat[start + idx[p] * row + sum(j*s)]``."""
    counts = [c for _, c in free]
    pos = np.zeros(counts, dtype=np.int64)
    for k, (s, c) in enumerate(free):
        pos = pos + (np.arange(c) * s).reshape([c if j == k else 1 for j in range(len(free))])
    addr = start + idx.reshape((-1,) + (1,) * len(free)).astype(np.int64) * row + pos
    return flat[addr]


def gather_kernel(shape: tuple[int, ...], pattern: list[list[int]], offset: int = 0):
    """``data.ap(pattern, offset, vector_offset=idx)`` copied out, for any pattern."""

    def gather(data, indices):
        out = nl.ndarray(shape, dtype=data.dtype, buffer=nl.shared_hbm)
        idx = nl.ndarray(indices.shape, dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=indices)
        t = nl.ndarray(shape, dtype=data.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=data.ap(pattern, offset=offset, vector_offset=idx, indirect_dim=0))
        nisa.dma_copy(dst=out, src=t)
        return out

    return nki.jit(gather)


@pytest.mark.parametrize("pattern, offset, top", [
    ([[32, 128], [1, 48]], 4, 62),              # 48 elements from column 4: on into the next row
    ([[32, 128], [64, 3], [1, 8]], 5, 59),      # every other row, three of them
    ([[32, 128], [1, 8], [40, 2]], 30, 61),     # a stride past the row inside the pattern, from near its end
    ([[32, 128], [1, 16]], 32 * 7 + 3, 56),     # starting seven rows in
])
def test_a_vector_offset_view_reads_any_free_pattern(pattern, offset, top):
    idx = RNG.integers(0, top + 1, (128, 1)).astype(np.int32)
    idx[0, 0] = top  # the last row the pattern allows: its final element is the storage's last or near it
    free = [tuple(p) for p in pattern[1:]]
    shape = (128,) + tuple(c for _, c in free)
    got = gather_kernel(shape, pattern, offset)(DATA, idx)
    np.testing.assert_array_equal(got, strided(DATA.reshape(-1), offset, 32, idx, free))


def test_a_pattern_leaving_the_storage_is_an_index_error_not_a_wrong_read():
    idx = np.full((128, 1), 63, np.int32)  # row 63 plus 48 elements from column 4: past the 2048 elements
    with pytest.raises(IndexError, match="out of bounds"):
        gather_kernel((128, 48), [[32, 128], [1, 48]], 4)(DATA, idx)


@nki.jit
def one_per_partition(data, indices):
    """``vector_select(0, idx)[:, 3]``: a view with no free dimension, one element per partition."""
    out = nl.ndarray((128, 1), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    t = nl.ndarray((128, 1), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=data.vector_select(0, idx)[:, 3])
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def one_run(data, which):
    """``.ap([[1, 8]], offset=3, scalar_offset=w)``: a 1-D pattern from the block ``w[0, 0]`` selects."""
    out = nl.ndarray((1, 8), dtype=data.dtype, buffer=nl.shared_hbm)
    w = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w, src=which)
    t = nl.ndarray((1, 8), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=data.ap([[1, 8]], offset=3, scalar_offset=w, indirect_dim=0))
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def select_rows_of_48(data, indices):
    """``vector_select`` of a view whose rows are 48 elements of a (64, 32) tensor: a stride that does not divide
    the storage's 2048 elements."""
    out = nl.ndarray((128, 48), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.load(indices)
    nl.store(out, nl.load(data.ap([[48, 40], [1, 48]]).vector_select(0, idx)))
    return out


def test_vector_select_of_rows_whose_stride_does_not_divide_the_storage():
    idx = RNG.integers(0, 40, (128, 1)).astype(np.int32)
    np.testing.assert_array_equal(select_rows_of_48(DATA, idx), strided(DATA.reshape(-1), 0, 48, idx, [(1, 48)]))
    launch = api.launch(select_rows_of_48, [DATA, idx], target="trn2")
    other = idx[::-1].copy()
    done = api.execute(api.program_from_json(launch.program.to_json()), [DATA, other])
    np.testing.assert_array_equal(done.outputs, strided(DATA.reshape(-1), 0, 48, other, [(1, 48)]))


def test_views_of_one_dimension():
    idx = RNG.integers(0, 64, (128, 1)).astype(np.int32)
    np.testing.assert_array_equal(one_per_partition(DATA, idx)[:, 0], DATA[idx[:, 0], 3])
    data = RNG.standard_normal((5, 16, 8)).astype(np.float32)
    np.testing.assert_array_equal(one_run(data, np.array([[2]], np.int32))[0], data.reshape(-1)[2 * 128 + 3:][:8])


@nki.jit
def select_from_view(data, indices):
    """``data[2:40].vector_select(0, idx)``: partition p reads row 2 + idx[p]; an index past the view's 38 rows is
    skipped (``oob_mode=skip``), leaving the zeros memset wrote."""
    P, F = indices.shape[0], data.shape[1]
    out = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    rows = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.sbuf)
    nisa.memset(dst=rows, value=0.0)
    nisa.dma_copy(dst=rows, src=data[2:40, :].vector_select(0, idx), oob_mode=nisa.oob_mode.skip)
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def select_from_view_strict(data, indices):
    P, F = indices.shape[0], data.shape[1]
    out = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.load(indices)
    nl.store(out, nl.load(data[5:13, :].vector_select(0, idx)))
    return out


def test_vector_select_of_a_view_starting_at_any_row():
    idx = RNG.integers(0, 38, (128, 1)).astype(np.int32)
    np.testing.assert_array_equal(select_from_view(DATA, idx), DATA[2 + idx[:, 0]])
    bad = idx.copy()
    bad[3, 0], bad[9, 0] = 38, -1  # inside the storage (rows 40 and 1), outside the view's 38 rows: skipped
    want = DATA[2 + np.clip(bad[:, 0], 0, 37)]
    want[[3, 9]] = 0.0
    np.testing.assert_array_equal(select_from_view(DATA, bad), want)
    small = RNG.integers(0, 8, (64, 1)).astype(np.int32)
    np.testing.assert_array_equal(select_from_view_strict(DATA, small), DATA[5 + small[:, 0]])
    small[10, 0] = 8  # row 13 exists, but the view has 8 rows: the default oob_mode=error names the index
    with pytest.raises(IndexError, match="index 8 is out of bounds for axis 0 with size 8"):
        select_from_view_strict(DATA, small)


@nki.jit
def scatter_pairs(src_data, indices, output):
    """Partition p of a (P, 64) tile written over rows idx[p] and idx[p] + 1 of a (rows, 32) output."""
    P, F = src_data.shape
    src = nl.ndarray((P, F), dtype=src_data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=src, src=src_data)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    nisa.dma_copy(dst=output.ap(pattern=[[32, P], [1, F]], vector_offset=idx, indirect_dim=0), src=src)
    return output


def test_a_scatter_writes_any_free_pattern():
    src = RNG.standard_normal((40, 64)).astype(np.float32)
    idx = (2 * RNG.permutation(64)[:40]).astype(np.int32).reshape(40, 1)  # even rows: the pairs do not overlap
    output = RNG.standard_normal((128, 32)).astype(np.float32)
    want = output.copy().reshape(-1)
    addr = idx.astype(np.int64) * 32 + np.arange(64)
    want[addr] = src
    np.testing.assert_array_equal(scatter_pairs(src, idx, output), want.reshape(128, 32))


def window_kernel(batch: int):
    """AWS's attention_cte spelling: ``k.ap([[S, d], [1, n]], scalar_offset=t, offset=b*d*S, indirect_dim=2)``,
    the columns ``t .. t+n`` of batch b of a (B, d, S) tensor, the offset read when the DMA runs."""

    def window(k, at):
        B, D, S = k.shape
        n = 16
        out = nl.ndarray((D, n), dtype=k.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=at)
        w = nl.ndarray((D, n), dtype=k.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w, src=k.ap(pattern=[[S, D], [1, n]], scalar_offset=t, offset=batch * D * S,
                                      indirect_dim=2))
        nisa.dma_copy(dst=out, src=w)
        return out

    return nki.jit(window)


def test_a_tile_as_scalar_offset_of_a_free_dimension():
    k = RNG.standard_normal((3, 8, 40)).astype(np.float32)
    np.testing.assert_array_equal(window_kernel(1)(k, np.array([[7]], np.int32)), k[1, :, 7:23])
    launch = api.launch(window_kernel(2), [k, np.array([[0]], np.int32)], target="trn2")
    program = api.program_from_json(launch.program.to_json())
    np.testing.assert_array_equal(api.execute(program, [k, np.array([[24]], np.int32)]).outputs, k[2, :, 24:40])
    with pytest.raises(IndexError, match="index 40 is out of bounds for axis 0 with size 40"):
        window_kernel(0)(k, np.array([[40]], np.int32))


def test_the_program_round_trip_reads_the_indices_of_a_general_pattern():
    kernel = gather_kernel((128, 3, 8), [[32, 128], [64, 3], [1, 8]], 5)
    idx = RNG.integers(0, 60, (128, 1)).astype(np.int32)
    launch = api.launch(kernel, [DATA, idx], target="trn2")
    program = api.program_from_json(launch.program.to_json())
    other = idx[::-1].copy()
    want = strided(DATA.reshape(-1), 5, 32, other, [(64, 3), (1, 8)])
    done = api.execute(program, [DATA, other])
    np.testing.assert_array_equal(done.outputs, want)
    assert done.latency_us() == launch.estimate().total_us


@lnki.jit
def gather_long_rows(data, indices):
    """The legacy gather of 64-element rows: the same bytes as 0.6's two-row spans below, as rows of their own."""
    P, F = indices.shape[0], data.shape[1]
    out = lnl.ndarray((P, F), dtype=data.dtype, buffer=lnl.shared_hbm)
    idx = lnl.load(indices)
    i_p, i_f = lnl.arange(P)[:, None], lnl.arange(F)[None, :]
    lnl.store(out, lnl.load(data[idx[i_p, 0], i_f]))
    return out


def test_a_span_across_rows_is_priced_as_one_run_per_partition():
    """A partition reading rows 2i and 2i+1 of a (64, 32) tensor reads 64 contiguous elements: the same descriptors,
    instructions and estimate as the legacy gather of row i of the (32, 64) tensor (one run per partition), not one
    run per element or per row."""
    idx = RNG.integers(0, 32, (128, 1)).astype(np.int32)
    new = api.launch(gather_kernel((128, 64), [[32, 128], [1, 64]]), [DATA, 2 * idx], target="trn2")
    old = api.launch(gather_long_rows, [DATA.reshape(32, 64), idx], target="trn2")
    np.testing.assert_array_equal(new.outputs, old.outputs)
    assert ([(i.engine, i.p, i.n, i.nbytes) for i in new.record.ctx.trace]
            == [(i.engine, i.p, i.n, i.nbytes) for i in old.record.ctx.trace])
    assert new.estimate().total_us == old.estimate().total_us


def on_chip_kernel(view):
    """A (128, 8, 64) tile in SBUF, copied on chip through ``view(t, w)`` (a tile ``w`` as its dynamic offset)."""

    def k(data, which):
        w = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=w, src=which)
        t = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=data)
        src = view(t, w)
        o = nl.ndarray(src.shape, dtype=data.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=src)
        out = nl.ndarray(src.shape, dtype=data.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=o)
        return out

    return nki.jit(k)


def test_a_tile_as_the_dynamic_offset_of_an_on_chip_tensor():
    """AWS's select docs allow a dynamic select on chip off the partition dimension ("Dynamic on-chip: dim must not
    be 0"), and .ap's scalar_offset any dimension: each reads what the tile holds when the instruction runs."""
    data = RNG.standard_normal((128, 8, 64)).astype(np.float32)
    flat = data.reshape(128, -1)
    select = on_chip_kernel(lambda t, w: t.select(1, w))
    np.testing.assert_array_equal(select(data, np.array([[5]], np.int32)), data[:, 5])
    window = on_chip_kernel(lambda t, w: t.ap([[512, 128], [1, 16]], offset=128, scalar_offset=w, indirect_dim=2))
    np.testing.assert_array_equal(window(data, np.array([[60]], np.int32)), flat[:, 188:204])  # on past row 2
    rows = on_chip_kernel(lambda t, w: t.ap([[512, 32], [1, 64]], scalar_offset=w, indirect_dim=0))
    np.testing.assert_array_equal(rows(data, np.array([[90]], np.int32)), flat[90:122, :64])
    launch = api.launch(select, [data, np.array([[0]], np.int32)], target="trn2")
    program = api.program_from_json(launch.program.to_json())
    np.testing.assert_array_equal(api.execute(program, [data, np.array([[7]], np.int32)]).outputs, data[:, 7])


@nki.jit
def register_windows(data):
    """``.ap(pattern, scalar_offset=i)`` with ``i`` a dynamic loop's register and a pattern whose rows run on past the
    storage's (every other row, 8 elements from column 28): the view moves with the register when each runs."""
    out = nl.ndarray((3, 16, 8), dtype=data.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((16, 8), dtype=data.dtype, buffer=nl.sbuf)

    def step(i):
        nisa.dma_copy(dst=t, src=data.ap([[64, 16], [1, 8]], offset=28, scalar_offset=i, indirect_dim=0))
        nisa.dma_copy(dst=out.ap([[8, 16], [1, 8]], scalar_offset=i, indirect_dim=0), src=t)

    nl.fori_loop(0, 3, step)
    return out


def test_a_register_offset_moves_a_view_of_any_pattern():
    flat = DATA.reshape(-1)
    want = np.stack([flat[i * 32 + 28 + np.arange(16)[:, None] * 64 + np.arange(8)] for i in range(3)])
    launch = api.launch(register_windows, [DATA], target="trn2")
    np.testing.assert_array_equal(launch.outputs, want)
    done = api.execute(api.program_from_json(launch.program.to_json()), [DATA])
    np.testing.assert_array_equal(done.outputs, want)


@nki.jit
def register_on_chip(data):
    """A register offset of an SBUF view whose 40 elements run from column 50 of a row on into the next."""
    out = nl.ndarray((3, 128, 40), dtype=data.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 8, 64), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=data)
    o = nl.ndarray((128, 40), dtype=data.dtype, buffer=nl.sbuf)

    def step(i):
        nisa.tensor_copy(dst=o, src=t.ap([[512, 128], [1, 40]], offset=50, scalar_offset=i, indirect_dim=1))
        nisa.dma_copy(dst=out.ap([[40, 128], [1, 40]], scalar_offset=i, indirect_dim=0), src=o)

    nl.fori_loop(0, 3, step)
    return out


def test_a_register_offset_moves_an_on_chip_view_of_any_pattern():
    data = RNG.standard_normal((128, 8, 64)).astype(np.float32)
    flat = data.reshape(128, -1)
    want = np.stack([flat[:, 50 + 64 * i:][:, :40] for i in range(3)])
    launch = api.launch(register_on_chip, [data], target="trn2")
    np.testing.assert_array_equal(launch.outputs, want)
    done = api.execute(api.program_from_json(launch.program.to_json()), [data])
    np.testing.assert_array_equal(done.outputs, want)


# --- dma_compute's read-modify-write through an indirect view (AWS's dma_compute docs: scatter and gather RMW) ------
@nki.jit
def scatter_add(table, indices, rows):
    """Scatter RMW: ``table[idx[p]] += rows[p]`` (dst an indirect HBM view, one source the same view)."""
    P, F = rows.shape
    data = nl.ndarray((P, F), dtype=rows.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=data, src=rows)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    view = table.vector_select(0, idx)
    nisa.dma_compute(dst=view, srcs=[view, data], reduce_op=nl.add, oob_mode=nisa.oob_mode.skip)
    return table


@nki.jit
def gather_add(table, indices, base):
    """Gather RMW: ``acc += table[idx[p]]`` (dst SBUF, one source dst itself, the other an indirect HBM view)."""
    P, F = base.shape
    acc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=acc, src=base)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    nisa.dma_compute(dst=acc, srcs=[acc, table.ap([[F, P], [1, F]], vector_offset=idx)], reduce_op=nl.add)
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return out


def test_dma_compute_scatter_adds_into_the_rows_the_indices_name():
    table = RNG.standard_normal((64, 32)).astype(np.float32)
    rows = RNG.standard_normal((40, 32)).astype(np.float32)
    idx = RNG.permutation(64)[:40].astype(np.int32).reshape(40, 1)  # unique, as AWS requires
    idx[5, 0] = 64  # out of range: skipped (oob_mode=skip)
    want = table.copy()
    keep = idx[:, 0] < 64
    want[idx[keep, 0]] += rows[keep]
    launch = api.launch(scatter_add, [table.copy(), idx, rows], target="trn2")
    np.testing.assert_array_equal(launch.outputs, want)
    rmw = [i for i in launch.record.ctx.trace if i.kind.name == "dma_compute"]
    assert len(rmw) == 1 and rmw[0].nbytes == 40 * 32 * 4  # the rows it adds; HBM read and written back
    assert rmw[0].extra["hbm_bytes"] == 2 * 40 * 32 * 4


def test_dma_compute_gather_adds_the_rows_the_indices_name():
    table = RNG.standard_normal((64, 32)).astype(np.float32)
    base = RNG.standard_normal((128, 32)).astype(np.float32)
    idx = RNG.integers(0, 64, (128, 1)).astype(np.int32)
    np.testing.assert_allclose(gather_add(table, idx, base), base + table[idx[:, 0]], rtol=1e-6)


def test_dma_compute_rmw_keeps_to_aws_documented_forms():
    def three(table, indices, rows):
        data = nl.ndarray(rows.shape, dtype=rows.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=data, src=rows)
        idx = nl.ndarray(indices.shape, dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=indices)
        view = table.vector_select(0, idx)
        nisa.dma_compute(dst=view, srcs=[view, data, data], reduce_op=nl.add)

    def repeated(table, indices, rows):
        data = nl.ndarray(rows.shape, dtype=rows.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=data, src=rows)
        idx = nl.ndarray(indices.shape, dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=indices)
        view = table.vector_select(0, idx)
        nisa.dma_compute(dst=view, srcs=[view, data], reduce_op=nl.add, unique_indices=False)

    args = (DATA.copy(), np.arange(8, dtype=np.int32).reshape(8, 1), np.ones((8, 32), np.float32))
    with pytest.raises(Exception, match="exactly 2 source tensors"):
        nki.jit(three)(*args)
    with pytest.raises(Exception, match="only unique indices are supported"):
        nki.jit(repeated)(*args)
