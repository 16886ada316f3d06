"""The compiler's error catalogue, re-created so students see the messages they would see on Trainium.

Each error carries the compiler's error id (``err_*``), an exception class that matches the real
front end (ValueError, TypeError, IndexError, RuntimeError or NKISyntaxError), the key phrase of the
compiler's message, and a link to the course's own page on that error (``docs/errors/<error id>.md``, built into
``errors/<error id>.html`` on the site): what it means on the hardware, a kernel that raises it and the fix.
neuronx-cc ends its messages with "Info on how to fix:" and a link to the NKI error guide, which AWS removed in
SDK 2.27, so the link here goes to the page that stands in for it.  The simulator never raises a bare
exception for a kernel-programming mistake: it raises one of these.
"""

from __future__ import annotations

#: where an error's page lives in the course repository (the site builds each into ``errors/<id>.html``)
ERROR_PAGES = "docs/errors"


class NKIError(Exception):
    """Mixin for every error the simulator raises on behalf of the compiler."""

    error_id: str = ""
    #: (filename, lineno) of the student's line that caused the error, filled in when raised.
    nki_location: tuple[str, int] | None = None


class NKIValueError(NKIError, ValueError):
    pass


class NKITypeError(NKIError, TypeError):
    pass


class NKIIndexError(NKIError, IndexError):
    pass


class NKIRuntimeError(NKIError, RuntimeError):
    pass


class NKISyntaxError(NKIError, SyntaxError):
    """The compiler's module-local syntax error class (most front-end rule violations)."""

    def __str__(self) -> str:  # SyntaxError.__str__ would append "(file, line N)" twice
        return self.msg or ""


# Tracebacks show the builtin names ("ValueError: number of partitions ...") exactly as neuronx-cc
# prints them; ``isinstance(err, NKIError)`` and ``err.error_id`` still identify our errors.
for _cls, _shown in ((NKIValueError, "ValueError"), (NKITypeError, "TypeError"), (NKIIndexError, "IndexError"),
                     (NKIRuntimeError, "RuntimeError"), (NKISyntaxError, "NKISyntaxError")):
    _cls.__module__ = "builtins"
    _cls.__qualname__ = _shown


