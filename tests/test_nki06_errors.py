"""Every error NKI 0.6 documents, raised at the kernel's own line with the compiler's wording where AWS gives it.

The E-numbers are those of the team's reference (``nki-0.6-delta.md`` section 2.9), which lists each condition
with the AWS document that states it; AWS removed its legacy error guide in SDK 2.27, so most 0.6 conditions have
no literal text: the key phrase checked is ours and names the rule.  Each misuse sits on a line marked ``# ERR``;
the error must point there (``err.nki_location`` for the simulator's errors, the innermost frame of this file for
Python's own ``TypeError`` of a bad keyword).  Errors this file does not cover, and why, are listed in
``NOT_COVERED`` (``docs/nki06.md`` shows the same list).
"""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest
from program_check import counts_python_runs

import nkisim
from nkisim import api

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

from nkisim.frontend.v06.adapters.errors import CATALOGUE  # noqa: E402

HERE = os.path.abspath(__file__)
NOT_COVERED: dict[str, str] = {}


def err_line(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if line.rstrip().endswith("# ERR")]
    assert len(hits) == 1
    return hits[0]


def refused(body, exc, match, *args, line_of=None):
    """Launch ``body`` as a 0.6 kernel; it must raise ``exc`` matching ``match`` at its ``# ERR`` line."""
    with pytest.raises(exc, match=match) as info:
        nki.jit(body)(*(args or (np.ones((128, 8), np.float32),)))
    err = info.value
    loc = getattr(err, "nki_location", None)
    if loc is None:  # Python's own TypeError: the innermost frame of this file is the student's line
        loc = next((e.path, e.lineno + 1) for e in reversed(info.traceback) if str(e.path) == HERE)
    assert os.path.abspath(str(loc[0])) == HERE and loc[1] == err_line(line_of or body), loc
    return err


def test_e1_a_legacy_call_inside_a_06_kernel():
    import neuronxcc.nki.language as legacy_nl

    def body(x):
        t = legacy_nl.load(x)  # ERR
        return t

    refused(body, TypeError, "neuronxcc.nki APIs cannot be used inside an NKI 0.6 kernel")


def test_e2_platform_target_and_e3_mode():
    with pytest.raises(ValueError, match="NEURON_PLATFORM_TARGET_OVERRIDE"):
        nki.jit(platform_target="trn1")(lambda x: x)
    with pytest.warns(DeprecationWarning, match="mode=...\\) is ignored"):
        nki.jit(mode="simulation")(lambda x: x)


def test_e4_an_unknown_keyword():
    def body(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, dst_rmw_op=nl.add)  # ERR
        return x

    refused(body, TypeError, r"nki\.isa\.dma_copy\(\) got an unexpected keyword argument 'dst_rmw_op'")


def test_e5_a_dma_from_psum_and_e6_a_casting_hwdge():
    def psum_source(x):
        p = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.psum)
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=p)  # ERR
        return out

    refused(psum_source, TypeError, "DMA cannot read PSUM")

    def hwdge(x):
        t = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, dge_mode=nisa.dge_mode.hwdge)  # ERR
        return x

    refused(hwdge, TypeError, "hwdge cannot cast")


def test_e7_a_memset_value_of_the_wrong_type():
    def body(x):
        t = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=2.0)  # ERR
        return x

    refused(body, TypeError, "NKI 0.3 dropped the silent cast of a float value to an integer dst")


def test_e7_narrowed_memset_zero_point_zero_on_an_integer_dst_as_nkilib_writes_it():
    """nki-library's 2.29_release kernels (validated on the 0.3 compiler) write memset(value=0.0) on uint32 tiles."""

    @nki.jit
    def body(x):
        t = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)
        out = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    np.testing.assert_array_equal(body(np.ones((128, 8), np.float32)), np.zeros((128, 8), np.uint32))


def test_e8_reduce_axes_must_be_trailing():
    def body(x):
        t = nl.ndarray((128, 4, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0)
        r = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=r, op=nl.add, data=t, axis=1)  # ERR
        return x

    refused(body, ValueError, "trailing free dimensions")

    def nl_sum(x):
        t = nl.load(x)
        s = nl.sum(t, axis=0)  # ERR
        return s

    refused(nl_sum, ValueError, "trailing free dimensions")


