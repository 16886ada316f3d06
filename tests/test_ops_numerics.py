"""Every ``nl``/``nisa`` API the course uses, checked against NumPy / torch references.

The simulator claims to compute like the engines do: widen inputs to fp32, compute, round once to
the output dtype.  So each reference below is computed independently in fp32 (or exactly for
integers) and then cast to the expected dtype with ``ml_dtypes``; a kernel result must match it to
within one unit in the last place of that dtype.  Output dtypes are checked against the NKI type
promotion table (nki-spec section 1.4), not against whatever the simulator happens to produce.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ml_dtypes
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest
import torch

F32 = np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
E4M3 = nl.float8_e4m3
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
FLOATS = [F32, BF16, F16]
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)]
ALL_DTYPES = FLOATS + [E4M3, E5M2] + INTS + [np.dtype(np.bool_)]

RNG = np.random.default_rng(1234)


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def run(fn: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    """Load each array into SBUF, apply ``fn`` to the tiles, and return the result tile in its own dtype.

    The output HBM tensor takes the result tile's dtype, so the returned array also tells us which
    dtype the simulator inferred for the op.
    """

    @nki.jit
    def kernel(a, b=None, c=None):
        tiles = [nl.load(t) for t in (a, b, c) if t is not None]
        res = fn(*tiles)
        out = nl.ndarray(res.shape, dtype=res.dtype, buffer=nl.shared_hbm)
        nl.store(out, res)
        return out

    return kernel(*arrays)


def ulp_tol(dtype: np.dtype) -> float:
    """Relative size of one unit in the last place of ``dtype`` (how far one rounding may move)."""
    dtype = np.dtype(dtype)
    if dtype == F32:
        return 2.0 ** -22
    if dtype.kind == "f" or dtype in (BF16, E4M3, E5M2):
        return float(ml_dtypes.finfo(dtype).eps)
    return 0.0


def assert_matches(got: np.ndarray, ref_f32: Any, dtype: Any, atol: float = 0.0, ulps: float = 1.0) -> None:
    """``got`` has dtype ``dtype`` and equals the fp32 reference rounded once to ``dtype``."""
    dtype = np.dtype(dtype)
    assert got.dtype == dtype, f"dtype {got.dtype} != expected {dtype}"
    ref = np.asarray(ref_f32)
    if dtype.kind in "iub":
        np.testing.assert_array_equal(got, ref.astype(dtype))
        return
    expected = ref.astype(np.float32).astype(dtype).astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), expected, rtol=ulps * ulp_tol(dtype), atol=atol)


def rand(shape: tuple[int, ...], dtype: Any, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
    """Random values in [lo, hi) representable in ``dtype`` (integers: the in-range integers)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, int(lo)), min(info.max, int(hi)) + 1, size=shape).astype(dtype)
    return RNG.uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


def f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# creation
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_creation_fills(dtype: np.dtype) -> None:
    """zeros/ones/full and their *_like forms hold the fill value in the requested dtype."""
    fill = True if dtype == np.bool_ else 3

    @nki.jit
    def kernel(x):
        outs = []
        tiles = [nl.zeros((128, 16), dtype=dtype), nl.ones((128, 16), dtype=dtype),
                 nl.full((128, 16), fill, dtype=dtype)]
        xt = nl.load(x)
        tiles += [nl.zeros_like(xt), nl.ones_like(xt), nl.full_like(xt, fill), nl.zeros_like(xt, dtype=nl.float32)]
        for t in tiles:
            o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
            outs.append(o)
        for o, t in zip(outs, tiles):
            nl.store(o, t)
        return tuple(outs)

    x = rand((64, 8), dtype)
    z, o, f, zl, ol, fl, zl32 = kernel(x)
    for got, val, shape, d in ((z, 0, (128, 16), dtype), (o, 1, (128, 16), dtype), (f, fill, (128, 16), dtype),
                               (zl, 0, x.shape, dtype), (ol, 1, x.shape, dtype), (fl, fill, x.shape, dtype),
                               (zl32, 0, x.shape, F32)):
        assert got.shape == shape and got.dtype == d
        np.testing.assert_array_equal(f32(got), np.full(shape, val, dtype=np.float32))


