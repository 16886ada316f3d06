"""The compiler's error catalogue: one minimal kernel per error a student can hit.

Each test checks what a student would see from neuronx-cc: the builtin exception class from the spec
(ValueError/TypeError/IndexError/RuntimeError, or NKISyntaxError, a SyntaxError), the error id, the
compiler's key phrase, the link to the course's own page on the error (docs/errors/<id>.md), and that
the error points at the student's own line (``err.nki_location`` and the last traceback frame).  The
offending line carries a ``# ERR`` marker comment; ``marker_line`` finds it with ``inspect`` so the
tests do not depend on line numbers.

This module deliberately avoids ``from __future__ import annotations``: kernels annotated with
``nt.tensor[...]`` / ``nt.mutable_tensor`` need real annotation objects, as under the compiler.
"""

import inspect
import os
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import numpy as np
import pytest

import nkisim.core.errors as errors
from nkisim.core.errors import CATALOGUE, UNDOCUMENTED, NKIError, NKISyntaxError

HERE = os.path.abspath(__file__)

#: The class each documented error has in the real front end (nki-spec §3 catalogue table).
SPEC_CLASS: dict[str, type[BaseException]] = {
    "err_num_partition_exceed_arch_limit": ValueError,
    "err_num_partition_mismatch": ValueError,
    "err_size_of_dimension_exceed_arch_limit": ValueError,
    "err_exceed_max_supported_dimension": ValueError,
    "err_param_shape_incompatible_with_numpy": ValueError,
    "err_param_shape_mismatch": ValueError,
    "err_param_shape_incompatible_with_matmul": ValueError,
    "err_store_dst_shape_smaller_than_other_shape": ValueError,
    "err_tensor_access_out_of_bound": IndexError,
    "err_unsupported_memory": TypeError,
    "err_1d_arange_not_supported": NKISyntaxError,
    "err_unsupported_mixing_basic_advanced_tensor_indexing": NKISyntaxError,
    "err_failed_to_infer_tile_from_local_tensor": TypeError,
    "err_leading_dimension_of_tensor_must_be_partition": NKISyntaxError,
    "err_local_variable_used_out_of_scope": NKISyntaxError,
    "err_unexpected_output_dependencies": NKISyntaxError,
    "err_tensor_output_not_written_to": ValueError,
    "err_cannot_update_immutable_parameter": TypeError,
    "err_mutable_parameter_not_returned": NKISyntaxError,
    "err_hbm_tensor_with_init_value_not_supported": NKISyntaxError,
    "err_shared_hbm_must_in_kernel_level": RuntimeError,
    "err_dynamic_control_flow_not_supported": NKISyntaxError,
    "err_control_flow_condition_depending_on_arange": NKISyntaxError,
    "err_ambiguous_tensor_truth_value": ValueError,
    "err_unsupported_expression_in_mask": ValueError,
    "err_while_loop_requires_unconditional_entry": ValueError,
    "err_nki_api_outside_of_nki_kernel": RuntimeError,
    "err_nested_kernel_with_spmd_grid": NKISyntaxError,
    "err_program_id_axis_out_of_bounds": IndexError,
    "err_cannot_assign_to_index": TypeError,
    "err_annotation_shape_mismatch": TypeError,
    "err_indirect_indices_free_dim": NKISyntaxError,
    "err_indirect_indices_sbuf": NKISyntaxError,
    "err_indirect_indices_are_not_supported_with_nki_api": NKISyntaxError,
    "err_copy_dynamic_indirect_indices_not_natively_supported": NKISyntaxError,
    "err_activation_bias_invalid_type": TypeError,
    "err_activation_scale_invalid_type": TypeError,
    "err_activation_scale_scalar_or_vector": NKISyntaxError,
    "err_instruction_unsupported_op": NKISyntaxError,
    "err_reduce_unsupported_negate": NKISyntaxError,
    "err_supported_operand_dtype": TypeError,
    "err_unsupported_dtype_value": ValueError,
    "err_operand_cannot_be_none": ValueError,
    "err_stack_overflow_sbuf": RuntimeError,
    "err_stack_overflow_psum": RuntimeError,
    "err_mask_not_equal_not_supported": NKISyntaxError,
    "err_logic_or_not_supported": ValueError,
    "err_min_arch_support_for_inst": NKISyntaxError,
    "err_transpose_on_tensor_engine_not_allowed_in_allocated_kernel": NKISyntaxError,
}

#: Ids with a trigger in this file (filled by @covers at import time, checked by the last test).
COVERED: set[str] = set()

#: Ids no kernel can trigger on the simulator, with the reason (none at the moment).
NOT_TRIGGERABLE: dict[str, str] = {}

F32 = np.float32


def covers(*ids: str) -> Callable[[Callable], Callable]:
    """Register the error ids a test triggers, so the catalogue-coverage test can see them."""

    def deco(fn: Callable) -> Callable:
        COVERED.update(ids)
        return fn

    return deco


def marker_line(fn: Any, marker: str = "# ERR") -> int:
    """Line number (in this file) of the single source line of ``fn`` that carries ``marker``."""
    fn = getattr(fn, "func", fn)  # a jitted kernel wraps the Python function
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if line.rstrip().endswith(marker)]
    assert len(hits) == 1, f"expected exactly one '{marker}' line in {fn.__name__}, found {len(hits)}"
    return hits[0]


def expect_error(call: Callable[[], Any], error_id: str, phrase: str, where: Any, *,
                 last_frame: bool = True) -> BaseException:
    """Run ``call`` and check the error the way a student would read it.

    ``where`` is the function whose ``# ERR`` line must be blamed (the kernel, or the test function
    for errors found by the launch itself).  ``last_frame`` also requires the traceback to end there.
    """
    with pytest.raises(NKIError) as info:
        call()
    err = info.value
    assert err.error_id == error_id, str(err)
    expected = SPEC_CLASS.get(error_id) or CATALOGUE[error_id].__mro__[2]  # NKIValueError -> ValueError
    assert isinstance(err, expected), f"{type(err).__mro__} is not a {expected}"
    # tracebacks print "ValueError: ..." / "NKISyntaxError: ...", as neuronx-cc does
    assert (type(err).__module__, type(err).__qualname__) == ("builtins", expected.__name__)
    text = str(err)
    assert phrase in text, text
    assert text.endswith(f". See docs/errors/{error_id}.md for what it means and how to fix it."), text
    line = marker_line(where)
    assert err.nki_location == (HERE, line), (err.nki_location, line)
    if last_frame:
        last = traceback.extract_tb(err.__traceback__)[-1]
        assert (os.path.abspath(last.filename), last.lineno) == (HERE, line)
    if isinstance(err, SyntaxError):  # shown by Python as "File ..., line N" with the student's source
        assert (err.filename, err.lineno) == (HERE, line)
    return err