def test_e9_raw_enum_values_and_string_buffers():
    def raw(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, dge_mode=2)  # ERR
        return x

    refused(raw, TypeError, "must be a member of nki.isa.dge_mode.*NKI 0.3 dropped integers")

    def raw_engine(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0, engine=2)  # ERR
        return x

    refused(raw_engine, TypeError, "must be a member of nki.isa.engine")

    def string(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer="sbuf")  # ERR
        return t

    refused(string, TypeError, "not strings")


def test_e9_narrowed_dge_mode_3_as_nkilib_passes_it_runs_with_a_warning_quoting_the_guide():
    """nki-library's 2.29_release kernels pass dge_mode=3 (``_DGE_MODE_NONE = 3``): read as dge_mode.none."""
    from nkisim.frontend.v06.adapters.known_issues import DocumentedRuleWarning

    @nki.jit
    def body(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, dge_mode=3)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    with pytest.warns(DocumentedRuleWarning, match="Raw integer values .* nisa.dge_mode.none"):
        np.testing.assert_array_equal(body(x), x)


def test_e10_is_operators_warn_quoting_the_guide_keyword_only_parameters_and_list_arguments():
    """``x is None`` runs (nki-library's validated kernels test it on hundreds of lines) with a warning at the
    kernel's first ``is`` line quoting AWS's migration guide."""
    from nkisim.frontend.v06.adapters.known_issues import DocumentedRuleWarning

    def identity(x, bias=None):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        if bias is None:  # ERR
            nisa.dma_copy(dst=out, src=x)
        return out

    x = np.ones((128, 8), np.float32)
    with pytest.warns(DocumentedRuleWarning, match="does not support Python's is / is not") as record:
        np.testing.assert_array_equal(nki.jit(identity)(x), x)
    assert (record[0].filename, record[0].lineno) == (HERE, err_line(identity))

    with pytest.raises(TypeError, match="keyword-only"):
        nki.jit(lambda x, *, flag=True: x)

    def takes(x, sizes):
        return x

    with pytest.raises(TypeError, match="pass a tuple"):
        nki.jit(takes)(np.ones((128, 8), np.float32), [1, 2])
    nki.jit(takes)(np.ones((128, 8), np.float32), (1, 2))  # a tuple is fine


def test_e11_an_output_outside_shared_hbm():
    def body(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.private_hbm)
        nl.store(out, nl.load(x))
        return out  # ERR

    refused(body, TypeError, "address space 'shared_hbm'")


def test_e12_dma_transpose_dst_must_be_the_permuted_shape():
    def body(x):
        t = nl.ndarray((8, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        s = nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=s, value=1.0)
        nisa.dma_transpose(dst=t.reshape((8, 2, 64)), src=s)  # ERR
        return x

    refused(body, ValueError, "dst must have exactly the shape of src permuted")


def test_e13_removed_instructions():
    with pytest.raises(AttributeError, match="removed in NKI 0.4"):
        nisa.tensor_copy_dynamic_src  # noqa: B018
    with pytest.raises(AttributeError, match="removed in NKI 0.4"):
        nisa.tensor_copy_dynamic_dst  # noqa: B018


def test_e14_a_reshape_that_changes_the_element_count():
    def body(x):
        t = nl.load(x)
        v = t.reshape((128, 9))  # ERR
        return v

    refused(body, ValueError, "a reshape keeps the element count")


def test_e15_rsqrt_of_a_psum_tile():
    def body(x):
        p = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.psum)
        r = nl.rsqrt(p)  # ERR
        return r

    refused(body, TypeError, "nl.rsqrt runs on GpSimd, which cannot read PSUM")


def test_e16_more_than_128_partitions():
    def body(x):
        t = nl.ndarray((256, 8), dtype=nl.float32, buffer=nl.sbuf)  # ERR
        nisa.tensor_tensor(dst=t, data1=t, data2=t, op=nl.add)
        return x

    err = refused(body, ValueError, "exceed architecture limitation of 128")  # at the allocation, as legacy
    assert "Info on how to fix" not in str(err)  # the legacy guide's link is not offered to 0.6 kernels