@pytest.mark.parametrize("dtype", FLOATS + [E4M3, E5M2], ids=str)
def test_ndarray_is_uninitialised_nan(dtype: np.dtype) -> None:
    """A fresh nl.ndarray tile holds NaN, so reading memory nobody wrote is visible."""

    @nki.jit
    def kernel(x):
        t = nl.ndarray((128, 4), dtype=dtype, buffer=nl.sbuf)
        e = nl.empty_like(nl.load(x))
        o1 = nl.ndarray((128, 4), dtype=dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(o1, t)
        nl.store(o2, e)
        return o1, o2

    o1, o2 = kernel(np.ones((32, 4), dtype=dtype))
    assert np.isnan(f32(o1)).all() and np.isnan(f32(o2)).all()


# ----------------------------------------------------------------------------------------------
# load / store
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_load_store_roundtrip(dtype: np.dtype) -> None:
    x = rand((128, 40), dtype)
    got = run(lambda t: t, x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("src,dst", [(F32, BF16), (F32, F16), (F32, np.dtype(np.int32)), (BF16, F32),
                                     (np.dtype(np.int16), F32), (F32, E4M3), (F16, BF16)], ids=str)
def test_load_dtype_cast(src: np.dtype, dst: np.dtype) -> None:
    """nl.load(..., dtype=) rounds once (to nearest) to the new dtype."""
    x = rand((64, 32), src, -100, 100)
    got = run(lambda t: nl.copy(t, dtype=dst), x)
    ref = f32(x)
    if np.dtype(dst).kind in "iu":
        ref = np.rint(ref)
    assert_matches(got, ref, dst)

    @nki.jit
    def kernel(a):
        t = nl.load(a, dtype=dst)
        out = nl.ndarray(a.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out

    assert_matches(kernel(x), ref, dst)


def test_masked_load_store_ragged_rows() -> None:
    """The tutorial's ragged last tile: mask rows past the end on load and on store."""
    n, f = 300, 24
    x = rand((n, f), F32)

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i_f = nl.arange(f)[None, :]
        for p in nl.affine_range((n + 127) // 128):
            i_p = p * 128 + nl.arange(128)[:, None]
            t = nl.load(a[i_p, i_f], mask=(i_p < n))
            r = nl.multiply(t, 2.0, mask=(i_p < n))
            nl.store(out[i_p, i_f], value=r, mask=(i_p < n))
        return out

    np.testing.assert_array_equal(kernel(x), 2 * x)


def test_masked_store_leaves_rest_untouched() -> None:
    """Official mask test: a (128, 512) grid stored into a [64, 256] tensor under a 2-D mask."""
    x = rand((128, 512), F32)

    @nki.jit
    def kernel(a):
        out = nl.ndarray((64, 256), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:512]
        t = nl.load(a[i_p, i_f])
        sq = nl.square(t, mask=((i_p < 64) & (i_f < 256)))
        nl.store(out[i_p, i_f], value=sq, mask=((i_p < 64) & (i_f < 256)))
        return out

    assert_matches(kernel(x), np.square(x[:64, :256]), F32)


def test_vector_1d_loads_as_column() -> None:
    """A 1-D HBM vector (and a 1-D slice of one) arrives as an (N, 1) tile; stores go back to 1-D."""
    v = rand((512,), F32)

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for m in nl.affine_range(4):
            t = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.sbuf)
            t[...] = nl.load(a[m * 128:(m + 1) * 128])
            nl.store(out[m * 128:(m + 1) * 128], value=nl.add(t, 1.0))
        return out

    np.testing.assert_array_equal(kernel(v), v + 1)
    got = run(lambda t: t, v[:128])
    assert got.shape == (128, 1)
    np.testing.assert_array_equal(got[:, 0], v[:128])


def test_store_casts_to_destination_dtype() -> None:
    x = rand((128, 64), F32)

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    assert_matches(kernel(x), x, BF16)


# ----------------------------------------------------------------------------------------------
# unary activations
# ----------------------------------------------------------------------------------------------


def _t(fn: Callable) -> Callable[[np.ndarray], np.ndarray]:
    """A torch reference applied to fp32 values (torch computes these independently of the simulator)."""
    return lambda x: fn(torch.from_numpy(np.asarray(x, np.float32))).numpy()


def _grad(fn: Callable) -> Callable[[np.ndarray], np.ndarray]:
    def g(x: np.ndarray) -> np.ndarray:
        t = torch.tensor(np.asarray(x, np.float64), requires_grad=True)
        fn(t).sum().backward()
        return t.grad.numpy()

    return g


# name -> (reference, input range, absolute tolerance for approximations)
UNARY = {
    "abs": (np.abs, (-8, 8), 0),
    "negative": (np.negative, (-8, 8), 0),
    "sign": (np.sign, (-8, 8), 0),
    "trunc": (np.trunc, (-8, 8), 0),
    "floor": (np.floor, (-8, 8), 0),
    "ceil": (np.ceil, (-8, 8), 0),
    "exp": (np.exp, (-10, 10), 0),
    "log": (np.log, (2.0 ** -20, 1e6), 0),
    "cos": (np.cos, (-math.pi, math.pi), 0),
    "sin": (np.sin, (-math.pi, math.pi), 0),
    "tan": (np.tan, (-1.4, 1.4), 0),
    "tanh": (_t(torch.tanh), (-6, 6), 1e-6),
    "arctan": (np.arctan, (-math.pi / 2, math.pi / 2), 0),
    "sqrt": (np.sqrt, (2.0 ** -20, 1e6), 0),
    "rsqrt": (lambda x: 1 / np.sqrt(np.float64(x)), (2.0 ** -20, 1e6), 0),
    "reciprocal": (lambda x: 1 / np.float64(x), (0.01, 100), 0),
    "sigmoid": (_t(torch.sigmoid), (-20, 20), 1e-6),
    "relu": (_t(torch.relu), (-8, 8), 0),
    "gelu": (_t(torch.nn.functional.gelu), (-6, 6), 2e-6),
    "gelu_dx": (_grad(torch.nn.functional.gelu), (-6, 6), 2e-6),
    "gelu_apprx_tanh": (_t(lambda t: torch.nn.functional.gelu(t, approximate="tanh")), (-6, 6), 2e-6),
    "gelu_apprx_sigmoid": (_t(lambda t: t * torch.sigmoid(1.702 * t)), (-6, 6), 2e-6),
    "silu": (_t(torch.nn.functional.silu), (-10, 10), 2e-6),
    "silu_dx": (_grad(torch.nn.functional.silu), (-10, 10), 2e-6),
    "erf": (_t(torch.erf), (-4, 4), 1e-6),
    "erf_dx": (lambda x: 2 / math.sqrt(math.pi) * np.exp(-np.float64(x) ** 2), (-4, 4), 1e-6),
    "softplus": (_t(torch.nn.functional.softplus), (-20, 20), 2e-6),
    "mish": (_t(torch.nn.functional.mish), (-10, 10), 2e-6),
    "square": (np.square, (-8, 8), 0),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_activation(name: str, dtype: np.dtype) -> None:
    """Each nl.<activation> over its documented valid input range, in fp32/bf16/fp16."""
    ref, (lo, hi), atol = UNARY[name]
    if dtype == F16:
        hi = min(hi, 6e4)
    x = rand((128, 64), dtype, lo, hi)
    got = run(getattr(nl, name), x)
    want = np.asarray(ref(f32(x)), dtype=np.float64)
    assert_matches(got, want, dtype, atol=atol, ulps=2 if dtype == F32 else 1)


@pytest.mark.parametrize("name", ["exp", "tanh", "relu", "square", "abs"])
def test_unary_activation_dtype_argument(name: str) -> None:
    """dtype= picks the output dtype; the value is rounded once from fp32."""
    ref, (lo, hi), atol = UNARY[name]
    x = rand((64, 32), F32, lo, hi)
    got = run(lambda t: getattr(nl, name)(t, dtype=nl.bfloat16), x)
    assert_matches(got, np.asarray(ref(x), dtype=np.float64), BF16, atol=atol)


@pytest.mark.parametrize("dtype", [np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.int16)], ids=str)
def test_unary_on_integers(dtype: np.dtype) -> None:
    """Integer inputs go through fp32 and come back in the input dtype."""
    x = rand((64, 16), dtype, -50, 50)
    assert_matches(run(nl.abs, x), np.abs(x.astype(np.int64)), dtype)
    assert_matches(run(nl.negative, x), -x.astype(np.int64), dtype)
    small = (x // 5).astype(dtype)  # keep squares inside int8
    assert_matches(run(nl.square, small), small.astype(np.int64) ** 2, dtype)
    # out-of-range results saturate (fp32 result converted to the integer dtype), they do not wrap
    big = np.full((8, 4), 100, dtype=dtype)
    info = np.iinfo(dtype)
    assert_matches(run(nl.square, big), np.minimum(10000, info.max), dtype)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_invert_and_logical_not(dtype: np.dtype) -> None:
    x = rand((32, 16), dtype, 0, 60)
    assert_matches(run(nl.invert, x), np.invert(x), dtype)
    got = run(nl.logical_not, x)
    np.testing.assert_array_equal(got.astype(bool), np.logical_not(x))


# ----------------------------------------------------------------------------------------------
# binary ops, Python operators, type promotion
# ----------------------------------------------------------------------------------------------

ARITH = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
}
COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "less": np.less, "less_equal": np.less_equal,
}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}


@pytest.mark.parametrize("name", sorted(ARITH))
@pytest.mark.parametrize("dtype", FLOATS + [E4M3], ids=str)
def test_binary_arith_floats(name: str, dtype: np.dtype) -> None:
    x = rand((128, 48), dtype)
    y = rand((128, 48), dtype, 0.5, 4.0)
    got = run(getattr(nl, name), x, y)
    assert_matches(got, ARITH[name](f32(x), f32(y)), dtype)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_binary_arith_ints(name: str, dtype: np.dtype) -> None:
    """Integer arithmetic is exact while the result fits the dtype."""
    x = rand((64, 32), dtype, 0, 10)
    y = rand((64, 32), dtype, 0, 10)
    ref = ARITH[name](x.astype(np.int64), y.astype(np.int64))
    if np.dtype(dtype).kind == "u":
        ref = np.maximum(ref, 0) if name != "subtract" else ref
        if name == "subtract":
            x, y = np.maximum(x, y), np.minimum(x, y)
            ref = x.astype(np.int64) - y.astype(np.int64)
    assert_matches(run(getattr(nl, name), x, y), ref, dtype)


def test_divide_of_integers_is_true_division() -> None:
    x = rand((32, 16), np.int32, 1, 100)
    y = rand((32, 16), np.int32, 1, 9)
    got = run(lambda a, b: nl.divide(a, b, dtype=nl.float32), x, y)
    assert_matches(got, x / y, F32)


def test_power_mod_fmod() -> None:
    x = rand((64, 32), F32, 0.1, 3.0)
    y = rand((64, 32), F32, -2.0, 2.0)
    assert_matches(run(nl.power, x, y), np.power(f32(x), f32(y)), F32, ulps=4)
    a = rand((64, 32), F32, -10, 10)
    b = rand((64, 32), F32, 1, 3) * np.where(RNG.random((64, 32)) < 0.5, -1, 1).astype(np.float32)
    assert_matches(run(nl.mod, a, b), np.mod(a, b), F32, atol=1e-6)
    assert_matches(run(nl.fmod, a, b), np.fmod(a, b), F32, atol=1e-6)
    ai = rand((64, 32), np.int32, -50, 50)
    bi = rand((64, 32), np.int32, 1, 7)
    got = run(nl.mod, ai, bi)
    np.testing.assert_array_equal(got, np.mod(ai, bi))


@pytest.mark.parametrize("name", sorted(COMPARE))
@pytest.mark.parametrize("dtype", [F32, BF16, np.dtype(np.int32), np.dtype(np.uint8)], ids=str)
def test_comparisons_default_to_bool(name: str, dtype: np.dtype) -> None:
    x = rand((64, 32), dtype, 0, 4)
    y = rand((64, 32), dtype, 0, 4)
    got = run(getattr(nl, name), x, y)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, COMPARE[name](f32(x), f32(y)))
    got = run(lambda a, b: getattr(nl, name)(a, b, dtype=nl.float32), x, y)
    assert_matches(got, COMPARE[name](f32(x), f32(y)), F32)