def rand(*shape: int, dtype: Any = F32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32).astype(dtype)


# ================================================================================================
# The catalogue itself
# ================================================================================================
def test_catalogue_classes_follow_the_spec() -> None:
    for error_id, cls in SPEC_CLASS.items():
        assert error_id in CATALOGUE, error_id
        assert issubclass(CATALOGUE[error_id], cls), error_id
        assert error_id not in UNDOCUMENTED, error_id
    assert issubclass(NKISyntaxError, SyntaxError)
    for error_id in set(CATALOGUE) - set(SPEC_CLASS):  # simulator-only ids still show builtin classes
        assert error_id in UNDOCUMENTED
        assert CATALOGUE[error_id].__mro__[2] in (ValueError, TypeError, IndexError, RuntimeError)


def test_docs_link_format() -> None:
    err = errors.make_error("err_num_partition_exceed_arch_limit", "number of partitions 256 exceed x")
    assert str(err) == ("number of partitions 256 exceed x. See docs/errors/err_num_partition_exceed_arch_limit.md "
                        "for what it means and how to fix it.")


# ================================================================================================
# Partition and free-size limits
# ================================================================================================
@covers("err_num_partition_exceed_arch_limit")
def test_partition_256_tile() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((256, 1), dtype=a.dtype, buffer=nl.sbuf)  # ERR
        return t

    expect_error(lambda: k(rand(256, 1)), "err_num_partition_exceed_arch_limit",
                 "number of partitions 256 exceed architecture limitation of 128.", k)


def test_partition_256_operand_names_every_operand() -> None:
    @nki.jit
    def k(a):
        t = nl.load(a[0:256, 0:4])  # ERR
        return t

    expect_error(lambda: k(rand(256, 4)), "err_num_partition_exceed_arch_limit",
                 "number of partitions in src[256, 4] of 'load' exceed architecture limitation of 128.", k)


@covers("err_sbuf_free_dim_exceed_partition_size")
def test_sbuf_tile_too_large_per_partition() -> None:
    @nki.jit
    def k(a):
        big = nl.ndarray((128, 60000), dtype=nl.float32, buffer=nl.sbuf)  # ERR
        return big

    expect_error(lambda: k(rand(1, 1)), "err_sbuf_free_dim_exceed_partition_size",
                 "Size of free dimensions 234.375 KB per partition on SBUF buffer", k)


def test_sbuf_budget_depends_on_target() -> None:
    """200 KB per partition fits trn2's 212984 bytes but not trn1's 180224."""

    def body(a):
        t = nl.ndarray((128, 50000), dtype=nl.float32, buffer=nl.sbuf)  # ERR
        out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        t[...] = nl.load(a[0:128, 0:1])
        nl.store(out, t[0:128, 0:1])
        return out

    a = rand(128, 1)
    np.testing.assert_array_equal(nki.jit(body, platform_target="trn2")(a), a)
    expect_error(lambda: nki.jit(body, platform_target="trn1")(a), "err_sbuf_free_dim_exceed_partition_size",
                 "exceeds the 180224 bytes available per partition on trn1", body)


@covers("err_psum_tile_exceed_bank_size")
def test_psum_tile_over_one_bank() -> None:
    @nki.jit
    def k(a):
        acc = nl.zeros((128, 1024), dtype=nl.float32, buffer=nl.psum)  # ERR
        return acc

    expect_error(lambda: k(rand(1, 1)), "err_psum_tile_exceed_bank_size",
                 "needs 4096 bytes per partition, more than one 2 KiB PSUM bank", k)


@covers("err_psum_dtype")
def test_psum_tile_of_int8() -> None:
    @nki.jit
    def k(a):
        acc = nl.zeros((128, 8), dtype=nl.int8, buffer=nl.psum)  # ERR
        return acc

    expect_error(lambda: k(rand(1, 1)), "err_psum_dtype", "PSUM tensor for writes must be either 4-byte", k)


@covers("err_insufficient_rank")
def test_one_dimensional_sbuf_tile() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((128,), dtype=nl.float32, buffer=nl.sbuf)  # ERR
        return t

    expect_error(lambda: k(rand(1, 1)), "err_insufficient_rank", "Insufficient rank", k)


@covers("err_num_partition_mismatch")
def test_tensor_tensor_partition_mismatch() -> None:
    @nki.jit
    def k(a, b):
        x, y = nl.load(a), nl.load(b)
        r = nisa.tensor_tensor(x, y, op=np.add)  # ERR
        return r

    expect_error(lambda: k(rand(128, 512), rand(1, 512)), "err_num_partition_mismatch",
                 "number of partitions (dimension 0 size of a tile) mismatch in parameters (data1[128, 512], "
                 "data2[1, 512]) of 'tensor_tensor'", k)


@covers("err_param_shape_mismatch")
def test_tensor_tensor_free_size_mismatch() -> None:
    @nki.jit
    def k(a, b):
        x, y = nl.load(a), nl.load(b)
        r = nisa.tensor_tensor(data1=x, data2=y, op=nl.multiply)  # ERR
        return r

    expect_error(lambda: k(rand(128, 512), rand(128, 256)), "err_param_shape_mismatch",
                 "Parameter shapes (data1[128, 512], data2[128, 256]) of 'tensor_tensor' has mismatched shapes", k)


# ================================================================================================
# Tensor Engine limits
# ================================================================================================
@covers("err_size_of_dimension_exceed_arch_limit")
def test_transpose_free_dim_over_128() -> None:
    @nki.jit
    def k(a):
        x = nl.load(a)
        t = nl.transpose(x)  # ERR
        return t

    expect_error(lambda: k(rand(128, 512)), "err_size_of_dimension_exceed_arch_limit",
                 "size of dimension 1 in 'x[128, 512]' of 'transpose' exceed architecture limitation of 128.", k)


@covers("err_exceed_max_supported_dimension")
def test_transpose_rank_3() -> None:
    @nki.jit
    def k(a):
        x = nl.load(a)
        t = nl.transpose(x)  # ERR
        return t

    expect_error(lambda: k(rand(64, 32, 2)), "err_exceed_max_supported_dimension",
                 "parameter 'x[64, 32, 2]' of 'transpose' exceed max supported number of dimensions of 2.", k)


