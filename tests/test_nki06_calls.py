"""Every NKI 0.6 call the simulator implements, in a kernel of our own, against NumPy.

The ``nl`` elementwise and reduction families reuse the independent references of the legacy suite
(``tests/call_cases.py``: NumPy, or torch for the activations), with NKI 0.6's result dtypes (comparisons and logical
ops give 1/0 in the input dtype); every ``nisa`` instruction and the other ``nl`` calls have a kernel and a reference
here.  ``test_every_06_call_is_covered`` fails for a public callable of ``nki.language`` / ``nki.isa`` that neither has
a test here (``covers``) nor refuses itself with a clear error, so an adapter cannot land untested.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from call_cases import BINARY, REDUCE, UNARY

import nkisim

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

COVERED: set[str] = set()
RNG = np.random.default_rng(606)
F32 = np.float32


def covers(*names: str) -> Callable[[Callable], Callable]:
    COVERED.update(names)
    return lambda fn: fn


def rand(*shape: int, lo: float = -3, hi: float = 3) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype(F32)


def run(body: Callable, *args: Any) -> Any:
    return nki.jit(body)(*args)


def tile_out(t: Any) -> Any:
    """A kernel output holding tile ``t``."""
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def new(shape: tuple[int, ...], dtype: Any = nl.float32, buffer: Any = nl.sbuf) -> Any:
    return nl.ndarray(shape, dtype=dtype, buffer=buffer)


# --- nl families ---------------------------------------------------------------------------------------------------
@covers(*UNARY)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_nl_unary(name: str) -> None:
    ref, x, rtol, atol = UNARY[name]
    got = run(lambda a: tile_out(getattr(nl, name)(nl.load(a))), x)
    want = np.asarray(ref(x.astype(np.float64) if x.dtype.kind == "f" else x)).astype(x.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@covers(*(n for n in BINARY if n not in ("abs_max", "abs_min")))
@pytest.mark.parametrize("name", sorted(n for n in BINARY if n not in ("abs_max", "abs_min")))
def test_nl_binary(name: str) -> None:
    """0.6 results keep the first operand's dtype, comparisons and logical ops included (1/0 values)."""
    ref, x, y, rtol, atol, _ = BINARY[name]
    got = run(lambda a, b: tile_out(getattr(nl, name)(nl.load(a), nl.load(b))), x, y)
    wide = (x.astype(np.float64), y.astype(np.float64)) if x.dtype.kind == "f" else (x, y)
    np.testing.assert_allclose(got, np.asarray(ref(*wide)).astype(x.dtype), rtol=rtol, atol=atol)


@covers("abs_max", "abs_min")
def test_abs_max_and_abs_min_are_neuroncore_v4_only() -> None:
    with pytest.raises(Exception, match="needs NeuronCore-v4"):
        run(lambda a: tile_out(nl.abs_max(nl.load(a), nl.load(a))), rand(128, 4))


@covers(*REDUCE)
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_nl_reductions(name: str) -> None:
    ref, x, rtol, atol, _ = REDUCE[name]
    keep = {} if name in ("all", "var") else {"keepdims": True}
    got = run(lambda a: tile_out(getattr(nl, name)(nl.load(a), axis=[1], **keep).reshape((128, 1))), x)
    np.testing.assert_allclose(got, np.asarray(ref(x.astype(np.float64))).reshape(128, 1).astype(x.dtype),
                               rtol=rtol, atol=atol)


# --- nl: creation, movement and the rest ------------------------------------------------------------------------------
@covers("ndarray", "zeros", "ones", "full", "zeros_like", "empty_like", "load", "store", "copy")
def test_creation_and_movement() -> None:
    x = rand(128, 16)

    def body(a):
        z, o, f = nl.zeros((128, 16), nl.float32), nl.ones((128, 16), nl.float32), nl.full((128, 16), 2.5, nl.float32)
        e = nl.empty_like(z)
        nisa.tensor_tensor(dst=e, data1=o, data2=f, op=nl.add)  # 3.5
        zl = nl.zeros_like(nl.load(a))
        s = nl.add(nl.add(zl, e), nl.copy(nl.load(a), dtype=nl.bfloat16))
        out = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, s)
        return out

    want = 3.5 + x.astype(ml_dtypes.bfloat16).astype(F32)
    np.testing.assert_allclose(run(body, x), want, rtol=1e-6)


