"""The instructions NKI 0.6 added to the ISA (``nkisim/ops/activation.py``, ``nkisim/ops/topk.py``): ``exponential``, ``activate2``,
``nonzero_with_count`` and ``topk`` (``nc_n_gather`` and ``dma_compute``: ``test_nki06_gather_dma.py``; the random
generators: ``test_nki06_rng.py``).

Our own 0.6 kernels against NumPy references written here (every documented option), each documented refusal at the
kernel's own line, the estimate against the work each instruction does at the target's rates, and mutants of the ops
that these tests must catch.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from test_nki06_errors import err_line

import nkisim
from nkisim import api
from nkisim.core.target import get as get_target
from nkisim.cost import costs
from nkisim.ops import activation as activation_op
from nkisim.ops import outputs as outputs_op
from nkisim.ops import topk as topk_op

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(2060)
BF16 = ml_dtypes.bfloat16
F32 = np.float32
CMD = nisa.reduce_cmd


@pytest.fixture(autouse=True)
def _trn3(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")


def refused(body, exc, match, *args):
    """Launch 0.6 kernel ``body``: it must raise ``exc`` matching ``match`` at its ``# ERR`` line."""
    with pytest.raises(exc, match=match) as info:
        nki.jit(body)(*(args or (np.ones((32, 8), F32),)))
    here = body.__code__.co_filename  # the kernel's own file (other test files use this helper too)
    loc = getattr(info.value, "nki_location", None)
    if loc is None:  # Python's own TypeError (a bad keyword): the innermost frame of the kernel's file
        loc = next((e.path, e.lineno + 1) for e in reversed(info.traceback) if str(e.path) == here)
    assert str(loc[0]) == here and loc[1] == err_line(body), loc
    return info.value