def test_matmul_moving_free_over_512() -> None:
    @nki.jit
    def k(a, b):
        x, y = nl.load(a), nl.load(b)
        r = nl.matmul(x, y, transpose_x=True)  # ERR
        return r

    expect_error(lambda: k(rand(128, 128), rand(128, 1024)), "err_size_of_dimension_exceed_arch_limit",
                 "size of dimension 1 in 'y[128, 1024]' of 'matmul' exceed architecture limitation of 512.", k)


def test_nc_matmul_stationary_free_over_128() -> None:
    @nki.jit
    def k(a, b):
        s, m = nl.load(a), nl.load(b)
        r = nisa.nc_matmul(s, m)  # ERR
        return r

    expect_error(lambda: k(rand(128, 256), rand(128, 512)), "err_size_of_dimension_exceed_arch_limit",
                 "size of dimension 1 in 'stationary[128, 256]' of 'nc_matmul' exceed architecture limitation of "
                 "128.", k)


@covers("err_param_shape_incompatible_with_matmul")
def test_matmul_contraction_mismatch() -> None:
    @nki.jit
    def k(a, b):
        s, m = nl.load(a), nl.load(b)
        r = nisa.nc_matmul(stationary=s, moving=m)  # ERR
        return r

    expect_error(lambda: k(rand(128, 128), rand(64, 512)), "err_param_shape_incompatible_with_matmul",
                 "Number of partitions mismatch", k)


@covers("err_supported_operand_dtype")
def test_matmul_int32_operands() -> None:
    @nki.jit
    def k(a, b):
        x, y = nl.load(a), nl.load(b)
        r = nl.matmul(x, y, transpose_x=True)  # ERR
        return r

    ints = np.ones((128, 128), np.int32)
    expect_error(lambda: k(ints, ints), "err_supported_operand_dtype", "expected one of the following dtypes", k)


@covers("err_transpose_on_tensor_engine_not_allowed_in_allocated_kernel")
def test_pe_transpose_in_direct_allocation_kernel() -> None:
    import neuronxcc.nki.compiler as ncc

    @nki.jit
    def k(a, b):
        x = nl.ndarray((128, 128), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        x[...] = nl.load(a)
        y = nl.load(b)
        r = nl.matmul(x, y)  # ERR
        return r

    expect_error(lambda: k(rand(128, 128), rand(128, 64)),
                 "err_transpose_on_tensor_engine_not_allowed_in_allocated_kernel",
                 "Transpose on the Tensor Engine is not allowed in a kernel with direct allocation", k)


def test_transpose_x_is_fine_in_direct_allocation_kernel() -> None:
    import neuronxcc.nki.compiler as ncc

    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray((128, 128), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        x[...] = nl.load(a)
        nl.store(out, nl.copy(nl.matmul(x, nl.load(b), transpose_x=True)))
        return out

    a, b = rand(128, 128), rand(128, 64, seed=1)
    np.testing.assert_allclose(k(a, b), a.T @ b, rtol=1e-5)


# ================================================================================================
# Shapes and assignment
# ================================================================================================
@covers("err_param_shape_incompatible_with_numpy")
def test_elementwise_shapes_do_not_broadcast() -> None:
    @nki.jit
    def k(a, b):
        x, y = nl.load(a), nl.load(b)
        r = nl.add(x, y)  # ERR
        return r

    expect_error(lambda: k(rand(128, 512), rand(128, 256)), "err_param_shape_incompatible_with_numpy",
                 "could not be broadcast together", k)


@covers("err_store_dst_shape_smaller_than_other_shape")
def test_assign_into_smaller_tile() -> None:
    @nki.jit
    def k(a):
        x = nl.load(a)
        y = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        y[...] = x  # ERR
        return y

    expect_error(lambda: k(rand(128, 512)), "err_store_dst_shape_smaller_than_other_shape",
                 "in 'y[...] = value': shape [128, 1] of parameter 'y'", k)  # the student's variable


# ================================================================================================
# Indexing
# ================================================================================================
@covers("err_tensor_access_out_of_bound")
def test_out_of_bound_over_the_whole_affine_range() -> None:
    """The first iteration is in bounds; the compiler still rejects the load for the whole loop."""

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 4096), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(128)[:, None], nl.arange(512)[None, :]
        for i in nl.affine_range(8):
            t = nl.load(a[i_p, i * 512 + i_f])  # ERR
            nl.store(out[i_p, i * 512 + i_f], t)
        return out

    expect_error(lambda: k(rand(128, 4000)), "err_tensor_access_out_of_bound",
                 "Out-of-bound access for tensor `a` on dimension 1: index range [0, 4095] exceed dimension size "
                 "of 4000", k)


def test_out_of_bound_slice_on_partition_dim() -> None:
    @nki.jit
    def k(a):
        t = nl.load(a[64:192, 0:8])  # ERR
        return t

    expect_error(lambda: k(rand(128, 8)), "err_tensor_access_out_of_bound",
                 "index range [64, 191] exceed dimension size of 128", k)


@covers("err_1d_arange_not_supported")
def test_1d_arange_index() -> None:
    @nki.jit
    def k(a):
        tmp = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.arange(64)
        c = nl.exp(tmp[i, 0])  # ERR
        return c

    expect_error(lambda: k(rand(1, 1)), "err_1d_arange_not_supported", "with 1d arange is not supported", k)


@covers("err_unsupported_mixing_basic_advanced_tensor_indexing")
def test_mixing_slice_and_arange() -> None:
    @nki.jit
    def k(a):
        i_p = nl.arange(128)[:, None]
        t = nl.load(a[i_p, :])  # ERR
        return t

    expect_error(lambda: k(rand(128, 8)), "err_unsupported_mixing_basic_advanced_tensor_indexing",
                 "Mixing basic tensor indexing and advanced tensor indexing is not supported.", k)


def test_integer_beside_arange_is_not_mixing() -> None:
    """§8.2: ``t[i_p, 0]`` with an arange partition index is legal (layernorm tutorial)."""

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        t = nl.load(a)
        nl.store(out, nl.copy(t[i_p, 2]))
        return out

    a = rand(128, 4)
    np.testing.assert_array_equal(k(a), a[:, 2:3])


@covers("err_cannot_assign_to_index")
def test_assignment_into_an_mgrid_index() -> None:
    @nki.jit
    def k(a):
        _, x = nl.mgrid[0:1, 0:8]
        x[0, 5] = 1024  # ERR
        return a

    expect_error(lambda: k(rand(1, 1)), "err_cannot_assign_to_index",
                 "'index' tensor does not support item assignment", k)


def test_assignment_of_an_arange_into_a_tile() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.sbuf)
        t[...] = nl.arange(8)[None, :]  # ERR
        return a

    expect_error(lambda: k(rand(1, 1)), "err_cannot_assign_to_index",
                 "'index' tensor does not support item assignment", k)