@pytest.mark.parametrize("name", sorted(LOGICAL))
def test_logical_ops(name: str) -> None:
    x = rand((64, 32), np.bool_)
    y = rand((64, 32), np.bool_)
    got = run(getattr(nl, name), x, y)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, LOGICAL[name](x, y))
    u = rand((64, 32), np.uint8, 0, 3)
    np.testing.assert_array_equal(run(getattr(nl, name), u, x), LOGICAL[name](u != 0, x))


@pytest.mark.parametrize("name", sorted(BITWISE))
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_bitwise_ops(name: str, dtype: np.dtype) -> None:
    x = rand((64, 32), dtype, 0, 127)
    y = rand((64, 32), dtype, 0, 127)
    assert_matches(run(getattr(nl, name), x, y), BITWISE[name](x, y), dtype)


@pytest.mark.parametrize("dtype", [np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.uint32)], ids=str)
def test_shifts(dtype: np.dtype) -> None:
    x = rand((32, 16), dtype, 0, 15)
    s = rand((32, 16), dtype, 0, 3)
    assert_matches(run(nl.left_shift, x, s), np.left_shift(x, s), dtype)
    assert_matches(run(nl.right_shift, x, s), np.right_shift(x, s), dtype)
    if dtype != np.uint32:  # a weak int scalar is int32: (uint8|int32, int32) -> int32
        assert_matches(run(lambda a: a << 2, x), np.left_shift(x.astype(np.int64), 2), np.dtype(np.int32))


# (dtype a, dtype b) -> promoted dtype, from the NKI type promotion table
PROMOTION = [
    (F16, BF16, F32),
    (BF16, F16, F32),
    (E4M3, F16, F16),
    (E4M3, BF16, BF16),
    (E4M3, E5M2, BF16),
    (BF16, F32, F32),
    (F16, F32, F32),
    (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)),
    (np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.int32)),
    (np.dtype(np.int16), np.dtype(np.uint8), np.dtype(np.int16)),
    (np.dtype(np.int32), np.dtype(np.uint32), F32),
    (np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.int32)),
    (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint16)),
    (np.dtype(np.int32), BF16, BF16),
    (np.dtype(np.uint8), F16, F16),
    (np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.int8)),
]