# error id -> exception class.  Ids follow nki.errors.html; the class follows the real front end.
CATALOGUE: dict[str, type[NKIError]] = {
    "err_num_partition_exceed_arch_limit": NKIValueError,
    "err_num_partition_mismatch": NKIValueError,
    "err_size_of_dimension_exceed_arch_limit": NKIValueError,
    "err_exceed_max_supported_dimension": NKIValueError,
    "err_param_shape_incompatible_with_numpy": NKIValueError,
    "err_param_shape_mismatch": NKIValueError,
    "err_param_shape_incompatible_with_matmul": NKIValueError,
    "err_store_dst_shape_smaller_than_other_shape": NKIValueError,
    "err_tensor_access_out_of_bound": NKIIndexError,
    "err_unsupported_memory": NKITypeError,
    "err_1d_arange_not_supported": NKISyntaxError,
    "err_unsupported_mixing_basic_advanced_tensor_indexing": NKISyntaxError,
    "err_failed_to_infer_tile_from_local_tensor": NKITypeError,
    "err_leading_dimension_of_tensor_must_be_partition": NKISyntaxError,
    "err_local_variable_used_out_of_scope": NKISyntaxError,
    "err_unexpected_output_dependencies": NKISyntaxError,
    "err_tensor_output_not_written_to": NKIValueError,
    "err_cannot_update_immutable_parameter": NKITypeError,
    "err_mutable_parameter_not_returned": NKISyntaxError,
    "err_hbm_tensor_with_init_value_not_supported": NKISyntaxError,
    "err_shared_hbm_must_in_kernel_level": NKIRuntimeError,
    "err_dynamic_control_flow_not_supported": NKISyntaxError,
    "err_control_flow_condition_depending_on_arange": NKISyntaxError,
    "err_ambiguous_tensor_truth_value": NKIValueError,
    "err_unsupported_expression_in_mask": NKIValueError,
    "err_while_loop_requires_unconditional_entry": NKIValueError,
    "err_nki_api_outside_of_nki_kernel": NKIRuntimeError,
    "err_nested_kernel_with_spmd_grid": NKISyntaxError,
    "err_program_id_axis_out_of_bounds": NKIIndexError,
    "err_cannot_assign_to_index": NKITypeError,
    "err_annotation_shape_mismatch": NKITypeError,
    "err_indirect_indices_free_dim": NKISyntaxError,
    "err_indirect_indices_sbuf": NKISyntaxError,
    "err_indirect_indices_are_not_supported_with_nki_api": NKISyntaxError,
    "err_copy_dynamic_indirect_indices_not_natively_supported": NKISyntaxError,
    "err_activation_bias_invalid_type": NKITypeError,
    "err_activation_scale_invalid_type": NKITypeError,
    "err_activation_scale_scalar_or_vector": NKISyntaxError,
    "err_instruction_unsupported_op": NKISyntaxError,
    "err_reduce_unsupported_negate": NKISyntaxError,
    "err_supported_operand_dtype": NKITypeError,
    "err_unsupported_dtype_value": NKIValueError,
    "err_operand_cannot_be_none": NKIValueError,
    "err_stack_overflow_sbuf": NKIRuntimeError,
    "err_stack_overflow_psum": NKIRuntimeError,
    "err_mask_not_equal_not_supported": NKISyntaxError,
    "err_logic_or_not_supported": NKIValueError,
    "err_min_arch_support_for_inst": NKISyntaxError,
    "err_transpose_on_tensor_engine_not_allowed_in_allocated_kernel": NKISyntaxError,
    # Not in nki.errors.html but enforced by the compiler (front-end asserts or back end).
    "err_sbuf_free_dim_exceed_partition_size": NKIValueError,
    "err_psum_tile_exceed_bank_size": NKIValueError,
    "err_psum_dtype": NKITypeError,
    "err_spmd_multi_core_not_supported": NKIValueError,
    "err_unsupported_kernel_argument": NKITypeError,
    "err_insufficient_rank": NKIValueError,
    "err_reduce_partition_axis": NKIValueError,
}

#: Ids the compiler's own error catalogue (nki.errors.html, SDK 2.26 and earlier) never listed: the simulator
#: enforces them after the compiler's asserts and back end.  They have a course page like the others.
UNDOCUMENTED = {
    "err_sbuf_free_dim_exceed_partition_size",
    "err_psum_tile_exceed_bank_size",
    "err_psum_dtype",
    "err_spmd_multi_core_not_supported",
    "err_unsupported_kernel_argument",
    "err_insufficient_rank",
    "err_reduce_partition_axis",
}


def error_page(error_id: str) -> str:
    """The course's page on ``error_id``: its path in the repository (``docs/errors/<id>.md``)."""
    return f"{ERROR_PAGES}/{error_id}.md"


def sentence(text: str) -> str:
    """``text`` ending as a sentence does, so the link after it does not run on from its last word."""
    text = text.rstrip()
    return text if not text or text[-1] in ".?!" else text + "."


def make_error(error_id: str, message: str) -> NKIError:
    """Build (not raise) the catalogued exception: the compiler's message, as a sentence, then where the course
    explains the error and its fix."""
    cls = CATALOGUE[error_id]
    err = cls(f"{sentence(message)} See {error_page(error_id)} for what it means and how to fix it.")
    err.error_id = error_id
    return err


def nki_error(error_id: str, message: str) -> NKIError:
    """Shorthand used as ``raise nki_error(...)`` so the raise statement stays at the call site."""
    return make_error(error_id, message)


def shape_str(name: str, shape: tuple[int, ...]) -> str:
    """``name[4, 512]``: how the compiler's messages write a tensor and its shape."""
    return f"{name}[{', '.join(str(s) for s in shape)}]"