def test_iota_is_the_workaround_for_index_assignment() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((1, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        _, x = nl.mgrid[0:1, 0:8]
        y = nisa.iota(x, dtype=nl.int32)
        y[0, 5] = 1024
        nl.store(out, y)
        return out

    np.testing.assert_array_equal(k(rand(1, 1)), [[0, 1, 2, 3, 4, 1024, 6, 7]])


@covers("err_indirect_indices_free_dim")
def test_indirect_index_on_free_dim() -> None:
    @nki.jit
    def k(a, idx):
        i_p = nl.arange(128)[:, None]
        ix = nl.load(idx)
        t = nl.load(a[i_p, ix])  # ERR
        return t

    expect_error(lambda: k(rand(128, 8), np.zeros((128, 1), np.int32)), "err_indirect_indices_free_dim",
                 "Indirect indexing on free dimension not supported", k)


@covers("err_indirect_indices_sbuf")
def test_indirect_index_tile_in_psum() -> None:
    @nki.jit
    def k(a):
        i_f = nl.arange(8)[None, :]
        ix = nl.zeros((128, 1), dtype=nl.int32, buffer=nl.psum)
        t = nl.load(a[ix, i_f])  # ERR
        return t

    expect_error(lambda: k(rand(128, 8)), "err_indirect_indices_sbuf", "Indirect indices tile must be on SBUF.", k)


@covers("err_indirect_indices_are_not_supported_with_nki_api")
def test_indirect_index_with_load_transpose2d() -> None:
    @nki.jit
    def k(a, idx):
        i_f = nl.arange(64)[None, :]
        ix = nl.load(idx)
        t = nl.load_transpose2d(a[ix[nl.arange(128)[:, None], 0], i_f])  # ERR
        return t

    expect_error(lambda: k(rand(128, 64), np.zeros((128, 1), np.int32)),
                 "err_indirect_indices_are_not_supported_with_nki_api", "cannot use indirect indexing access", k)


@covers("err_copy_dynamic_indirect_indices_not_natively_supported")
def test_copy_with_indirect_source() -> None:
    @nki.jit
    def k(a, idx):
        i_p, i_f = nl.arange(128)[:, None], nl.arange(8)[None, :]
        data = nl.load(a)
        ix = nl.load(idx)
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        out[i_p, i_f] = data[ix[i_p, 0], i_f]  # ERR
        return out

    expect_error(lambda: k(rand(128, 8), np.zeros((128, 1), np.int32)),
                 "err_copy_dynamic_indirect_indices_not_natively_supported",
                 "cannot copy a tensor with indirect memory reference access", k)


def test_indirect_gather_from_hbm_works() -> None:
    @nki.jit
    def k(a, idx):
        out = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(128)[:, None], nl.arange(8)[None, :]
        ix = nl.load(idx)
        nl.store(out, nl.load(a[ix[i_p, 0], i_f]))
        return out

    a = rand(256, 8)
    idx = (np.arange(128, dtype=np.int32) * 2 + 1)[:, None]
    np.testing.assert_array_equal(k(a, idx), a[idx[:, 0]])


# ================================================================================================
# Memory spaces, allocation, parameters and outputs
# ================================================================================================
@covers("err_unsupported_memory")
def test_load_from_sbuf() -> None:
    @nki.jit
    def k(a):
        x = nl.load(a)
        y = nl.load(x)  # ERR
        return y

    expect_error(lambda: k(rand(128, 8)), "err_unsupported_memory",
                 "Expected operand 'src' of 'load' to be in address space 'hbm', but got a tile in 'sbuf' instead.", k)


def test_compute_on_hbm() -> None:
    @nki.jit
    def k(a):
        y = nl.exp(a)  # ERR
        return y

    err = expect_error(lambda: k(rand(128, 8)), "err_unsupported_memory",
                       "Expected operand 'x' of 'exp' to be in address space", k)
    assert "but got a tile in 'hbm' instead." in str(err)


@covers("err_failed_to_infer_tile_from_local_tensor", "err_leading_dimension_of_tensor_must_be_partition")
def test_block_dimension_tensor_used_as_a_tile() -> None:
    """Dims before par_dim are deprecated (a warning, the 2.23+ form of
    err_leading_dimension_of_tensor_must_be_partition); using the whole block tensor in a compute
    API is the hard error."""

    @nki.jit
    def k(a):
        blocks = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)  # WARN
        e = nl.exp(blocks)  # ERR
        return e

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expect_error(lambda: k(rand(1, 1)), "err_failed_to_infer_tile_from_local_tensor",
                     "the first dimension of the tile is not the partition dimension of the tensor.", k)
    dep = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert dep and "Block dimension is deprecated" in str(dep[0].message)
    assert (os.path.abspath(dep[0].filename), dep[0].lineno) == (HERE, marker_line(k, "# WARN"))


def test_block_dimension_tensor_indexed_per_block_works() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((2, 128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        blocks = nl.ndarray((2, nl.par_dim(128), 8), dtype=nl.float32, buffer=nl.sbuf)
        for b in nl.affine_range(2):
            blocks[b] = nl.load(a[b])
            nl.store(out[b], nl.exp(blocks[b]))
        return out

    a = rand(2, 128, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        np.testing.assert_allclose(k(a), np.exp(a), rtol=1e-6)


@covers("err_hbm_tensor_with_init_value_not_supported")
def test_zeros_on_hbm() -> None:
    @nki.jit
    def k(a):
        out = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)  # ERR
        return out

    expect_error(lambda: k(rand(1, 1)), "err_hbm_tensor_with_init_value_not_supported",
                 "Creating HBM tensor with init value is not supported.", k)


@covers("err_shared_hbm_must_in_kernel_level")
def test_shared_hbm_created_inside_a_loop() -> None:
    @nki.jit
    def k(a):
        for _i in nl.affine_range(2):
            out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)  # ERR
            nl.store(out, nl.load(a))
        return out

    expect_error(lambda: k(rand(128, 8)), "err_shared_hbm_must_in_kernel_level",
                 "shared_hbm buffer can only be created top level kernel scope", k)


@covers("err_cannot_update_immutable_parameter")
def test_store_into_an_input_parameter() -> None:
    @nki.jit
    def k(a):
        x = nl.load(a)
        nl.store(a, value=x + 1.0)  # ERR
        return a

    expect_error(lambda: k(rand(128, 8)), "err_cannot_update_immutable_parameter",
                 "Cannot update immutable parameter `a`", k)


def test_mutable_parameter_can_be_updated_and_returned() -> None:
    @nki.jit
    def k(a: nt.mutable_tensor):
        x = nl.load(a)
        nl.store(a, value=x + 1.0)
        return a

    a = rand(128, 8)
    np.testing.assert_allclose(k(a), a + 1.0)


@covers("err_mutable_parameter_not_returned")
def test_mutable_parameter_not_returned() -> None:
    @nki.jit
    def k(a: nt.mutable_tensor, b):
        nl.store(a, value=nl.load(b))
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(b))
        return out  # ERR

    expect_error(lambda: k(rand(128, 8), rand(128, 8)), "err_mutable_parameter_not_returned",
                 "Mutable kernel parameter `a` not returned by `return` statement", k, last_frame=False)


@covers("err_tensor_output_not_written_to")
def test_output_never_written() -> None:
    """A zero-trip loop is the classic way to forget the store."""

    @nki.jit
    def k(a):
        result = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)  # ERR
        for _i in nl.affine_range(a.shape[0] // 256):
            nl.store(result, nl.load(a))
        return result

    # blamed on the student's allocation, naming the student's variable (it used to be the launch's line
    # and the simulator's `t3`)
    expect_error(lambda: k(rand(128, 8)), "err_tensor_output_not_written_to",
                 "Output tensor `result` is never written to", k, last_frame=False)


def test_an_output_never_written_is_named_by_its_place_in_the_return_statement() -> None:
    @nki.jit
    def k(a):
        done = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        forgotten = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)  # ERR
        nl.store(done, nl.load(a))
        return done, forgotten

    expect_error(lambda: k(rand(128, 8)), "err_tensor_output_not_written_to",
                 "Output tensor `forgotten` is never written to", k, last_frame=False)