@covers("load_transpose2d", "transpose", "matmul", "shared_identity_matrix", "shared_constant", "broadcast_to",
        "expand_dims")
def test_transposes_matmul_constants_and_broadcast() -> None:
    x, w = rand(64, 128), rand(128, 32)
    k = np.arange(32, dtype=F32)

    def body(a, b):
        at = nl.load_transpose2d(a)  # (128, 64)
        prod = nl.copy(nl.matmul(at, nl.load(b), transpose_x=True))  # a @ b: (64, 32)
        eye = nl.shared_identity_matrix(64, dtype=nl.float32)
        back = nl.copy(nl.transpose(nl.copy(nl.matmul(eye, prod, transpose_x=True))))  # (32, 64)
        c = nl.load(nl.shared_constant(k.reshape(1, 32)))
        row = nl.broadcast_to(c, (64, 32))
        assert nl.expand_dims(row, 1).shape == (64, 1, 32)
        return tile_out(nl.add(prod, row)), tile_out(back)

    got, back = run(body, x, w)
    np.testing.assert_allclose(got, x @ w + k, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(back, (x @ w).T, rtol=1e-4, atol=1e-4)


@covers("softmax", "rms_norm", "where", "gather_flattened")
def test_composites() -> None:
    x, g = rand(128, 32), rand(1, 32, lo=0.5, hi=1.5)
    idx = RNG.integers(0, 32, (128, 8)).astype(np.uint32)

    def body(a, gamma, ix):
        t = nl.load(a)
        sm = nl.softmax(t, axis=1)
        rn = nl.rms_norm(t, nl.broadcast_to(nl.load(gamma), (128, 32)), axis=[1], n=32)
        wh = nl.where(nl.greater(t, 0.0), t, 0.0)
        ga = nl.gather_flattened(t, nl.load(ix))
        return tile_out(sm), tile_out(rn), tile_out(wh), tile_out(ga)

    sm, rn, wh, ga = run(body, x, g, idx)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rn, x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * g, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(wh, np.where(x > 0, x, 0))
    np.testing.assert_array_equal(ga, np.take_along_axis(x, idx.astype(np.int64), axis=1))


@covers("rand", "random_seed", "dropout")
def test_random_calls_by_their_properties() -> None:
    def body(a):
        seed = nl.full((1, 1), 7, dtype=nl.int32)
        nl.random_seed(seed)
        r = nl.rand((128, 64), dtype=nl.float32)
        d = nl.dropout(nl.load(a), 0.5)
        return tile_out(r), tile_out(d)

    x = rand(128, 64, lo=1, hi=2)
    r1, d1 = run(body, x)
    r2, _ = run(body, x)
    assert ((0 <= r1) & (r1 < 1)).all() and np.array_equal(r1, r2)  # seeded: the same values again
    kept = d1 != 0
    assert 0.35 < kept.mean() < 0.65 and np.array_equal(d1[kept], x[kept])


def test_rand_fills_psum_and_hbm_buffers_too() -> None:
    """AWS's nl.rand docs: "buffer: sbuf, psum, hbm" (once refused as 'simulated into SBUF only')."""

    def body(a):
        seed = nl.full((1, 1), 7, dtype=nl.int32)
        nl.random_seed(seed)
        p = nl.rand((128, 64), dtype=nl.float32, buffer=nl.psum)
        h = nl.rand((128, 64), dtype=nl.float32, buffer=nl.hbm)
        t = new((128, 64))
        nisa.tensor_copy(dst=t, src=p)
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=h)
        return tile_out(t), out, nl.is_psum(p.buffer), nl.is_hbm(h.buffer)

    p, h, on_psum, on_hbm = run(body, rand(1, 1))
    assert on_psum and on_hbm
    for r in (p, h):
        assert ((0 <= r) & (r < 1)).all() and 0.45 < r.mean() < 0.55 and len(np.unique(r)) > 8000
    assert not np.array_equal(p, h)  # two draws