@pytest.mark.parametrize("a,b,want", PROMOTION, ids=str)
def test_promotion_table(a: np.dtype, b: np.dtype, want: np.dtype) -> None:
    """nl.add(a, b) takes the documented promoted dtype and rounds once into it."""
    x = rand((32, 16), a, 0, 8)
    y = rand((32, 16), b, 0, 8)
    got = run(nl.add, x, y)
    assert_matches(got, f32(x) + f32(y), want)
    got = run(lambda p, q: p + q, x, y)
    assert_matches(got, f32(x) + f32(y), want)


def test_promotion_docs_example_bf16_fp16() -> None:
    """nl.add(bf16, fp16) is fp32 unless dtype=nl.bfloat16 is passed."""
    x = rand((32, 16), BF16)
    y = rand((32, 16), F16)
    assert run(nl.add, x, y).dtype == F32
    assert_matches(run(lambda p, q: nl.add(p, q, dtype=nl.bfloat16), x, y), f32(x) + f32(y), BF16)


# (tile dtype, python scalar) -> promoted dtype: int -> int32, float -> float32, bool -> uint8
SCALAR_PROMOTION = [
    (np.dtype(np.int8), 2, np.dtype(np.int32)),
    (np.dtype(np.uint8), 2, np.dtype(np.int32)),
    (np.dtype(np.int32), 2, np.dtype(np.int32)),
    (np.dtype(np.uint32), 2, F32),
    (F16, 1.25, F32),
    (BF16, 1.25, F32),
    (BF16, 2, BF16),
    (F16, 3, F16),
    (F32, 2, F32),
    (np.dtype(np.int16), 1.5, F32),
    (np.dtype(np.uint8), True, np.dtype(np.uint8)),
    (np.dtype(np.int8), True, np.dtype(np.int16)),  # True is a weak uint8; (int8, uint8) -> int16
]


@pytest.mark.parametrize("dtype,scalar,want", SCALAR_PROMOTION, ids=str)
def test_scalar_promotion(dtype: np.dtype, scalar: Any, want: np.dtype) -> None:
    x = rand((32, 16), dtype, 0, 8)
    assert_matches(run(lambda t: nl.add(t, scalar), x), f32(x) + np.float32(scalar), want)
    assert_matches(run(lambda t: t + scalar, x), f32(x) + np.float32(scalar), want)
    assert_matches(run(lambda t: scalar + t, x), f32(x) + np.float32(scalar), want)


def test_python_operators_on_tiles_and_scalars() -> None:
    x = rand((128, 64), F32)
    y = rand((128, 64), F32, 0.5, 3)
    xf, yf = f32(x), f32(y)
    cases: list[tuple[Callable, np.ndarray, np.dtype]] = [
        (lambda a, b: a + b, xf + yf, F32),
        (lambda a, b: a - b, xf - yf, F32),
        (lambda a, b: a * b, xf * yf, F32),
        (lambda a, b: a / b, xf / yf, F32),
        (lambda a, b: 2.0 - a, 2.0 - xf, F32),
        (lambda a, b: 3.0 / b, 3.0 / yf, F32),
        (lambda a, b: a * 0.5 + 1.0, xf * 0.5 + 1.0, F32),
        (lambda a, b: b ** 2, yf ** 2, F32),
        (lambda a, b: -a, -xf, F32),
        (lambda a, b: a < b, xf < yf, np.dtype(np.bool_)),
        (lambda a, b: a >= 0.0, xf >= 0, np.dtype(np.bool_)),
        (lambda a, b: a == a, np.ones_like(xf, dtype=bool), np.dtype(np.bool_)),
    ]
    for fn, ref, want in cases:
        assert_matches(run(fn, x, y), ref, want)


def test_free_dim_broadcast_with_operators_and_nl_ops() -> None:
    """(P, F) op (P, 1) broadcasts along free dims, with operators and nl.* alike."""
    x = rand((128, 64), F32)
    c = rand((128, 1), F32, 1, 2)
    assert_matches(run(lambda a, b: a * b, x, c), f32(x) * f32(c), F32)
    assert_matches(run(lambda a, b: nl.subtract(a, b), x, c), f32(x) - f32(c), F32)
    assert_matches(run(lambda a, b: b / a, x, c), f32(c) / f32(x), F32)


def test_partition_broadcast_only_in_nl_apis() -> None:
    """nl.add broadcasts a (1, F) row across partitions; the Python operator refuses to."""
    x = rand((128, 64), F32)
    r = rand((1, 64), F32)
    assert_matches(run(nl.add, x, r), f32(x) + f32(r), F32)
    with pytest.raises(ValueError, match="partition"):
        run(lambda a, b: a + b, x, r)


# ----------------------------------------------------------------------------------------------
# reductions
# ----------------------------------------------------------------------------------------------

REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean, "prod": np.prod}


@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_2d(name: str, dtype: np.dtype, keepdims: bool) -> None:
    lo, hi = (0.8, 1.2) if name == "prod" else (-4, 4)
    x = rand((128, 96), dtype, lo, hi)
    for axis in (1, [1], -1):
        got = run(lambda t, ax=axis: getattr(nl, name)(t, axis=ax, keepdims=keepdims), x)
        ref = REDUCE[name](f32(x).astype(np.float64), axis=1, keepdims=keepdims)
        assert got.shape == ((128, 1) if keepdims else (128,))
        assert_matches(got, ref, dtype, ulps=4 if name in ("sum", "mean", "prod") else 1, atol=1e-5)


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reductions_3d_axis_lists(name: str) -> None:
    lo, hi = (0.9, 1.1) if name == "prod" else (-4, 4)
    x = rand((64, 8, 12), F32, lo, hi)
    for axis, keep, shape in (([1, 2], False, (64,)), ([1, 2], True, (64, 1, 1)), (2, False, (64, 8)),
                              ([2], True, (64, 8, 1))):
        got = run(lambda t, ax=axis, k=keep: getattr(nl, name)(t, axis=ax, keepdims=k), x)
        ref = REDUCE[name](x.astype(np.float64), axis=tuple(np.atleast_1d(axis)), keepdims=keep)
        assert got.shape == shape
        assert_matches(got, ref, F32, ulps=8, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.uint16)], ids=str)
def test_reductions_on_integers(dtype: np.dtype) -> None:
    """Integer sums/max stay in the input dtype; mean of integers is fp32."""
    x = rand((64, 20), dtype, 0, 5)
    assert_matches(run(lambda t: nl.sum(t, axis=1), x), x.astype(np.int64).sum(axis=1), dtype)
    assert_matches(run(lambda t: nl.max(t, axis=1), x), x.max(axis=1), dtype)
    assert_matches(run(lambda t: nl.mean(t, axis=1), x), x.astype(np.float64).mean(axis=1), F32)