def test_a_tile_returned_as_output_is_blamed_on_the_return_statement() -> None:
    @nki.jit
    def k(a):
        tile = nl.load(a)
        return tile  # ERR

    expect_error(lambda: k(rand(128, 8)), "err_unsupported_memory",
                 "Expected kernel output `tile` to be in address space 'hbm'", k, last_frame=False)


@covers("err_unsupported_dtype_value")
def test_float64_tile() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 8), dtype=np.float64, buffer=nl.sbuf)  # ERR
        return t

    expect_error(lambda: k(rand(1, 1)), "err_unsupported_dtype_value", "expected one of the following dtypes", k)


@covers("err_operand_cannot_be_none")
def test_dma_copy_without_source() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=None)  # ERR
        return out

    expect_error(lambda: k(rand(1, 1)), "err_operand_cannot_be_none", "'src' cannot be None.", k)


@covers("err_local_variable_used_out_of_scope")
def test_tile_used_after_its_loop() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        for _i in nl.affine_range(1):
            t = nl.load(a)
        nl.store(out, t)  # ERR
        return out

    expect_error(lambda: k(rand(128, 8)), "err_local_variable_used_out_of_scope",
                 "Local variable 't' (float32[128, 8]) is referenced outside of its parent scope", k)


def test_accumulator_rebound_in_loop_then_used_outside() -> None:
    """The nki.errors.html example: rebinding ``data`` inside the loop shadows the outer tile."""

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        data = nl.zeros((128, 8), dtype=nl.float32)
        for _i in nl.sequential_range(4):
            data = data + nl.load(a)
        nl.store(out, value=data)  # ERR
        return out

    expect_error(lambda: k(rand(128, 8)), "err_local_variable_used_out_of_scope",
                 "Local variable 'data' (float32[128, 8]) is referenced outside of its parent scope", k)


def test_in_place_accumulator_is_in_scope() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        data = nl.zeros((128, 8), dtype=nl.float32)
        for _i in nl.sequential_range(4):
            data[...] = data + nl.load(a)
        nl.store(out, value=data)
        return out

    a = rand(128, 8)
    np.testing.assert_allclose(k(a), 4 * a, rtol=1e-6)


# ================================================================================================
# Loops and control flow
# ================================================================================================
@covers("err_unexpected_output_dependencies")
def test_same_tile_written_by_every_affine_iteration() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        for _i in nl.affine_range(4):
            t[...] = nl.load(a)  # ERR
        return t

    expect_error(lambda: k(rand(128, 8)), "err_unexpected_output_dependencies", "Unexpected output dependencies", k)


@covers("err_dynamic_control_flow_not_supported")
def test_if_on_a_tile() -> None:
    @nki.jit
    def k(a):
        t = nl.load(a)
        if t:  # ERR
            pass
        return a

    expect_error(lambda: k(rand(128, 8)), "err_dynamic_control_flow_not_supported",
                 "dynamic control-flow depending on tensor value is not supported.", k)


def test_while_on_a_computed_tile() -> None:
    @nki.jit
    def k(a):
        t = nl.load(a)
        cond = True
        while cond:  # ERR
            cond = nl.max(t, axis=1) > 0.5  # a tile: testing it again is dynamic control flow
        return a

    expect_error(lambda: k(rand(128, 8)), "err_dynamic_control_flow_not_supported",
                 "dynamic control-flow depending on tensor value is not supported.", k)


@covers("err_ambiguous_tensor_truth_value")
def test_not_on_a_tile() -> None:
    @nki.jit
    def k(a):
        t = nl.load(a)
        f = not t  # ERR
        return f

    expect_error(lambda: k(rand(128, 8)), "err_ambiguous_tensor_truth_value",
                 "Cannot evaluate truth value of a multi-element tensor/array.", k)


def test_and_on_tiles() -> None:
    @nki.jit
    def k(a):
        t = nl.load(a)
        f = (t > 0.5) and (t < 0.7)  # ERR
        return f

    expect_error(lambda: k(rand(128, 8)), "err_ambiguous_tensor_truth_value",
                 "Cannot evaluate truth value", k)


