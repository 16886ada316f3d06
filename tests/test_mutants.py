"""Mutant kernels: the classic student bugs, each beside its correct twin.

A grader (or the compiler) must reject every mutant in the way students will meet it: a compile-time
error at the buggy line (out-of-bound access over the whole loop range, partition limit, affine_range
output dependency), or output that a NumPy reference catches (wrong values, NaNs from memory nobody
wrote).  Every correct twin must pass the same grader, so the tests prove the simulator separates the
two rather than rejecting both.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim.core.errors import NKIError

HERE = os.path.abspath(__file__)
P = 128


def grade(kernel: Callable, *args: Any, ref: np.ndarray) -> str:
    """What an autograder reports: 'pass', 'wrong' (values or NaNs differ), or the compiler error id."""
    try:
        out = kernel(*args)
    except NKIError as err:
        return err.error_id
    out = np.asarray(out, dtype=np.float32)
    if out.shape == ref.shape and np.allclose(out, ref, rtol=1e-5, atol=1e-5):
        return "pass"
    return "wrong"


def bug_line(fn: Any) -> int:
    """Line of the single ``# BUG`` marker in a kernel's source."""
    fn = getattr(fn, "func", fn)
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if "# BUG" in line]
    assert len(hits) == 1
    return hits[0]


def expect_compile_error(kernel: Any, args: tuple, error_id: str, phrase: str) -> NKIError:
    """The mutant fails at trace time, blaming the buggy line."""
    with pytest.raises(NKIError) as info:
        kernel(*args)
    err = info.value
    assert err.error_id == error_id, str(err)
    assert phrase in str(err), str(err)
    assert err.nki_location == (HERE, bug_line(kernel))
    return err


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


# ================================================================================================
# 1. Ragged last tile: the mask is what keeps the last tile in bounds
# ================================================================================================
@nki.jit
def exp_rows(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n, f = a.shape
    i_f = nl.arange(f)[None, :]
    for i in nl.affine_range((n + P - 1) // P):
        i_p = i * P + nl.arange(P)[:, None]
        t = nl.load(a[i_p, i_f], mask=(i_p < n))
        nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < n))
    return out


@nki.jit
def exp_rows_no_mask(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n, f = a.shape
    i_f = nl.arange(f)[None, :]
    for i in nl.affine_range((n + P - 1) // P):
        i_p = i * P + nl.arange(P)[:, None]
        t = nl.load(a[i_p, i_f])  # BUG
        nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < n))
    return out


def test_missing_mask_on_ragged_last_tile() -> None:
    a = rand(300, 64)
    assert grade(exp_rows, a, ref=np.exp(a)) == "pass"
    assert grade(exp_rows_no_mask, a, ref=np.exp(a)) == "err_tensor_access_out_of_bound"
    # reported for the whole loop range, on the first (in-bounds) iteration already
    expect_compile_error(exp_rows_no_mask, (a,), "err_tensor_access_out_of_bound",
                         "Out-of-bound access for tensor `a` on dimension 0: index range [0, 383] exceed dimension "
                         "size of 300")


def test_missing_mask_is_harmless_when_rows_divide_evenly() -> None:
    """The same mutant passes on a multiple of 128: tests need a ragged shape to catch it."""
    a = rand(256, 64)
    assert grade(exp_rows_no_mask, a, ref=np.exp(a)) == "pass"


