"""Storage shortcuts the simulator takes for speed must be unobservable from a kernel.

Tested here against NumPy expectations:
- uninitialised tiles are filled with the NaN pattern lazily (on the first read or partial write),
  so a first whole write skips the fill;
- ``t[...] = <temporary result>`` hands the temporary's array to ``t`` instead of copying it, which
  must never let two live tiles share storage;
- results leave the launch without a copy, which must never alias the caller's arrays or each other.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np

RNG = np.random.default_rng(7)
A = RNG.standard_normal((128, 8), dtype=np.float32)


@nki.jit
def named_value_then_update(a):
    """``x`` is still bound to a name when assigned, so updating ``t`` must not change ``x``."""
    out_x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out_t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    x = nl.load(a)
    t[...] = x
    t[...] = nl.add(t, 1.0)
    nl.store(out_x, value=x)
    nl.store(out_t, value=t)
    return out_x, out_t


def test_named_value_keeps_its_own_storage() -> None:
    x, t = named_value_then_update(A)
    np.testing.assert_array_equal(x, A)
    np.testing.assert_array_equal(t, A + np.float32(1.0))


@nki.jit
def temporaries_into_one_tile(a):
    """Two temporaries in turn: the second must replace the first, and later in-place updates of
    ``t`` must not leak into the HBM input it was loaded from."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    t[...] = nl.load(a)
    t[...] = nl.multiply(nl.load(a), 2.0)
    t[...] += nl.load(a)
    nl.store(out, value=t)
    return out


def test_temporary_results_land_in_place() -> None:
    a = A.copy()
    out = temporaries_into_one_tile(a)
    np.testing.assert_allclose(out, 3 * A, rtol=1e-6)
    np.testing.assert_array_equal(a, A)  # the input is untouched


@nki.jit
def temporary_into_loop_tiles(a):
    """A tile allocated per iteration and filled from a temporary: every iteration sees its own data."""
    out = nl.ndarray((4, 128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(4):  # a Python loop: ``i`` is a plain int the multiply can take
        t = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.sbuf)
        t[...] = nl.multiply(nl.load(a), i + 1.0)
        nl.store(out[i], value=t)
    return out


def test_loop_tiles_each_get_their_values() -> None:
    out = temporary_into_loop_tiles(A)
    for i in range(4):
        np.testing.assert_allclose(out[i], A * (i + 1), rtol=1e-6)


@nki.jit
def partial_write_then_store(a):
    """Only the first 64 partitions are written: the rest must show the uninitialised pattern."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    t[0:64, :] = nl.load(a[0:64, :])
    nl.store(out, value=t)
    return out


def test_partial_write_leaves_nan_elsewhere() -> None:
    out = partial_write_then_store(A)
    np.testing.assert_array_equal(out[:64], A[:64])
    assert np.isnan(out[64:]).all()


@nki.jit
def read_before_write(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nl.store(out, value=nl.add(t, 1.0))
    return out


def test_uninitialised_read_is_nan() -> None:
    assert np.isnan(read_before_write(A)).all()


@nki.jit
def store_through_reshaped_view(a):
    """An HBM output written only through a reshape view: the view shares the output's storage."""
    out = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    flat = out.reshape((64, 16))
    nl.store(flat[0:64, 0:8], value=nl.load(a.reshape((64, 16))[0:64, 0:8]))
    return out


def test_view_writes_reach_the_output() -> None:
    out = store_through_reshaped_view(A)
    got = out.reshape(64, 16)
    np.testing.assert_array_equal(got[:, :8], A.reshape(64, 16)[:, :8])
    assert np.isnan(got[:, 8:]).all()


@nki.jit
def int_tile_uninitialised(a):
    out = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.sbuf)
    t[:, 0:4] = nl.copy(nl.load(a)[:, 0:4], dtype=nl.int32)
    nl.store(out, value=t)
    return out