def test_an_optional_tensor_argument_is_true_but_its_tiles_are_not() -> None:
    """``if b:`` on an argument tests that it was given (AWS's own API tests write
    ``imm = nl.load(imm[...]) if imm else None``); a tile loaded from it has no truth value."""

    @nki.jit
    def k(a, b=None):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        if b:
            t = t + nl.load(b)
        nl.store(out, t)
        return out

    a, b = rand(128, 8), rand(128, 8, seed=1)
    np.testing.assert_allclose(k(a, b), a + b, rtol=1e-6)
    np.testing.assert_allclose(k(a), a, rtol=1e-6)

    @nki.jit
    def tile_test(a):
        t = nl.load(a)
        if t:  # ERR
            t = t + 1.0
        return a

    expect_error(lambda: tile_test(rand(128, 8)), "err_dynamic_control_flow_not_supported",
                 "dynamic control-flow depending on tensor value is not supported.", tile_test)


def test_is_not_none_is_the_fix_for_optional_parameters() -> None:
    @nki.jit
    def k(a, b=None):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        if b is not None:
            t = nl.add(t, nl.load(b))
        nl.store(out, ~(t > 0.5))
        return out

    a, b = rand(128, 8), rand(128, 8, seed=1)
    np.testing.assert_array_equal(k(a, b), ~(a + b > 0.5))
    np.testing.assert_array_equal(k(a), ~(a > 0.5))


@covers("err_control_flow_condition_depending_on_arange")
def test_if_on_an_arange() -> None:
    @nki.jit
    def k(a):
        i_p = nl.arange(128)[:, None]
        if i_p > 3:  # ERR
            pass
        return a

    expect_error(lambda: k(rand(1, 1)), "err_control_flow_condition_depending_on_arange",
                 "Control-flow depending on `nl.arange` or `nl.mgrid` is not supported.", k)


def test_if_on_a_loop_index_is_fine() -> None:
    """Loop indices are known at trace time (the compiler unrolls the branch), unlike aranges."""

    @nki.jit
    def k(a):
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.sequential_range(4):
            t = nl.load(a[i:i + 1, 0:8])
            if i < 2:
                t = nl.multiply(t, 2.0)
            nl.store(out[i:i + 1, 0:8], t)
        return out

    a = rand(4, 8)
    np.testing.assert_allclose(k(a), np.concatenate([2 * a[:2], a[2:]]), rtol=1e-6)


@covers("err_while_loop_requires_unconditional_entry")
def test_traditional_while_loop() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        n = 0
        while n < 2:  # ERR
            n += 1
        nl.store(out, nl.load(a))
        return out

    expect_error(lambda: k(rand(128, 8)), "err_while_loop_requires_unconditional_entry",
                 "Traditional while loops are not supported in NKI. Use the do-while pattern", k, last_frame=False)


def test_do_while_pattern_is_accepted() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        n = 0
        cond = True
        while cond:
            n += 1
            cond = n < 3
        nl.store(out, nl.multiply(nl.load(a), float(n)))
        return out

    a = rand(128, 8)
    np.testing.assert_allclose(k(a), 3 * a, rtol=1e-6)


# ================================================================================================
# Masks
# ================================================================================================
@covers("err_mask_not_equal_not_supported")
def test_mask_with_not_equal() -> None:
    @nki.jit
    def k(a):
        i_p, i_f = nl.arange(128)[:, None], nl.arange(8)[None, :]
        t = nl.load(a[i_p, i_f], mask=(i_p != 3))  # ERR
        return t

    expect_error(lambda: k(rand(128, 8)), "err_mask_not_equal_not_supported", "'not equal' mask is not supported", k)


@covers("err_logic_or_not_supported")
def test_mask_with_or() -> None:
    @nki.jit
    def k(a):
        i_p, i_f = nl.arange(128)[:, None], nl.arange(8)[None, :]
        t = nl.load(a[i_p, i_f], mask=((i_p < 64) | (i_f < 4)))  # ERR
        return t

    expect_error(lambda: k(rand(128, 8)), "err_logic_or_not_supported", "'logical or' is not supported", k)


@covers("err_unsupported_expression_in_mask")
def test_mask_with_modulo_of_loop_index() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(128)[:, None], nl.arange(2)[None, :]
        for i in nl.affine_range(4):
            t = nl.load(a[i_p, i * 2 + i_f], mask=(i % 2 < 1))  # ERR
            nl.store(out[i_p, i * 2 + i_f], t)
        return out

    expect_error(lambda: k(rand(128, 8)), "err_unsupported_expression_in_mask",
                 "NKI mask expressions must be affine expressions of static loop indices.", k)


def test_mask_from_tile_values() -> None:
    @nki.jit
    def k(a):
        t = nl.load(a)
        e = nl.exp(t, mask=(t > 0.5))  # ERR
        return e

    expect_error(lambda: k(rand(128, 8)), "err_unsupported_expression_in_mask",
                 "Dynamic values, tensor elements, or non-affine operations are not supported", k)


def test_affine_mask_on_a_ragged_tile_works() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i_f = nl.arange(8)[None, :]
        for i in nl.affine_range(2):
            i_p = i * 128 + nl.arange(128)[:, None]
            t = nl.load(a[i_p, i_f], mask=(i_p < a.shape[0]))
            nl.store(out[i_p, i_f], nl.exp(t, mask=(i_p < a.shape[0])), mask=(i_p < a.shape[0]))
        return out

    a = rand(200, 8)
    np.testing.assert_allclose(k(a), np.exp(a), rtol=1e-6)


# ================================================================================================
# ISA operand rules
# ================================================================================================
@covers("err_activation_bias_invalid_type")
def test_activation_bias_int8() -> None:
    @nki.jit
    def k(a):
        data = nl.load(a)
        r = nisa.activation(op=nl.exp, data=data, bias=nisa.memset((128, 1), 1.2, dtype=np.int8))  # ERR
        return r

    expect_error(lambda: k(rand(128, 8)), "err_activation_bias_invalid_type",
                 "'bias' param of 'activation' must be a vector of type float32, float16, or bfloat16, got 'int8'", k)


@covers("err_activation_scale_invalid_type")
def test_activation_scale_bf16() -> None:
    @nki.jit
    def k(a):
        data = nl.load(a)
        r = nisa.activation(op=nl.exp, data=data, scale=nisa.memset((128, 1), 1.2, dtype=nl.bfloat16))  # ERR
        return r

    expect_error(lambda: k(rand(128, 8)), "err_activation_scale_invalid_type",
                 "'scale' param of 'activation' must be a scalar or vector of type float32, got 'bfloat16'", k)


@covers("err_activation_scale_scalar_or_vector")
def test_activation_scale_full_tile() -> None:
    @nki.jit
    def k(a):
        data = nl.load(a)
        r = nisa.activation(op=nl.exp, data=data, scale=nisa.memset((128, 128), 1.2, dtype=np.float32))  # ERR
        return r

    expect_error(lambda: k(rand(128, 8)), "err_activation_scale_scalar_or_vector",
                 "'scale' param of 'activation' can only be a scalar or a vector in partition dimension", k)