def test_all_and_var() -> None:
    b = RNG.random((64, 16)) < 0.9
    b[::5] = True
    got = run(lambda t: nl.all(t, axis=[1]), b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, b.all(axis=1))
    x = rand((128, 200), F32)
    assert_matches(run(lambda t: nl.var(t, axis=[1]), x), x.astype(np.float64).var(axis=1), F32, ulps=16)
    x3 = rand((32, 4, 50), BF16)
    assert_matches(run(lambda t: nl.var(t, axis=[1, 2]), x3), f32(x3).astype(np.float64).var(axis=(1, 2)), BF16)
    xi = rand((32, 40), np.int16, -20, 20)
    assert_matches(run(lambda t: nl.var(t, axis=1), xi), xi.astype(np.float64).var(axis=1), F32, ulps=8)


def test_reduction_result_broadcasts_against_tile() -> None:
    """Tutorial pattern: a (P,) reduction broadcasts against (P, F) as (P, 1)."""
    x = rand((128, 64), F32)
    xf = x.astype(np.float64)
    want = xf - xf.max(axis=1, keepdims=True)
    assert_matches(run(lambda t: t - nl.max(t, axis=1), x), want, F32)
    assert_matches(run(lambda t: nl.subtract(t, nl.max(t, axis=[1])), x), want, F32)
    e = np.exp(x.astype(np.float32))
    assert_matches(run(lambda t: t / nl.sum(t, axis=[1]), e), e / e.sum(axis=1, keepdims=True), F32, ulps=4)
    rms = x * (1 / np.sqrt((xf ** 2).sum(axis=1, keepdims=True) / 64))
    got = run(lambda t: nl.multiply(t, nl.rsqrt(nl.sum(nl.square(t), axis=[1]) / 64)), x)
    assert_matches(got, rms, F32, ulps=8)


def test_reduce_partition_axis_is_an_error() -> None:
    x = rand((32, 8), F32)
    with pytest.raises(ValueError):
        run(lambda t: nl.sum(t, axis=0), x)


# ----------------------------------------------------------------------------------------------
# matmul, transpose, copy, broadcast_to, where, iota, memset
# ----------------------------------------------------------------------------------------------


def _matmul_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return f32(a).astype(np.float64) @ f32(b).astype(np.float64)


@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=str)
@pytest.mark.parametrize("m,k,n", [(128, 128, 512), (64, 96, 200), (1, 128, 1)])
def test_matmul_transpose_x_both_ways(dtype: np.dtype, m: int, k: int, n: int) -> None:
    """nl.matmul(x, y) = x @ y and nl.matmul(xT, y, transpose_x=True) = xT.T @ y, fp32 in PSUM."""
    x = rand((m, k), dtype, -1, 1)
    y = rand((k, n), dtype, -1, 1)
    got = run(nl.matmul, x, y)
    assert got.shape == (m, n)
    assert_matches(got, _matmul_ref(x, y), F32, atol=1e-5, ulps=64)
    xt = np.ascontiguousarray(x.T)
    got = run(lambda a, b: nl.matmul(a, b, transpose_x=True), xt, y)
    assert_matches(got, _matmul_ref(x, y), F32, atol=1e-5, ulps=64)
    got = run(lambda a, b: nisa.nc_matmul(a, b), xt, y)
    assert_matches(got, _matmul_ref(x, y), F32, atol=1e-5, ulps=64)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_matmul_psum_accumulation_in_affine_range(dtype: np.dtype) -> None:
    """psum += nl.matmul(...) inside affine_range accumulates over K tiles in fp32."""
    k, m, n = 512, 128, 256
    at = rand((k, m), dtype, -1, 1)
    b = rand((k, n), dtype, -1, 1)

    @nki.jit
    def kernel(lhs_t, rhs):
        out = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((m, n), dtype=nl.float32, buffer=nl.psum)
        for kk in nl.affine_range(k // 128):
            a_t = nl.load(lhs_t[kk * 128:(kk + 1) * 128, :])
            b_t = nl.load(rhs[kk * 128:(kk + 1) * 128, :])
            acc += nl.matmul(a_t, b_t, transpose_x=True)
        nl.store(out, nl.copy(acc, dtype=lhs_t.dtype))
        return out

    assert_matches(kernel(at, b), f32(at).T.astype(np.float64) @ f32(b), dtype, atol=1e-4,
                   ulps=64 if dtype == F32 else 1)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_transpose(dtype: np.dtype) -> None:
    x = rand((64, 128), dtype)
    got = run(nl.transpose, x)
    assert got.shape == (128, 64)
    np.testing.assert_array_equal(got, x.T)
    small = rand((32, 16), dtype)  # Vector-engine size
    np.testing.assert_array_equal(run(lambda t: nisa.nc_transpose(t), small), small.T)
    np.testing.assert_array_equal(run(lambda t: nisa.nc_transpose(t, engine=nisa.tensor_engine), x), x.T)


def test_copy_and_tensor_copy_cast() -> None:
    x = rand((128, 64), F32, -300, 300)
    assert_matches(run(lambda t: nl.copy(t, dtype=nl.bfloat16), x), x, BF16)
    assert_matches(run(lambda t: nisa.tensor_copy(t, dtype=nl.float16), x), x, F16)
    assert_matches(run(lambda t: nisa.tensor_copy(t, dtype=nl.int32), x), np.rint(x), np.dtype(np.int32))
    xi = rand((128, 16), np.int32, -(2 ** 30), 2 ** 30)
    np.testing.assert_array_equal(run(lambda t: nisa.tensor_copy(t, engine=nisa.vector_engine), xi), xi)
    np.testing.assert_array_equal(run(nl.copy, xi), xi)


def test_broadcast_to() -> None:
    row = rand((1, 96), BF16)
    got = run(lambda t: nl.broadcast_to(t, shape=(128, 96)), row)
    np.testing.assert_array_equal(got, np.broadcast_to(row, (128, 96)))
    got = run(lambda t: t.broadcast_to((64, 96)), row)
    np.testing.assert_array_equal(got, np.broadcast_to(row, (64, 96)))


def test_where() -> None:
    c = rand((128, 32), np.bool_)
    x = rand((128, 32), F32)
    y = rand((128, 32), F32)
    assert_matches(run(nl.where, c, x, y), np.where(c, x, y), F32)
    assert_matches(run(lambda cc, xx: nl.where(cc, xx, 0.0), c, x), np.where(c, x, 0), F32)
    assert_matches(run(lambda xx: nl.where(xx > 0.0, xx, -1.0), x), np.where(x > 0, x, -1), F32)


def test_iota() -> None:
    @nki.jit
    def kernel(dummy):
        a = nisa.iota(nl.arange(512)[None, :], dtype=nl.int32)
        i_p, i_f = nl.mgrid[0:128, 0:64]
        b = nisa.iota(i_p * 64 + 2 * i_f + 3, dtype=nl.float32)
        oa = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ob = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.shared_hbm)
        nl.store(oa, a)
        nl.store(ob, b)
        return oa, ob

    a, b = kernel(np.zeros((1, 1), np.float32))
    assert a.shape == (1, 512) and a.dtype == np.int32
    np.testing.assert_array_equal(a[0], np.arange(512))
    ip, jf = np.mgrid[0:128, 0:64]
    assert_matches(b, ip * 64 + 2 * jf + 3, F32)