def test_e17_to_e21_dynamic_control_flow():
    def write_induction(x):
        def step(i):
            nisa.register_move(i, 0)  # ERR

        nl.fori_loop(0, 2, step)
        return x

    refused(write_induction, AssertionError, "read-only", line_of=write_induction)

    def python_if(x):
        r = nisa.register_alloc(1)
        if r:  # ERR
            pass
        return x

    refused(python_if, TypeError, "cannot be used in a Python if")

    def in_no_reorder(x):
        with nl.no_reorder():
            nl.fori_loop(0, 2, lambda i: None)  # ERR
        return x

    refused(in_no_reorder, ValueError, "inside nl.no_reorder")

    def deprecated(x):
        for _ in nl.dynamic_range(2):  # ERR
            pass
        return x

    with pytest.warns(DeprecationWarning, match="dynamic_range is deprecated") as rec:
        nki.jit(deprecated)(np.ones((128, 8), np.float32))
    assert rec[0].lineno == err_line(deprecated)


def test_e24_a_jitted_kernel_called_from_a_kernel_runs_inline_with_the_guide_quoted_and_e26_no_arguments():
    """E24 became a warning: AWS's migration guide says to remove the decorator, but nki-library 2.29_release
    (validated) calls its @nki.jit attention_block_tkg from inside kernels (rule kernel.sub_kernel)."""
    from nkisim.frontend.v06.adapters.known_issues import DocumentedRuleWarning

    @nki.jit
    def inner(x):
        return x

    def outer(x):
        inner(x)
        return x

    with pytest.warns(DocumentedRuleWarning, match="will need to be removed from sub-kernels"):
        nki.jit(outer)(np.ones((128, 8), np.float32))
    with pytest.raises(ValueError, match="called with no arguments"):
        nki.jit(lambda: None)()


def test_e25_legacy_entry_points_are_gone():
    for name in ("benchmark", "profile", "baremetal", "simulate_kernel"):
        with pytest.raises(AttributeError, match=f"NKI 0.6 has no nki.{name}"):
            getattr(nki, name)


def test_e27_an_activation_bias_wider_than_one():
    def body(x):
        t = nl.load(x)
        b = nl.load(x)
        a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=a, op=nl.exp, data=t, bias=b)  # ERR
        return x

    refused(body, ValueError, "free size of 1")


def test_e28_mixed_fp8_flavours_in_a_matmul():
    def body(x):
        s = nl.ndarray((128, 64), dtype=nl.float8_e4m3, buffer=nl.sbuf)
        m = nl.ndarray((128, 64), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
        acc = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=s, moving=m)  # ERR
        return x

    refused(body, TypeError, "mix float8_e4m3 with float8_e4m3fn")