def test_activation_with_valid_bias_and_scale() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        data = nl.load(a)
        r = nisa.activation(op=nl.exp, data=data, bias=nisa.memset((128, 1), 0.5, dtype=nl.bfloat16),
                            scale=nisa.memset((128, 1), 2.0, dtype=np.float32))
        nl.store(out, r)
        return out

    a = rand(128, 8)
    np.testing.assert_allclose(k(a), np.exp(2 * a + 0.5), rtol=1e-6)


@covers("err_instruction_unsupported_op")
def test_tensor_reduce_with_subtract() -> None:
    @nki.jit
    def k(a):
        data = nl.load(a)
        r = nisa.tensor_reduce(np.subtract, data, axis=1)  # ERR
        return r

    expect_error(lambda: k(rand(128, 8)), "err_instruction_unsupported_op",
                 "subtract is not supported in 'tensor_reduce'", k)


@covers("err_reduce_unsupported_negate")
def test_tensor_reduce_negate_with_bitwise_op() -> None:
    @nki.jit
    def k(a):
        data = nl.load(a)
        r = nisa.tensor_reduce(np.bitwise_or, data, axis=1, negate=True)  # ERR
        return r

    expect_error(lambda: k(np.ones((128, 8), np.int32)), "err_reduce_unsupported_negate",
                 "negate option can only be used with arithmetic ops, unsupported op=bitwise_or", k)


@covers("err_reduce_partition_axis")
def test_reduce_along_partitions() -> None:
    @nki.jit
    def k(a):
        data = nl.load(a)
        r = nl.sum(data, axis=0)  # ERR
        return r

    expect_error(lambda: k(rand(128, 8)), "err_reduce_partition_axis", "cannot reduce along the partition axis", k)


@covers("err_min_arch_support_for_inst")
def test_hardware_dge_needs_trn2() -> None:
    def body(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a, dge_mode=nisa.dge_mode.hwdge)  # ERR
        return out

    a = rand(128, 8)
    np.testing.assert_array_equal(nki.jit(body, platform_target="trn2")(a), a)
    expect_error(lambda: nki.jit(body, platform_target="trn1")(a), "err_min_arch_support_for_inst",
                 "requires min target gen3", body)


# ================================================================================================
# SPMD grids and the launch itself
# ================================================================================================
@covers("err_program_id_axis_out_of_bounds")
def test_program_id_axis_out_of_range() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        j = nl.program_id(1)  # ERR
        nl.store(out, nl.load(a[j]))
        return out

    err = expect_error(lambda: k[2](rand(2, 128, 8)), "err_program_id_axis_out_of_bounds",
                       "axis in `program_id` is out-of-bound(s) of the spmd launch grid (axis=1", k)
    assert "rank 1" in str(err)


def test_program_id_without_a_grid() -> None:
    @nki.jit
    def k(a):
        j = nl.program_id(0)  # ERR
        return j

    expect_error(lambda: k(rand(1, 1)), "err_program_id_axis_out_of_bounds", "rank 0", k)


@covers("err_nested_kernel_with_spmd_grid")
def test_gridded_kernel_called_inside_a_kernel() -> None:
    @nki.jit
    def inner(a):
        return a

    @nki.jit
    def outer(a):
        r = inner[2](a)  # ERR
        return r

    expect_error(lambda: outer(rand(1, 1)), "err_nested_kernel_with_spmd_grid",
                 "inner[2]) inside another kernel is not supported.", outer)


@covers("err_spmd_multi_core_not_supported")
def test_multi_core_grid_needs_trn2(monkeypatch: pytest.MonkeyPatch) -> None:
    def body(a):
        out = nl.ndarray((2, 128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        c = nl.program_id(0)
        nl.store(out[c], nl.load(a[c]))
        return out

    a = rand(2, 128, 8)
    np.testing.assert_array_equal(nki.jit(body, platform_target="trn2")[nl.nc(2)](a), a)

    def on_trn1() -> None:
        nki.jit(body, platform_target="trn1")[nl.nc(2)](a)  # ERR

    expect_error(on_trn1, "err_spmd_multi_core_not_supported",
                 "SPMD grid with multi neuron cores is not supported on trn1", on_trn1, last_frame=False)

    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")

    def on_env_trn1() -> None:
        nki.jit(body)[nl.nc(2)](a)  # ERR

    expect_error(on_env_trn1, "err_spmd_multi_core_not_supported", "not supported on trn1", on_env_trn1,
                 last_frame=False)
    np.testing.assert_array_equal(nki.jit(body)[2](a), a)  # a plain grid still runs on trn1


@covers("err_nki_api_outside_of_nki_kernel")
def test_language_api_outside_a_kernel() -> None:
    with pytest.raises(RuntimeError) as info:
        nl.zeros((128, 1), dtype=nl.float32)
    err = info.value
    assert isinstance(err, NKIError) and err.error_id == "err_nki_api_outside_of_nki_kernel"
    assert str(err).startswith("calling NKI API outside of NKI kernels is not supported.")
    assert str(err).endswith("See docs/errors/err_nki_api_outside_of_nki_kernel.md for what it means and how to fix it.")
    with pytest.raises(RuntimeError, match="outside of NKI kernels"):
        nisa.memset((128, 1), 0.0, dtype=nl.float32)


@covers("err_unsupported_kernel_argument")
def test_float64_argument() -> None:
    @nki.jit
    def k(a):
        return a

    def test_body() -> None:
        k(np.ones((128, 8)))  # ERR

    err = expect_error(test_body, "err_unsupported_kernel_argument", "argument 'a' is float64", test_body,
                       last_frame=False)
    assert "astype(np.float32)" in str(err)


def test_wrong_argument_count() -> None:
    @nki.jit
    def k(a, b):
        return a

    with pytest.raises(TypeError, match=r"kernel k\(a, b\) called with the wrong arguments"):
        k(rand(1, 1))
    with pytest.raises(TypeError, match="wrong arguments"):
        k(rand(1, 1), rand(1, 1), rand(1, 1))


def test_non_array_argument_is_a_clear_error() -> None:
    @nki.jit
    def k(a):
        t = nl.load(a)
        return t

    with pytest.raises(TypeError, match="'src' of 'load' must be an NKI tile, got list"):
        k([[1.0, 2.0]])
    with pytest.raises(TypeError, match="must be an NKI tile, got str"):
        k("not an array")


def test_list_of_arrays_argument() -> None:
    @nki.jit
    def k(a):
        return a

    with pytest.raises(TypeError, match="list of arrays"):
        k([rand(1, 1), rand(1, 1)])


@covers("err_annotation_shape_mismatch")
def test_annotation_shape_mismatch() -> None:
    @nki.jit
    def k(data: nt.tensor[128, 512]):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.load(data))
        return out

    def test_body() -> None:
        k(rand(128, 128))  # ERR

    expect_error(test_body, "err_annotation_shape_mismatch",
                 "shape of `data[128, 128]` does not match the expected shape of [128, 512]", test_body,
                 last_frame=False)


def test_assert_shape_in_a_kernel() -> None:
    @nki.jit
    def k(a):
        a.assert_shape((128, 512))  # ERR
        return a

    expect_error(lambda: k(rand(128, 128)), "err_annotation_shape_mismatch",
                 "does not match the expected shape of [128, 512]", k)


# ================================================================================================
# The stack allocator (ncc.enable_stack_allocator)
# ================================================================================================
@covers("err_stack_overflow_sbuf")
def test_stack_overflow_sbuf() -> None:
    import neuronxcc.nki.compiler as ncc

    def body(a):
        t1 = nl.ndarray((128, 40000), dtype=nl.float32, buffer=nl.sbuf)
        t2 = nl.ndarray((128, 40000), dtype=nl.float32, buffer=nl.sbuf)  # ERR
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t1[0:128, 0:1] = nl.load(a)
        t2[0:128, 0:1] = nl.load(a)
        nl.store(out, nl.add(t1[0:128, 0:1], t2[0:128, 0:1]))
        return out

    a = rand(128, 1)
    # without the stack allocator, total SBUF oversubscription is not a front-end error (it spills)
    np.testing.assert_allclose(nki.jit(body)(a), 2 * a)
    k = ncc.enable_stack_allocator(nki.jit(body))
    expect_error(lambda: k(a), "err_stack_overflow_sbuf",
                 "stack overflow: required sbuf size 320000 exceeds available sbuf size 212984", body)


@covers("err_stack_overflow_psum")
def test_stack_overflow_psum() -> None:
    import neuronxcc.nki.compiler as ncc

    @nki.jit
    @ncc.enable_stack_allocator
    def k(a):
        banks = [nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(8)]
        extra = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.psum)  # ERR
        return banks, extra

    expect_error(lambda: k(rand(1, 1)), "err_stack_overflow_psum",
                 "stack overflow: required psum banks 9 exceeds available psum banks 8", k)