@pytest.mark.parametrize("dtype", [F32, BF16, np.dtype(np.int32), np.dtype(np.uint8)], ids=str)
def test_memset(dtype: np.dtype) -> None:
    @nki.jit
    def kernel(dummy):
        t = nisa.memset((128, 40), 7, dtype=dtype)
        o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(o, t)
        return o

    got = kernel(np.zeros((1, 1), np.float32))
    assert_matches(got, np.full((128, 40), 7.0), dtype)


# ----------------------------------------------------------------------------------------------
# nki.isa instructions
# ----------------------------------------------------------------------------------------------


def test_activation_scale_bias() -> None:
    """nisa.activation computes op(data * scale + bias); scale scalar or (P,1), bias (P,1)."""
    x = rand((128, 64), F32, -2, 2)
    bias = rand((128, 1), F32, -1, 1)
    scale = rand((128, 1), F32, 0.5, 1.5)
    got = run(lambda t, b: nisa.activation(op=nl.exp, data=t, bias=b, scale=0.5), x, bias)
    assert_matches(got, np.exp(x * np.float32(0.5) + bias), F32, ulps=2)
    got = run(lambda t, b, s: nisa.activation(op=np.tanh, data=t, bias=b, scale=s), x, bias, scale)
    assert_matches(got, np.tanh(x * scale + bias), F32, ulps=2, atol=1e-6)
    got = run(lambda t: nisa.activation(op=nl.square, data=t, dtype=nl.bfloat16), x)
    assert_matches(got, np.square(x), BF16)
    xb = rand((128, 64), BF16, -2, 2)
    got = run(lambda t, b: nisa.activation(op=nl.relu, data=t, bias=b), xb, bias)
    assert_matches(got, np.maximum(f32(xb) + bias, 0), BF16)


def test_activation_reduce_res() -> None:
    """reduce_res receives the free-axis sum of the activation output."""
    x = rand((128, 100), F32, -2, 2)

    @nki.jit
    def kernel(a):
        t = nl.load(a)
        res = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        e = nisa.activation(op=nl.exp, data=t, reduce_op=np.add, reduce_res=res,
                            reduce_cmd=nisa.reduce_cmd.reset_reduce)
        res2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        sq = nisa.activation_reduce(op=nl.square, data=t, reduce_op=nl.add, reduce_res=res2, scale=2.0)
        outs = [nl.ndarray(v.shape, dtype=v.dtype, buffer=nl.shared_hbm) for v in (e, res, sq, res2)]
        for o, v in zip(outs, (e, res, sq, res2)):
            nl.store(o, v)
        return tuple(outs)

    e, s, sq, s2 = kernel(x)
    x64 = x.astype(np.float64)
    assert_matches(e, np.exp(x64), F32, ulps=2)
    assert_matches(s, np.exp(x64).sum(axis=1, keepdims=True), F32, ulps=8)
    assert_matches(sq, (2 * x64) ** 2, F32, ulps=2)
    assert_matches(s2, ((2 * x64) ** 2).sum(axis=1, keepdims=True), F32, ulps=8)


@pytest.mark.parametrize("op,ref", [(np.add, np.add), (nl.subtract, np.subtract), (np.multiply, np.multiply),
                                    (nl.maximum, np.maximum), (np.minimum, np.minimum), (nl.divide, np.divide),
                                    (np.power, np.power)])
def test_tensor_tensor(op: Any, ref: Callable) -> None:
    x = rand((128, 64), F32, 0.5, 2)
    y = rand((128, 64), F32, -2, 2)
    assert_matches(run(lambda a, b: nisa.tensor_tensor(data1=a, data2=b, op=op), x, y), ref(x, y), F32, ulps=4)
    xb, yb = x.astype(BF16), y.astype(BF16)
    assert_matches(run(lambda a, b: nisa.tensor_tensor(a, b, op), xb, yb), ref(f32(xb), f32(yb)), BF16)
    # mixed dtypes: higher precision input wins
    assert run(lambda a, b: nisa.tensor_tensor(a, b, op), xb, y).dtype == F32


def test_tensor_tensor_bitvec_ints() -> None:
    x = rand((64, 32), np.int32, 0, 1000)
    y = rand((64, 32), np.int32, 0, 1000)
    got = run(lambda a, b: nisa.tensor_tensor(a, b, op=np.bitwise_xor), x, y)
    np.testing.assert_array_equal(got, x ^ y)
    got = run(lambda a, b: nisa.tensor_tensor(a, b, op=nl.add), x, y)
    np.testing.assert_array_equal(got, x + y)


