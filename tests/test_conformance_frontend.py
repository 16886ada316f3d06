"""Issue 12, front end: legacy ``neuronxcc.nki`` spellings that third-party code uses unmodified.

Each test is a small kernel of our own in the legacy style, checked against NumPy: ``nki.trace``
kernels that write their outputs into parameters, ``nki.jit(mode='trace')``, ``x: nki.tensor``
annotations, host-side ``nl.static_cast``, ``nl.finfo`` of the narrow floats, ``ncc.*.alloc`` and
``logging.OFF``.
"""

from __future__ import annotations

import logging

import ml_dtypes
import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl
import numpy as np
import pytest
from program_check import counts_python_runs

RNG = np.random.default_rng(12)


@nki.trace
def _double_into(a, out):
    nl.store(out, nl.multiply(nl.load(a), 2.0))


def test_trace_kernel_writes_its_output_parameter() -> None:
    a = RNG.standard_normal((128, 64), dtype=np.float32)
    out = np.zeros_like(a)
    assert nki.simulate_kernel(_double_into, a, out) is None
    np.testing.assert_array_equal(out, a * 2)
    out2 = np.zeros_like(a)
    _double_into(a, out2)  # called directly, like baremetal
    np.testing.assert_array_equal(out2, a * 2)


def test_trace_mode_jit_with_grid_writes_every_instance() -> None:
    @nki.jit(mode="trace")
    def add_rows(a, out):
        i = nl.program_id(0)
        nl.store(out[i * 128:(i + 1) * 128, :], nl.add(nl.load(a[i * 128:(i + 1) * 128, :]), 1.0))

    a = RNG.standard_normal((256, 32), dtype=np.float32)
    out = np.zeros_like(a)
    nki.simulate_kernel(add_rows[2], a, out)
    np.testing.assert_array_equal(out, a + 1)


def test_trace_kernel_leaves_untouched_inputs_equal() -> None:
    a = RNG.standard_normal((16, 16), dtype=np.float32)
    before = a.copy()
    out = np.zeros_like(a)
    _double_into(a, out)
    np.testing.assert_array_equal(a, before)


@counts_python_runs
def test_nki_tensor_annotation_and_isinstance() -> None:
    seen = []

    @nki.jit
    def copy_kernel(a: nki.tensor):
        seen.append(isinstance(a, nki.tensor) and isinstance(a, nl.tensor))
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    a = RNG.standard_normal((8, 8), dtype=np.float32)
    np.testing.assert_array_equal(copy_kernel(a), a)
    assert seen == [True]


def test_jitted_kernel_named_test_is_not_collected_by_pytest() -> None:
    @nki.jit(mode="simulation")
    def test_named_kernel(in_tensor):
        out = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(in_tensor))
        return out

    assert test_named_kernel.__test__ is False
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(test_named_kernel(a), a)


def test_static_cast_on_host_arrays_rounds_like_the_device() -> None:
    x = RNG.standard_normal((4, 5))
    got = nl.static_cast(x, nl.bfloat16)
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), x.astype(ml_dtypes.bfloat16).astype(np.float32))
    back = nl.static_cast(got, np.float32)
    assert back.dtype == np.float32


def test_static_cast_in_a_kernel_still_casts_tiles() -> None:
    @nki.jit
    def cast_kernel(a):
        out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, nl.static_cast(nl.load(a), nl.bfloat16))
        return out

    a = RNG.standard_normal((8, 8), dtype=np.float32)
    np.testing.assert_array_equal(cast_kernel(a), a.astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("dtype", [nl.bfloat16, nl.float16, nl.float32, nl.float8_e5m2])
def test_finfo_of_every_float_dtype(dtype: np.dtype) -> None:
    info = nl.finfo(dtype)
    ref = ml_dtypes.finfo(dtype)
    assert (info.min, info.max, info.eps) == (ref.min, ref.max, ref.eps)
    assert info.dtype == np.dtype(dtype)


def test_logging_off_level_exists_and_disables_logging() -> None:
    assert logging.OFF > logging.CRITICAL
    logging.disable(logging.OFF)
    try:
        assert not logging.getLogger("nkisim-test").isEnabledFor(logging.CRITICAL)
    finally:
        logging.disable(logging.NOTSET)


def test_alloc_with_a_user_function_places_tiles_and_computes() -> None:
    def sbuf_fn(idx, pdim_size, fdim_size):
        return 0, 0  # (start_partition, byte_addr), as AWS's ncc.sbuf.alloc documents

    def psum_fn(idx, pdim_size, fdim_size):
        return 0, 0, 0  # (bank_id, start_partition, byte_addr)

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=ncc.sbuf.alloc(sbuf_fn))
        t[...] = nl.load(a)
        p = nl.ndarray(a.shape, dtype=nl.float32, buffer=ncc.psum.alloc(psum_fn))
        p[...] = nl.add(t, 3.0)
        nl.store(out, nl.copy(p))
        return out

    a = RNG.standard_normal((128, 32), dtype=np.float32)
    np.testing.assert_allclose(kernel(a), a + 3, rtol=1e-6)


@pytest.mark.parametrize("grid", [0, (2, 0)])
def test_empty_launch_grid_is_refused(grid) -> None:
    with pytest.raises(ValueError, match="every grid dimension must be at least 1"):
        _double_into[grid]


def test_grid_of_one_runs_the_kernel() -> None:
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    a = RNG.standard_normal((4, 4), dtype=np.float32)
    np.testing.assert_array_equal(kernel[1](a), a)
    with pytest.raises(ValueError, match="size 0"):
        kernel[0](a)


def test_trace_kernel_can_be_benchmarked_and_inlined() -> None:
    a = RNG.standard_normal((128, 64), dtype=np.float32)
    bench = nki.benchmark(_double_into)
    bench(a, np.zeros_like(a))
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) > 0

    @nki.jit
    def outer(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        _double_into(x, out)  # a traced helper called inside a kernel runs inline
        return out

    np.testing.assert_array_equal(outer(a), a * 2)


def test_loop_reduce_combines_into_its_destination() -> None:
    """``dst[...] = nl.loop_reduce(x, op, loop_indices=(i,))``: dst = op(dst, x) on every iteration (AWS's
    flash-attention backward sums dq over the key tiles so); binding the result to a name is refused."""

    @nki.jit
    def kernel(a):
        total = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        peak = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 4), dtype=nl.float32)
        top = nl.full((128, 4), -1e30, dtype=nl.float32)
        for i in nl.affine_range(a.shape[0]):
            x = nl.load(a[i])
            acc[...] = nl.loop_reduce(x, op=np.add, loop_indices=(i,))
            top[...] = nl.loop_reduce(x, op=nl.maximum, loop_indices=(i,))
        nl.store(total, acc)
        nl.store(peak, top)
        return total, peak

    a = np.random.default_rng(4).standard_normal((3, 128, 4), dtype=np.float32)
    total, peak = kernel(a)
    np.testing.assert_allclose(total, a.sum(axis=0), rtol=1e-6)
    np.testing.assert_array_equal(peak, a.max(axis=0))

    @nki.jit
    def rebinding(a):
        out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0]):
            b = nl.loop_reduce(nl.load(a[i]), op=np.add, loop_indices=(i,))
        nl.store(out, b)
        return out

    with pytest.raises(NotImplementedError, match=r"assigned into its destination tile"):
        rebinding(a)