def test_stack_allocator_frees_a_scope_when_its_iteration_ends() -> None:
    import neuronxcc.nki.compiler as ncc

    @ncc.enable_stack_allocator
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.sequential_range(4):
            big = nl.ndarray((128, 40000), dtype=nl.float32, buffer=nl.sbuf)  # 160000 B, one at a time
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            big[0:128, 0:1] = nl.load(a[i])
            acc[0:128, 0:1] = big[0:128, 0:1]
            nl.store(out[i], nl.copy(acc[0:128, 0:1]))
        return out

    a = rand(4, 128, 1)
    np.testing.assert_array_equal(k(a), a)
    np.testing.assert_array_equal(k[2](a), a)  # and every SPMD instance starts with an empty stack


def test_stack_allocator_frees_a_python_range_iterations_tiles_once_the_next_rebinds_them() -> None:
    """AWS's RMSNorm-Quant reference (nki-samples 1ee7f1d, rmsnorm_quant.py:474-490) allocates ~90 KiB per partition
    in each iteration of a Python range loop (which AWS's docs say the compiler runs as sequential_range) and its
    design doc publishes trn2 latencies for 16 iterations: a tile the kernel can no longer reach -- its helper's
    too -- is freed.  Tiles a list still holds stay (test_capacity's nine accumulators), and one iteration that
    overflows alone still does."""
    import neuronxcc.nki.compiler as ncc

    def helper(a, i):
        half = nl.ndarray((128, 20000), dtype=nl.float32, buffer=nl.sbuf)  # 80000 B, made by a function it calls
        half[0:128, 0:1] = nl.load(a[i])
        return half

    @ncc.enable_stack_allocator
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in range(4):
            big = nl.ndarray((128, 20000), dtype=nl.float32, buffer=nl.sbuf)  # 80000 + 80000 B per iteration
            big[0:128, 0:1] = helper(a, i)[0:128, 0:1]
            nl.store(out[i], nl.exp(big[0:128, 0:1]))
        return out

    a = rand(4, 128, 1)
    np.testing.assert_allclose(k(a), np.exp(a), rtol=1e-6)
    np.testing.assert_allclose(k[2](a), np.exp(a), rtol=1e-6)
    from nkisim import api  # and its program, executed without the kernel's frames

    np.testing.assert_allclose(api.execute(api.trace(k, [a]), [a]).outputs, np.exp(a), rtol=1e-6)

    @ncc.enable_stack_allocator
    @nki.jit
    def overflows(a):
        for _i in range(2):
            big = nl.ndarray((128, 30000), dtype=nl.float32, buffer=nl.sbuf)
            other = nl.ndarray((128, 30000), dtype=nl.float32, buffer=nl.sbuf)  # ERR
            big[0:128, 0:1] = other[0:128, 0:1]
        return a

    expect_error(lambda: overflows(a), "err_stack_overflow_sbuf",
                 "stack overflow: required sbuf size 240000 exceeds available sbuf size 212984", overflows)


def test_every_catalogue_error_has_a_trigger() -> None:
    missing = set(CATALOGUE) - COVERED - set(NOT_TRIGGERABLE)
    assert not missing, f"catalogue ids without a triggering kernel: {sorted(missing)}"
    assert set(SPEC_CLASS) <= set(CATALOGUE)


def test_a_simulation_mode_kernel_may_return_a_tile() -> None:
    """``nki.jit(mode="simulation")`` was the legacy CPU simulator, which handed back an SBUF tile a kernel
    returned (AWS's range_select test relies on it); any other launch keeps the compiler's rule."""

    def body(a):
        return nl.exp(nl.load(a))  # ERR

    a = rand(128, 8)
    np.testing.assert_allclose(nki.jit(body, mode="simulation")(a), np.exp(a), rtol=1e-6)
    expect_error(lambda: nki.jit(body)(a), "err_unsupported_memory", "Expected kernel output", body,
                 last_frame=False)
