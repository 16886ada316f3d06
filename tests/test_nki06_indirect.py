"""NKI 0.6 per-partition indirect DMA (issue 20 scope 2: ``.ap()`` vector offsets and indirect dims).

``hbm.vector_select(0, idx)`` and ``hbm.ap(pattern, vector_offset=idx, indirect_dim=0)`` are views whose partition p
reads (or writes) row ``idx[p]``.  They are the legacy front end's indirect access ``data[idx[i_p, 0], i_f]``, not a
second implementation: here a gather and a scatter match NumPy, the 0.6 gather issues the same program access, the
same instructions and the same estimate as its legacy spelling, the program's JSON round trip reads the index tile
when it runs (other indices, other rows), an index out of range is the legacy error (or skipped with
``oob_mode=skip``), every documented precondition is refused at the kernel's own line, and a kernel whose indices are
off by one fails the comparison.  ``.ap(scalar_offset=tile)`` on HBM is the same access with one index.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os

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

HERE = os.path.abspath(__file__)
RNG = np.random.default_rng(2611)
DATA = RNG.standard_normal((64, 32)).astype(np.float32)
#: ragged, repeated and out of order: 128 partitions reading 64 rows, row 5 three times, the last row, row 0
IDX = np.concatenate([[5, 5, 63, 0, 5], RNG.integers(0, 64, 123)]).astype(np.int32).reshape(128, 1)


# --- kernels -----------------------------------------------------------------------------------------------
@nki.jit
def gather_select(data, indices):
    """AWS's gather, spelled with ``vector_select`` and ``nisa.dma_copy``."""
    P, F = indices.shape[0], data.shape[1]
    out = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    rows = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=data.vector_select(0, idx))
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def gather_load(data, indices):
    """The same gather through ``nl.load`` / ``nl.store`` (the twin of ``gather_legacy``)."""
    P, F = indices.shape[0], data.shape[1]
    out = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.load(indices)
    rows = nl.load(data.vector_select(0, idx))
    nl.store(out, rows)
    return out


@lnki.jit
def gather_legacy(data, indices):
    P, F = indices.shape[0], data.shape[1]
    out = lnl.ndarray((P, F), dtype=data.dtype, buffer=lnl.shared_hbm)
    idx = lnl.load(indices)
    i_p, i_f = lnl.arange(P)[:, None], lnl.arange(F)[None, :]
    rows = lnl.load(data[idx[i_p, 0], i_f])
    lnl.store(out, rows)
    return out