def test_int_tiles_show_the_integer_pattern() -> None:
    a = np.arange(128 * 8, dtype=np.int32).reshape(128, 8)
    out = int_tile_uninitialised(a)
    np.testing.assert_array_equal(out[:, :4], a[:, :4])
    assert (out[:, 4:] == 4).all()  # integers hold 4 where nothing was written


@nki.jit
def write_into_loaded_tiles(a):
    """Tiles loaded from an input and then written (in place, partially, via +=) never touch the input."""
    out1 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    x += 1.0
    y = nl.load(a)
    y[0:4, :] = 0.0
    nl.store(out1, value=x)
    nl.store(out2, value=y)
    return out1, out2


def test_loaded_tiles_are_private_once_written() -> None:
    a = A.copy()
    x, y = write_into_loaded_tiles(a)
    np.testing.assert_array_equal(a, A)
    np.testing.assert_allclose(x, A + np.float32(1.0), rtol=1e-6)
    expected = A.copy()
    expected[:4] = 0.0
    np.testing.assert_array_equal(y, expected)


@nki.jit
def host_value_probe(a):
    """Records which host-side value accessors a kernel can reach on a tensor, a tile and a slice."""
    tile = nl.load(a)
    found = []
    for name, obj in (("hbm", a), ("tile", tile), ("slice", tile[0:4, 0:2])):
        found += [f"{name}.{attr}" for attr in ("data", "read", "write", "values", "numpy", "own_storage")
                  if hasattr(obj, attr)]
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=tile)
    return out, found


def test_kernels_cannot_reach_host_values() -> None:
    """Real NKI tensors have no host-side values inside a kernel, so a kernel that computed its result
    in NumPy and poked it into its output would pass on the simulator only."""
    out, found = host_value_probe(A)
    np.testing.assert_array_equal(out, A)
    assert found == []