def load(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    return t


def out(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


def new(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)


# --- exponential ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("vector_max", [False, True])
@pytest.mark.parametrize("dst_dtype", [nl.float32, nl.bfloat16])
def test_exponential_subtracts_max_value(vector_max, dst_dtype):
    x = RNG.uniform(-4, 4, (64, 3, 10)).astype(F32)
    m = RNG.uniform(-1, 3, (64, 1)).astype(F32)

    def kernel(a, mx):
        src = load(a)
        dst = new(a.shape, dst_dtype)
        nisa.exponential(dst=dst, src=src, max_value=load(mx) if vector_max else 1.5)
        return out(dst)

    got = nki.jit(kernel)(x, m).astype(np.float64)
    shift = m[:, :, None].astype(np.float64) if vector_max else 1.5
    want = np.exp(x.astype(np.float64) - shift)
    tol = 1e-6 if dst_dtype == nl.float32 else 2.0 ** -8
    np.testing.assert_allclose(got, want, rtol=tol)


def test_exponential_keeps_a_running_sum_over_tiles():
    """reset_reduce on the first tile, reduce (no reduce_res: the sum stays in the accumulator) on the second, reduce
    into reduce_res on the third: the sum of all three; then load_reduce from a vector reduce_init."""
    x = RNG.uniform(-2, 2, (32, 3, 16)).astype(F32)
    init = RNG.uniform(0, 5, (32, 1)).astype(F32)

    def kernel(a, b):
        total = new((32, 1))
        seeded = new((32, 1))
        for t in range(3):
            src = load(a[:, t, :])
            dst = new((32, 16))
            cmd = CMD.reset_reduce if t == 0 else CMD.reduce
            nisa.exponential(dst=dst, src=src, max_value=0.5, reduce_res=total if t == 2 else None, reduce_cmd=cmd)
        dst = new((32, 16))
        nisa.exponential(dst=dst, src=load(a[:, 0, :]), reduce_res=seeded, reduce_cmd=CMD.load_reduce,
                         reduce_init=load(b))
        return out(total), out(seeded)

    total, seeded = nki.jit(kernel)(x, init)
    e = np.exp(x.astype(np.float64) - 0.5)
    np.testing.assert_allclose(total[:, 0], e.sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(seeded[:, 0], init[:, 0] + np.exp(x[:, 0, :].astype(np.float64)).sum(axis=1), rtol=1e-5)


def test_exponential_refusals(monkeypatch):
    def five_d(a):
        src = nl.ndarray((32, 2, 2, 2, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=src, value=0.0)
        nisa.exponential(dst=new((32, 2, 2, 2, 1)), src=src)  # ERR
    refused(five_d, Exception, "max supported number of dimensions of 4")

    def init_without_load(a):
        nisa.exponential(dst=new(a.shape), src=load(a), reduce_cmd=CMD.reset_reduce, reduce_init=1.0)  # ERR
    refused(init_without_load, Exception, "used by reduce_cmd=load_reduce only")

    def plain_reset(a):
        nisa.exponential(dst=new(a.shape), src=load(a), reduce_cmd=CMD.reset)  # ERR
    refused(plain_reset, Exception, "reduce_cmd=reset is not supported in 'exponential'")

    def wide_res(a):
        nisa.exponential(dst=new(a.shape), src=load(a), reduce_res=new((32, 2)), reduce_cmd=CMD.reset_reduce)  # ERR
    refused(wide_res, Exception, r"'reduce_res' must be \[32, 1\]")

    def uint32_dst(a):
        nisa.exponential(dst=new(a.shape, nl.uint32), src=load(a))  # ERR
    refused(uint32_dst, Exception, "cannot have dtype uint32")

    def int_command(a):
        nisa.exponential(dst=new(a.shape), src=load(a), reduce_cmd=3)  # ERR
    refused(int_command, Exception, "must be a member of nki.isa.reduce_cmd")

    def unknown_keyword(a):
        nisa.exponential(dst=new(a.shape), src=load(a), max_val=1.0)  # ERR
    refused(unknown_keyword, TypeError, "max_val")

    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")

    def on_trn2(a):
        nisa.exponential(dst=new(a.shape), src=load(a))  # ERR
    refused(on_trn2, Exception, "requires min target gen4")


# --- activate2 --------------------------------------------------------------------------------------------------
def _alu(name, a, b):
    return {"multiply": a * b, "add": a + b, "subtract": a - b}[name]


def _stage(x, name, imm, reverse):
    if name == "bypass":
        return x
    return _alu(name, imm, x) if reverse else _alu(name, x, imm)


PAIRS = [("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"), ("add", "bypass"),
         ("subtract", "bypass"), ("bypass", "bypass")]
NL_OP = {"multiply": nl.multiply, "add": nl.add, "subtract": nl.subtract, "bypass": nl.bypass}


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("reverse", [False, True])
def test_activate2_runs_each_documented_pair(pair, reverse):
    x = RNG.uniform(-2, 2, (32, 24)).astype(F32)
    imm0 = RNG.uniform(0.5, 2, (32, 1)).astype(F32)
    n0, n1 = pair
    r0, r1 = reverse and n0 != "bypass", reverse and n1 != "bypass"

    def kernel(a, v):
        dst = new(a.shape)
        nisa.activate2(dst=dst, op=nl.tanh, data=load(a), imm0=load(v), imm1=0.25, op0=NL_OP[n0], op1=NL_OP[n1],
                       reverse0=r0, reverse1=r1)
        return out(dst)

    got = nki.jit(kernel)(x, imm0)
    y = _stage(_stage(x.astype(np.float64), n0, imm0.astype(np.float64), r0), n1, 0.25, r1)
    np.testing.assert_allclose(got, np.tanh(y), rtol=1e-5, atol=1e-6)


def test_activate2_prelu_takes_relu_param_and_reduces_into_the_scalar_accumulators():
    """prelu with a per-partition slope; reset_reduce with add on one tile, reduce on a second: reduce_res holds the
    sum of both; abs_max keeps the value of largest magnitude with its sign."""
    x = RNG.uniform(-3, 3, (32, 2, 20)).astype(F32)
    alpha = RNG.uniform(0.05, 0.3, (32, 1)).astype(F32)

    def kernel(a, s):
        slope = load(s)
        first, second, total, peak = new((32, 20)), new((32, 20)), new((32, 1)), new((32, 1))
        nisa.activate2(dst=first, op=nl.prelu, data=load(a[:, 0, :]), imm0=2.0, imm1=0.0, op0=nl.multiply,
                       op1=nl.bypass, relu_param=slope, reduce_op=nl.add, reduce_cmd=CMD.reset_reduce)
        nisa.activate2(dst=second, op=nl.prelu, data=load(a[:, 1, :]), imm0=2.0, imm1=0.0, op0=nl.multiply,
                       op1=nl.bypass, relu_param=slope, reduce_op=nl.add, reduce_res=total, reduce_cmd=CMD.reduce)
        scratch = new((32, 20))
        nisa.activate2(dst=scratch, op=nl.copy, data=load(a[:, 0, :]), imm0=1.0, imm1=-1.0, op0=nl.subtract,
                       op1=nl.bypass, reduce_op=nl.abs_max, reduce_res=peak, reduce_cmd=CMD.reset_reduce)
        return out(first), out(total), out(peak)

    first, total, peak = nki.jit(kernel)(x, alpha)
    y = 2 * x.astype(np.float64)
    pr = np.where(y >= 0, y, y * alpha[:, :, None])
    np.testing.assert_allclose(first, pr[:, 0, :], rtol=1e-6)
    np.testing.assert_allclose(total[:, 0], pr.sum(axis=(1, 2)), rtol=1e-5)
    z = x[:, 0, :].astype(np.float64) - 1.0
    np.testing.assert_allclose(peak[:, 0], z[np.arange(32), np.abs(z).argmax(axis=1)], rtol=1e-6)


def test_activate2_refusals(monkeypatch):
    def bad_pair(a):
        nisa.activate2(dst=new(a.shape), op=nl.exp, data=load(a), imm0=1.0, imm1=1.0, op0=nl.add,  # ERR
                       op1=nl.multiply)
    refused(bad_pair, Exception, r"\(op0, op1\) = \(add, multiply\) is not supported")

    def reverse_bypass(a):
        nisa.activate2(dst=new(a.shape), op=nl.exp, data=load(a), imm0=1.0, imm1=1.0, op0=nl.multiply,  # ERR
                       op1=nl.bypass, reverse1=True)
    refused(reverse_bypass, Exception, "reverse1=True of 'activate2' needs its operator")

    def mixed_imms(a):
        i0 = nl.ndarray((32, 1), dtype=nl.float32, buffer=nl.sbuf)
        i1 = nl.ndarray((32, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=i0, value=1.0)
        nisa.memset(dst=i1, value=1.0)
        nisa.activate2(dst=new(a.shape), op=nl.exp, data=load(a), imm0=i0, imm1=i1, op0=nl.multiply,  # ERR
                       op1=nl.add)
    refused(mixed_imms, Exception, "must have the same dtype")

    def multiply_reduce(a):
        nisa.activate2(dst=new(a.shape), op=nl.exp, data=load(a), imm0=1.0, imm1=1.0, op0=nl.multiply,  # ERR
                       op1=nl.add, reduce_op=nl.multiply, reduce_cmd=CMD.reset_reduce)
    refused(multiply_reduce, Exception, "reduce_op multiply is not supported")

    def load_reduce(a):
        nisa.activate2(dst=new(a.shape), op=nl.exp, data=load(a), imm0=1.0, imm1=1.0, op0=nl.multiply,  # ERR
                       op1=nl.add, reduce_op=nl.add, reduce_cmd=CMD.load_reduce)
    refused(load_reduce, Exception, "reduce_cmd=load_reduce is not supported in 'activate2'")

    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")

    def on_trn2(a):
        nisa.activate2(dst=new(a.shape), op=nl.exp, data=load(a), imm0=1.0, imm1=1.0, op0=nl.multiply,  # ERR
                       op1=nl.add)
    refused(on_trn2, Exception, "requires min target gen4")


# --- nonzero_with_count -----------------------------------------------------------------------------------------
def _nonzero_reference(x, offset, pad, before):
    """Rows 0, 16, 32, ...: nonzero indices + offset, padding, count; other rows keep ``before``."""
    p, t = x.shape
    want = np.full((p, t + 1), before, dtype=np.int64)
    for r in range(0, p, 16):
        idx = [i for i in range(t) if x[r, i] != 0]
        want[r] = idx + [pad] * (t - len(idx)) + [len(idx)]
        want[r, :len(idx)] += offset
    return want


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("offset, pad", [(0, -1), (16, -7)])
def test_nonzero_with_count_compacts_core_rows(dtype, offset, pad):
    x = (RNG.uniform(0, 1, (64, 12)) > 0.6).astype(dtype) * RNG.integers(1, 9, (64, 12)).astype(dtype)
    x[16] = 0  # a row with nothing nonzero: all padding, count 0
    x[32] = 3  # a full row: no padding

    def kernel(a):
        dst = new((64, 13), nl.int32)
        nisa.memset(dst=dst, value=99)  # rows the instruction does not write keep this
        nisa.nonzero_with_count(dst=dst, src=load(a), index_offset=offset, padding_val=pad)
        return out(dst)

    got = nki.jit(kernel)(x)
    np.testing.assert_array_equal(got, _nonzero_reference(x, offset, pad, 99))
    assert got[16, 12] == 0 and got[32, 12] == 12


def test_nonzero_with_count_refusals(monkeypatch):
    def same_width(a):
        nisa.nonzero_with_count(dst=new(a.shape, nl.int32), src=load(a))  # ERR
    refused(same_width, Exception, "one more element per partition")

    def float_dst(a):
        nisa.nonzero_with_count(dst=new((32, 9)), src=load(a))  # ERR
    refused(float_dst, Exception, "'dst' of 'nonzero_with_count' has dtype float32")

    def bf16_src(a):
        src = new(a.shape, nl.bfloat16)
        nisa.memset(dst=src, value=0.0)
        nisa.nonzero_with_count(dst=new((32, 9), nl.int32), src=src)  # ERR
    refused(bf16_src, Exception, "'src' of 'nonzero_with_count' has dtype bfloat16")

    def float_offset(a):
        nisa.nonzero_with_count(dst=new((32, 9), nl.int32), src=load(a), index_offset=1.5)  # ERR
    refused(float_offset, Exception, "must be an int32 integer")

    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")

    def on_trn1(a):
        nisa.nonzero_with_count(dst=new((32, 9), nl.int32), src=load(a))  # ERR
    refused(on_trn1, Exception, "requires min target gen3")


# --- topk -------------------------------------------------------------------------------------------------------
def _snake_input(parts, cols):
    """Distinct bf16 values (no ties), laid out as the 16-partition snakes of ``parts // 16`` groups."""
    vals = RNG.permutation(parts * cols).reshape(parts, cols) - 100.0  # integers below 256: exact in bf16
    return vals.astype(BF16)


def _topk_reference(x, n, k):
    p = x.shape[0]
    vals, idx = np.zeros((p, k), np.float64), np.zeros((p, k), np.int64)
    for g in range(p // 16):
        block = x[g * 16:(g + 1) * 16].astype(np.float64)
        flat = [block[i % 16, i // 16] for i in range(n)]
        best = sorted(range(n), key=lambda i: flat[i], reverse=True)[:k]
        best = best[::-1]  # ascending
        vals[g * 16:(g + 1) * 16] = [flat[i] for i in best]
        idx[g * 16:(g + 1) * 16] = best
    return vals, idx


def _topk_kernel(n, k):
    def kernel(a):
        v = new((a.shape[0], k), nl.bfloat16)
        i = new((a.shape[0], k), nl.uint32)
        nisa.topk(val_dst=v, idx_dst=i, src=load(a), n=n)
        return out(v), out(i)

    return kernel


@pytest.mark.parametrize("parts, cols, n, k", [(16, 3, 42, 8), (32, 5, 80, 13), (16, 1, 8, 1), (48, 4, 64, 64)])
def test_topk_returns_the_k_largest_ascending_with_uint32_indices(parts, cols, n, k):
    x = _snake_input(parts, cols)
    v, i = nki.jit(_topk_kernel(n, k))(x)
    want_v, want_i = _topk_reference(x, n, k)
    assert i.dtype == np.uint32 and v.dtype == BF16
    np.testing.assert_array_equal(v.astype(np.float64), want_v)
    np.testing.assert_array_equal(i.astype(np.int64), want_i)
    assert np.all(np.diff(v.astype(np.float64), axis=1) > 0)


def test_topk_ignores_snake_elements_past_n():
    x = _snake_input(16, 4)
    x[15, 3] = BF16(1000.0)  # element 63, past n = 60
    v, i = nki.jit(_topk_kernel(60, 4))(x)
    assert 63 not in i and float(v.max()) < 1000


def test_topk_refusals():
    def few(a):
        nisa.topk(val_dst=new((16, 4), nl.bfloat16), idx_dst=new((16, 4), nl.uint32), src=load(a), n=7)  # ERR
    refused(few, Exception, "n=7 of 'topk' must be at least 8", np.ones((16, 4), BF16))

    def past_the_snake(a):
        nisa.topk(val_dst=new((16, 4), nl.bfloat16), idx_dst=new((16, 4), nl.uint32), src=load(a), n=65)  # ERR
    refused(past_the_snake, Exception, "at most the snake's 64 elements", np.ones((16, 4), BF16))

    def k_above_n(a):
        nisa.topk(val_dst=new((16, 9), nl.bfloat16), idx_dst=new((16, 9), nl.uint32), src=load(a), n=8)  # ERR
    refused(k_above_n, Exception, "K=9 .* at most n=8", np.ones((16, 4), BF16))

    def twenty_partitions(a):
        nisa.topk(val_dst=new((20, 4), nl.bfloat16), idx_dst=new((20, 4), nl.uint32), src=load(a), n=8)  # ERR
    refused(twenty_partitions, Exception, "must be a multiple of 16", np.ones((20, 4), BF16))

    def fp32_src(a):
        nisa.topk(val_dst=new((16, 4), nl.bfloat16), idx_dst=new((16, 4), nl.uint32), src=load(a), n=8)  # ERR
    refused(fp32_src, Exception, "'src' of 'topk' has dtype float32", np.ones((16, 4), F32))

    def int_indices(a):
        nisa.topk(val_dst=new((16, 4), nl.bfloat16), idx_dst=new((16, 4), nl.int32), src=load(a), n=8)  # ERR
    refused(int_indices, Exception, "'idx_dst' of 'topk' has dtype int32", np.ones((16, 4), BF16))


# --- cost ---------------------------------------------------------------------------------------------------------
def test_the_estimate_is_not_below_the_work():
    """Each instruction takes at least its elements per partition at one per engine cycle plus the engine's fixed
    overhead; topk at least AWS's 4 n + K GpSimd cycles."""
    x = RNG.uniform(-1, 1, (128, 2048)).astype(F32)

    def kernel(a):
        src = load(a)
        e, z = new((128, 2048)), new((128, 2048))
        nisa.exponential(dst=e, src=src, max_value=1.0)
        nisa.activate2(dst=z, op=nl.exp, data=src, imm0=2.0, imm1=1.0, op0=nl.multiply, op1=nl.add)
        nz = new((128, 2049), nl.int32)
        nisa.nonzero_with_count(dst=nz, src=src)
        snake = new((128, 1024), nl.bfloat16)
        nisa.tensor_copy(dst=snake, src=src[:, 0:1024])
        v, i = new((128, 256), nl.bfloat16), new((128, 256), nl.uint32)
        nisa.topk(val_dst=v, idx_dst=i, src=snake, n=16000)
        return out(e), out(z), out(nz), out(v)

    launch = api.launch(nki.jit(kernel), [x], target="trn3")
    prm = get_target("trn3").params
    overhead = prm.engine.instruction_overhead_cycles
    trace = launch.record.ctx.trace
    for kind, engine, cycles in (("exponential", "dve", 2048), ("activate2", "act", 2048),
                                 ("nonzero_with_count", "pool", 2049), ("topk", "pool", 4 * 16000 + 256)):
        ins = next(i for i in trace if i.kind.name == kind)
        assert ins.engine == engine
        assert costs.compute_ns(ins, ("sbuf", "sbuf"), prm) >= (cycles + overhead) / prm.clock_ghz.of(engine), kind
    assert launch.estimate().engine_busy_us["pool"] * 1e3 >= (4 * 16000 + 256) / prm.clock_ghz.pool


# --- mutants the tests above must catch -------------------------------------------------------------------------
def test_mutants_of_the_ops_fail_the_references(monkeypatch):
    x = _snake_input(32, 5)
    want_v, want_i = _topk_reference(x, 80, 13)
    mutants = (("snake", lambda block, n: block.reshape(-1)[:n]),  # read row by row, not the snake
               ("ascending_top", lambda values, k: np.argsort(-values, kind="stable")[:k]))  # descending
    for name, mutant in mutants:
        with monkeypatch.context() as m:
            m.setattr(topk_op, name, mutant)
            v, i = nki.jit(_topk_kernel(80, 13))(x)
            assert not np.array_equal(i.astype(np.int64), want_i), name
    with monkeypatch.context() as m:  # every partition written, not each GpSimd core's first
        m.setattr(topk_op, "core_rows", lambda parts, stride: np.ones(parts, bool))
        with pytest.raises(AssertionError):
            test_nonzero_with_count_compacts_core_rows(np.float32, 0, -1)
    with monkeypatch.context() as m:  # reduce_cmd=reduce restarts the sum
        m.setattr(activation_op, "accumulate", lambda ctx, cmd, op, partial, load=None:
                  outputs_op.accumulate(ctx, 3, op, partial, load))
        with pytest.raises(AssertionError):
            test_exponential_keeps_a_running_sum_over_tiles()
    with monkeypatch.context() as m:  # prelu as relu: the slope is lost
        m.setattr(activation_op, "_prelu", lambda x, alpha: np.maximum(x, 0))
        with pytest.raises(AssertionError):
            test_activate2_prelu_takes_relu_param_and_reduces_into_the_scalar_accumulators()
    with monkeypatch.context() as m:  # a reset that starts the sum at 1, not at add's identity 0
        m.setattr(activation_op, "REDUCE_IDENTITY", dict(activation_op.REDUCE_IDENTITY, add=1.0))
        with pytest.raises(AssertionError):
            test_activate2_prelu_takes_relu_param_and_reduces_into_the_scalar_accumulators()


def test_activate2_reads_the_held_accumulators_out_with_reduce_cmd_idle():
    """A reset_reduce without reduce_res keeps the sum in the Scalar engine; a later idle activate2 with reduce_res
    reads it out unchanged; before any reduction there is nothing to read, an error."""
    x = RNG.uniform(-1, 1, (32, 12)).astype(F32)

    def kernel(a):
        src = load(a)
        first, second, held = new((32, 12)), new((32, 12)), new((32, 1))
        nisa.activate2(dst=first, op=nl.exp, data=src, imm0=1.0, imm1=0.0, op0=nl.bypass, op1=nl.bypass,
                       reduce_op=nl.add, reduce_cmd=CMD.reset_reduce)
        nisa.activate2(dst=second, op=nl.tanh, data=src, imm0=1.0, imm1=0.0, op0=nl.bypass, op1=nl.bypass,
                       reduce_res=held)
        return out(held)

    np.testing.assert_allclose(nki.jit(kernel)(x)[:, 0], np.exp(x.astype(np.float64)).sum(axis=1), rtol=1e-5)

    def nothing_held(a):
        nisa.activate2(dst=new(a.shape), op=nl.exp, data=load(a), imm0=1.0, imm1=0.0, op0=nl.bypass,  # ERR
                       op1=nl.bypass, reduce_res=new((32, 1)))
    refused(nothing_held, Exception, "which no instruction has set")