@covers("ds", "affine_range", "sequential_range", "static_range", "range", "program_id", "num_programs", "program_ndim",
        "is_hbm", "is_sbuf", "is_psum", "is_on_chip", "device_print")
def test_indices_loops_queries_and_print(capsys: pytest.CaptureFixture) -> None:
    x = rand(128, 64)

    def body(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        assert (nl.program_id(0), nl.num_programs(), nl.program_ndim()) == (0, 1, 0)
        assert nl.is_hbm(a.buffer) and nl.is_on_chip(nl.sbuf) and nl.is_sbuf(nl.sbuf) and nl.is_psum(nl.psum)
        total = 0
        for i in nl.affine_range(2):
            for j in nl.sequential_range(0, 2):
                for _ in nl.static_range(1):
                    for _ in nl.range(1):  # nl.range: nki-library main's spelling
                        total += 1  # plain Python ints: 4 iterations
                    t = nl.load(a[nl.ds(i * 64, 64), nl.ds(j * 32, 32)])
                    nl.store(out[i * 64:(i + 1) * 64, j * 32:(j + 1) * 32], t)
        assert total == 4
        nl.device_print("first", nl.load(a[0:1, 0:2]))
        return out

    np.testing.assert_array_equal(run(body, x), x)
    assert "first" in capsys.readouterr().out


# --- nisa ------------------------------------------------------------------------------------------------------
@covers("tensor_copy_predicated", "select_reduce", "range_select")
def test_predicated_selection() -> None:
    x = rand(128, 16)
    pred = (RNG.random((128, 16)) < 0.5).astype(np.uint8)
    lo, hi = np.full((128, 1), 3, F32), np.full((128, 1), 10, F32)

    def body(a, p, b0, b1):
        t, pr = nl.load(a), nl.load(p)
        cp = nl.zeros((128, 16), nl.float32)
        nisa.tensor_copy_predicated(dst=cp, src=t, predicate=pr)
        sr = new((128, 16))
        mx = new((128, 1))
        nisa.select_reduce(dst=sr, predicate=pr, on_true=t, on_false=-1.0, reduce_res=mx,
                           reduce_cmd=nisa.reduce_cmd.reset_reduce)
        rs = new((128, 16))
        nisa.range_select(dst=rs, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less,
                          bound0=nl.load(b0), bound1=nl.load(b1), on_false_value=-1e30)
        return tile_out(cp), tile_out(sr), tile_out(mx), tile_out(rs)

    cp, sr, mx, rs = run(body, x, pred, lo, hi)
    np.testing.assert_array_equal(cp, np.where(pred != 0, x, 0))
    np.testing.assert_array_equal(sr, np.where(pred != 0, x, -1))
    np.testing.assert_array_equal(mx[:, 0], np.where(pred != 0, x, -1).max(axis=1))
    cols = np.arange(16)[None, :]
    np.testing.assert_array_equal(rs, np.where((cols >= 3) & (cols < 10), x, F32(-1e30)))


@covers("iota", "affine_select")
def test_index_patterns() -> None:
    def body(a):
        io = new((128, 4, 8), nl.int32)
        nisa.iota(dst=io, pattern=[[8, 4], [1, 8]], offset=3, channel_multiplier=100)
        mask = new((128, 32))
        nisa.affine_select(dst=mask, pattern=[[-1, 32]], channel_multiplier=1, on_true_tile=nl.load(a),
                           on_false_value=-5.0, cmp_op=nl.greater_equal)
        return tile_out(io), tile_out(mask)

    x = rand(128, 32)
    io, mask = run(body, x)
    p = np.arange(128)[:, None, None]
    np.testing.assert_array_equal(io, 3 + 100 * p + np.arange(32).reshape(1, 4, 8))
    np.testing.assert_array_equal(mask, np.where(np.arange(128)[:, None] - np.arange(32)[None, :] >= 0, x, -5.0))


@covers("tensor_partition_reduce", "activation_reduce", "tensor_scalar_cumulative", "tensor_scalar_reduce",
        "bn_stats", "bn_aggr")
def test_reductions_scans_and_statistics() -> None:
    x = rand(128, 16)

    def body(a):
        t = nl.load(a)
        pr = new((1, 16))
        nisa.tensor_partition_reduce(dst=pr, op=nl.add, data=t)
        ar, s = new((128, 16)), new((128, 1))
        nisa.activation_reduce(dst=ar, op=nl.square, data=t, reduce_op=nl.add, reduce_res=s)
        cu = new((128, 16))
        nisa.tensor_scalar_cumulative(dst=cu, src=t, op0=nl.multiply, op1=nl.add, imm0=2.0)
        sr, m = new((128, 16)), new((128, 1))
        nisa.tensor_scalar_reduce(dst=sr, data=t, op0=nl.add, operand0=1.0, reduce_op=nl.maximum, reduce_res=m)
        st, ag = new((128, 6)), new((128, 2))
        nisa.bn_stats(dst=st, data=t)
        nisa.bn_aggr(dst=ag, data=st)
        return tuple(tile_out(v) for v in (pr, ar, s, cu, sr, m, ag))

    pr, ar, s, cu, sr, m, ag = run(body, x)
    np.testing.assert_allclose(pr, x.sum(axis=0, keepdims=True), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ar, x * x, rtol=1e-6)
    np.testing.assert_allclose(s[:, 0], (x * x).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(cu, np.cumsum(2 * x, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sr, x + 1, rtol=1e-6)
    np.testing.assert_allclose(m[:, 0], (x + 1).max(axis=1), rtol=1e-6)
    np.testing.assert_allclose(ag, np.stack([x.mean(axis=1), x.var(axis=1)], axis=1), rtol=1e-4, atol=1e-5)


@covers("max8", "nc_find_index8", "nc_match_replace8")
def test_top8() -> None:
    x = np.stack([RNG.permutation(64).astype(F32) for _ in range(128)])

    def body(a):
        t = nl.load(a)
        top, idx, rep = new((128, 8)), new((128, 8), nl.uint32), new((128, 64))
        nisa.max8(dst=top, src=t)
        nisa.nc_find_index8(dst=idx, data=t, vals=top)
        nisa.nc_match_replace8(dst=rep, data=t, vals=top, imm=-1.0)
        return tile_out(top), tile_out(idx), tile_out(rep)

    top, idx, rep = run(body, x)
    want = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(top, want)
    np.testing.assert_array_equal(np.take_along_axis(x, idx.astype(np.int64), axis=1), want)
    np.testing.assert_array_equal(rep, np.where(x >= 56, -1, x))


@covers("nc_stream_shuffle", "local_gather", "sequence_bounds", "dma_transpose", "get_nc_version",
        "get_nc_sub_version")
def test_data_movement_instructions() -> None:
    x = rand(32, 8)
    src = rand(16, 4)
    ids = np.array([[1, 1, 2, 0, 3, 3, 3, 0]], dtype=F32)
    mask = list(range(31, -1, -1))

    def body(a, s, seg):
        t = nl.load(a)
        sh = new((32, 8))
        nisa.nc_stream_shuffle(dst=sh, src=t, shuffle_mask=mask)
        ix = nl.ndarray((16, 1), dtype=nl.uint16, buffer=nl.sbuf)
        nisa.iota(dst=ix, pattern=[[0, 1]], channel_multiplier=0)  # every index is element 0 of the partition
        lg = new((16, 16, 1))
        nisa.local_gather(dst=lg, src_buffer=nl.load(s), index=ix)
        sb = new((1, 2, 8))
        nisa.sequence_bounds(dst=sb, segment_ids=nl.load(seg))
        tr = new((8, 16), nl.bfloat16)
        h = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.tensor_copy(dst=h, src=t[0:16, :])
        nisa.dma_transpose(dst=tr, src=h)
        assert nisa.get_nc_version() == nisa.nc_version.gen3 and nisa.get_nc_sub_version() == 0
        return tile_out(sh), tile_out(lg), tile_out(sb), tile_out(tr)

    sh, lg, sb, tr = run(body, x, src, ids)
    np.testing.assert_array_equal(sh, x[::-1])
    np.testing.assert_array_equal(lg[:, :, 0], np.broadcast_to(src[:, 0:1], (16, 16)))  # each partition, offset 0
    np.testing.assert_array_equal(sb, [[[0, 0, 2, 8, 4, 4, 4, 8], [2, 2, 3, -1, 7, 7, 7, -1]]])
    np.testing.assert_array_equal(tr, x[0:16].astype(ml_dtypes.bfloat16).T)


@covers("dropout_isa")
def test_isa_dropout() -> None:
    x = rand(128, 64, lo=1, hi=2)

    def body(a):
        d = new((128, 64))
        nisa.dropout(dst=d, data=nl.load(a), prob=0.25)
        return tile_out(d)

    d = run(body, x)
    kept = d != 0
    assert 0.6 < kept.mean() < 0.9 and np.array_equal(d[kept], x[kept])


#: calls covered by the other 0.6 test files (the kernel named after each)
ELSEWHERE = {
    "dma_copy": "test_nki06_frontend.add_tiled", "tensor_tensor": "test_nki06_frontend.add_tiled",
    "nc_matmul": "test_nki06_semantics (accumulate)", "tensor_copy": "test_nki06_frontend.matmul_tiled",
    "memset": "test_nki06_semantics (NaN fill)", "activation": "test_nki06_registry.many_calls",
    "tensor_scalar": "test_nki06_registry.many_calls", "tensor_reduce": "test_nki06_registry.many_calls",
    "scalar_tensor_tensor": "test_nki06_registry.many_calls", "reciprocal": "test_nki06_registry.many_calls",
    "tensor_tensor_scan": "test_nki06_registry.many_calls", "nc_transpose": "test_nki06_registry.many_calls",
    "sendrecv": "test_nki06_semantics.swap_halves", "core_barrier": "test_nki06_semantics.barrier_then_read",
    "register_alloc": "test_nki06_control", "register_move": "test_nki06_control",
    "register_load": "test_nki06_control", "register_store": "test_nki06_control",
    "fori_loop": "test_nki06_control", "while_loop": "test_nki06_control", "dynamic_range": "test_nki06_control",
    "no_reorder": "test_nki06_control",
    "nc_matmul_mx": "test_nki06_mx", "quantize_mx": "test_nki06_mx",
    "exponential": "test_nki06_isa_more", "activate2": "test_nki06_isa_more",
    "nonzero_with_count": "test_nki06_isa_more", "topk": "test_nki06_isa_more",
    "nc_n_gather": "test_nki06_gather_dma", "dma_compute": "test_nki06_gather_dma", "rng": "test_nki06_rng",
    "rand2": "test_nki06_rng", "set_rng_seed": "test_nki06_rng", "rand_set_state": "test_nki06_rng",
    "rand_get_state": "test_nki06_rng",
}


def test_every_06_call_is_covered() -> None:
    missing = []
    for module in (nl, nisa):
        for name in dir(module):
            obj = getattr(module, name)
            if name.startswith("_") or isinstance(obj, type) or not callable(obj) or \
                    getattr(obj, "__nki06_refused__", None) or name in ("canonical",):
                continue
            key = "dropout_isa" if module is nisa and name == "dropout" else name
            if key not in COVERED and name not in ELSEWHERE:
                missing.append(f"{module.__name__}.{name}")
    assert not missing, missing
    assert math.isfinite(len(COVERED))