# ================================================================================================
# 2. Off-by-one tile offsets
# ================================================================================================
@nki.jit
def double_rows(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(a.shape[1])[None, :]
    for i in nl.affine_range(a.shape[0] // P):
        i_p = i * P + nl.arange(P)[:, None]
        nl.store(out[i_p, i_f], value=nl.multiply(nl.load(a[i_p, i_f]), 2.0))
    return out


@nki.jit
def double_rows_plus_one(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(a.shape[1])[None, :]
    for i in nl.affine_range(a.shape[0] // P):
        i_p = i * P + 1 + nl.arange(P)[:, None]
        t = nl.load(a[i_p, i_f])  # BUG
        nl.store(out[i_p, i_f], value=nl.multiply(t, 2.0))
    return out


@nki.jit
def double_rows_stride_127(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(a.shape[1])[None, :]
    for i in nl.affine_range(a.shape[0] // P):
        i_p = i * (P - 1) + nl.arange(P)[:, None]  # BUG: tiles overlap by one row, the last row is never written
        nl.store(out[i_p, i_f], value=nl.multiply(nl.load(a[i_p, i_f]), 2.0))
    return out


def test_off_by_one_tile_start_is_out_of_bound() -> None:
    a = rand(256, 32)
    assert grade(double_rows, a, ref=2 * a) == "pass"
    expect_compile_error(double_rows_plus_one, (a,), "err_tensor_access_out_of_bound",
                         "index range [1, 256] exceed dimension size of 256")


def test_off_by_one_tile_stride_gives_wrong_values() -> None:
    a = rand(256, 32)
    assert grade(double_rows_stride_127, a, ref=2 * a) == "wrong"
    out = double_rows_stride_127(a)
    np.testing.assert_allclose(out[:255], 2 * a[:255], rtol=1e-6)  # every row it wrote is right...
    assert np.isnan(out[255]).all()  # ...but the last row was never stored


# ================================================================================================
# 3. A 256-partition tile
# ================================================================================================
def _copy_kernel(rows: int) -> Any:
    @nki.jit
    def copy_tiles(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i_f = nl.arange(a.shape[1])[None, :]
        for i in nl.affine_range(a.shape[0] // rows):
            i_p = i * rows + nl.arange(rows)[:, None]
            t = nl.load(a[i_p, i_f])  # BUG (when rows > 128)
            nl.store(out[i_p, i_f], value=t)
        return out

    return copy_tiles


def test_partition_256_tile() -> None:
    a = rand(512, 16)
    assert grade(_copy_kernel(128), a, ref=a) == "pass"
    err = expect_compile_error(_copy_kernel(256), (a,), "err_num_partition_exceed_arch_limit",
                               "number of partitions in src[256, 16] of 'load' exceed architecture limitation of 128.")
    assert isinstance(err, ValueError)


# ================================================================================================
# 4. Loop-carried dependency in an affine_range
# ================================================================================================
def _tile_sum_kernel(loop: Callable) -> Any:
    """out[p, f] = sum over row tiles i of a[i*128 + p, f], accumulated by re-assigning ``acc``."""

    @nki.jit
    def tile_sum(a):
        out = nl.ndarray((P, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(P)[:, None], nl.arange(a.shape[1])[None, :]
        acc = nl.zeros((P, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
        for i in loop(a.shape[0] // P):
            acc[i_p, i_f] = nl.add(acc, nl.load(a[i * P + i_p, i_f]))  # BUG (in an affine_range)
        nl.store(out, value=acc)
        return out

    return tile_sum


@nki.jit
def tile_sum_plus_equals(a):
    """``+=`` is the associative accumulation affine_range allows."""
    out = nl.ndarray((P, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(P)[:, None], nl.arange(a.shape[1])[None, :]
    acc = nl.zeros((P, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(a.shape[0] // P):
        acc += nl.load(a[i * P + i_p, i_f])
    nl.store(out, value=acc)
    return out


def test_loop_carried_write_in_affine_range() -> None:
    a = rand(512, 32)
    ref = a.reshape(4, P, 32).sum(axis=0)
    expect_compile_error(_tile_sum_kernel(nl.affine_range), (a,), "err_unexpected_output_dependencies",
                         "Unexpected output dependencies")
    assert grade(_tile_sum_kernel(nl.sequential_range), a, ref=ref) == "pass"
    assert grade(_tile_sum_kernel(range), a, ref=ref) == "pass"  # Python range is sequential
    assert grade(tile_sum_plus_equals, a, ref=ref) == "pass"


def test_single_iteration_affine_range_has_no_dependency() -> None:
    a = rand(128, 32)
    assert grade(_tile_sum_kernel(nl.affine_range), a, ref=a) == "pass"


@nki.jit
def store_same_rows(a):
    out = nl.ndarray((P, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(P)[:, None], nl.arange(a.shape[1])[None, :]
    for i in nl.affine_range(a.shape[0] // P):
        t = nl.load(a[i * P + i_p, i_f])
        nl.store(out[i_p, i_f], value=t)  # BUG: every iteration writes the same HBM rows
    return out


def test_every_iteration_storing_the_same_output_rows() -> None:
    a = rand(256, 8)
    expect_compile_error(store_same_rows, (a,), "err_unexpected_output_dependencies",
                         "Unexpected output dependencies")
    assert grade(double_rows, a, ref=2 * a) == "pass"  # the twin indexes the output by the loop variable


# ================================================================================================
# 5. Reading memory nobody wrote
# ================================================================================================
def _row_sum_kernel(init: Callable) -> Any:
    @nki.jit
    def row_tile_sum(a):
        out = nl.ndarray((P, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(P)[:, None], nl.arange(a.shape[1])[None, :]
        acc = init((P, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)  # BUG (nl.ndarray is uninitialised)
        for i in nl.affine_range(a.shape[0] // P):
            acc += nl.load(a[i * P + i_p, i_f])
        nl.store(out, value=acc)
        return out

    return row_tile_sum


def test_uninitialised_accumulator_gives_nans() -> None:
    a = rand(256, 16)
    ref = a.reshape(2, P, 16).sum(axis=0)
    assert grade(_row_sum_kernel(nl.zeros), a, ref=ref) == "pass"
    assert grade(_row_sum_kernel(nl.ndarray), a, ref=ref) == "wrong"
    assert np.isnan(_row_sum_kernel(nl.ndarray)(a)).all()


def _matmul_kernel(init: Callable) -> Any:
    @nki.jit
    def matmul_k_tiles(at, b):
        """at is A transposed [K, M]; out = A @ B accumulated over K tiles in PSUM."""
        k, m = at.shape
        n = b.shape[1]
        out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
        psum = init((m, n), dtype=nl.float32, buffer=nl.psum)
        for kt in nl.affine_range(k // P):
            psum += nl.matmul(nl.load(at[kt * P:(kt + 1) * P, 0:m]), nl.load(b[kt * P:(kt + 1) * P, 0:n]),
                              transpose_x=True)
        nl.store(out, value=nl.copy(psum))
        return out

    return matmul_k_tiles


def _matmul_column_blocks_kernel(accumulator_per_block: bool) -> Any:
    @nki.jit
    def matmul_column_blocks(at, b):
        """out[:, block] = A @ B[:, block] for two column blocks, each accumulated over K tiles in PSUM."""
        k, m = at.shape
        n = b.shape[1] // 2
        out = nl.ndarray((m, 2 * n), dtype=nl.float32, buffer=nl.shared_hbm)
        shared = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
        for nb in nl.affine_range(2):
            # BUG when not per block: the second block's matmuls add onto the first block's sums
            psum = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum) if accumulator_per_block else shared
            for kt in nl.affine_range(k // P):
                psum += nl.matmul(nl.load(at[kt * P:(kt + 1) * P, 0:m]),
                                  nl.load(b[kt * P:(kt + 1) * P, nb * n:(nb + 1) * n]), transpose_x=True)
            nl.store(out[0:m, nb * n:(nb + 1) * n], value=nl.copy(psum))
        return out

    return matmul_column_blocks


def test_psum_accumulation_groups() -> None:
    """The first matmul into a fresh PSUM tile starts its accumulation group (it overwrites), so nl.zeros and
    nl.ndarray accumulators both work; one accumulator reused for a second output block does not."""
    at, b = rand(256, 64), rand(256, 96, seed=1)
    ref = at.T @ b
    assert grade(_matmul_kernel(nl.zeros), at, b, ref=ref) == "pass"
    assert grade(_matmul_kernel(nl.ndarray), at, b, ref=ref) == "pass"
    assert grade(_matmul_column_blocks_kernel(True), at, b, ref=ref) == "pass"
    assert grade(_matmul_column_blocks_kernel(False), at, b, ref=ref) == "wrong"


# ================================================================================================
# 6. Broadcasting along the wrong axis
# ================================================================================================
@nki.jit
def add_column_bias(x, bias):
    """out[p, f] = x[p, f] + bias[f]: bias is one row, broadcast down the partitions."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    f = x.shape[1]
    b = nl.load(bias.reshape((1, f)))
    nl.store(out, value=nl.add(nl.load(x), b.broadcast_to((x.shape[0], f))))
    return out


@nki.jit
def add_column_bias_wrong_axis(x, bias):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    f = x.shape[1]
    b = nl.load(bias.reshape((f, 1)))  # BUG: one value per partition (row), not per column
    nl.store(out, value=nl.add(nl.load(x), b))
    return out


@nki.jit
def add_column_bias_python_operator(x, bias):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.load(bias.reshape((1, x.shape[1])))
    y = nl.load(x) + b  # BUG: Python operators do not broadcast along the partition dimension
    nl.store(out, value=y)
    return out


def test_broadcast_on_the_wrong_axis() -> None:
    x, bias = rand(P, P), rand(P, seed=1)
    ref = x + bias[None, :]
    assert grade(add_column_bias, x, bias, ref=ref) == "pass"
    # square tile: the shapes line up, so only the values give the bug away
    assert grade(add_column_bias_wrong_axis, x, bias, ref=ref) == "wrong"
    np.testing.assert_allclose(add_column_bias_wrong_axis(x, bias), x + bias[:, None], rtol=1e-6)


def test_partition_broadcast_with_a_python_operator() -> None:
    x, bias = rand(P, 64), rand(64, seed=1)
    expect_compile_error(add_column_bias_python_operator, (x, bias), "err_param_shape_incompatible_with_numpy",
                         "do not broadcast along the partition dimension")
    assert grade(add_column_bias, x, bias, ref=x + bias[None, :]) == "pass"


# ================================================================================================
# 7. Dropping the last tile (floor instead of ceil)
# ================================================================================================
@nki.jit
def exp_rows_floor(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n, f = a.shape
    i_f = nl.arange(f)[None, :]
    for i in nl.affine_range(n // P):  # BUG: the ragged last tile is never processed
        i_p = i * P + nl.arange(P)[:, None]
        t = nl.load(a[i_p, i_f], mask=(i_p < n))
        nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < n))
    return out


def test_dropped_last_tile() -> None:
    a = rand(300, 32)
    assert grade(exp_rows, a, ref=np.exp(a)) == "pass"
    assert grade(exp_rows_floor, a, ref=np.exp(a)) == "wrong"
    out = exp_rows_floor(a)
    np.testing.assert_allclose(out[:256], np.exp(a[:256]), rtol=1e-6)
    assert not np.isfinite(out[256:]).any()  # rows 256..299 were never written