def test_tensor_scalar() -> None:
    x = rand((128, 64), F32)
    v = rand((128, 1), F32, 0.5, 2)
    w = rand((128, 1), F32, -1, 1)
    got = run(lambda t: nisa.tensor_scalar(t, np.multiply, 3.0, op1=np.add, operand1=1.5), x)
    assert_matches(got, x * np.float32(3) + np.float32(1.5), F32)
    got = run(lambda t, a, b: nisa.tensor_scalar(data=t, op0=np.subtract, operand0=a, op1=np.multiply,
                                                 operand1=b), x, v, w)
    assert_matches(got, (x - v) * w, F32)
    # reverse0: operand0 - data
    got = run(lambda t: nisa.tensor_scalar(t, np.subtract, 1.0, reverse0=True), x)
    assert_matches(got, 1.0 - x, F32)
    got = run(lambda t, a: nisa.tensor_scalar(t, nl.divide, a, reverse0=True, op1=nl.subtract, operand1=2.0,
                                              reverse1=True), x, v)
    assert_matches(got, 2.0 - v / x, F32, ulps=2)
    # (P,) reduction results serve as the per-partition operand (layernorm tutorial)
    got = run(lambda t: nisa.tensor_scalar(t, np.subtract, nl.mean(t, axis=[1])), x)
    assert_matches(got, x.astype(np.float64) - x.astype(np.float64).mean(axis=1, keepdims=True), F32, atol=1e-6)
    xb = x.astype(BF16)
    got = run(lambda t: nisa.tensor_scalar(t, np.multiply, 0.1, dtype=nl.float32), xb)
    assert_matches(got, f32(xb) * np.float32(0.1), F32)
    xi = rand((32, 8), np.uint32, 0, 2 ** 20)
    got = run(lambda t: nisa.tensor_scalar(t, np.bitwise_and, 0xFF, op1=np.left_shift, operand1=4), xi)
    np.testing.assert_array_equal(got, (xi & 0xFF) << 4)


@pytest.mark.parametrize("op,ref", [(np.add, np.sum), (np.max, np.max), (nl.minimum, np.min),
                                    (np.multiply, np.prod)])
def test_tensor_reduce(op: Any, ref: Callable) -> None:
    x = rand((128, 6, 10), F32, 0.9, 1.1)
    x64 = x.astype(np.float64)
    got = run(lambda t: nisa.tensor_reduce(op, t, axis=(1, 2)), x)
    assert_matches(got, ref(x64, axis=(1, 2)), F32, ulps=8)
    got = run(lambda t: nisa.tensor_reduce(op=op, data=t, axis=[2], negate=True, keepdims=True), x)
    assert got.shape == (128, 6, 1)
    assert_matches(got, -ref(x64, axis=2, keepdims=True), F32, ulps=8)
    xb = x.astype(BF16)
    assert_matches(run(lambda t: nisa.tensor_reduce(op, t, axis=[1, 2]), xb), ref(f32(xb).astype(np.float64),
                                                                                  axis=(1, 2)), BF16)


def test_tensor_reduce_bitwise() -> None:
    x = rand((64, 16), np.int32, 0, 2 ** 20)
    got = run(lambda t: nisa.tensor_reduce(np.bitwise_or, t, axis=1), x)
    np.testing.assert_array_equal(got, np.bitwise_or.reduce(x, axis=1))


@pytest.mark.parametrize("op,ref", [(np.add, np.sum), (np.maximum, np.max)])
def test_tensor_partition_reduce(op: Any, ref: Callable) -> None:
    x = rand((128, 96), F32)
    got = run(lambda t: nisa.tensor_partition_reduce(op=op, data=t), x)
    assert got.shape == (1, 96)
    assert_matches(got, ref(x.astype(np.float64), axis=0, keepdims=True), F32, ulps=16, atol=1e-5)


def test_dma_copy_keyword_and_positional() -> None:
    x = rand((256, 64), BF16)

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])
            u = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(t, u)  # SDK 2.21 positional form: (src, dst); bf16 -> fp32 cast on the way
            nisa.dma_copy(src=u, dst=out[i * 128:(i + 1) * 128, :])
            nisa.dma_copy(src=u, dst=acc[i * 128:(i + 1) * 128, :])
            nisa.dma_copy(src=u, dst=acc[i * 128:(i + 1) * 128, :], dst_rmw_op=np.add)
        return out, acc

    out, acc = kernel(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, f32(x))
    np.testing.assert_array_equal(acc, 2 * f32(x))


def test_dma_copy_1d_slice_into_column_tile() -> None:
    """CS149: nisa.dma_copy(src=a_vec[m*R:(m+1)*R], dst=a_tile) with an (R, 1) tile."""
    v = rand((384,), F32)

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for m in nl.affine_range(3):
            t = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(src=a[m * 128:(m + 1) * 128], dst=t)
            r = nl.multiply(t, t)
            nisa.dma_copy(src=r, dst=out[m * 128:(m + 1) * 128])
        return out

    assert_matches(kernel(v), v * v, F32)


@pytest.mark.parametrize("n", [64, 512, 1000, 1537])
def test_bn_stats_bn_aggr_mean_var(n: int) -> None:
    """bn_stats over 512-wide chunks (last one masked when ragged) then bn_aggr = exact mean, var."""
    x = rand((128, n), F32, -3, 5)
    fmax = nl.tile_size.bn_stats_fmax
    chunks = (n + fmax - 1) // fmax

    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        i_p = nl.arange(128)[:, None]
        i_s = nl.arange(6)[None, :]
        i_f = nl.arange(fmax)[None, :]
        stats = nl.ndarray((128, 6 * chunks), dtype=nl.float32)
        for j in nl.affine_range(chunks):
            stats[i_p, j * 6 + i_s] = nisa.bn_stats(t[i_p, j * fmax + i_f], mask=(j * fmax + i_f < n),
                                                    dtype=nl.float32)
        mv = nisa.bn_aggr(stats)
        nl.store(out, mv)
        return out

    got = kernel(x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], x64.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], x64.var(axis=1), rtol=1e-5, atol=1e-6)