@nki.jit
def returns_input_and_output_twice(a):
    """A kernel input handed back, and one output returned twice."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), 1.0))
    return a, out, out


def test_results_never_alias_the_caller_or_each_other() -> None:
    # outputs are handed out without a copy (the launch is over); the caller's own array and a tensor
    # returned twice are the exceptions, since sharing memory there would be visible
    a = A.copy()
    same_a, out1, out2 = returns_input_and_output_twice(a)
    np.testing.assert_array_equal(same_a, A)
    assert not np.shares_memory(same_a, a)
    assert not np.shares_memory(out1, out2)
    out1[...] = 0.0
    same_a[...] = 0.0
    np.testing.assert_array_equal(out2, A + np.float32(1.0))
    np.testing.assert_array_equal(a, A)


@nki.jit
def accumulate_into_fresh_psum(a, b, use_matmul):
    """``acc += matmul`` on an nl.ndarray PSUM tile nothing has written: the first matmul of the
    accumulation group overwrites the bank (its uninitialised contents are never added)."""
    import neuronxcc.nki.isa as nisa

    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(2):
        at = nl.load(a[k * 128:(k + 1) * 128, :])
        bt = nl.load(b[k * 128:(k + 1) * 128, :])
        if use_matmul:
            acc += nisa.nc_matmul(at, bt)
        else:
            acc += nl.add(bt, 0.0)  # a Vector-engine update of uninitialised PSUM reads garbage
    nl.store(out, nl.copy(acc))
    return out


def test_the_first_matmul_into_a_fresh_psum_tile_starts_the_accumulation_group() -> None:
    a = RNG.standard_normal((256, 128), dtype=np.float32)
    b = RNG.standard_normal((256, 512), dtype=np.float32)
    np.testing.assert_allclose(accumulate_into_fresh_psum(a, b, True), a.T @ b, rtol=1e-4, atol=1e-4)
    assert np.isnan(accumulate_into_fresh_psum(a, b, False)).all()


@nki.jit
def accumulate_through_arange_indices(a, b):
    """The same group start when the accumulator is written through ``nl.arange`` indices (as nki-samples'
    allocated attention kernel writes ``attn_res_psum[g, ip, if] += nisa.nc_matmul(...)``)."""
    import neuronxcc.nki.isa as nisa

    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    ip, jf = nl.arange(128)[:, None], nl.arange(512)[None, :]
    for k in nl.affine_range(2):
        at = nl.load(a[k * 128:(k + 1) * 128, :])
        bt = nl.load(b[k * 128:(k + 1) * 128, :])
        acc[1, ip, jf] += nisa.nc_matmul(at, bt)
    nl.store(out, nl.copy(acc[1, ip, jf]))
    return out


def test_the_first_matmul_through_arange_indices_starts_the_accumulation_group_too() -> None:
    a = RNG.standard_normal((256, 128), dtype=np.float32)
    b = RNG.standard_normal((256, 512), dtype=np.float32)
    np.testing.assert_allclose(accumulate_through_arange_indices(a, b), a.T @ b, rtol=1e-4, atol=1e-4)


@nki.jit
def broadcast_a_partition_vector(a):
    """``[P]`` (e.g. a max over the free axis) broadcast to ``[P, F]``: each row holds its own value."""
    out = nl.ndarray((a.shape[0], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    row_max = nl.max(nl.load(a), axis=1)  # [P]
    nl.store(out, row_max.broadcast_to((a.shape[0], a.shape[0])))
    return out


def test_a_partition_vector_broadcasts_along_the_free_axis() -> None:
    a = RNG.standard_normal((64, 8), dtype=np.float32)
    # F == P is the case where lining [P] up with the last axis silently gave the transpose
    np.testing.assert_array_equal(broadcast_a_partition_vector(a), np.repeat(a.max(axis=1)[:, None], 64, axis=1))


@nki.jit
def reshape_spellings(a):
    """``reshape`` takes its shape as integers, one tuple, or ``shape=`` (published kernels use all three)."""
    n = a.shape[0] * a.shape[1]
    o1 = nl.ndarray((n // 128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    o2 = nl.ndarray((n // 128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    o3 = nl.ndarray((n // 128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(o1, nl.load(a.reshape(n // 128, 128)))
    nl.store(o2, nl.load(a.reshape((n // 128, 128))))
    nl.store(o3, nl.load(a.reshape(shape=(n // 128, 128))))
    return o1, o2, o3


def test_reshape_takes_its_shape_three_ways() -> None:
    a = RNG.standard_normal((16, 64), dtype=np.float32)
    for out in reshape_spellings(a):
        np.testing.assert_array_equal(out, a.reshape(8, 128))


@nki.jit
def accumulate_into_a_placed_psum_tile(a, b):
    """The same on a directly allocated PSUM bank (its physical bytes hold the NaN pattern, or the previous
    iteration's sums): each iteration's first matmul starts a new group."""
    import neuronxcc.nki.compiler as ncc
    import neuronxcc.nki.isa as nisa

    out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for r in nl.affine_range(2):
        acc = nl.ndarray((1, nl.par_dim(128), 512), dtype=nl.float32,
                         buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(1,)))
        for k in nl.affine_range(2):
            at = nl.load(a[r, k * 128:(k + 1) * 128, :])
            bt = nl.load(b[k * 128:(k + 1) * 128, :])
            acc[0] += nisa.nc_matmul(at, bt)
        nl.store(out[r], nl.copy(acc[0]))
    return out


def test_each_allocation_of_a_placed_psum_tile_starts_a_group() -> None:
    a = RNG.standard_normal((2, 256, 128), dtype=np.float32)
    b = RNG.standard_normal((256, 512), dtype=np.float32)
    got = accumulate_into_a_placed_psum_tile(a, b)
    for r in range(2):
        np.testing.assert_allclose(got[r], a[r].T @ b, rtol=1e-4, atol=1e-3)
