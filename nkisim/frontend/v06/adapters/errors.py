"""The errors NKI 0.6 adds to the compiler's catalogue, raised at the kernel's own line.

AWS removed the legacy error guide in SDK 2.27, so 0.6 errors have no documentation anchor; their wording
follows the conditions the 0.6 docs state (migration guide, release notes, API docstrings; the comment on each
id names the condition, E-numbers as in the team's reference ``nki-0.6-delta.md`` section 2.9).  They are
``NKIError``s like the legacy ones, so a launch blames the student's line the same way.  Shared ops keep
raising the legacy catalogue's errors (``core.errors``): the hardware rules they check are the same.
"""

from __future__ import annotations

from nkisim.core.errors import NKIError, NKIIndexError, NKIRuntimeError, NKISyntaxError, NKITypeError, NKIValueError

CATALOGUE: dict[str, type[NKIError]] = {
    "err_enum_argument": NKITypeError,  # E9: a raw int (or string) where an enum member is expected
    "err_string_buffer": NKITypeError,  # E9: a string buffer name
    "err_operand_type": NKITypeError,  # an operand of the wrong kind (a list where a tensor is expected)
    "err_platform_target_argument": NKIValueError,  # E2: nki.jit(platform_target=...)
    "err_dma_psum_source": NKITypeError,  # E5: dma_copy from PSUM
    "err_dma_hwdge_cast": NKITypeError,  # E6: dma_copy(dge_mode=hwdge) between different dtypes
    "err_dma_engine": NKIValueError,  # dma_copy(engine=...) without hwdge, or not scalar/sync
    "err_dma_dge_mode": NKIValueError,  # dma_copy(dge_mode=hwdge/none) through a per-partition (vector_offset) view
    "err_memset_value_type": NKITypeError,  # E7: memset value type differs from dst's
    "err_transpose_dtype": NKITypeError,  # nc_transpose: dst.dtype must equal data.dtype
    "err_reduce_axis": NKIValueError,  # E8: reduce axes not the trailing dims of the actual rank
    "err_invalid_view": NKIValueError,  # a view method's precondition (partition dim, contiguity, ...)
    "err_view_out_of_bounds": NKIIndexError,  # an index, slice or pattern outside the tensor
    "err_kernel_argument": NKITypeError,  # E10: list kernel arguments, keyword-only parameters
    "err_unsupported_syntax": NKISyntaxError,  # E10: ``is`` / ``is not`` in a kernel
    "err_no_arguments": NKIValueError,  # E26: a kernel called with no arguments
    "err_activation_bias_shape": NKIValueError,  # E27: activation bias whose free size is not 1
    "err_unsupported_target": NKIValueError,  # an instruction the target's NeuronCore generation lacks
    "err_dependency_across_dynamic_loop": NKIValueError,  # E23: a depends_on / with_schedule edge crossing a
    # dynamic loop's boundary
    "err_dtype_argument": NKITypeError,  # E32: a dtype kernel argument with no NKI equivalent
    "err_nested_dynamic_loop_register": NKIRuntimeError,  # E22: a nested dynamic_range writes a loop-carried register
    "err_schedule_unknown_instruction": NKIValueError,  # a with_schedule name no instruction carries
    "err_schedule_against_program_order": NKIValueError,  # an edge whose producer is issued after its consumer
    "err_too_many_edges": NKIValueError,  # one instruction waiting for more than limits.MAX_EDGES others
}
# E33 (nl calls the compiler rejects today but simulators run) is a warning, not an error: known_issues.py


def error(error_id: str, message: str) -> NKIError:
    """The 0.6 error ``error_id`` (raise it at the call site: ``raise error(...)``)."""
    err = CATALOGUE[error_id](message)
    err.error_id = error_id
    return err
