"""Dynamic indices: ``src[ix, offsets[0, i] + iy]`` reads a window whose start is a value held in SBUF.

Checked against NumPy's ``take`` with the same offsets (AWS's tensor_copy_dynamic example shape), plus
the errors: a whole tile is not a position, and a position past the tile fails when read.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest

RNG = np.random.default_rng(3)


@nki.jit
def gather_columns(src, offsets):
    out = nl.ndarray([128, offsets.shape[1]], dtype=src.dtype, buffer=nl.shared_hbm)
    s = nl.load(src)
    o = nl.load(offsets)
    res = nl.ndarray([128, offsets.shape[1]], dtype=src.dtype, buffer=nl.sbuf)
    ix, iy = nl.mgrid[0:128, 0:1]
    for i in nl.affine_range(offsets.shape[1]):
        res[ix, i + iy] = nl.copy(s[ix, o[0, i] + iy])  # the offset is read from SBUF when the copy runs
    nl.store(out, res)
    return out


@nki.jit
def gather_blocks(src, offsets):
    """The element alone as the index of a middle axis: ``src[ix, offsets[0, i], iz]``."""
    out = nl.ndarray([128, offsets.shape[1], 4], dtype=src.dtype, buffer=nl.shared_hbm)
    s = nl.load(src)
    o = nl.load(offsets)
    res = nl.ndarray([128, offsets.shape[1], 4], dtype=src.dtype, buffer=nl.sbuf)
    ix, _, iz = nl.mgrid[0:128, 0:1, 0:4]
    for i in nl.affine_range(offsets.shape[1]):
        res[ix, i, iz] = nl.copy(s[ix, o[0, i], iz])
    nl.store(out, res)
    return out


def test_a_dynamic_offset_plus_an_index_expression_gathers_like_numpy():
    src = RNG.standard_normal((128, 64), dtype=np.float32)
    offsets = RNG.permutation(64)[:8][None, :].astype(np.int32)
    np.testing.assert_array_equal(gather_columns(src, offsets), np.take(src, offsets[0], axis=1))


def test_a_tile_element_alone_indexes_a_free_axis():
    src = RNG.standard_normal((128, 16, 4), dtype=np.float32)
    offsets = np.array([[3, 0, 15, 7]], dtype=np.int32)
    np.testing.assert_array_equal(gather_blocks(src, offsets), np.take(src, offsets[0], axis=1))


def test_a_whole_tile_is_not_a_position():
    @nki.jit
    def k(src, offsets):
        s = nl.load(src)
        o = nl.load(offsets)
        ix, iy = nl.mgrid[0:128, 0:1]
        nl.copy(s[ix, o + iy])
        return src

    with pytest.raises(TypeError, match="a dynamic index is one element of a tile"):
        k(RNG.standard_normal((128, 64), dtype=np.float32), np.zeros((1, 8), np.int32))


def test_a_position_past_the_tile_fails_when_read():
    src = RNG.standard_normal((128, 64), dtype=np.float32)
    with pytest.raises(IndexError):
        gather_columns(src, np.array([[0, 64]], dtype=np.int32))


@nki.jit
def windows_of_a_view(v):
    """``v[b]`` drops the batch axis; ``nl.ds`` then moves a window along the view (flash attention's
    ``v_hbm_tile[nl.ds(j * 128, 128), :]``)."""
    out = nl.ndarray((v.shape[0], v.shape[1], v.shape[2]), dtype=v.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(v.shape[0]):
        view = v[b]
        for j in nl.affine_range(v.shape[1] // 128):
            tile = nl.load(view[nl.ds(j * 128, 128), :])
            nl.store(out[b, nl.ds(j * 128, 128), :], nl.multiply(tile, 2.0))
    return out


def test_nl_ds_on_an_integer_indexed_view():
    v = RNG.standard_normal((2, 256, 8), dtype=np.float32)
    np.testing.assert_array_equal(windows_of_a_view(v), v * np.float32(2.0))


@nki.jit
def gather_rows_after_an_integer_index(data, rows):
    """``data[b, idx, f]``: with the batch axis dropped by ``b``, the index tile picks rows of ``data[b]``
    (nki-samples' resize_nearest gathers so)."""
    out = nl.ndarray((data.shape[0], rows.shape[0], data.shape[2]), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.load(rows)
    i_f = nl.arange(data.shape[2])[None, :]
    for b in nl.affine_range(data.shape[0]):
        tile = nl.load(data[b, idx, i_f])
        nl.store(out[b], tile)
    return out


def test_an_index_tile_after_an_integer_index_gathers_rows():
    data = RNG.standard_normal((2, 64, 8), dtype=np.float32)
    rows = RNG.integers(0, 64, size=(16, 1)).astype(np.int32)
    np.testing.assert_array_equal(gather_rows_after_an_integer_index(data, rows), data[:, rows[:, 0], :])


@nki.jit
def update_a_column_through_its_view(a):
    """``col = buf[:, i]`` keeps a size-1 place for the axis an integer picked: ``col[:, 0]`` reads and
    writes that column of ``buf`` (AWS's flash attention hands ``l_buffer[:, i]`` to a helper so)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    buf = nl.load(a)
    for i in nl.affine_range(a.shape[1]):
        col = buf[:, i]
        col[:, 0] = nl.multiply(col[:, 0], 3.0)
    nl.store(out, buf)
    return out


def test_an_integer_indexed_axis_can_be_indexed_again_at_zero():
    a = RNG.standard_normal((128, 4), dtype=np.float32)
    np.testing.assert_allclose(update_a_column_through_its_view(a), a * 3, rtol=1e-6)