@nki.jit
def gather_batches(data, indices):
    """A gather from each batch of a (B, N, F) tensor: ``data[b]`` starts past row 0 of the storage."""
    B, N, F = data.shape
    P = indices.shape[0]
    out = nl.ndarray((B, P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.load(indices)
    for b in range(B):
        nl.store(out[b], nl.load(data[b].vector_select(0, idx)))
    return out


@lnki.jit
def gather_batches_legacy(data, indices):
    B, N, F = data.shape
    P = indices.shape[0]
    out = lnl.ndarray((B, P, F), dtype=data.dtype, buffer=lnl.shared_hbm)
    idx = lnl.load(indices)
    i_p, i_f = lnl.arange(P)[:, None], lnl.arange(F)[None, :]
    for b in range(B):
        lnl.store(out[b], lnl.load(data[b, idx[i_p, 0], i_f]))
    return out


@nki.jit
def gather_mutant(data, indices):
    """The gather with every index one too large: it must fail the NumPy comparison."""
    P, F = indices.shape[0], data.shape[1]
    out = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    nisa.tensor_scalar(dst=idx, data=idx, op0=nl.add, operand0=1)
    rows = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=data.vector_select(0, idx))
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def scatter(src_data, indices, output):
    """AWS's scatter: partition p of ``src_data`` goes to row ``indices[p]`` of ``output`` (written in place)."""
    P, F = src_data.shape
    src = nl.ndarray((P, F), dtype=src_data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=src, src=src_data)
    idx = nl.ndarray((P, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    nisa.dma_copy(dst=output.ap(pattern=[[F, P], [1, F]], vector_offset=idx, indirect_dim=0), src=src)
    return output


@nki.jit
def scatter_store(src_data, indices, output):
    """The same scatter through ``nl.store`` of a ``vector_select`` view."""
    idx = nl.load(indices)
    nl.store(output.vector_select(0, idx), nl.load(src_data))
    return output


@nki.jit
def gather_pattern(data, indices):
    """``.ap(vector_offset=)`` with a non-trivial pattern over (rows, 4, 8) storage: partition p reads the 4x4 block
    ``data[idx[p], 0:4, 2:6]`` transposed (stride 1 then stride 8 inside the row, from offset 2)."""
    P = indices.shape[0]
    out = nl.ndarray((P, 4, 4), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    block = nl.ndarray((P, 4, 4), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=block, src=data.ap([[0, P], [1, 4], [8, 4]], offset=2, vector_offset=idx, indirect_dim=0))
    nisa.dma_copy(dst=out, src=block)
    return out


@nki.jit
def gather_select_3d(data, indices):
    """``vector_select`` of a (rows, 4, 8) tensor, then a static select and slice of the free dimensions."""
    P = indices.shape[0]
    out = nl.ndarray((P, 5), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    part = nl.ndarray((P, 5), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=part, src=data.vector_select(0, idx)[:, 3, 1:6])
    nisa.dma_copy(dst=out, src=part)
    return out


@nki.jit
def gather_skip(data, indices):
    """``oob_mode=skip``: rows whose index is out of range are left as they were (zero)."""
    P, F = indices.shape[0], data.shape[1]
    out = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    rows = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.sbuf)
    nisa.memset(dst=rows, value=0.0)
    nisa.dma_copy(dst=rows, src=data.vector_select(0, idx), oob_mode=nisa.oob_mode.skip)
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def pick_batch(data, which):
    """``.ap(scalar_offset=tile)``: the batch ``which[0, 0]`` of a (B, N, F) tensor, read when the DMA runs."""
    B, N, F = data.shape
    out = nl.ndarray((N, F), dtype=data.dtype, buffer=nl.shared_hbm)
    w = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w, src=which)
    t = nl.ndarray((N, F), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=data.ap([[F, N], [1, F]], scalar_offset=w, indirect_dim=0))
    nisa.dma_copy(dst=out, src=t)
    return out


# --- values against NumPy -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", [gather_select, gather_load])
def test_a_gather_reads_row_idx_p_for_partition_p(kernel):
    np.testing.assert_array_equal(kernel(DATA, IDX), DATA[IDX[:, 0]])


def test_a_kernel_with_indices_off_by_one_fails_the_comparison():
    idx = np.minimum(IDX, 62)  # keep idx + 1 in range: the mutant must run and be wrong, not crash
    out = gather_mutant(DATA, idx)
    np.testing.assert_array_equal(out, DATA[idx[:, 0] + 1])  # it does what it says ...
    assert not np.array_equal(out, DATA[idx[:, 0]])  # ... which is not the gather


@pytest.mark.parametrize("kernel", [scatter, scatter_store])
def test_a_scatter_writes_partition_p_to_row_idx_p(kernel):
    src = RNG.standard_normal((96, 32)).astype(np.float32)
    idx = RNG.permutation(128)[:96].astype(np.uint32).reshape(96, 1)  # distinct rows, out of order
    output = RNG.standard_normal((128, 32)).astype(np.float32)
    want = output.copy()
    want[idx[:, 0]] = src
    got = kernel(src, idx, output)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(output, want)  # the kernel argument itself was written


def test_ap_with_vector_offset_and_a_non_trivial_pattern():
    data = RNG.standard_normal((40, 4, 8)).astype(np.float32)
    idx = RNG.integers(0, 40, (128, 1)).astype(np.int32)
    want = data[idx[:, 0], 0:4, 2:6].transpose(0, 2, 1)
    np.testing.assert_array_equal(gather_pattern(data, idx), want)


def test_vector_select_of_a_3d_tensor_then_static_views_of_the_free_dims():
    data = RNG.standard_normal((40, 4, 8)).astype(np.float32)
    idx = RNG.integers(0, 40, (100, 1)).astype(np.int32)
    np.testing.assert_array_equal(gather_select_3d(data, idx), data[idx[:, 0], 3, 1:6])


def test_an_index_out_of_range_is_the_legacy_error_naming_it_and_skip_leaves_the_row():
    bad = IDX.copy()
    bad[7, 0] = 64
    with pytest.raises(IndexError, match=r"index 2048 is out of bounds for axis 0 with size 2048"):
        gather_select(DATA, bad)  # the flat element offset of row 64, as the legacy gather reports it
    want = DATA[np.minimum(bad[:, 0], 63)]
    want[7] = 0.0
    np.testing.assert_array_equal(gather_skip(DATA, bad), want)


def test_ap_with_a_tile_as_scalar_offset_reads_the_offset_when_it_runs():
    data = RNG.standard_normal((5, 16, 8)).astype(np.float32)
    np.testing.assert_array_equal(pick_batch(data, np.array([[3]], np.int32)), data[3])
    launch = api.launch(pick_batch, [data, np.array([[2]], np.int32)], target="trn2")
    program = api.program_from_json(launch.program.to_json())
    np.testing.assert_array_equal(api.execute(program, [data, np.array([[4]], np.int32)]).outputs, data[4])
    with pytest.raises(IndexError, match="index 640 is out of bounds"):  # batch 5 of 5: the flat offset 5*16*8
        pick_batch(data, np.array([[5]], np.int32))


@nki.jit
def select_block(data, which):
    """``select(0, tile)`` of an HBM tensor, AWS's dynamic select ("index resolved at runtime"): the block
    ``which[0, 0]`` read, then written back into block ``which[0, 0]`` of a (2, N, F) output."""
    B, N, F = data.shape
    out = nl.ndarray((2, N, F), dtype=data.dtype, buffer=nl.shared_hbm)
    w = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w, src=which)
    t = nl.ndarray((N, F), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=data.select(0, w))
    nisa.dma_copy(dst=out.select(0, w), src=t)
    return out


def test_select_with_a_tile_index_reads_and_writes_the_block_it_names_when_it_runs():
    data = RNG.standard_normal((5, 16, 8)).astype(np.float32)
    np.testing.assert_array_equal(select_block(data, np.array([[1]], np.int32))[1], data[1])
    launch = api.launch(select_block, [data, np.array([[0]], np.int32)], target="trn2")
    program = api.program_from_json(launch.program.to_json())
    np.testing.assert_array_equal(api.execute(program, [data, np.array([[1]], np.int32)]).outputs[1], data[1])
    with pytest.raises(IndexError):  # block 2 of the (2, N, F) output does not exist
        select_block(data, np.array([[2]], np.int32))


# --- one mechanism: the legacy spelling's program and estimate --------------------------------------------------
def _gather_calls(program) -> list:
    body = json.loads(program.to_json())["body"]
    loads = [step for step in body if step[0] == "call" and step[1] == "nl.load"]
    return [load[2] for load in loads[1:]]  # the gathers' accesses (the first load reads the indices)


def _same_launch(new, old) -> None:
    np.testing.assert_array_equal(new.outputs, old.outputs)
    # the same program accesses: an 'ind' component reading idx[i_p, 0], then the free arange
    assert _gather_calls(new.program) == _gather_calls(old.program)
    assert all('"ind"' in json.dumps(call) for call in _gather_calls(new.program))
    assert json.loads(new.program.to_json())["arrays"] == json.loads(old.program.to_json())["arrays"]
    # the same instructions, and the same estimate (the legacy indirect DMA's cost), but for the lines the two
    # spellings are written on (per-line times; the Why: lines' line numbers)
    assert ([(i.engine, i.p, i.n, i.nbytes) for i in new.record.ctx.trace]
            == [(i.engine, i.p, i.n, i.nbytes) for i in old.record.ctx.trace])

    def unlined(est):
        return dataclasses.replace(est, line_us={}, reasons=tuple(dataclasses.replace(r, line=0) for r in est.reasons))

    assert unlined(new.estimate()) == unlined(old.estimate())


def test_a_gather_from_each_batch_is_the_legacy_batched_gather():
    data = RNG.standard_normal((3, 16, 8)).astype(np.float32)
    idx = RNG.integers(0, 16, (128, 1)).astype(np.int32)
    new = api.launch(gather_batches, [data, idx], target="trn2")
    np.testing.assert_array_equal(new.outputs, data[:, idx[:, 0]])
    _same_launch(new, api.launch(gather_batches_legacy, [data, idx], target="trn2"))
    bad = idx.copy()
    bad[3, 0] = 16  # row 16 of a batch of 16 rows: out of range, as data[b, 16] is in the legacy gather
    with pytest.raises(IndexError, match="out of bounds"):
        gather_batches(data, bad)


def test_the_06_gather_is_the_legacy_gather():
    new = api.launch(gather_load, [DATA, IDX], target="trn2")
    _same_launch(new, api.launch(gather_legacy, [DATA, IDX], target="trn2"))
    assert new.estimate().total_us > 0 and new.estimate().dma_count == 3


def test_the_program_round_trip_reads_the_indices_when_it_runs():
    launch = api.launch(gather_select, [DATA, IDX], target="trn2")
    program = api.program_from_json(launch.program.to_json())
    assert program.dialect == "0.6"
    done = api.execute(program, [DATA, IDX])
    np.testing.assert_array_equal(done.outputs, DATA[IDX[:, 0]])
    assert done.latency_us() == launch.estimate().total_us
    other = IDX[::-1].copy()  # the program holds no index values: new indices, new rows
    np.testing.assert_array_equal(api.execute(program, [DATA, other]).outputs, DATA[other[:, 0]])


# --- every precondition, at the kernel's own line ------------------------------------------------------------------
def _err_line(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if line.rstrip().endswith("# ERR")]
    assert len(hits) == 1
    return hits[0]


def _refused(body, match, *args, exc=ValueError):
    with pytest.raises(exc, match=match) as info:
        nki.jit(body)(*(args or (DATA, IDX)))
    err = info.value
    assert getattr(err, "error_id", None) in ("err_invalid_view", "err_view_out_of_bounds"), err
    loc = err.nki_location
    assert os.path.abspath(str(loc[0])) == HERE and loc[1] == _err_line(body), loc


def _idx(indices):
    idx = nl.ndarray(indices.shape, dtype=indices.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    return idx


def test_vector_select_dim_must_be_0():
    def body(data, indices):
        data.vector_select(1, _idx(indices))  # ERR

    _refused(body, "vector_select: dim must be 0")


def test_vector_select_reads_hbm_tensors_only():
    def body(data, indices):
        t = nl.ndarray((128, 32), dtype=data.dtype, buffer=nl.sbuf)
        t.vector_select(0, _idx(indices))  # ERR

    _refused(body, "on chip; per-partition indirect addressing reads HBM tensors only")


def test_the_offsets_are_an_sbuf_p_by_1_integer_tensor():
    def in_hbm(data, indices):
        data.vector_select(0, indices)  # ERR

    def two_columns(data, indices):
        wide = nl.ndarray((128, 2), dtype=nl.int32, buffer=nl.sbuf)
        data.vector_select(0, wide)  # ERR

    def floats(data, indices):
        f = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        data.vector_select(0, f)  # ERR

    def not_a_tensor(data, indices):
        data.vector_select(0, [3, 4])  # ERR

    _refused(in_hbm, r"one offset per partition \(shape \(P, 1\)\), got 'indices' of shape \[128, 1\] in HBM")
    _refused(two_columns, r"one offset per partition \(shape \(P, 1\)\), got 'wide' of shape \[128, 2\] in SBUF")
    _refused(floats, "the offsets 'f' must hold integers, got float32")
    _refused(not_a_tensor, "must be an SBUF tensor with one offset per partition")


def test_only_one_dynamic_select_per_tensor():
    def twice(data, indices):
        idx = _idx(indices)
        v = data.vector_select(0, idx)
        v.vector_select(0, idx)  # ERR

    def after_a_register(data, indices):
        idx = _idx(indices)

        def step(i):  # i: the loop's register, a dynamic select of data's dimension 0
            data.select(0, i).vector_select(0, idx)  # ERR

        nl.fori_loop(0, 2, step)

    _refused(twice, "only one dynamic select per tensor")
    _refused(after_a_register, "only one dynamic select per tensor", DATA.reshape(16, 4, 32), IDX)


def test_the_selected_dimension_cannot_be_sliced_selected_or_moved():
    def sliced(data, indices):
        v = data.vector_select(0, _idx(indices))
        v[0:4, :]  # ERR

    def selected(data, indices):
        v = data.vector_select(0, _idx(indices))
        v.select(0, 1)  # ERR

    def moved(data, indices):
        v = data.vector_select(0, _idx(indices))
        v.permute((1, 0))  # ERR

    def reinterpreted(data, indices):
        v = data.vector_select(0, _idx(indices))
        v.view(nl.int32)  # ERR

    _refused(sliced, "it cannot be further sliced or selected")
    _refused(selected, "it cannot be further selected")
    _refused(moved, "a view cannot move, reshape or remove it")
    _refused(reinterpreted, "has a dynamic or indirect offset")


def test_ap_vector_offset_rules():
    def dim_1(data, indices):
        data.ap([[32, 128], [1, 32]], vector_offset=_idx(indices), indirect_dim=1)  # ERR

    def on_chip(data, indices):
        t = nl.ndarray((128, 32), dtype=data.dtype, buffer=nl.sbuf)
        t.ap([[32, 128], [1, 32]], vector_offset=_idx(indices))  # ERR

    def count(data, indices):
        data.ap([[32, 64], [1, 32]], vector_offset=_idx(indices))  # ERR

    def both(data, indices):
        r = nisa.register_alloc(1)
        data.ap([[32, 128], [1, 32]], scalar_offset=r, vector_offset=_idx(indices))  # ERR

    def scalar_tile_shape(data, indices):
        data.ap([[32, 1], [1, 32]], scalar_offset=_idx(indices))  # ERR

    _refused(scalar_tile_shape, r"a scalar offset must be a register or an SBUF tensor of shape \(1, 1\)")
    _refused(dim_1, "vector_offset needs indirect_dim=0")
    _refused(on_chip, "'t' is on chip; per-partition indirect addressing reads HBM tensors only")
    _refused(count, "must count the 128 partitions of vector_offset")
    _refused(both, "scalar_offset and vector_offset cannot be combined")


@pytest.mark.parametrize("mode", ["hwdge", "none"])
def test_only_the_software_dge_addresses_per_partition(mode):
    """AWS: swdge is the only DGE mode for vector_offset gather/scatter (hwdge has no vector_offset; none is static
    only); swdge and the compiler's choice run, the other two are refused at the kernel's line."""
    dge = getattr(nisa.dge_mode, mode)

    @nki.jit
    def k(data, indices):
        out = nl.ndarray((128, 32), dtype=data.dtype, buffer=nl.shared_hbm)
        idx = nl.load(indices)
        rows = nl.ndarray((128, 32), dtype=data.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=data.vector_select(0, idx), dge_mode=dge)  # ERR
        nisa.dma_copy(dst=out, src=rows)
        return out

    with pytest.raises(Exception, match=f"dge_mode={mode} cannot address src per partition") as info:
        k(DATA, IDX)
    line = [n for n, t in enumerate(open(HERE).read().splitlines(), 1) if t.rstrip().endswith("dge_mode=dge)  # ERR")]
    assert info.value.nki_location[1] == line[0]
    for ok in (nisa.dge_mode.swdge, nisa.dge_mode.unknown):
        dge = ok
        np.testing.assert_array_equal(k(DATA, IDX), DATA[IDX[:, 0]])


def test_a_dynamic_start_needs_a_dge_of_either_kind():
    """AWS's dma_copy: with either DGE the source may start at an address known only when the kernel runs; without
    one (dge_mode=none) the descriptors are made before it runs. A (1, 1) tile or a register as the scalar offset is
    such a start: refused with none, at the kernel's line, and not mistaken for a per-partition view (hwdge runs).
    (A register loaded from a tile is not checked here: run on values it is folded into a static offset, and
    traced without values it is refused.)"""
    B, N, F = 5, 16, 8
    data = RNG.standard_normal((B, N, F)).astype(np.float32)
    dge = nisa.dge_mode.none

    @nki.jit
    def k(data, which):
        out = nl.ndarray((N, F), dtype=data.dtype, buffer=nl.shared_hbm)
        w = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=w, src=which)
        t = nl.ndarray((N, F), dtype=data.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=data.ap([[F, N], [1, F]], scalar_offset=w, indirect_dim=0), dge_mode=dge)  # ERR
        nisa.dma_copy(dst=out, src=t)
        return out

    which = np.array([[3]], np.int32)
    with pytest.raises(Exception, match="dge_mode=none cannot address src at a dynamic start") as info:
        k(data, which)
    line = [n for n, t in enumerate(open(HERE).read().splitlines(), 1) if t.rstrip().endswith("dge_mode=dge)  # ERR")]
    assert info.value.nki_location[1] == line[-1]
    for ok in (nisa.dge_mode.hwdge, nisa.dge_mode.swdge, nisa.dge_mode.unknown):
        dge = ok
        np.testing.assert_array_equal(k(data, which), data[3])