def test_e29_oob_skip_without_indirect_addressing():
    def body(x):
        s = nl.ndarray((16, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        t = nl.ndarray((128, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=s, oob_mode=nisa.oob_mode.skip)  # ERR
        return x

    refused(body, TypeError, "needs an indirect source")


def test_e30_the_lnc_degree():
    @nki.jit
    def k(x):
        return x

    with pytest.raises(ValueError, match="logical NeuronCore degree"):
        k[8](np.ones((128, 8), np.float32))


def test_e31_a_psum_address_off_a_bank_boundary():
    def body(x):
        p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum, address=(0, 1024))  # ERR
        return p

    refused(body, TypeError, "must start at a bank boundary")


def test_e23_a_dependency_may_not_cross_a_dynamic_loop():
    def out_of_a_loop(x):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        made = []
        nl.fori_loop(0, 2, lambda i: made.append(nisa.memset(dst=t, value=0.0, name="zero")))
        nisa.dma_copy(dst=x, src=t, name="store").depends_on(made[0])  # ERR
        return x

    err = refused(out_of_a_loop, ValueError, "cannot depend on instruction 'zero', issued inside a dynamic loop")
    assert err.error_id == "err_dependency_across_dynamic_loop" and "deadlock" in str(err)

    def into_a_loop_is_fine(x):  # the producer in an enclosing scope, and one in the same body
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        first = nisa.memset(dst=t, value=1.0)

        def body(i):
            again = nisa.memset(dst=t, value=2.0).depends_on(first)
            nisa.dma_copy(dst=x, src=t).depends_on(again, first)

        nl.fori_loop(0, 2, body)
        for _ in range(2):  # Python loops are unrolled: no boundary
            last = nisa.memset(dst=t, value=3.0)
        nisa.dma_copy(dst=x, src=t).depends_on(last)
        return x

    out = nki.jit(into_a_loop_is_fine)(np.zeros((128, 8), np.float32))
    assert np.array_equal(np.asarray(out), np.full((128, 8), 3.0, np.float32))


def test_e23_a_with_schedule_edge_may_not_cross_a_dynamic_loop():
    def out_of_a_loop(x):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nl.fori_loop(0, 2, lambda i: nisa.memset(dst=t, value=0.0, name="zero"))
        nisa.dma_copy(dst=x, src=t, name="store")  # ERR
        return x

    with pytest.raises(ValueError, match="with_schedule edge \\('store', 'zero'\\): instruction 'store' cannot "
                                         "depend on 'zero', issued inside a dynamic loop") as info:
        nki.jit(out_of_a_loop).with_schedule([("store", "zero")])(np.ones((128, 8), np.float32))
    err = info.value
    assert err.error_id == "err_dependency_across_dynamic_loop" and "deadlock" in str(err)
    assert os.path.abspath(err.nki_location[0]) == HERE and err.nki_location[1] == err_line(out_of_a_loop)

    def into_a_loop_is_fine(x):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0, name="first")
        nl.fori_loop(0, 2, lambda i: nisa.dma_copy(dst=x, src=t, name="store"))
        return x

    out = nki.jit(into_a_loop_is_fine).with_schedule([("store", "first")])(np.zeros((128, 8), np.float32))
    assert np.array_equal(np.asarray(out), np.ones((128, 8), np.float32))


def test_e32_a_dtype_with_no_nki_equivalent_names_the_argument():
    def body(x, dtype):
        t = nl.ndarray(x.shape, dtype=dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        out = nl.ndarray(x.shape, dtype=dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.ones((128, 8), np.float32)
    for bad in (np.complex64, np.float64, np.dtype("int64")):
        with pytest.raises(TypeError, match="argument 'dtype' is the dtype .*, which has no NKI equivalent") as info:
            nki.jit(body)(x, bad)  # ERR
        assert info.value.error_id == "err_dtype_argument"
    loc = info.value.nki_location
    assert os.path.abspath(loc[0]) == HERE and loc[1] == err_line(test_e32_a_dtype_with_no_nki_equivalent_names_the_argument)
    with pytest.raises(TypeError, match="argument 'dtype' is the dtype"):
        nki.jit(body)(x, dtype=np.complex128)  # (a keyword argument: named the same way)
    # a dtype NKI has is converted at the boundary: NumPy's scalar type, a NumPy dtype, torch's dtype
    import torch

    for good, want in ((np.float16, np.float16), (np.dtype("float32"), np.float32), (torch.bfloat16, nl.bfloat16)):
        out = nki.jit(body)(x, good)
        assert np.asarray(out).dtype == want or out.dtype == torch.bfloat16
    # an array input NKI has no dtype for was refused already, naming the argument (both dialects)
    with pytest.raises(TypeError, match="argument 'x' has dtype complex64, which NKI does not support"):
        nki.jit(body)(np.ones((128, 8), np.complex64), nl.float32)
    with pytest.raises(TypeError, match="argument 'x' is float64"):
        nki.jit(body)(np.ones((128, 8), np.float64), nl.float32)


@counts_python_runs  # (the program check launches the kernel twice: twice the warnings)
def test_e33_calls_the_compiler_rejects_today_warn_once_per_call_site():
    from nkisim.frontend.v06.adapters.known_issues import HardwareCompileWarning

    def body(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        col = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=col, src=x[:, 0:1])
        for _ in range(3):  # three calls from one line: one warning
            q = nl.divide(t, t)  # WARN divide
        m = nl.mod(t, 3.0)  # WARN mod
        f = nl.fmod(t, 3.0)  # WARN fmod
        p = nl.power(t, 2.0)  # WARN power
        b = nl.add(t, col)  # WARN add
        nl.matmul(t[0:8, 0:8], t[0:8, 0:8])  # WARN matmul
        fine = [nl.power(t, t), nl.add(t, t), nl.add(t, 1.0), nl.matmul(t[:, 0:8], t[:, 0:8], transpose_x=True)]
        out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=nl.add(nl.add(nl.add(q, m), nl.add(f, p)), nl.add(b, fine[0])))
        return out

    x = np.random.default_rng(1).random((128, 8), dtype=np.float32) + 1.0
    with pytest.warns(HardwareCompileWarning) as rec:
        out = nki.jit(body)(x)
    got = [w for w in rec if issubclass(w.category, HardwareCompileWarning)]
    lines, start = inspect.getsourcelines(body)
    want = {start + i: text.split("# WARN ")[1].strip() for i, text in enumerate(lines) if "# WARN " in text}
    assert sorted(w.lineno for w in got) == sorted(want), [(w.lineno, str(w.message)[:60]) for w in got]
    for w in got:
        assert os.path.abspath(w.filename) == HERE
        assert str(w.message).startswith(f"nl.{want[w.lineno]}: the Neuron compiler rejects this call today")
        assert "the simulator runs it" in str(w.message)
    # the simulator still computes them (what AWS's simulator does too)
    expected = 1.0 + np.mod(x, 3.0) + np.fmod(x, 3.0) + x ** 2 + (x + x[:, :1]) + x ** x
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-4)


def test_e22_nested_dynamic_range_with_a_loop_carried_register():
    def carried(x):
        count = nisa.register_alloc(0)
        for _i in nl.dynamic_range(2):
            for j in nl.dynamic_range(3):
                nisa.register_move(count, j)  # ERR
        return x

    with pytest.warns(DeprecationWarning):
        err = refused(carried, RuntimeError, "^Could not find register: nisa.register_move writes a register "
                                             "allocated outside the inner nl.dynamic_range loop")
    assert err.error_id == "err_nested_dynamic_loop_register"

    def fine(x):  # nested without a carried value, and a carried value in a loop that is not nested
        t = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.sbuf)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        count = nisa.register_alloc(0)
        for _i in nl.dynamic_range(2):
            for j in nl.dynamic_range(4):
                own = nisa.register_alloc(0)
                nisa.register_move(own, j)  # the iteration's own register
                col = x.ap([[8, 128], [1, 1]], scalar_offset=j, indirect_dim=1)
                nisa.dma_copy(dst=t, src=col)
                nisa.dma_copy(dst=out.ap([[8, 128], [1, 1]], scalar_offset=j, indirect_dim=1), src=t)
        for k in nl.dynamic_range(3):
            nisa.register_move(count, k)
        for _k in nl.dynamic_range(2):
            nl.fori_loop(0, 2, lambda m: nisa.register_move(count, m))  # not two dynamic_range loops
        return out

    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    with pytest.warns(DeprecationWarning):
        out = nki.jit(fine)(x)
    np.testing.assert_array_equal(np.asarray(out)[:, :4], x[:, :4])


