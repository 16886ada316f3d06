"""Issue 12: selection, scan and top-8 ISA instructions, each checked against a NumPy reference.

Our own kernels (written from the ISA reference's semantics) for ``affine_select``, ``range_select``,
``select_reduce``, ``tensor_copy_predicated``, ``tensor_tensor_scan``, ``tensor_scalar_cumulative``,
``tensor_scalar_reduce``, ``max8``, ``nc_find_index8`` and ``nc_match_replace8``, plus the error a
user gets for a misuse of each family.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

RNG = np.random.default_rng(7)


def _out(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)


def test_affine_select_causal_mask() -> None:
    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        ix, iy = nl.mgrid[0:128, 0:64]
        t = nl.load(a[ix, iy])
        nl.store(out[ix, iy], nisa.affine_select(pred=(iy <= ix), on_true_tile=t[ix, iy], on_false_value=-1e4))
        return out

    a = RNG.standard_normal((128, 64), dtype=np.float32)
    ref = np.where(np.arange(64)[None, :] <= np.arange(128)[:, None], a, np.float32(-1e4))
    np.testing.assert_array_equal(kernel(a), ref)


def test_affine_select_reads_a_matmul_result_from_psum() -> None:
    @nki.jit
    def kernel(q, k):
        out = _out((128, 128))
        i_q, i_k = nl.mgrid[0:128, 0:128]
        qk = nisa.nc_matmul(nl.load(q), nl.load(k))
        nl.store(out, nisa.affine_select(pred=(i_q >= i_k), on_true_tile=qk, on_false_value=-9984.0,
                                         dtype=nl.float32))
        return out

    q, k = RNG.standard_normal((2, 64, 128), dtype=np.float32)
    ref = np.where(np.tril(np.ones((128, 128), bool)), q.T.astype(np.float64) @ k, -9984.0)
    np.testing.assert_allclose(kernel(q, k), ref, rtol=1e-4, atol=1e-4)


def test_affine_select_pattern_form() -> None:
    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        t = nl.load(a)
        r = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.affine_select(dst=r, pattern=[[-1, 32]], offset=0, channel_multiplier=1, on_true_tile=t,
                           on_false_value=0.0, cmp_op=nl.greater_equal)
        nl.store(out, r)
        return out

    a = RNG.standard_normal((32, 32), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), np.tril(a))


def test_range_select_with_reduction_chained_over_two_calls() -> None:
    @nki.jit(platform_target="trn2")
    def kernel(a, lo, hi):
        out = _out(a.shape)
        red = _out((a.shape[0], 1))
        t, b0, b1 = nl.load(a), nl.load(lo), nl.load(hi)
        r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=b0, bound1=b1,
                          reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=nl.max, range_start=0,
                          on_false_value=-1e30)
        s = nisa.range_select(on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=b0, bound1=b1,
                              reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=r, reduce_op=nl.max, range_start=64,
                              on_false_value=-1e30)
        nl.store(out, s)
        nl.store(red, r)
        return out, red

    a = RNG.standard_normal((128, 64), dtype=np.float32)
    lo = np.full((128, 1), 10, np.float32)
    hi = RNG.integers(20, 120, (128, 1)).astype(np.float32)
    out, red = kernel(a, lo, hi)
    idx0, idx1 = np.arange(64)[None, :], 64 + np.arange(64)[None, :]
    sel0 = np.where((idx0 >= lo) & (idx0 < hi), a, np.float32(-1e30))
    sel1 = np.where((idx1 >= lo) & (idx1 < hi), a, np.float32(-1e30))
    np.testing.assert_array_equal(out, sel1)
    np.testing.assert_array_equal(red[:, 0], np.maximum(sel0.max(axis=1), sel1.max(axis=1)))


def test_range_select_needs_trn2() -> None:
    @nki.jit(platform_target="trn1")
    def kernel(a, lo):
        out = _out(a.shape)
        b = nl.load(lo)
        nl.store(out, nisa.range_select(on_true_tile=nl.load(a), comp_op0=nl.greater_equal, comp_op1=nl.less,
                                        bound0=b, bound1=b))
        return out

    with pytest.raises(Exception, match="requires min target gen3"):
        kernel(np.zeros((8, 8), np.float32), np.zeros((8, 1), np.float32))


@pytest.mark.parametrize("reverse", [False, True])
def test_select_reduce_with_vector_on_false(reverse: bool) -> None:
    @nki.jit
    def kernel(p, a, f):
        out = _out(a.shape)
        red = _out((a.shape[0], 1))
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=d, predicate=nl.load(p), on_true=nl.load(a), on_false=nl.load(f),
                           reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=r, reduce_op=nl.max,
                           reverse_pred=reverse)
        nl.store(out, d)
        nl.store(red, r)
        return out, red

    p = RNG.integers(0, 2, (64, 32)).astype(np.uint8)
    a = RNG.standard_normal((64, 32), dtype=np.float32)
    f = RNG.standard_normal((64, 1), dtype=np.float32)
    out, red = kernel(p, a, f)
    keep = (p != 0) ^ reverse
    ref = np.where(keep, a, f)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(red[:, 0], ref.max(axis=1))


def test_select_reduce_rejects_a_sum() -> None:
    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        t = nl.load(a)
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=d, predicate=t, on_true=t, on_false=0.0, reduce_op=nl.add)
        nl.store(out, d)
        return out

    with pytest.raises(SyntaxError, match="add is not supported in 'select_reduce'"):
        kernel(np.zeros((8, 8), np.float32))


def test_tensor_copy_predicated_keeps_unselected_destination_values() -> None:
    @nki.jit
    def kernel(p, src, old):
        out = _out(src.shape)
        d = nl.ndarray(src.shape, dtype=nl.float32, buffer=nl.sbuf)
        d[...] = nl.load(old)
        nisa.tensor_copy_predicated(src=nl.load(src), dst=d, predicate=nl.load(p))
        nl.store(out, d)
        return out

    p = RNG.integers(0, 2, (128, 48)).astype(np.uint8)
    src, old = RNG.standard_normal((2, 128, 48), dtype=np.float32)
    np.testing.assert_array_equal(kernel(p, src, old), np.where(p != 0, src, old))


def test_tensor_tensor_scan_linear_recurrence_continues_from_a_tile() -> None:
    @nki.jit
    def kernel(a, b):
        out = _out(a.shape)
        x, y = nl.load(a), nl.load(b)
        c = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        c[:, 0:16] = nisa.tensor_tensor_scan(x[:, 0:16], y[:, 0:16], initial=0.5, op0=np.multiply, op1=np.add)
        c[:, 16:32] = nisa.tensor_tensor_scan(x[:, 16:32], y[:, 16:32], initial=c[:, 15], op0=np.multiply,
                                              op1=np.add)
        nl.store(out, c)
        return out

    a, b = RNG.random((2, 32, 32), dtype=np.float32)
    ref = np.zeros((32, 32), np.float64)
    prev = np.full(32, 0.5)
    for i in range(32):
        prev = a[:, i] * prev + b[:, i]
        ref[:, i] = prev
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-5)


def test_tensor_tensor_scan_shape_mismatch_error() -> None:
    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        x = nl.load(a)
        nl.store(out, nisa.tensor_tensor_scan(x, x[:, 0:4], initial=0.0, op0=np.multiply, op1=np.add))
        return out

    with pytest.raises(ValueError, match="mismatched shapes"):
        kernel(np.zeros((8, 8), np.float32))


@pytest.mark.parametrize(("op1", "ufunc"), [(nl.add, np.add), (nl.multiply, np.multiply), (nl.max, np.maximum),
                                            (nl.subtract, None)])
def test_tensor_scalar_cumulative_reset_then_reduce(op1, ufunc) -> None:
    @nki.jit
    def kernel(a, imm):
        out = _out((a.shape[0], 2 * a.shape[1]))
        t, v = nl.load(a), nl.load(imm)
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        e = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_cumulative(src=t, dst=d, op0=nl.multiply, op1=op1, imm0=v)
        nisa.tensor_scalar_cumulative(src=t, dst=e, op0=nl.multiply, op1=op1, imm0=v,
                                      reduce_cmd=nisa.reduce_cmd.reduce)
        nl.store(out[:, 0:a.shape[1]], d)
        nl.store(out[:, a.shape[1]:2 * a.shape[1]], e)
        return out

    a = RNG.uniform(0.5, 1.5, (16, 12)).astype(np.float32)
    imm = RNG.uniform(0.5, 1.5, (16, 1)).astype(np.float32)
    x = np.concatenate([a * imm, a * imm], axis=1).astype(np.float64)
    if ufunc is None:  # reg = x[i] - reg, from 0
        ref = np.empty_like(x)
        reg = np.zeros(16)
        for i in range(x.shape[1]):
            reg = x[:, i] - reg
            ref[:, i] = reg
    else:
        ref = ufunc.accumulate(x, axis=1)
    np.testing.assert_allclose(kernel(a, imm), ref, rtol=1e-5, atol=1e-6)


def test_tensor_scalar_cumulative_load_reduce_starts_from_imm1() -> None:
    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_cumulative(src=nl.load(a), dst=d, op0=nl.add, op1=nl.add, imm0=1.0, imm1=10.0,
                                      reduce_cmd=nisa.reduce_cmd.load_reduce)
        nl.store(out, d)
        return out

    a = RNG.standard_normal((8, 20), dtype=np.float32)
    np.testing.assert_allclose(kernel(a), 10 + np.cumsum(a.astype(np.float64) + 1, axis=1), rtol=1e-5)


def test_tensor_scalar_reduce_result_and_reduction() -> None:
    @nki.jit
    def kernel(a, s):
        out = _out(a.shape)
        red = _out((a.shape[0], 1))
        r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        y = nisa.tensor_scalar_reduce(data=nl.load(a), op0=np.multiply, operand0=nl.load(s), reduce_op=np.add,
                                      reduce_res=r)
        nl.store(out, y)
        nl.store(red, r)
        return out, red

    a = RNG.standard_normal((128, 96), dtype=np.float32)
    s = RNG.standard_normal((128, 1), dtype=np.float32)
    out, red = kernel(a, s)
    np.testing.assert_array_equal(out, a * s)
    np.testing.assert_allclose(red[:, 0], (a * s).astype(np.float64).sum(axis=1), rtol=1e-4, atol=1e-4)


def test_tensor_scalar_reduce_with_a_unary_operator() -> None:
    """Issue 31 scope 4: AWS's operator table (nki.api.shared.rst, nki-aluop) lists abs, square, relu, rsqrt and
    reciprocal as "Arithmetic Unary" operators, and tensor_scalar_reduce takes an arithmetic ``op0``; nki-library's
    rmsnorm_quant (2.29_release) passes ``op0=nl.abs, operand0=0.0`` to take each row's largest magnitude.  The
    operand is ignored; a bitvec operator is still refused."""

    @nki.jit
    def kernel(a):
        out = _out(a.shape)
        red = _out((a.shape[0], 1))
        r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nl.store(out, nisa.tensor_scalar_reduce(data=nl.load(a), op0=nl.abs, operand0=0.0, reduce_op=nl.maximum,
                                                reduce_res=r))
        nl.store(red, r)
        return out, red

    a = RNG.standard_normal((128, 96), dtype=np.float32)
    out, red = kernel(a)
    np.testing.assert_array_equal(out, np.abs(a))
    np.testing.assert_array_equal(red[:, 0], np.abs(a).max(axis=1))

    @nki.jit
    def bitvec(a):
        r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(data=nl.load(a), op0=nl.bitwise_and, operand0=1, reduce_op=nl.add, reduce_res=r)
        return a

    with pytest.raises(Exception, match="bitwise_and is not supported in 'tensor_scalar_reduce'"):
        bitvec(a.astype(np.int32))


def test_max8_find_index8_and_match_replace8_agree_with_numpy() -> None:
    @nki.jit
    def kernel(a):
        top, where, replaced, idx = (_out((a.shape[0], 8)), _out((a.shape[0], 8), nl.uint32), _out(a.shape),
                                     _out((a.shape[0], 8), nl.uint32))
        t = nl.load(a)
        m = nisa.max8(src=t)
        i = nisa.nc_find_index8(data=t, vals=m)
        k = nl.ndarray((a.shape[0], 8), dtype=nl.uint32, buffer=nl.sbuf)
        r = nisa.nc_match_replace8(data=t, vals=m, imm=-5.0, dst_idx=k)
        nl.store(top, m)
        nl.store(where, i)
        nl.store(replaced, r)
        nl.store(idx, k)
        return top, where, replaced, idx

    a = RNG.permutation(64 * 40).astype(np.float32).reshape(64, 40)
    top, where, replaced, idx = kernel(a)
    order = np.argsort(-a, axis=1)[:, :8]
    np.testing.assert_array_equal(top, np.take_along_axis(a, order, axis=1))
    np.testing.assert_array_equal(where, order)
    np.testing.assert_array_equal(idx, order)
    ref = a.copy()
    np.put_along_axis(ref, order, -5.0, axis=1)
    np.testing.assert_array_equal(replaced, ref)


def test_match_replace8_consumes_duplicates_in_order() -> None:
    @nki.jit
    def kernel(a, v):
        out = _out(a.shape)
        nl.store(out, nisa.nc_match_replace8(data=nl.load(a), vals=nl.load(v), imm=0.0))
        return out

    a = np.array([[3, 3, 3, 1, 2, 3, 9, 9, 9, 9]], np.float32)
    v = np.array([[3, 3, 9, 100, 100, 100, 100, 100]], np.float32)
    np.testing.assert_array_equal(kernel(a, v), [[0, 0, 3, 1, 2, 3, 0, 9, 9, 9]])


#: isa ``nc_match_replace8``'s example of duplicate values ("data = [1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8] and vals = [3, 8,
#: 8, 8, 8, 8, 8, 8]"), plus a row with a value that is not there
_DUP_DATA = np.array([[1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]], np.float32)
_DUP_VALS = np.array([[3, 8, 8, 8, 8, 8, 8, 8], [7, 99, 5, 15, 6, 8, 9, 10]], np.float32)


def test_find_index8_pairs_equal_values_with_successive_occurrences_and_marks_absent_ones() -> None:
    """NKI 0.6.0 release notes (Neuron 2.32), matching hardware: "nc_find_index8 unmatched slots now return
    all-ones ... Duplicate search values now advance through successive occurrences", in ascending order across the
    columns (isa nc_match_replace8).  nki-library's topk_reduce gathers a token's K rows this way."""

    @nki.jit
    def kernel(a, v):
        where = _out((a.shape[0], 8), nl.uint32)
        nl.store(where, nisa.nc_find_index8(data=nl.load(a), vals=nl.load(v)))
        return where

    np.testing.assert_array_equal(kernel(_DUP_DATA, _DUP_VALS),
                                  [[2, 4, 5, 6, 7, 8, 9, 10], [2, 0xFFFFFFFF, 0, 10, 1, 3, 4, 5]])


def test_match_replace8_pairs_equal_values_with_occurrences_in_reverse_column_order() -> None:
    """isa nc_match_replace8: "processes vals in reverse order (i = 7, 6, ..., 0) ... dst_idx is [2, 10, 9, 8, 7, 6,
    5, 4]"."""

    @nki.jit
    def kernel(a, v):
        idx = _out((a.shape[0], 8), nl.uint32)
        k = nl.ndarray((a.shape[0], 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_match_replace8(data=nl.load(a), vals=nl.load(v), imm=0.0, dst_idx=k)
        nl.store(idx, k)
        return idx

    np.testing.assert_array_equal(kernel(_DUP_DATA[:1], _DUP_VALS[:1]), [[2, 10, 9, 8, 7, 6, 5, 4]])


def test_max8_needs_eight_elements() -> None:
    @nki.jit
    def kernel(a):
        out = _out((a.shape[0], 8))
        nl.store(out, nisa.max8(src=nl.load(a)))
        return out

    with pytest.raises(ValueError, match="must be between 8 and 16384"):
        kernel(np.zeros((4, 4), np.float32))
