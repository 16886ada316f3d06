"""Issue 12: gather / shuffle / dynamic-copy instructions, each checked against a NumPy reference.

Our own kernels for ``local_gather``, ``nc_stream_shuffle``, ``sequence_bounds``, ``dropout``,
``tensor_copy_dynamic_src`` / ``_dst`` (with static offsets), ``nl.gather_flattened`` and
``nl.atomic_rmw``, plus the error a user gets for a misuse of each.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

RNG = np.random.default_rng(3)


def _out(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)


def test_local_gather_per_core_column_major_indices() -> None:
    @nki.jit
    def kernel(src, index):
        out = _out((32, 2, 16, 3))
        nl.store(out, nisa.local_gather(nl.load(src), nl.load(index), num_elem_per_idx=3))
        return out

    src = RNG.standard_normal((32, 60), dtype=np.float32)
    index = (RNG.integers(0, 20, (32, 2)) * 3).astype(np.uint16)
    got = kernel(src, index).reshape(32, -1)
    for core in range(2):
        rows = slice(core * 16, (core + 1) * 16)
        offs = index[rows].flatten(order="F").astype(np.int64)
        cols = (offs[:, None] + np.arange(3)[None, :]).reshape(-1)
        np.testing.assert_array_equal(got[rows], src[rows][:, cols])


def test_local_gather_with_fewer_valid_indices() -> None:
    @nki.jit
    def kernel(src, index):
        out = _out((16, 5, 1))
        nl.store(out, nisa.local_gather(nl.load(src), nl.load(index), num_valid_indices=5))
        return out

    src = RNG.standard_normal((16, 40), dtype=np.float32)
    index = RNG.integers(0, 40, (16, 1)).astype(np.uint16)
    np.testing.assert_array_equal(kernel(src, index)[:, :, 0], src[:, index[:5, 0].astype(np.int64)])


def test_local_gather_needs_whole_core_groups() -> None:
    @nki.jit
    def kernel(src, index):
        out = _out((8, 16, 1))
        nl.store(out, nisa.local_gather(nl.load(src), nl.load(index)))
        return out

    with pytest.raises(ValueError, match="whole groups of 16 partitions"):
        kernel(np.zeros((8, 4), np.float32), np.zeros((8, 1), np.uint16))


def test_stream_shuffle_per_quadrant_with_skip() -> None:
    @nki.jit
    def kernel(a, b):
        out = _out(a.shape)
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        d[...] = nl.load(b)
        mask = [(i + 5) % 32 for i in range(31)] + [255]
        nisa.nc_stream_shuffle(src=nl.load(a), dst=d, shuffle_mask=mask)
        nl.store(out, d)
        return out

    a, b = RNG.standard_normal((2, 64, 8), dtype=np.float32)
    ref = b.copy()
    for q in range(2):
        for i in range(31):
            ref[q * 32 + i] = a[q * 32 + (i + 5) % 32]
    np.testing.assert_array_equal(kernel(a, b), ref)


def test_stream_shuffle_rejects_a_short_mask() -> None:
    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        t = nl.load(a)
        nisa.nc_stream_shuffle(src=t, dst=t, shuffle_mask=[0, 1])
        nl.store(out, t)
        return out

    with pytest.raises(ValueError, match="it must list 32 source partitions"):
        kernel(np.zeros((32, 4), np.float32))


def test_sequence_bounds_against_a_loop_reference() -> None:
    @nki.jit
    def kernel(ids):
        out = _out((1, 2, ids.shape[1]))
        nl.store(out, nisa.sequence_bounds(segment_ids=nl.load(ids)))
        return out

    ids = np.array([[0, 0, 1, 1, 1, 2, 0, 3, 3, 4]], np.float32)
    n = ids.shape[1]
    start, end = np.zeros(n), np.zeros(n)
    for i, v in enumerate(ids[0]):
        same = np.flatnonzero(ids[0] == v)
        run = [j for j in same if all(ids[0][k] == v for k in range(min(i, j), max(i, j) + 1))]
        start[i], end[i] = (n, -1) if v == 0 else (min(run), max(run) + 1)
    np.testing.assert_array_equal(kernel(ids)[0], np.stack([start, end]))


@pytest.mark.parametrize("prob", [0.0, 1.0, 0.3])
def test_dropout_rate_and_kept_values(prob: float) -> None:
    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        nl.store(out, nisa.dropout(nl.load(a), prob=prob))
        return out

    a = RNG.uniform(1, 2, (128, 256)).astype(np.float32)
    got = kernel(a)
    dropped = got == 0
    np.testing.assert_array_equal(got[~dropped], a[~dropped])
    assert abs(dropped.mean() - prob) < 0.02


def test_dropout_per_partition_probability_tile() -> None:
    @nki.jit
    def kernel(a, p):
        out = _out(a.shape)
        nl.store(out, nisa.dropout(nl.load(a), prob=nl.load(p)))
        return out

    a = np.ones((4, 2048), np.float32)
    p = np.array([[0.0], [1.0], [0.0], [1.0]], np.float32)
    np.testing.assert_array_equal(kernel(a, p), np.repeat(1 - p, 2048, axis=1))


def test_tensor_copy_dynamic_src_and_dst_with_static_offsets() -> None:
    @nki.jit
    def kernel(a):
        out = _out((128, 16))
        t = nl.load(a)
        r = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
        r[:, 0:8] = nisa.tensor_copy_dynamic_src(t[:, 4:12])
        nisa.tensor_copy_dynamic_dst(dst=r[:, 8:16], src=t[:, 0:8])
        nl.store(out, r)
        return out

    a = RNG.standard_normal((128, 32), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), np.concatenate([a[:, 4:12], a[:, 0:8]], axis=1))


def test_gather_flattened_over_a_3d_tile() -> None:
    @nki.jit
    def kernel(a, idx):
        out = _out(idx.shape)
        nl.store(out, nl.gather_flattened(data=nl.load(a), indices=nl.load(idx)))
        return out

    a = RNG.standard_normal((16, 4, 8), dtype=np.float32)
    idx = RNG.integers(0, 32, (16, 10)).astype(np.uint32)
    np.testing.assert_array_equal(kernel(a, idx), np.take_along_axis(a.reshape(16, 32), idx.astype(np.int64), 1))


def test_gather_flattened_out_of_bounds_index() -> None:
    @nki.jit
    def kernel(a, idx):
        out = _out(idx.shape)
        nl.store(out, nl.gather_flattened(data=nl.load(a), indices=nl.load(idx)))
        return out

    with pytest.raises(IndexError, match="out of bounds"):
        kernel(np.zeros((4, 8), np.float32), np.full((4, 2), 8, np.uint32))


def test_atomic_rmw_adds_into_indirect_rows() -> None:
    @nki.jit
    def kernel(base, rows, val):
        out = _out(base.shape)
        nl.store(out, nl.load(base))
        ix = nl.arange(base.shape[1])[None, :]
        nl.atomic_rmw(out[nl.load(rows), ix], value=nl.load(val), op=np.add)
        return out

    base = RNG.standard_normal((64, 16), dtype=np.float32)
    rows = RNG.permutation(64)[:32].reshape(32, 1).astype(np.int32)
    val = RNG.standard_normal((32, 16), dtype=np.float32)
    ref = base.copy()
    ref[rows[:, 0]] += val
    np.testing.assert_allclose(kernel(base, rows, val), ref, rtol=1e-6)


def test_atomic_rmw_only_adds() -> None:
    @nki.jit
    def kernel(base):
        out = _out(base.shape)
        nl.store(out, nl.load(base))
        nl.atomic_rmw(out, value=nl.load(base), op=np.multiply)
        return out

    with pytest.raises(SyntaxError, match="multiply is not supported in 'atomic_rmw'"):
        kernel(np.zeros((4, 4), np.float32))


def test_dma_copy_between_hbm_tensors_of_more_than_128_rows() -> None:
    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        nisa.dma_copy(dst=out, src=a)
        return out

    a = RNG.standard_normal((300, 3), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a)


def _gather_rows(oob_mode):
    @nki.jit
    def kernel(a):
        out = _out((32, a.shape[1]))
        ix, iy = nl.mgrid[0:32, 0:a.shape[1]]
        idx = nisa.iota(5 * nl.arange(32)[:, None], dtype=np.int32)
        t = nisa.memset(shape=(32, a.shape[1]), value=-1, dtype=a.dtype)
        nisa.dma_copy(src=a[idx, iy], dst=t[ix, iy], oob_mode=oob_mode)
        nl.store(out, t)
        return out

    return kernel


def test_dma_copy_indirect_oob_skip_leaves_rows_untouched() -> None:
    a = RNG.standard_normal((64, 8), dtype=np.float32)
    ref = np.full((32, 8), -1, np.float32)
    rows = 5 * np.arange(32)
    ref[rows < 64] = a[rows[rows < 64]]
    np.testing.assert_array_equal(_gather_rows(nisa.oob_mode.skip)(a), ref)


def test_dma_copy_indirect_oob_error_names_the_flat_offset() -> None:
    a = np.zeros((64, 8), np.float32)
    with pytest.raises(IndexError) as info:
        _gather_rows(nisa.oob_mode.error)(a)
    assert type(info.value) is IndexError
    assert str(info.value) == f"index {65 * 8} is out of bounds for axis 0 with size {64 * 8}"