def test_w1_accumulate_true_onto_psum_no_matmul_started():
    def body(s):
        t = nl.load(s)
        acc = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=t, moving=t, accumulate=True)  # ERR
        return s

    with pytest.warns(UserWarning, match="accumulate=True adds onto PSUM elements of 'acc'") as rec:
        nki.jit(body)(np.ones((128, 8), np.float32))
    assert rec[0].lineno == err_line(body)


def test_every_06_error_id_is_triggered_here():
    """Each id of the 0.6 catalogue is raised by some test above (or listed with its reason)."""
    source = open(HERE, encoding="utf-8").read()
    raised = {"err_enum_argument", "err_string_buffer", "err_platform_target_argument", "err_dma_psum_source",
              "err_dma_hwdge_cast", "err_memset_value_type", "err_reduce_axis", "err_unsupported_syntax",
              "err_kernel_argument", "err_no_arguments", "err_activation_bias_shape",
              "err_operand_type", "err_invalid_view", "err_view_out_of_bounds", "err_transpose_dtype",
              "err_dma_engine", "err_unsupported_target", "err_dependency_across_dynamic_loop",
              # tests/test_nki06_schedule.py
              "err_schedule_unknown_instruction", "err_schedule_against_program_order", "err_too_many_edges",
              "err_dtype_argument", "err_nested_dynamic_loop_register",
              # tests/test_nki06_indirect.py::test_only_the_software_dge_addresses_per_partition
              "err_dma_dge_mode"}
    assert set(CATALOGUE) - raised <= set(), sorted(set(CATALOGUE) - raised)
    for key in NOT_COVERED:
        assert key in source


def test_a_06_estimate_is_labelled_for_its_target():
    launch = api.launch(nki.jit(lambda x: x), [np.ones((128, 8), np.float32)], target="trn2")
    assert launch.target == "trn2"