def test_bn_stats_single_chunk_bf16() -> None:
    x = rand((64, 300), BF16, -2, 2)
    got = run(lambda t: nisa.bn_aggr(nisa.bn_stats(t, dtype=nl.float32)), x)
    x64 = f32(x).astype(np.float64)
    np.testing.assert_allclose(got[:, 0], x64.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], x64.var(axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_reciprocal(dtype: np.dtype) -> None:
    x = rand((128, 64), dtype, 0.05, 20)
    assert_matches(run(nisa.reciprocal, x), 1.0 / f32(x).astype(np.float64), dtype)
    assert_matches(run(nl.reciprocal, x), 1.0 / f32(x).astype(np.float64), dtype)
    xn = -x
    assert_matches(run(lambda t: nisa.reciprocal(data=t, dtype=nl.float32), xn), 1.0 / f32(xn), F32)


@pytest.mark.parametrize("op", ["exp", "multiply", "sum", "activation", "copy"])
def test_mask_cuts_off_index_past_tile_end(op: str) -> None:
    """A masked op may index a tile past its end (ragged last chunk); only the masked-in part is read."""
    n = 100
    x = rand((128, n), F32, -2, 2)
    fns = {
        "exp": (lambda t, i_p, i_f: nl.exp(t[i_p, i_f], mask=(i_f < n)), np.exp),
        "multiply": (lambda t, i_p, i_f: nl.multiply(t[i_p, i_f], 2.0, mask=(i_f < n)), lambda v: 2 * v),
        "sum": (lambda t, i_p, i_f: nl.sum(t[i_p, i_f], axis=[1], keepdims=True, mask=(i_f < n)),
                lambda v: v.sum(axis=1, keepdims=True)),
        "activation": (lambda t, i_p, i_f: nisa.activation(op=nl.tanh, data=t[i_p, i_f], mask=(i_f < n)), np.tanh),
        "copy": (lambda t, i_p, i_f: nl.copy(t[i_p, i_f], mask=(i_f < n)), lambda v: v),
    }
    fn, ref = fns[op]

    @nki.jit
    def kernel(a):
        t = nl.load(a)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(128)[None, :]
        r = fn(t, i_p, i_f)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    got = kernel(x)
    want = ref(x.astype(np.float64))
    assert_matches(got[:, :want.shape[1]], want, F32, ulps=8, atol=2e-5)
    if got.shape[1] > n:
        assert np.isnan(got[:, n:]).all()


def test_unmasked_index_past_tile_end_is_compiler_error() -> None:
    x = rand((128, 100), F32)
    with pytest.raises(IndexError, match="Out-of-bound"):
        run(lambda t: nl.exp(t[nl.arange(128)[:, None], nl.arange(128)[None, :]]), x)


def test_masked_store_of_value_indexed_past_tile_end() -> None:
    """nl.store(out[i_p, i_f], value=tile[i_p, i_f], mask=i_f < n) with i_f running past the tile."""
    n = 100
    x = rand((128, n), BF16)

    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, n), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(128)[None, :]
        nl.store(out[i_p, i_f], value=t[i_p, i_f], mask=(i_f < n))
        return out

    np.testing.assert_array_equal(kernel(x), x)


@pytest.mark.parametrize("bound", [1000, 1010])
def test_a_masked_assignment_in_a_loop_is_bounds_checked_under_its_mask(bound: int) -> None:
    """``res[i_p, i*512 + i_f] = nl.exp(..., mask=(i*512 + i_f < H))`` over a row of H = 1000: the op's mask keeps
    the last iteration's destination in bounds (the instruction shrinks, nki-spec.md §2.7), so it runs, also in the
    first iteration, whose mask keeps everything (it was once checked over the whole loop range, [0, 1023], and
    refused); a mask that lets an index past the row (< 1010) is still the compiler's out-of-bound error."""
    h = 1000
    x = rand((128, h), F32, -2, 2)

    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, h), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        res = nl.ndarray((128, h), dtype=a.dtype, buffer=nl.sbuf)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(512)[None, :]
        for i in nl.affine_range((h + 511) // 512):
            res[i_p, i * 512 + i_f] = nl.exp(t[i_p, i * 512 + i_f], mask=(i * 512 + i_f < bound))
        nl.store(out, res)
        return out

    if bound > h:
        with pytest.raises(IndexError, match=r"Out-of-bound access for tensor `\w+` on dimension 1: index range "
                                             r"\[512, 1009\] exceed dimension size of 1000"):
            kernel(x)
        return
    assert_matches(kernel(x), np.exp(x.astype(np.float64)), F32, ulps=8, atol=2e-5)


def test_an_integer_quotient_floors() -> None:
    """``pos / w`` on int32 tiles (a flattened position to a row, as nki-samples' resize kernel does) floors
    like ``//``; with a float dtype asked for, the quotient keeps its fraction."""
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl

    @nki.jit
    def k(a):
        rows = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
        exact = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(rows, t / 7)
        nl.store(exact, nl.divide(t, 7, dtype=nl.float32))
        return rows, exact

    a = np.arange(128 * 6, dtype=np.int32).reshape(128, 6)
    rows, exact = k(a)
    np.testing.assert_array_equal(rows, a // 7)
    np.testing.assert_allclose(exact, a / 7, rtol=1e-6)



def test_loading_a_single_element_gives_a_one_by_one_tile() -> None:
    """``nl.load(a[0, 0])`` is a [1, 1] tile that broadcasts over a whole tile (a scale read from HBM)."""
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl

    @nki.jit
    def k(a, scale):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        s = nl.load(scale[0, 1])
        assert s.shape == (1, 1)
        nl.store(out, nl.multiply(nl.load(a), s))
        return out

    a = np.arange(512, dtype=np.float32).reshape(128, 4)
    scale = np.array([[2.0, 3.0]], dtype=np.float32)
    np.testing.assert_array_equal(k(a, scale), a * np.float32(3.0))


def test_activation_of_a_partition_vector_with_a_vector_bias() -> None:
    """``nisa.activation(np.exp, m[:, 0], bias=prev)`` on [P] operands stays [P] (flash attention's rescale):
    the bias lines up with the partitions, not with a second axis."""
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl

    @nki.jit
    def k(m, prev):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        cur = nl.load(m)[:, 0]
        alpha = nisa.activation(np.exp, cur, bias=nl.load(prev), scale=-1.0)
        nl.store(out, alpha)
        return out

    rng = np.random.default_rng(2)
    m = rng.standard_normal((128, 4), dtype=np.float32)
    prev = rng.standard_normal((128, 1), dtype=np.float32)
    np.testing.assert_allclose(k(m, prev), np.exp(-m[:, :1] + prev), rtol=1e-6)


def test_rms_norm_takes_a_scalar_weight_as_well_as_a_tile():
    """``nl.rms_norm(x, w, ...)``: ``w`` is multiplied in like any operand, so a Python scalar works as a tile does
    (only tile operands are checked for their address space)."""

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.rms_norm(nl.load(a), 2.0, axis=1, n=a.shape[1]))
        return out

    x = np.random.default_rng(5).random((128, 64), dtype=np.float32)
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6) * 2.0
    np.testing.assert_allclose(k(x), want, rtol=1e-5)
