"""One case per registered NKI call: a numerics kernel with an independent reference, and a refused misuse.

``tests/test_every_call.py`` checks that this table covers exactly ``nkisim.core.recording.CALLS`` (every
``nl.*``, ``nisa.*`` and tile-syntax call a kernel can make), runs each numerics kernel against its
reference, and runs each error kernel to see the compiler's refusal point at the kernel's own ``# ERR``
line.  References are NumPy written out here, or torch (CPU) for the activation functions; nothing
from ``nkisim.ops`` is used, so a wrong op table cannot agree with itself.  Families the simulator
generates from one table (the ``nl`` unary and binary elementwise functions, the reductions) share one
kernel builder each, with a per-name reference written out below.

Naming: ``k_<call>`` is a numerics kernel, ``e_<call>`` an error kernel (the misuse on its ``# ERR``
line), ``r_<call>`` a reference too long for a lambda.  Kernels are plain functions: the test wraps them with ``nki.jit`` (and a platform target when a case
needs one), as a student's kernel would be.  Random and hardware-specific calls (``rand``, ``dropout``)
are checked for properties (shape, fraction dropped, kept values unchanged, determinism) rather than
values.

Where the simulator's refusal disagrees with the spec, the refusal is still written as the spec asks and
marked ``xfail`` (strict) with the reason, so fixing the simulator turns the mark into a failure that asks
for its removal.  (The first run found seven such refusals -- a bare NumPy error from ``scalar_tensor_tensor``,
``expand_dims`` and ``t.view``, an HBM seed and float64 constants accepted -- all fixed since.)  Every call here has a refusal: no case needs the
``no_refusal`` escape.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import mx_reference
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import torch

P, F = 128, 64
RNG = np.random.default_rng(20261124)
F32 = np.float32
BF16 = np.dtype(ml_dtypes.bfloat16)


# ================================================================================================
# The record types
# ================================================================================================
@dataclass(frozen=True)
class Refusal:
    """A kernel whose ``# ERR`` line misuses the call, and what the compiler must say about it."""

    kernel: Callable[..., Any]
    inputs: tuple[np.ndarray, ...]
    exc: type[BaseException]  # the builtin class a student sees (ValueError, TypeError, SyntaxError, ...)
    error_id: str | None  # the catalogue id (err_*); None where the spec documents the refusal but no id
    phrase: str  # a key phrase of the message
    target: str | None = None  # platform_target for nki.jit, when the call needs one
    xfail: str | None = None  # a simulator bug: the refusal the spec asks for is missing or wrong


@dataclass(frozen=True)
class CallCase:
    """One registered call: a numerics kernel with its reference (or property check), and its refusal.

    ``reference(*inputs)`` returns the expected output(s) in the expected dtype(s); ``check(got, inputs)``
    replaces it for random or hardware-specific calls.  ``refusal`` is None only when the call has no
    input the compiler refuses; ``no_refusal`` then says why.
    """

    kernel: Callable[..., Any]
    inputs: tuple[np.ndarray, ...]
    reference: Callable[..., Any] | None = None
    check: Callable[[Any, tuple[np.ndarray, ...]], None] | None = None
    rtol: float = 1e-6
    atol: float = 0.0
    target: str | None = None
    refusal: Refusal | None = None
    no_refusal: str | None = None
    xfail: str | None = None  # a simulator bug in the numerics


# ================================================================================================
# Inputs and small helpers
# ================================================================================================
def uniform(lo: float, hi: float, shape: tuple[int, ...] = (P, F), dtype: Any = F32) -> np.ndarray:
    return RNG.uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


def ints(lo: int, hi: int, shape: tuple[int, ...] = (P, F), dtype: Any = np.int32) -> np.ndarray:
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def f32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def t64(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x, dtype=np.float64))


def from_torch(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: fn(t64(x)).numpy()


X = uniform(-3, 3)  # the usual float input
Y = uniform(-3, 3)
INT_PAIR = np.array([[41, -3]], dtype=np.int32)
HBM_IN = (X,)  # the input of a kernel that passes the HBM tensor itself where a tile is required (or reads none)


def wrong_space(name: str, operand: str = "x") -> tuple[type[BaseException], str, str]:
    """The refusal for an HBM tensor passed where an on-chip tile is required."""
    return TypeError, "err_unsupported_memory", f"Expected operand '{operand}' of '{name}' to be in address space"


def inner_wrong_space() -> tuple[type[BaseException], str, str]:
    """The same refusal for a call built on another one (softmax on max, static_cast on copy): the message
    names the inner API, which the spec does not pin down, so only the address-space phrase is checked."""
    return TypeError, "err_unsupported_memory", "to be in address space 'psum|sbuf', but got a tile in 'hbm' instead."


# ================================================================================================
# nl unary elementwise functions: one builder, references written out per name
# ================================================================================================
def _gelu_dx(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _silu_dx(x: np.ndarray) -> np.ndarray:
    s = 1 / (1 + np.exp(-x))
    return s * (1 + x * (1 - s))


#: name -> (reference on float64 values, input, rtol, atol)
UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], np.ndarray, float, float]] = {
    "abs": (np.abs, X, 0, 0),
    "negative": (np.negative, X, 0, 0),
    "sign": (np.sign, uniform(-3, 3).round(0), 0, 0),
    "trunc": (np.trunc, X, 0, 0),
    "floor": (np.floor, X, 0, 0),
    "ceil": (np.ceil, X, 0, 0),
    "square": (np.square, X, 1e-6, 0),
    "exp": (np.exp, X, 1e-6, 0),
    "log": (np.log, uniform(0.01, 10), 1e-6, 1e-7),
    "cos": (np.cos, X, 1e-6, 1e-6),
    "sin": (np.sin, X, 1e-6, 1e-6),
    "tan": (np.tan, uniform(-1.2, 1.2), 1e-5, 1e-6),
    "tanh": (np.tanh, X, 1e-6, 1e-7),
    "arctan": (np.arctan, uniform(-1.5, 1.5), 1e-6, 1e-7),
    "sqrt": (np.sqrt, uniform(0.01, 10), 1e-6, 0),
    "rsqrt": (lambda x: 1 / np.sqrt(x), uniform(0.01, 10), 1e-6, 0),
    "reciprocal": (lambda x: 1 / x, uniform(0.1, 10) * np.where(RNG.random((P, F)) < 0.5, -1, 1).astype(F32),
                   1e-6, 0),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), X, 1e-6, 1e-7),
    "relu": (lambda x: np.maximum(x, 0), X, 0, 0),
    "gelu": (from_torch(torch.nn.functional.gelu), X, 1e-5, 1e-6),
    "gelu_dx": (_gelu_dx, X, 1e-5, 1e-6),
    "gelu_apprx_tanh": (from_torch(lambda t: torch.nn.functional.gelu(t, approximate="tanh")), X, 1e-5, 1e-6),
    "gelu_apprx_sigmoid": (lambda x: x / (1 + np.exp(-1.702 * x)), X, 1e-5, 1e-6),
    "gelu_apprx_sigmoid_dx": (lambda x: 1 / (1 + np.exp(-1.702 * x)) + 1.702 * x * np.exp(-1.702 * x)
                              / (1 + np.exp(-1.702 * x)) ** 2, X, 1e-5, 1e-6),
    "silu": (from_torch(torch.nn.functional.silu), X, 1e-5, 1e-6),
    "silu_dx": (_silu_dx, X, 1e-5, 1e-6),
    "erf": (from_torch(torch.erf), X, 1e-5, 1e-6),
    "erf_dx": (lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), X, 1e-5, 1e-6),
    "softplus": (from_torch(torch.nn.functional.softplus), X, 1e-5, 1e-6),
    "mish": (from_torch(torch.nn.functional.mish), X, 1e-5, 1e-6),
    "invert": (np.invert, ints(-1000, 1000), 0, 0),
    "logical_not": (lambda x: x == 0, ints(0, 2, dtype=np.uint8), 0, 0),
}


def unary_kernel(name: str) -> Callable[..., Any]:
    fn = getattr(nl, name)

    def kernel(a):
        y = fn(nl.load(a))
        out = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
        nl.store(out, y)
        return out

    return kernel


def unary_refusal(name: str) -> Callable[..., Any]:
    fn = getattr(nl, name)

    def kernel(a):
        y = fn(a)  # ERR
        return y

    return kernel


def unary_reference(name: str) -> Callable[..., Any]:
    ref = UNARY[name][0]

    def reference(a: np.ndarray) -> np.ndarray:
        got = ref(a.astype(np.float64) if a.dtype.kind == "f" else a)
        return np.asarray(got).astype(a.dtype)  # unary results keep the input dtype (nki-spec 2.8)

    return reference


# ================================================================================================
# nl binary elementwise functions
# ================================================================================================
NONZERO = uniform(0.5, 3) * np.where(RNG.random((P, F)) < 0.5, -1, 1).astype(F32)
I32A, I32B = ints(-1000, 1000), ints(-1000, 1000)
BOOL_A, BOOL_B = ints(0, 2, dtype=np.uint8), ints(0, 2, dtype=np.uint8)
SHIFT = ints(0, 8)


def _np_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x - np.floor(x / y) * y  # Python's % (sign of the divisor), written out


#: name -> (reference, x, y, rtol, atol, result dtype (None: x's dtype))
BINARY: dict[str, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], np.ndarray, np.ndarray, float, float,
                        Any]] = {
    "add": (np.add, X, Y, 1e-6, 0, None),
    "subtract": (np.subtract, X, Y, 1e-6, 1e-7, None),
    "multiply": (np.multiply, X, Y, 1e-6, 0, None),
    "divide": (np.divide, X, NONZERO, 1e-6, 0, None),
    "power": (np.power, uniform(0.1, 3), Y, 1e-5, 0, None),
    "maximum": (np.maximum, X, Y, 0, 0, None),
    "minimum": (np.minimum, X, Y, 0, 0, None),
    "abs_max": (lambda x, y: np.where(np.abs(x) > np.abs(y), x, y), X, np.where(RNG.random((P, F)) < 0.2, -X, Y), 0, 0,
                None),
    "abs_min": (lambda x, y: np.where(np.abs(x) < np.abs(y), x, y), X, np.where(RNG.random((P, F)) < 0.2, -X, Y), 0, 0,
                None),
    "bitwise_and": (np.bitwise_and, I32A, I32B, 0, 0, None),
    "bitwise_or": (np.bitwise_or, I32A, I32B, 0, 0, None),
    "bitwise_xor": (np.bitwise_xor, I32A, I32B, 0, 0, None),
    "left_shift": (np.left_shift, I32A, SHIFT, 0, 0, None),
    "right_shift": (lambda x, y: (x.astype(np.uint32) >> y.astype(np.uint32)).astype(np.int32), I32A, SHIFT, 0,
                    0, None),
    "equal": (np.equal, X.round(0), Y.round(0), 0, 0, bool),
    "not_equal": (np.not_equal, X.round(0), Y.round(0), 0, 0, bool),
    "greater": (np.greater, X.round(0), Y.round(0), 0, 0, bool),
    "greater_equal": (np.greater_equal, X.round(0), Y.round(0), 0, 0, bool),
    "less": (np.less, X.round(0), Y.round(0), 0, 0, bool),
    "less_equal": (np.less_equal, X.round(0), Y.round(0), 0, 0, bool),
    "logical_and": (lambda x, y: (x != 0) & (y != 0), BOOL_A, BOOL_B, 0, 0, bool),
    "logical_or": (lambda x, y: (x != 0) | (y != 0), BOOL_A, BOOL_B, 0, 0, bool),
    "logical_xor": (lambda x, y: (x != 0) ^ (y != 0), BOOL_A, BOOL_B, 0, 0, bool),
    "mod": (_np_mod, X, NONZERO, 1e-5, 1e-6, None),
    "fmod": (lambda x, y: x - np.trunc(x / y) * y, X, NONZERO, 1e-5, 1e-6, None),
}


def binary_kernel(name: str) -> Callable[..., Any]:
    fn = getattr(nl, name)

    def kernel(a, b):
        y = fn(nl.load(a), nl.load(b))
        out = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
        nl.store(out, y)
        return out

    return kernel


def binary_refusal(name: str) -> Callable[..., Any]:
    fn = getattr(nl, name)

    def kernel(a):
        y = fn(a, nl.load(a))  # ERR
        return y

    return kernel


def binary_reference(name: str) -> Callable[..., Any]:
    ref, _, _, _, _, out_dtype = BINARY[name]

    def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dtype = a.dtype if out_dtype is None else out_dtype
        if a.dtype.kind == "f":
            a, b = a.astype(np.float64), b.astype(np.float64)
        return np.asarray(ref(a, b)).astype(dtype)

    return reference


# ================================================================================================
# Reductions over the free axis
# ================================================================================================
#: name -> (reference over axis 1 with keepdims, input, rtol, atol, result dtype (None: the input's))
REDUCE: dict[str, tuple[Callable[[np.ndarray], np.ndarray], np.ndarray, float, float, Any]] = {
    "sum": (lambda x: x.sum(axis=1, keepdims=True), X, 1e-5, 1e-5, None),
    "mean": (lambda x: x.mean(axis=1, keepdims=True), X, 1e-5, 1e-6, None),
    "max": (lambda x: x.max(axis=1, keepdims=True), X, 0, 0, None),
    "min": (lambda x: x.min(axis=1, keepdims=True), X, 0, 0, None),
    "prod": (lambda x: x.prod(axis=1, keepdims=True), uniform(0.9, 1.1), 1e-5, 0, None),
    "all": (lambda x: (x != 0).all(axis=1), np.where(np.arange(P)[:, None] % 2 == 0, 1.0,
                                                     RNG.integers(0, 2, (P, F))).astype(F32), 0, 0, bool),
    "var": (lambda x: x.var(axis=1), X, 1e-5, 1e-6, None),
}
KEEPDIMS = ("sum", "mean", "max", "min", "prod")


def reduce_kernel(name: str) -> Callable[..., Any]:
    fn = getattr(nl, name)
    kw = {"keepdims": True} if name in KEEPDIMS else {}

    def kernel(a):
        y = fn(nl.load(a), axis=1, **kw)
        out = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
        nl.store(out, y)
        return out

    return kernel


def reduce_refusal(name: str) -> Callable[..., Any]:
    fn = getattr(nl, name)

    def kernel(a):
        y = fn(a, axis=1)  # ERR
        return y

    return kernel


def reduce_reference(name: str) -> Callable[..., Any]:
    ref, _, _, _, out_dtype = REDUCE[name]
    return lambda a: np.asarray(ref(a.astype(np.float64))).astype(out_dtype or a.dtype)


def family_cases() -> dict[str, CallCase]:
    cases: dict[str, CallCase] = {}
    for name, (_, x, rtol, atol) in UNARY.items():
        cls, eid, phrase = wrong_space(name)
        cases[f"nl.{name}"] = CallCase(unary_kernel(name), (x,), unary_reference(name), rtol=rtol, atol=atol,
                                       refusal=Refusal(unary_refusal(name), HBM_IN, cls, eid, phrase))
    for name, (_, x, y, rtol, atol, _) in BINARY.items():
        cls, eid, phrase = wrong_space(name)
        cases[f"nl.{name}"] = CallCase(binary_kernel(name), (x, y), binary_reference(name), rtol=rtol, atol=atol,
                                       refusal=Refusal(binary_refusal(name), HBM_IN, cls, eid, phrase))
    for name, (_, x, rtol, atol, _) in REDUCE.items():
        cls, eid, phrase = wrong_space(name)
        cases[f"nl.{name}"] = CallCase(reduce_kernel(name), (x,), reduce_reference(name), rtol=rtol, atol=atol,
                                       refusal=Refusal(reduce_refusal(name), HBM_IN, cls, eid, phrase))
    return cases


# ================================================================================================
# nl: memory, creation and the other language calls
# ================================================================================================
def k_load(a):
    t = nl.load(a[0:128, 16:48])
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def e_load(a):
    x = nl.load(a)
    y = nl.load(x)  # ERR
    return y


def k_store(a):
    x = nl.load(a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[:, 0:32], x[:, 32:64])
    nl.store(out[:, 32:64], value=x[:, 0:32])
    return out


def e_store(a):
    x = nl.load(a)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nl.store(t, x)  # ERR
    return t


def k_load_transpose2d(a):
    t = nl.load_transpose2d(a)
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def e_load_transpose2d(a):
    x = nl.load(a)
    y = nl.load_transpose2d(x)  # ERR
    return y


def k_copy(a):
    y = nl.copy(nl.load(a), dtype=nl.bfloat16)
    out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_copy(a):
    y = nl.copy(a)  # ERR
    return y


def k_static_cast(a):
    y = nl.static_cast(nl.load(a), nl.bfloat16)
    out = nl.ndarray(a.shape, dtype=y.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_static_cast(a):
    y = nl.static_cast(a, nl.bfloat16)  # ERR
    return y


def k_broadcast_to(r):
    y = nl.broadcast_to(nl.load(r), shape=(128, 64))
    out = nl.ndarray((128, 64), dtype=r.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_broadcast_to(r):
    y = nl.broadcast_to(r, shape=(128, 64))  # ERR
    return y


def k_expand_dims(a):
    y = nl.expand_dims(nl.load(a), 2)
    out = nl.ndarray((128, 64, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_expand_dims(a):
    y = nl.expand_dims(nl.load(a), 0)  # ERR
    return y


def k_matmul(a, b):
    r = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
    out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(r))
    return out


def e_matmul(a, b):
    x, y = nl.load(a), nl.load(b[0:64, :])
    r = nl.matmul(x, y, transpose_x=True)  # ERR
    return r


def k_transpose(a):
    r = nl.transpose(nl.load(a))
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(r))
    return out


def e_transpose(a):
    x = nl.load(a)
    r = nl.transpose(x)  # ERR
    return r


def k_where(c, a, b):
    r = nl.where(nl.load(c), nl.load(a), nl.load(b))
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_where(c, a, b):
    r = nl.where(c, nl.load(a), nl.load(b))  # ERR
    return r


def k_softmax(a):
    r = nl.softmax(nl.load(a), axis=1)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_softmax(a):
    r = nl.softmax(a, axis=1)  # ERR
    return r


def k_rms_norm(a, w):
    r = nl.rms_norm(nl.load(a), nl.load(w), axis=1, n=a.shape[1])
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_rms_norm(a, w):
    r = nl.rms_norm(a, nl.load(w), axis=1, n=a.shape[1])  # ERR
    return r


def r_rms_norm(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = a.astype(np.float64)
    return f32(x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w)


def k_dropout(a):
    x = nl.load(a)
    nl.random_seed(7)
    d1 = nl.dropout(x, 0.3)
    nl.random_seed(7)
    d2 = nl.dropout(x, 0.3)
    o1 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    o2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(o1, d1)
    nl.store(o2, d2)
    return o1, o2


def e_dropout(a):
    r = nl.dropout(a, 0.3)  # ERR
    return r


def dropout_properties(rate: float) -> Callable[[Any, tuple[np.ndarray, ...]], None]:
    """Dropped elements are zero, kept ones unchanged (no rescaling), the dropped fraction is about
    ``rate``, and the same seed drops the same elements."""

    def check(got: Any, inputs: tuple[np.ndarray, ...]) -> None:
        d1, d2 = got if isinstance(got, tuple) else (got, got)
        a = inputs[0]
        assert d1.shape == a.shape and d1.dtype == a.dtype
        dropped = d1 == 0
        assert not (a == 0).any()  # the inputs have no zeros, so a zero means "dropped"
        np.testing.assert_array_equal(d1[~dropped], a[~dropped])
        assert abs(dropped.mean() - rate) < 0.03, dropped.mean()
        np.testing.assert_array_equal(d1, d2)

    return check


def k_rand(a):
    r = nl.rand((128, 64))
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_rand(a):
    r = nl.rand((256, 64))  # ERR
    return r


def rand_properties(got: np.ndarray, inputs: tuple[np.ndarray, ...]) -> None:
    """Uniform in [0, 1): float32 of the asked shape, inside the interval, mean and spread of U(0, 1)."""
    assert got.shape == (128, 64) and got.dtype == np.float32
    assert (got >= 0).all() and (got < 1).all()
    assert abs(got.mean() - 0.5) < 0.02 and abs(got.var() - 1 / 12) < 0.01
    assert len(np.unique(got)) > 0.99 * got.size


def k_random_seed(a):
    nl.random_seed(3)
    r1 = nl.rand((128, 64))
    nl.random_seed(3)
    r2 = nl.rand((128, 64))
    nl.random_seed(4)
    r3 = nl.rand((128, 64))
    outs = [nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm) for _ in range(3)]
    nl.store(outs[0], r1)
    nl.store(outs[1], r2)
    nl.store(outs[2], r3)
    return outs[0], outs[1], outs[2]


def seed_properties(got: Any, inputs: tuple[np.ndarray, ...]) -> None:
    """The same seed gives the same draws; another seed gives other draws."""
    r1, r2, r3 = got
    np.testing.assert_array_equal(r1, r2)
    assert (r1 != r3).mean() > 0.99


def e_random_seed(a):
    nl.random_seed(a)  # ERR
    return a


CONST = np.arange(128 * 64, dtype=np.float32).reshape(128, 64) / 7


def k_shared_constant(a):
    c = nl.shared_constant(CONST, dtype=nl.float32)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.load(c))
    return out


def e_shared_constant(a):
    c = nl.shared_constant(CONST, dtype=np.float64)  # ERR
    return c


def k_shared_identity_matrix(a):
    c = nl.shared_identity_matrix(64, dtype=nl.float32)
    out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.load(c))
    return out


def e_shared_identity_matrix(a):
    c = nl.shared_identity_matrix(64, dtype=np.float64)  # ERR
    return c


def k_ndarray(a):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    t[...] = nl.load(a)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def e_ndarray(a):
    t = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.sbuf)  # ERR
    return t


def creation_kernel(make: Callable[[], Any]) -> Callable[..., Any]:
    def kernel(a):
        t = make()
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out

    return kernel


def e_zeros(a):
    t = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.hbm)  # ERR
    return t


def e_ones(a):
    t = nl.ones((128, 64), dtype=nl.float32, buffer=nl.hbm)  # ERR
    return t


def e_full(a):
    t = nl.full((128, 64), 2.5, dtype=nl.float32, buffer=nl.hbm)  # ERR
    return t


def like_kernel(name: str, *args: Any) -> Callable[..., Any]:
    fn = getattr(nl, name)

    def kernel(a):
        t = fn(nl.load(a), *args, dtype=nl.bfloat16)
        out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out

    return kernel


def like_refusal(name: str, *args: Any) -> Callable[..., Any]:
    fn = getattr(nl, name)

    def kernel(a):
        t = fn(a, *args, buffer=nl.sbuf)  # ERR
        return t

    return kernel


def k_empty_like(a):
    t = nl.empty_like(nl.load(a), dtype=nl.bfloat16)
    t[...] = nl.load(a)
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def k_gather_flattened(a, idx):
    r = nl.gather_flattened(data=nl.load(a), indices=nl.load(idx))
    out = nl.ndarray(idx.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_gather_flattened(a, idx):
    r = nl.gather_flattened(data=a, indices=nl.load(idx))  # ERR
    return r


def k_atomic_rmw(base, rows, val):
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(base))
    ix = nl.arange(base.shape[1])[None, :]
    nl.atomic_rmw(out[nl.load(rows), ix], value=nl.load(val), op=np.add)
    return out


def e_atomic_rmw(base, rows, val):
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(base))
    ix = nl.arange(base.shape[1])[None, :]
    nl.atomic_rmw(out[nl.load(rows), ix], value=nl.load(val), op=np.multiply)  # ERR
    return out


def r_atomic_rmw(base: np.ndarray, rows: np.ndarray, val: np.ndarray) -> np.ndarray:
    ref = base.copy()
    for i, r in enumerate(rows[:, 0]):
        ref[r] += val[i]
    return ref


def k_loop_reduce(a):
    acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        t = nl.load(a[:, i * 64:(i + 1) * 64])
        acc[...] = nl.loop_reduce(t, op=np.add, loop_indices=[i])
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, acc)
    return out


def e_loop_reduce(a):
    acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        t = nl.load(a[:, i * 64:(i + 1) * 64])
        acc[...] = nl.loop_reduce(t, op=np.divide, loop_indices=[i])  # ERR
    return acc


ROWS = RNG.permutation(128)[:64].reshape(64, 1).astype(np.int32)

def language_cases() -> dict[str, CallCase]:
    a2 = uniform(-3, 3, (64, 32))
    col = uniform(-3, 3, (1, 64))
    wrong = wrong_space
    return {
        "nl.load": CallCase(k_load, (X,), lambda a: a[:, 16:48],
                            refusal=Refusal(e_load, HBM_IN, TypeError, "err_unsupported_memory",
                                            "Expected operand 'src' of 'load' to be in address space 'hbm'")),
        "nl.store": CallCase(k_store, (X,), lambda a: np.concatenate([a[:, 32:64], a[:, 0:32]], axis=1),
                             refusal=Refusal(e_store, HBM_IN, TypeError, "err_unsupported_memory",
                                             "Expected operand 'dst' of 'store' to be in address space 'hbm'")),
        "nl.load_transpose2d": CallCase(k_load_transpose2d, (a2,), lambda a: a.T.copy(),
                                        refusal=Refusal(e_load_transpose2d, (a2,), TypeError,
                                                        "err_unsupported_memory",
                                                        "Expected operand 'src' of 'load_transpose2d'")),
        "nl.copy": CallCase(k_copy, (X,), lambda a: a.astype(BF16),
                            refusal=Refusal(e_copy, HBM_IN, *wrong("copy", "src"))),
        "nl.static_cast": CallCase(k_static_cast, (X,), lambda a: a.astype(BF16),
                                   refusal=Refusal(e_static_cast, HBM_IN, *inner_wrong_space())),
        "nl.broadcast_to": CallCase(k_broadcast_to, (col,), lambda r: np.repeat(r, 128, axis=0),
                                    refusal=Refusal(e_broadcast_to, (col,), *wrong("broadcast_to", "src"))),
        "nl.expand_dims": CallCase(k_expand_dims, (X,), lambda a: a[:, :, None],
                                   refusal=Refusal(e_expand_dims, HBM_IN, ValueError, None,
                                                   "only supports adding an axis after the last one")),
        "nl.matmul": CallCase(k_matmul, (uniform(-1, 1, (128, 64)), uniform(-1, 1, (128, 32))),
                              lambda a, b: f32(a.astype(np.float64).T @ b), rtol=1e-5, atol=1e-5,
                              refusal=Refusal(e_matmul, (uniform(-1, 1, (128, 64)), uniform(-1, 1, (128, 32))),
                                              ValueError, "err_param_shape_incompatible_with_matmul",
                                              "Number of partitions mismatch")),
        "nl.transpose": CallCase(k_transpose, (a2,), lambda a: a.T.copy(),
                                 refusal=Refusal(e_transpose, (uniform(0, 1, (128, 256)),), ValueError,
                                                 "err_size_of_dimension_exceed_arch_limit",
                                                 "of 'transpose' exceed architecture limitation of 128.")),
        "nl.where": CallCase(k_where, (BOOL_A, X, Y), lambda c, a, b: np.where(c != 0, a, b),
                             refusal=Refusal(e_where, (BOOL_A, X, Y), *wrong("where", "condition"))),
        "nl.softmax": CallCase(k_softmax, (X,), lambda a: f32(np.exp(a - a.max(axis=1, keepdims=True)) / np.exp(
            a - a.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)), rtol=1e-5, atol=1e-7,
                               refusal=Refusal(e_softmax, HBM_IN, *inner_wrong_space())),
        "nl.rms_norm": CallCase(k_rms_norm, (X, col), r_rms_norm, rtol=1e-5, atol=1e-6,
                                refusal=Refusal(e_rms_norm, (X, col), *inner_wrong_space())),
        "nl.dropout": CallCase(k_dropout, (uniform(1, 2),), check=dropout_properties(0.3),
                               refusal=Refusal(e_dropout, HBM_IN, *inner_wrong_space())),
        "nl.rand": CallCase(k_rand, HBM_IN, check=rand_properties,
                            refusal=Refusal(e_rand, HBM_IN, ValueError, "err_num_partition_exceed_arch_limit",
                                            "number of partitions 256 exceed architecture limitation of 128.")),
        "nl.random_seed": CallCase(k_random_seed, HBM_IN, check=seed_properties,
                                   refusal=Refusal(e_random_seed, (np.ones((1, 1), np.int32),),
                                                   *wrong("random_seed", "seed"))),
        "nl.shared_constant": CallCase(k_shared_constant, HBM_IN, lambda a: CONST,
                                       refusal=Refusal(e_shared_constant, HBM_IN, ValueError,
                                                       "err_unsupported_dtype_value", "Unsupported dtype 'float64'")),
        "nl.shared_identity_matrix": CallCase(k_shared_identity_matrix, HBM_IN,
                                              lambda a: np.eye(64, dtype=np.float32),
                                              refusal=Refusal(e_shared_identity_matrix, HBM_IN, ValueError,
                                                              "err_unsupported_dtype_value",
                                                              "Unsupported dtype 'float64'")),
        "nl.ndarray": CallCase(k_ndarray, (X,), lambda a: a,
                               refusal=Refusal(e_ndarray, HBM_IN, ValueError, "err_num_partition_exceed_arch_limit",
                                               "number of partitions 256 exceed architecture limitation of 128.")),
        "nl.zeros": CallCase(creation_kernel(lambda: nl.zeros((128, 64), dtype=nl.float32)), HBM_IN,
                             lambda a: np.zeros((128, 64), np.float32),
                             refusal=Refusal(e_zeros, HBM_IN, SyntaxError, "err_hbm_tensor_with_init_value_not_supported",
                                             "Creating HBM tensor with init value is not supported.")),
        "nl.ones": CallCase(creation_kernel(lambda: nl.ones((128, 64), dtype=nl.float32)), HBM_IN,
                            lambda a: np.ones((128, 64), np.float32),
                            refusal=Refusal(e_ones, HBM_IN, SyntaxError, "err_hbm_tensor_with_init_value_not_supported",
                                            "Creating HBM tensor with init value is not supported.")),
        "nl.full": CallCase(creation_kernel(lambda: nl.full((128, 64), 2.5, dtype=nl.float32)), HBM_IN,
                            lambda a: np.full((128, 64), 2.5, np.float32),
                            refusal=Refusal(e_full, HBM_IN, SyntaxError, "err_hbm_tensor_with_init_value_not_supported",
                                            "Creating HBM tensor with init value is not supported.")),
        "nl.zeros_like": CallCase(like_kernel("zeros_like"), (X,), lambda a: np.zeros(a.shape, BF16),
                                  refusal=Refusal(like_refusal("zeros_like"), (uniform(0, 1, (256, 4)),), ValueError,
                                                  "err_num_partition_exceed_arch_limit", "number of partitions 256")),
        "nl.ones_like": CallCase(like_kernel("ones_like"), (X,), lambda a: np.ones(a.shape, BF16),
                                 refusal=Refusal(like_refusal("ones_like"), (uniform(0, 1, (256, 4)),), ValueError,
                                                 "err_num_partition_exceed_arch_limit", "number of partitions 256")),
        "nl.full_like": CallCase(like_kernel("full_like", 2.5), (X,), lambda a: np.full(a.shape, 2.5, BF16),
                                 refusal=Refusal(like_refusal("full_like", 2.5), (uniform(0, 1, (256, 4)),),
                                                 ValueError, "err_num_partition_exceed_arch_limit",
                                                 "number of partitions 256")),
        "nl.empty_like": CallCase(k_empty_like, (X,), lambda a: a.astype(BF16),
                                  refusal=Refusal(like_refusal("empty_like"), (uniform(0, 1, (256, 4)),), ValueError,
                                                  "err_num_partition_exceed_arch_limit", "number of partitions 256")),
        "nl.gather_flattened": CallCase(k_gather_flattened, (X, ints(0, 64, (128, 16), np.uint32)),
                                        lambda a, i: np.take_along_axis(a, i.astype(np.int64), axis=1),
                                        refusal=Refusal(e_gather_flattened, (X, ints(0, 64, (128, 16), np.uint32)),
                                                        *wrong("gather_flattened", "data"))),
        "nl.atomic_rmw": CallCase(k_atomic_rmw, (X, ROWS, uniform(-3, 3, (64, 64))), r_atomic_rmw, rtol=1e-6,
                                  refusal=Refusal(e_atomic_rmw, (X, ROWS, uniform(-3, 3, (64, 64))), SyntaxError,
                                                  "err_instruction_unsupported_op",
                                                  "multiply is not supported in 'atomic_rmw'")),
        "nl.loop_reduce": CallCase(k_loop_reduce, (uniform(-3, 3, (128, 256)),),
                                   lambda a: f32(a.astype(np.float64).reshape(128, 4, 64).sum(axis=1)), rtol=1e-6,
                                   atol=1e-6,
                                   refusal=Refusal(e_loop_reduce, (uniform(-3, 3, (128, 256)),), SyntaxError,
                                                   "err_instruction_unsupported_op",
                                                   "divide is not supported in 'loop_reduce'")),
    }


# ================================================================================================
# nisa: the instructions
# ================================================================================================
def k_activation(a, b):
    r = nisa.activation(op=nl.exp, data=nl.load(a), bias=nl.load(b), scale=0.5)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_activation(a, b):
    x, bias = nl.load(a), nl.load(b)
    r = nisa.activation(op=nl.exp, data=x, bias=bias, scale=0.5)  # ERR
    return r


def k_activation_reduce(a):
    red = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    r = nisa.activation_reduce(op=nl.tanh, data=nl.load(a), reduce_op=nl.add, reduce_res=red)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out_red = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, r)
    nl.store(out_red, red)
    return out, out_red


def e_activation_reduce(a):
    red = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    r = nisa.activation_reduce(op=nl.tanh, data=a, reduce_op=nl.add, reduce_res=red)  # ERR
    return r


def r_activation_reduce(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.tanh(a.astype(np.float64))
    return f32(t), f32(t.sum(axis=1, keepdims=True))


def k_affine_select(a):
    ix, iy = nl.mgrid[0:128, 0:64]
    t = nl.load(a)
    r = nisa.affine_select(pred=(iy <= ix), on_true_tile=t[ix, iy], on_false_value=-1e4)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_affine_select(a):
    ix, iy = nl.mgrid[0:128, 0:64]
    r = nisa.affine_select(pred=(iy <= ix), on_true_tile=a[ix, iy], on_false_value=-1e4)  # ERR
    return r


def k_bn_stats(a):
    r = nisa.bn_stats(nl.load(a))
    out = nl.ndarray((128, 6), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_bn_stats(a):
    x = nl.load(a)
    r = nisa.bn_stats(x)  # ERR
    return r


def r_bn_stats(a: np.ndarray) -> np.ndarray:
    """(count, mean, count * variance) of the even-indexed then the odd-indexed free elements."""
    cols = []
    for half in (a[:, 0::2], a[:, 1::2]):
        x = half.astype(np.float64)
        cols += [np.full(len(x), x.shape[1]), x.mean(axis=1), ((x - x.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)]
    return f32(np.stack(cols, axis=1))


def k_bn_aggr(s):
    r = nisa.bn_aggr(nl.load(s))
    out = nl.ndarray((128, 2), dtype=s.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_bn_aggr(s):
    x = nl.load(s)
    r = nisa.bn_aggr(x[:, 0:5])  # ERR
    return r


def bn_chunks() -> tuple[np.ndarray, np.ndarray]:
    """Three chunks of different sizes per partition, and their (count, mean, M2) triples."""
    data = uniform(-3, 3, (128, 60)) + np.arange(128, dtype=np.float32)[:, None] / 16
    stats = []
    for lo, hi in ((0, 10), (10, 35), (35, 60)):
        x = data[:, lo:hi].astype(np.float64)
        m = x.mean(axis=1)
        stats += [np.full(128, hi - lo), m, ((x - m[:, None]) ** 2).sum(axis=1)]
    return data, np.stack(stats, axis=1).astype(np.float32)


BN_DATA, BN_STATS = bn_chunks()


def k_dma_copy(a):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def e_dma_copy(a):
    t = nl.load(a)
    nisa.dma_copy(dst=a, src=t)  # ERR
    return a


def k_dma_transpose(a):
    r = nisa.dma_transpose(a)
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_dma_transpose(a):
    r = nisa.dma_transpose(a, axes=(0, 1))  # ERR
    return r


def k_isa_dropout(a):
    r = nisa.dropout(nl.load(a), prob=0.25)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_isa_dropout(a):
    r = nisa.dropout(a, prob=0.25)  # ERR
    return r


def k_iota(a):
    r = nisa.iota(nl.arange(128)[:, None] * 64 + nl.arange(64)[None, :], dtype=nl.int32)
    out = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_iota(a):
    r = nisa.iota(nl.arange(256)[:, None] + nl.arange(64)[None, :], dtype=nl.int32)  # ERR
    return r


def k_local_gather(src, index):
    r = nisa.local_gather(nl.load(src), nl.load(index), num_elem_per_idx=3)
    out = nl.ndarray((32, 2, 16, 3), dtype=src.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_local_gather(src, index):
    s, i = nl.load(src), nl.load(index)
    r = nisa.local_gather(s[0:8, :], i[0:8, :], num_elem_per_idx=3)  # ERR
    return r


def r_local_gather(src: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Each group of 16 partitions gathers with all its indices (read column by column), 3 elements each."""
    out = np.empty((32, 2 * 16 * 3), src.dtype)
    for core in range(2):
        rows = slice(core * 16, (core + 1) * 16)
        offs = index[rows].T.reshape(-1).astype(np.int64)
        cols = (offs[:, None] + np.arange(3)[None, :]).reshape(-1)
        out[rows] = src[rows][:, cols]
    return out.reshape(32, 2, 16, 3)


DISTINCT = (RNG.permutation(128 * 64).reshape(128, 64) / 8).astype(np.float32)
TOP8 = np.argsort(-DISTINCT, axis=1)[:, :8]


def k_max8(a):
    r = nisa.max8(src=nl.load(a))
    out = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_max8(a):
    x = nl.load(a)
    r = nisa.max8(src=x[:, 0:4])  # ERR
    return r


def k_register(a):
    """A register loaded from one int32 element, stored back with 7 added (NKI 0.6's sequencer registers)."""
    v = nisa.register_load(a[0:1, 0:1])
    t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.register_store(t, v + 7)
    out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def e_register_load(a):
    v = nisa.register_load(a[0:1, 0:2])  # ERR
    return v


def e_register_store(a):
    t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.register_store(t, 3)  # ERR
    return t


def k_sendrecv(a, b):
    """The pair form the registry records for NKI 0.6's nisa.sendrecv: a's tile lands in d1, b's in d0."""
    d0 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    d1 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(nl.load(a), d0, nl.load(b), d1)
    out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out[0], d0)
    nl.store(out[1], d1)
    return out


def e_sendrecv(a, b):
    d0 = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
    d1 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(nl.load(a), d0, nl.load(b), d1)  # ERR
    return d0


def k_core_barrier(a):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a))
    nisa.core_barrier(out, 0)  # one core's semaphore write: the values stay
    return out


def e_core_barrier(a):
    scratch = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.private_hbm)
    nisa.core_barrier(scratch, 0)  # ERR
    return scratch


MX_RNG = np.random.default_rng(20261126)  # its own generator: the other cases' inputs stay as they were
MX_SRC = (MX_RNG.standard_normal((64, 32)) * 4).astype(ml_dtypes.bfloat16)  # quantize_mx: 8 x 8 groups
MX_ST, MX_SS = mx_reference.random_mx(MX_RNG, 64, 16, "e5m2")  # nc_matmul_mx: fp8 stationary [64 x4, 16]
MX_MV, MX_MS = mx_reference.random_mx(MX_RNG, 64, 24, "e2m1fn")  # and fp4 moving [64 x4, 24]


def k_quantize_mx(a):
    """NeuronCore-v4's MX quantisation (what NKI 0.6's nisa.quantize_mx records): x4 data, and the scales of each
    32-partition quadrant in its first four rows of the (zeroed) scale tile."""
    q = nl.ndarray((64, 8), dtype="float8_e4m3fn_x4", buffer=nl.sbuf)
    s = nl.zeros((64, 8), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(nl.load(a), q, s)
    data = nl.ndarray((64, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    nl.store(data, q.view(nl.uint32))
    scales = nl.ndarray((64, 8), dtype=nl.uint8, buffer=nl.shared_hbm)
    nl.store(scales, s)
    return data, scales


def r_quantize_mx(a):
    data, scales = mx_reference.quantize(a.astype(np.float64), "e4m3fn")
    return data, mx_reference.spread(scales, 64)


def e_quantize_mx(a):
    q = nl.ndarray((48, 8), dtype="float8_e4m3fn_x4", buffer=nl.sbuf)
    s = nl.zeros((48, 8), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(nl.load(a[0:48, :]), q, s)  # ERR
    return s


def k_nc_matmul_mx(st, ss, mv, ms):
    """NeuronCore-v4's MX matmul (NKI 0.6's nisa.nc_matmul_mx as the registry records it): fp8 by fp4, into PSUM."""
    acc = nl.ndarray((16, 24), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(nl.load(st).view("float8_e5m2_x4"), nl.load(mv).view("float4_e2m1fn_x4"), nl.load(ss),
                      nl.load(ms), dst=acc)
    out = nl.ndarray((16, 24), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(acc))
    return out


def e_nc_matmul_mx(st, ss, mv, ms):
    acc = nl.ndarray((16, 24), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(nl.load(st).view("float8_e5m2_x4"), nl.load(mv).view("float4_e2m1fn_x4"), nl.load(ss),  # ERR
                      nl.load(ms), dst=acc)
    return acc


def k_exponential(a):
    """NeuronCore-v4's Vector-engine exponential (NKI 0.6's nisa.exponential): exp(x - 1), and its running sum."""
    y = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(nl.load(a), dst=y, max_value=1.0, reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, y)
    total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(total, r)
    return out, total


def e_exponential(a):
    y = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(nl.load(a), dst=y)  # ERR
    return y


def k_activate2(a):
    """NeuronCore-v4's two-operator activation (NKI 0.6's nisa.activate2): tanh(2 x + 0.5)."""
    y = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activate2(nl.tanh, nl.load(a), 2.0, 0.5, nl.multiply, nl.add, dst=y)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_activate2(a):
    y = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activate2(nl.tanh, nl.load(a), 2.0, 0.5, nl.add, nl.multiply, dst=y)  # ERR
    return y


SPARSE = np.where(X > 1, X, 0).astype(np.float32)  # nonzero_with_count: about a third nonzero


def k_nonzero_with_count(a):
    """GpSimd's nonzero compaction (NKI 0.6's nisa.nonzero_with_count): rows 0, 16, ... only."""
    d = nl.ndarray((128, 65), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=d, value=5)
    nisa.nonzero_with_count(nl.load(a), dst=d, index_offset=3, padding_val=-2)
    out = nl.ndarray((128, 65), dtype=nl.int32, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


def r_nonzero_with_count(a):
    want = np.full((128, 65), 5, dtype=np.int32)
    for p in range(0, 128, 16):
        idx = np.flatnonzero(a[p])
        want[p] = -2
        want[p, :len(idx)] = idx + 3
        want[p, 64] = len(idx)
    return want


def e_nonzero_with_count(a):
    d = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
    nisa.nonzero_with_count(nl.load(a), dst=d)  # ERR
    return d


SNAKES = (np.random.default_rng(20261127).permutation(160).reshape(32, 5) - 80.0).astype(BF16)  # topk: two 16-partition snakes, no ties


def k_topk(a):
    """GpSimd's top-k (NKI 0.6's nisa.topk): the 13 largest of each group's 80-element snake, ascending."""
    v = nl.ndarray((32, 13), dtype=nl.bfloat16, buffer=nl.sbuf)
    i = nl.ndarray((32, 13), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.topk(nl.load(a), 80, val_dst=v, idx_dst=i)
    vals = nl.ndarray((32, 13), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nl.store(vals, v)
    idx = nl.ndarray((32, 13), dtype=nl.uint32, buffer=nl.shared_hbm)
    nl.store(idx, i)
    return vals, idx


def r_topk(a):
    vals, idx = np.zeros((32, 13), dtype=BF16), np.zeros((32, 13), dtype=np.uint32)
    for g in (0, 16):
        snake = [float(a[g + e % 16, e // 16]) for e in range(80)]
        best = sorted(range(80), key=lambda e: snake[e])[-13:]
        vals[g:g + 16] = np.array([snake[e] for e in best], dtype=BF16)
        idx[g:g + 16] = best
    return vals, idx


def e_topk(a):
    v = nl.ndarray((32, 13), dtype=nl.bfloat16, buffer=nl.sbuf)
    i = nl.ndarray((32, 13), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.topk(nl.load(a), 7, val_dst=v, idx_dst=i)  # ERR
    return v


GATHER_AT = np.random.default_rng(20261128).integers(0, 64, (128, 16)).astype(np.uint32)  # nc_n_gather


def k_nc_n_gather(a, i):
    """GpSimd's flattened gather (NKI 0.6's nisa.nc_n_gather): 16 elements of each partition's 64."""
    d = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_n_gather(nl.load(a), nl.load(i), dst=d)
    out = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


def e_nc_n_gather(a, i):
    d = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_n_gather(nl.load(a), nl.load(i).view(nl.int32), dst=d)  # ERR
    return d


def k_dma_compute(a, b):
    """The DMA engines' add (NKI 0.6's nisa.dma_compute): two HBM tensors summed into an SBUF tile."""
    d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_compute([a, b], nl.add, dst=d)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


def e_dma_compute(a, b):
    d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_compute([a, b], nl.maximum, dst=d)  # ERR
    return d


RNG_STATE = np.random.default_rng(20261129).integers(1, 2**32, (128, 6), dtype=np.uint64).astype(np.uint32)
SEED = np.array([[12345]], dtype=np.uint32)


def xorwow(words: Any, n: int) -> tuple[list[int], list[int]]:
    """Marsaglia's XORWOW (x, y, z, w, v and the Weyl counter d) in Python ints: n draws and the words after."""
    x, y, z, w, v, d = (int(u) for u in words)
    m, out = 0xFFFFFFFF, []
    for _ in range(n):
        t = x ^ (x >> 2)
        x, y, z, w = y, z, w, v
        v = (v ^ ((v << 4) & m)) ^ (t ^ ((t << 1) & m))
        d = (d + 362437) & m
        out.append((v + d) & m)
    return out, [x, y, z, w, v, d]


def k_rand_set_state(s):
    """GpSimd's generator loaded with each lane's XORWOW state (NKI 0.6's nisa.rand_set_state), then 4 draws."""
    nisa.rand_set_state(nl.load(s), engine=nisa.gpsimd_engine)
    d = nl.ndarray((128, 4), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rng(dst=d, engine=nisa.gpsimd_engine)
    out = nl.ndarray((128, 4), dtype=nl.uint32, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


def e_rand_set_state(s):
    nisa.rand_set_state(nl.load(s[:, 0:5]), engine=nisa.gpsimd_engine)  # ERR


def k_rand_get_state(s):
    """The state after 4 draws (NKI 0.6's nisa.rand_get_state)."""
    nisa.rand_set_state(nl.load(s), engine=nisa.gpsimd_engine)
    d = nl.ndarray((128, 4), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rng(dst=d, engine=nisa.gpsimd_engine)
    st = nl.ndarray((128, 6), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rand_get_state(dst=st, engine=nisa.gpsimd_engine)
    out = nl.ndarray((128, 6), dtype=nl.uint32, buffer=nl.shared_hbm)
    nl.store(out, st)
    return out


def e_rand_get_state(s):
    st = nl.ndarray((128, 6), dtype=nl.int32, buffer=nl.sbuf)
    nisa.rand_get_state(dst=st, engine=nisa.gpsimd_engine)  # ERR
    return st


def k_rng(seed):
    """32 random bits per element from the Vector engine's generator seeded by nisa.set_rng_seed (NKI 0.6)."""
    nisa.set_rng_seed(nl.load(seed))
    d = nl.ndarray((128, 64), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rng(dst=d)
    out = nl.ndarray((128, 64), dtype=nl.uint32, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


def check_random_bits(got: Any, inputs: Any) -> None:
    """Properties only (the seed's expansion is the simulator's own): distinct words, every bit fair, and the same
    values from a second launch."""
    assert got.dtype == np.uint32 and got.shape == (128, 64)
    assert len(np.unique(got)) > 0.99 * got.size
    assert 0.49 < np.unpackbits(got.view(np.uint8)).mean() < 0.51


def e_rng(seed):
    d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.rng(dst=d)  # ERR
    return d


def e_set_rng_seed(seed):
    narrow = nl.zeros((1, 1), dtype=nl.uint16, buffer=nl.sbuf)
    nisa.set_rng_seed(narrow)  # ERR


def k_rand2(a):
    """NeuronCore-v4's uniform generator (NKI 0.6's nisa.rand2) between per-partition bounds."""
    lo = nl.load(a[:, 0:1])
    hi = nl.load(a[:, 1:2])
    d = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.rand2(lo, hi, dst=d)
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


BOUNDS = np.stack([np.linspace(-3, 1, 128), np.linspace(-2, 5, 128)], axis=1).astype(np.float32)


def check_rand2(got: Any, inputs: Any) -> None:
    lo, hi = inputs[0][:, 0:1], inputs[0][:, 1:2]
    assert got.dtype == np.float32 and np.all(got >= lo) and np.all(got < hi)
    u = (got - lo) / (hi - lo)
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005


def e_rand2(a):
    d = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.rand2(2.0, 2.0, dst=d)  # ERR
    return d


def k_memset(a):
    r = nisa.memset((128, 64), 2.5, nl.float32)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_memset(a):
    r = nisa.memset((256, 64), 2.5, nl.float32)  # ERR
    return r


def k_find_index8(a, v):
    r = nisa.nc_find_index8(data=nl.load(a), vals=nl.load(v))
    out = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_find_index8(a, v):
    r = nisa.nc_find_index8(data=a, vals=nl.load(v))  # ERR
    return r


def k_match_replace8(a, v):
    r = nisa.nc_match_replace8(data=nl.load(a), vals=nl.load(v), imm=-5.0)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_match_replace8(a, v):
    r = nisa.nc_match_replace8(data=a, vals=nl.load(v), imm=-5.0)  # ERR
    return r


def r_match_replace8(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    ref = a.copy()
    for p in range(a.shape[0]):
        for val in v[p]:
            ref[p, np.flatnonzero(ref[p] == val)[0]] = -5.0
    return ref


def k_nc_matmul(s, m):
    r = nisa.nc_matmul(nl.load(s), nl.load(m))
    out = nl.ndarray((s.shape[1], m.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(r))
    return out


def e_nc_matmul(s, m):
    x, y = nl.load(s), nl.load(m[0:64, :])
    r = nisa.nc_matmul(x, y)  # ERR
    return r


SHUFFLE = [(i + 5) % 32 for i in range(31)] + [255]


def k_stream_shuffle(a, b):
    d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    d[...] = nl.load(b)
    nisa.nc_stream_shuffle(src=nl.load(a), dst=d, shuffle_mask=SHUFFLE)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


def e_stream_shuffle(a, b):
    d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(src=a, dst=d, shuffle_mask=SHUFFLE)  # ERR
    return d


def r_stream_shuffle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Within each 32-partition quadrant, destination i takes source mask[i]; 255 leaves i untouched."""
    ref = b.copy()
    for q in range(a.shape[0] // 32):
        for i, src in enumerate(SHUFFLE):
            if src != 255:
                ref[q * 32 + i] = a[q * 32 + src]
    return ref


def k_nc_transpose(a):
    r = nisa.nc_transpose(nl.load(a))
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(r))
    return out


def e_nc_transpose(a):
    r = nisa.nc_transpose(a)  # ERR
    return r


def k_range_select(a, lo, hi):
    b0, b1 = nl.load(lo), nl.load(hi)
    r = nisa.range_select(on_true_tile=nl.load(a), comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=b0,
                          bound1=b1, range_start=0, on_false_value=-1e30)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_range_select(a, lo, hi):
    b0, b1 = nl.load(lo), nl.load(hi)
    r = nisa.range_select(on_true_tile=nl.load(a), comp_op0=nl.greater_equal, comp_op1=nl.less,  # ERR
                          bound0=b0, bound1=b1, range_start=0, on_false_value=-1e30)
    return r


LO, HI = ints(0, 20, (128, 1)).astype(F32), ints(20, 64, (128, 1)).astype(F32)


def k_isa_reciprocal(a):
    r = nisa.reciprocal(nl.load(a))
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_isa_reciprocal(a):
    r = nisa.reciprocal(a)  # ERR
    return r


def k_scalar_tensor_tensor(a, b):
    r = nisa.scalar_tensor_tensor(data=nl.load(a), op0=np.multiply, operand0=2.0, op1=np.subtract,
                                  operand1=nl.load(b))
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_scalar_tensor_tensor(a, b):
    x, y = nl.load(a), nl.load(b)
    r = nisa.scalar_tensor_tensor(data=x, op0=np.multiply, operand0=2.0, op1=np.add, operand1=y[:, 0:32])  # ERR
    return r


def k_select_reduce(p, a, f):
    d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.select_reduce(dst=d, predicate=nl.load(p), on_true=nl.load(a), on_false=nl.load(f),
                       reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=r, reduce_op=nl.max)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out_red = nl.ndarray((a.shape[0], 1), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, d)
    nl.store(out_red, r)
    return out, out_red


def e_select_reduce(p, a, f):
    d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    t = nl.load(a)
    nisa.select_reduce(dst=d, predicate=nl.load(p), on_true=t, on_false=0.0, reduce_op=nl.add)  # ERR
    return d


def r_select_reduce(p: np.ndarray, a: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sel = np.where(p != 0, a, f)
    return sel, sel.max(axis=1, keepdims=True)


SEGMENTS = np.array([[0, 0, 1, 1, 1, 2, 0, 3, 3, 4, 4, 4, 0, 5, 6, 6]], np.float32)


def k_sequence_bounds(ids):
    r = nisa.sequence_bounds(segment_ids=nl.load(ids))
    out = nl.ndarray((1, 2, ids.shape[1]), dtype=ids.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_sequence_bounds(ids):
    r = nisa.sequence_bounds(segment_ids=ids)  # ERR
    return r


def r_sequence_bounds(ids: np.ndarray) -> np.ndarray:
    """For each position, [start, end) of the run of equal non-zero ids it sits in; id 0 (padding) gives
    [n, -1]."""
    row = ids[0]
    n = len(row)
    start, end = np.empty(n), np.empty(n)
    for i, v in enumerate(row):
        if v == 0:
            start[i], end[i] = n, -1
            continue
        lo = i
        while lo > 0 and row[lo - 1] == v:
            lo -= 1
        hi = i
        while hi + 1 < n and row[hi + 1] == v:
            hi += 1
        start[i], end[i] = lo, hi + 1
    return np.stack([start, end])[None].astype(ids.dtype)


def k_tensor_copy(a):
    r = nisa.tensor_copy(nl.load(a))
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_tensor_copy(a):
    r = nisa.tensor_copy(a)  # ERR
    return r


def k_copy_dynamic_src(a):
    t = nl.load(a)
    r = nisa.tensor_copy_dynamic_src(t[:, 4:36])
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_copy_dynamic_src(a):
    r = nisa.tensor_copy_dynamic_src(a[:, 4:36])  # ERR
    return r


def k_copy_dynamic_dst(a):
    t = nl.load(a)
    r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    r[...] = t
    nisa.tensor_copy_dynamic_dst(dst=r[:, 32:64], src=t[:, 0:32])
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_copy_dynamic_dst(a):
    t = nl.load(a)
    nisa.tensor_copy_dynamic_dst(dst=a[:, 32:64], src=t[:, 0:32])  # ERR
    return a


def k_copy_predicated(p, src, old):
    d = nl.ndarray(src.shape, dtype=nl.float32, buffer=nl.sbuf)
    d[...] = nl.load(old)
    nisa.tensor_copy_predicated(src=nl.load(src), dst=d, predicate=nl.load(p))
    out = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


def e_copy_predicated(p, src, old):
    d = nl.ndarray(src.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy_predicated(src=src, dst=d, predicate=nl.load(p))  # ERR
    return d


def k_partition_reduce(a):
    r = nisa.tensor_partition_reduce(np.add, nl.load(a))
    out = nl.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_partition_reduce(a):
    x = nl.load(a)
    r = nisa.tensor_partition_reduce(np.subtract, x)  # ERR
    return r


def k_tensor_reduce(a):
    r = nisa.tensor_reduce(np.max, nl.load(a), axis=(1,), keepdims=True, negate=True)
    out = nl.ndarray((a.shape[0], 1), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_tensor_reduce(a):
    x = nl.load(a)
    r = nisa.tensor_reduce(np.add, x, axis=(0,))  # ERR
    return r


def k_tensor_scalar(a, v):
    r = nisa.tensor_scalar(nl.load(a), np.multiply, 2.0, op1=np.subtract, operand1=nl.load(v), reverse1=True)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_tensor_scalar(a, v):
    r = nisa.tensor_scalar(a, np.multiply, 2.0)  # ERR
    return r


def k_scalar_cumulative(a, imm):
    d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(src=nl.load(a), dst=d, op0=nl.multiply, op1=nl.add, imm0=nl.load(imm))
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, d)
    return out


def e_scalar_cumulative(a, imm):
    d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(src=a, dst=d, op0=nl.multiply, op1=nl.add, imm0=nl.load(imm))  # ERR
    return d


def k_scalar_reduce(a, s):
    r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    y = nisa.tensor_scalar_reduce(data=nl.load(a), op0=np.multiply, operand0=nl.load(s), reduce_op=np.add,
                                  reduce_res=r)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out_red = nl.ndarray((a.shape[0], 1), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    nl.store(out_red, r)
    return out, out_red


def e_scalar_reduce(a, s):
    r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    y = nisa.tensor_scalar_reduce(data=a, op0=np.multiply, operand0=nl.load(s), reduce_op=np.add,  # ERR
                                  reduce_res=r)
    return y


def k_tensor_tensor(a, b):
    r = nisa.tensor_tensor(nl.load(a), nl.load(b), op=np.subtract)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_tensor_tensor(a, b):
    x, y = nl.load(a), nl.load(b[0:1, :])
    r = nisa.tensor_tensor(x, y, op=np.subtract)  # ERR
    return r


def k_tensor_tensor_scan(a, b):
    r = nisa.tensor_tensor_scan(nl.load(a), nl.load(b), initial=0.5, op0=np.multiply, op1=np.add)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_tensor_tensor_scan(a, b):
    x, y = nl.load(a), nl.load(b)
    r = nisa.tensor_tensor_scan(x, y[:, 0:4], initial=0.5, op0=np.multiply, op1=np.add)  # ERR
    return r


def r_tensor_tensor_scan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """state = a[:, i] * state + b[:, i], from 0.5, written out element by element."""
    ref = np.empty(a.shape, np.float64)
    state = np.full(a.shape[0], 0.5)
    for i in range(a.shape[1]):
        state = a[:, i] * state + b[:, i]
        ref[:, i] = state
    return f32(ref)


def isa_cases() -> dict[str, CallCase]:
    wrong = wrong_space
    col = uniform(-1, 1, (128, 1))
    u01a, u01b = uniform(0, 1), uniform(0, 1)
    pred = ints(0, 2, dtype=np.uint8)
    gather_src = uniform(-3, 3, (32, 60))
    gather_idx = (ints(0, 20, (32, 2)) * 3).astype(np.uint16)
    mx_in = (MX_ST, mx_reference.spread(MX_SS), MX_MV, mx_reference.spread(MX_MS))
    shuffle_in = (uniform(-3, 3, (64, 8)), uniform(-3, 3, (64, 8)))
    top8 = np.take_along_axis(DISTINCT, TOP8, axis=1)
    return {
        "nisa.activation": CallCase(k_activation, (X, col), lambda a, b: f32(np.exp(0.5 * a.astype(np.float64) + b)),
                                    rtol=1e-6,
                                    refusal=Refusal(e_activation, (X, ints(0, 3, (128, 1))), TypeError,
                                                    "err_activation_bias_invalid_type",
                                                    "must be a vector of type float32, float16, or bfloat16")),
        "nisa.activation_reduce": CallCase(k_activation_reduce, (X,), r_activation_reduce, rtol=1e-5, atol=1e-5,
                                           refusal=Refusal(e_activation_reduce, HBM_IN, *inner_wrong_space())),
        "nisa.affine_select": CallCase(k_affine_select, (X,),
                                       lambda a: np.where(np.arange(64)[None, :] <= np.arange(128)[:, None], a,
                                                          np.float32(-1e4)),
                                       refusal=Refusal(e_affine_select, HBM_IN,
                                                       *wrong("affine_select", "on_true_tile"))),
        "nisa.bn_stats": CallCase(k_bn_stats, (X,), r_bn_stats, rtol=1e-5, atol=1e-5,
                                  refusal=Refusal(e_bn_stats, (uniform(0, 1, (128, 1024)),), ValueError,
                                                  "err_size_of_dimension_exceed_arch_limit",
                                                  "of 'bn_stats' exceed architecture limitation of 512.")),
        "nisa.bn_aggr": CallCase(k_bn_aggr, (BN_STATS,),
                                 lambda s: f32(np.stack([BN_DATA.astype(np.float64).mean(axis=1),
                                                         BN_DATA.astype(np.float64).var(axis=1)], axis=1)),
                                 rtol=1e-5, atol=1e-5,
                                 refusal=Refusal(e_bn_aggr, (BN_STATS,), ValueError, "err_param_shape_mismatch",
                                                 "of 'bn_aggr' has mismatched shapes")),
        "nisa.dma_copy": CallCase(k_dma_copy, (X,), lambda a: a,
                                  refusal=Refusal(e_dma_copy, HBM_IN, TypeError,
                                                  "err_cannot_update_immutable_parameter",
                                                  "Cannot update immutable parameter")),
        "nisa.dma_transpose": CallCase(k_dma_transpose, (uniform(-3, 3, (64, 128)),), lambda a: a.T.copy(),
                                       refusal=Refusal(e_dma_transpose, (uniform(-3, 3, (64, 128)),), ValueError,
                                                       "err_param_shape_mismatch",
                                                       "of 'dma_transpose' has mismatched shapes")),
        "nisa.dropout": CallCase(k_isa_dropout, (uniform(1, 2),), check=dropout_properties(0.25),
                                 refusal=Refusal(e_isa_dropout, HBM_IN, *wrong("dropout", "data"))),
        "nisa.iota": CallCase(k_iota, HBM_IN, lambda a: np.arange(128 * 64, dtype=np.int32).reshape(128, 64),
                              refusal=Refusal(e_iota, HBM_IN, ValueError, "err_num_partition_exceed_arch_limit",
                                              "exceed architecture limitation of 128.")),
        "nisa.local_gather": CallCase(k_local_gather, (gather_src, gather_idx), r_local_gather,
                                      refusal=Refusal(e_local_gather, (gather_src, gather_idx), ValueError,
                                                      "err_num_partition_mismatch", "whole groups of 16 partitions")),
        "nisa.max8": CallCase(k_max8, (DISTINCT,), lambda a: np.take_along_axis(a, TOP8, axis=1),
                              refusal=Refusal(e_max8, (DISTINCT,), ValueError, "err_size_of_dimension_exceed_arch_limit",
                                              "must be between 8 and 16384")),
        "nisa.memset": CallCase(k_memset, HBM_IN, lambda a: np.full((128, 64), 2.5, np.float32),
                                refusal=Refusal(e_memset, HBM_IN, ValueError, "err_num_partition_exceed_arch_limit",
                                                "number of partitions in shape[256, 64] of 'memset' exceed "
                                                "architecture limitation of 128.")),
        "nisa.nc_find_index8": CallCase(k_find_index8, (DISTINCT, top8), lambda a, v: TOP8.astype(np.uint32),
                                        refusal=Refusal(e_find_index8, (DISTINCT, top8),
                                                        *wrong("nc_find_index8", "data"))),
        "nisa.nc_match_replace8": CallCase(k_match_replace8, (DISTINCT, top8), r_match_replace8,
                                           refusal=Refusal(e_match_replace8, (DISTINCT, top8),
                                                           *wrong("nc_match_replace8", "data"))),
        "nisa.nc_matmul": CallCase(k_nc_matmul, (uniform(-1, 1, (128, 64)), uniform(-1, 1, (128, 256))),
                                   lambda s, m: f32(s.astype(np.float64).T @ m), rtol=1e-5, atol=1e-5,
                                   refusal=Refusal(e_nc_matmul, (uniform(-1, 1, (128, 64)), uniform(-1, 1, (128, 256))),
                                                   ValueError, "err_param_shape_incompatible_with_matmul",
                                                   "Number of partitions mismatch")),
        "nisa.nc_stream_shuffle": CallCase(k_stream_shuffle, shuffle_in, r_stream_shuffle,
                                           refusal=Refusal(e_stream_shuffle, shuffle_in,
                                                           *wrong("nc_stream_shuffle", "src"))),
        "nisa.nc_transpose": CallCase(k_nc_transpose, (uniform(-3, 3, (64, 32)),), lambda a: a.T.copy(),
                                      refusal=Refusal(e_nc_transpose, HBM_IN, *wrong("nc_transpose", "data"))),
        "nisa.range_select": CallCase(k_range_select, (X, LO, HI),
                                      lambda a, lo, hi: np.where((np.arange(64)[None, :] >= lo)
                                                                 & (np.arange(64)[None, :] < hi), a,
                                                                 np.float32(-1e30)),
                                      target="trn2",
                                      refusal=Refusal(e_range_select, (X, LO, HI), SyntaxError,
                                                      "err_min_arch_support_for_inst", "requires min target gen3",
                                                      target="trn1")),
        "nisa.register_load": CallCase(k_register, (INT_PAIR,), lambda a: a[0:1, 0:1] + 7,
                                       refusal=Refusal(e_register_load, (INT_PAIR,), ValueError,
                                                       "err_param_shape_mismatch", "a register moves one 32-bit")),
        "nisa.register_store": CallCase(k_register, (INT_PAIR,), lambda a: a[0:1, 0:1] + 7,
                                        refusal=Refusal(e_register_store, (INT_PAIR,), ValueError,
                                                        "err_param_shape_mismatch", "one 32-bit integer element")),
        "nisa.sendrecv": CallCase(k_sendrecv, (X, Y), lambda a, b: np.stack([b, a]),
                                  refusal=Refusal(e_sendrecv, (X, Y), ValueError, "err_param_shape_mismatch",
                                                  "must match in shape and dtype")),
        "nisa.quantize_mx": CallCase(k_quantize_mx, (MX_SRC,), r_quantize_mx, target="trn3",
                                     refusal=Refusal(e_quantize_mx, (MX_SRC,), ValueError,
                                                     "err_size_of_dimension_exceed_arch_limit", "multiple of 32",
                                                     target="trn3")),
        "nisa.nc_matmul_mx": CallCase(k_nc_matmul_mx, mx_in,
                                      lambda *_: f32(mx_reference.matmul(MX_ST, MX_SS, "e5m2", MX_MV, MX_MS, "e2m1fn")),
                                      rtol=1e-5, atol=1e-6, target="trn3",
                                      refusal=Refusal(e_nc_matmul_mx, mx_in, SyntaxError,
                                                      "err_min_arch_support_for_inst", "requires min target gen4",
                                                      target="trn2")),
        "nisa.exponential": CallCase(k_exponential, (X,), lambda a: (f32(np.exp(a.astype(np.float64) - 1)),
                                                                     f32(np.exp(a.astype(np.float64) - 1).sum(
                                                                         axis=1, keepdims=True))),
                                     rtol=1e-5, target="trn3",
                                     refusal=Refusal(e_exponential, (X,), SyntaxError, "err_min_arch_support_for_inst",
                                                     "requires min target gen4", target="trn2")),
        "nisa.activate2": CallCase(k_activate2, (X,), lambda a: f32(np.tanh(2 * a.astype(np.float64) + 0.5)),
                                   rtol=1e-5, atol=1e-6, target="trn3",
                                   refusal=Refusal(e_activate2, (X,), SyntaxError, "err_instruction_unsupported_op",
                                                   "(op0, op1) = (add, multiply) is not supported", target="trn3")),
        "nisa.nonzero_with_count": CallCase(k_nonzero_with_count, (SPARSE,), r_nonzero_with_count,
                                            refusal=Refusal(e_nonzero_with_count, (SPARSE,), ValueError,
                                                            "err_param_shape_mismatch",
                                                            "one more element per partition")),
        "nisa.topk": CallCase(k_topk, (SNAKES,), r_topk,
                              refusal=Refusal(e_topk, (SNAKES,), ValueError, "err_size_of_dimension_exceed_arch_limit",
                                              "n=7 of 'topk' must be at least 8")),
        "nisa.nc_n_gather": CallCase(k_nc_n_gather, (X, GATHER_AT),
                                     lambda a, i: np.take_along_axis(a, i.astype(np.int64), axis=1),
                                     refusal=Refusal(e_nc_n_gather, (X, GATHER_AT), TypeError,
                                                     "err_supported_operand_dtype",
                                                     "'indices' of 'nc_n_gather' has dtype int32")),
        "nisa.dma_compute": CallCase(k_dma_compute, (X, Y), lambda a, b: f32(a.astype(np.float64) + b),
                                     refusal=Refusal(e_dma_compute, (X, Y), SyntaxError,
                                                     "err_instruction_unsupported_op",
                                                     "maximum is not supported in 'dma_compute'")),
        "nisa.rand_set_state": CallCase(k_rand_set_state, (RNG_STATE,),
                                        lambda s: np.array([xorwow(r, 4)[0] for r in s], dtype=np.uint32),
                                        refusal=Refusal(e_rand_set_state, (RNG_STATE,), ValueError,
                                                        "err_param_shape_mismatch", "6 uint32 words per lane")),
        "nisa.rand_get_state": CallCase(k_rand_get_state, (RNG_STATE,),
                                        lambda s: np.array([xorwow(r, 4)[1] for r in s], dtype=np.uint32),
                                        refusal=Refusal(e_rand_get_state, (RNG_STATE,), TypeError,
                                                        "err_supported_operand_dtype",
                                                        "'dst' of 'rand_get_state' has dtype int32")),
        "nisa.rng": CallCase(k_rng, (SEED,), check=check_random_bits,
                             refusal=Refusal(e_rng, (SEED,), TypeError, "err_supported_operand_dtype",
                                             "'dst' of 'rng' has dtype float32")),
        "nisa.set_rng_seed": CallCase(k_rng, (SEED,), check=check_random_bits,
                                      refusal=Refusal(e_set_rng_seed, (SEED,), TypeError,
                                                      "err_supported_operand_dtype", "the seed is a 32-bit value")),
        "nisa.rand2": CallCase(k_rand2, (BOUNDS,), check=check_rand2, target="trn3",
                               refusal=Refusal(e_rand2, (BOUNDS,), ValueError, "err_unsupported_dtype_value",
                                               "min must be below max", target="trn3")),
        "nisa.core_barrier": CallCase(k_core_barrier, (X,), lambda a: a,
                                      refusal=Refusal(e_core_barrier, (X,), TypeError, "err_unsupported_memory",
                                                      "address space 'shared_hbm'")),
        "nisa.reciprocal": CallCase(k_isa_reciprocal, (NONZERO,), lambda a: f32(1 / a.astype(np.float64)),
                                    refusal=Refusal(e_isa_reciprocal, HBM_IN, *wrong("reciprocal", "data"))),
        "nisa.scalar_tensor_tensor": CallCase(k_scalar_tensor_tensor, (X, Y),
                                              lambda a, b: f32(a.astype(np.float64) * 2 - b),
                                              refusal=Refusal(e_scalar_tensor_tensor, (X, Y), ValueError,
                                                              "err_param_shape_mismatch", "has mismatched shapes")),
        "nisa.select_reduce": CallCase(k_select_reduce, (pred, X, col), r_select_reduce,
                                       refusal=Refusal(e_select_reduce, (pred, X, col), SyntaxError,
                                                       "err_instruction_unsupported_op",
                                                       "add is not supported in 'select_reduce'")),
        "nisa.sequence_bounds": CallCase(k_sequence_bounds, (SEGMENTS,), r_sequence_bounds,
                                         refusal=Refusal(e_sequence_bounds, (SEGMENTS,),
                                                         *wrong("sequence_bounds", "segment_ids"))),
        "nisa.tensor_copy": CallCase(k_tensor_copy, (X,), lambda a: a,
                                     refusal=Refusal(e_tensor_copy, HBM_IN, *wrong("tensor_copy", "src"))),
        "nisa.tensor_copy_dynamic_src": CallCase(k_copy_dynamic_src, (X,), lambda a: a[:, 4:36],
                                                 refusal=Refusal(e_copy_dynamic_src, HBM_IN,
                                                                 *wrong("tensor_copy_dynamic_src", "src"))),
        "nisa.tensor_copy_dynamic_dst": CallCase(k_copy_dynamic_dst, (X,),
                                                 lambda a: np.concatenate([a[:, 0:32], a[:, 0:32]], axis=1),
                                                 refusal=Refusal(e_copy_dynamic_dst, HBM_IN,
                                                                 *wrong("tensor_copy_dynamic_dst", "dst"))),
        "nisa.tensor_copy_predicated": CallCase(k_copy_predicated, (pred, X, Y),
                                                lambda p, s, o: np.where(p != 0, s, o),
                                                refusal=Refusal(e_copy_predicated, (pred, X, Y),
                                                                *wrong("tensor_copy_predicated", "src"))),
        "nisa.tensor_partition_reduce": CallCase(k_partition_reduce, (X,),
                                                 lambda a: f32(a.astype(np.float64).sum(axis=0, keepdims=True)),
                                                 rtol=1e-5, atol=1e-5,
                                                 refusal=Refusal(e_partition_reduce, HBM_IN, SyntaxError,
                                                                 "err_instruction_unsupported_op",
                                                                 "subtract is not supported in "
                                                                 "'tensor_partition_reduce'")),
        "nisa.tensor_reduce": CallCase(k_tensor_reduce, (X,), lambda a: -a.max(axis=1, keepdims=True),
                                       refusal=Refusal(e_tensor_reduce, HBM_IN, ValueError, "err_reduce_partition_axis",
                                                       "'tensor_reduce' cannot reduce along the partition axis")),
        "nisa.tensor_scalar": CallCase(k_tensor_scalar, (X, col), lambda a, v: f32(v - a.astype(np.float64) * 2),
                                       rtol=1e-6, atol=1e-6,
                                       refusal=Refusal(e_tensor_scalar, (X, col), *wrong("tensor_scalar", "data"))),
        "nisa.tensor_scalar_cumulative": CallCase(k_scalar_cumulative, (u01a, uniform(0.5, 1.5, (128, 1))),
                                                  lambda a, v: f32(np.cumsum(a.astype(np.float64) * v, axis=1)),
                                                  rtol=1e-5, atol=1e-5,
                                                  refusal=Refusal(e_scalar_cumulative,
                                                                  (u01a, uniform(0.5, 1.5, (128, 1))),
                                                                  *wrong("tensor_scalar_cumulative", "src"))),
        "nisa.tensor_scalar_reduce": CallCase(k_scalar_reduce, (X, col),
                                              lambda a, s: (f32(a.astype(np.float64) * s),
                                                            f32((a.astype(np.float64) * s).sum(axis=1,
                                                                                                keepdims=True))),
                                              rtol=1e-5, atol=1e-5,
                                              refusal=Refusal(e_scalar_reduce, (X, col),
                                                              *wrong("tensor_scalar_reduce", "data"))),
        "nisa.tensor_tensor": CallCase(k_tensor_tensor, (X, Y), lambda a, b: f32(a.astype(np.float64) - b),
                                       refusal=Refusal(e_tensor_tensor, (X, Y), ValueError,
                                                       "err_num_partition_mismatch",
                                                       "mismatch in parameters (data1[128, 64], data2[1, 64]) of "
                                                       "'tensor_tensor'")),
        "nisa.tensor_tensor_scan": CallCase(k_tensor_tensor_scan, (u01a, u01b), r_tensor_tensor_scan, rtol=1e-5,
                                            refusal=Refusal(e_tensor_tensor_scan, (u01a, u01b), ValueError,
                                                            "err_param_shape_mismatch", "mismatched shapes")),
    }


# ================================================================================================
# Tile syntax: operators, item assignment, in-place updates and tile methods
# ================================================================================================
def k_tile_binary(a, b):
    r = nl.load(a) - nl.load(b)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_tile_binary(a, b):
    x, y = nl.load(a), nl.load(b[0:1, :])
    r = x + y  # ERR
    return r


def k_tile_unary(a):
    r = -nl.load(a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_tile_unary(a):
    r = -a  # ERR
    return r


def k_tile_assign(a):
    x = nl.load(a)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    t[:, 0:32] = x[:, 32:64]
    t[:, 32:64] = x[:, 0:32]
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def e_tile_assign(a):
    x = nl.load(a)
    y = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    y[...] = x  # ERR
    return y


def k_tile_accumulate(a, b):
    t = nl.load(a)
    t += nl.load(b)
    t *= 2.0
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def e_tile_accumulate(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out += nl.load(b)  # ERR
    return out


def k_tile_astype(a):
    r = nl.load(a).astype(nl.bfloat16)
    out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


def e_tile_astype(a):
    r = a.astype(nl.bfloat16)  # ERR
    return r


def k_tile_broadcast_to(r):
    y = nl.load(r).broadcast_to((128, 64))
    out = nl.ndarray((128, 64), dtype=r.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_tile_broadcast_to(r):
    x = nl.load(r)
    y = x.broadcast_to((128, 32))  # ERR
    return y


def k_tile_expand_dims(a):
    y = nl.load(a).expand_dims(2)
    out = nl.ndarray((128, 64, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_tile_expand_dims(a):
    y = nl.load(a).expand_dims(1)  # ERR
    return y


def k_tile_reshape(a):
    y = nl.load(a).reshape((128, 8, 8))
    out = nl.ndarray((128, 8, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_tile_reshape(a):
    x = nl.load(a)
    y = x.reshape((128, 65))  # ERR
    return y


def k_tile_reshape_access(a):
    x = nl.load(a)
    y = x[0:128, 0:64].reshape((128, 4, 16))
    out = nl.ndarray((128, 4, 16), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_tile_reshape_access(a):
    x = nl.load(a)
    y = x[0:128, 0:64].reshape((128, 4, 15))  # ERR
    return y


def k_tile_subaccess(a):
    x = nl.load(a)
    y = nl.copy(x[0:64][:, 16:48])
    out = nl.ndarray((64, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_tile_subaccess(a):
    x = nl.load(a)
    y = nl.copy(x[0:64][0, 0, 0])  # ERR
    return y


def k_tile_transpose(a):
    y = nl.load(a).T
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(y))
    return out


def e_tile_transpose(a):
    x = nl.load(a)
    y = x.T  # ERR
    return y


def k_tile_view(a):
    y = nl.load(a).view(nl.int32)
    out = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


def e_tile_view(a):
    x = nl.load(a)
    y = x.view(nl.float32)  # ERR
    return y


def k_tile_assert_shape(a):
    x = nl.load(a).assert_shape((128, 64))
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, x)
    return out


def e_tile_assert_shape(a):
    x = nl.load(a)
    y = x.assert_shape((128, 32))  # ERR
    return y


def tile_cases() -> dict[str, CallCase]:
    wrong = wrong_space
    col = uniform(-3, 3, (1, 64))
    i8 = ints(-100, 100, (128, 3), np.int8)  # 3 bytes a partition: no whole float32
    return {
        "tile.binary": CallCase(k_tile_binary, (X, Y), lambda a, b: f32(a.astype(np.float64) - b),
                                refusal=Refusal(e_tile_binary, (X, Y), ValueError,
                                                "err_param_shape_incompatible_with_numpy", "broadcast")),
        "tile.unary": CallCase(k_tile_unary, (X,), lambda a: -a,
                               refusal=Refusal(e_tile_unary, HBM_IN, *wrong("negative"))),
        "tile.assign": CallCase(k_tile_assign, (X,), lambda a: np.concatenate([a[:, 32:64], a[:, 0:32]], axis=1),
                                refusal=Refusal(e_tile_assign, (X,), ValueError,
                                                "err_store_dst_shape_smaller_than_other_shape",
                                                "shape [128, 1] of parameter")),
        "tile.accumulate": CallCase(k_tile_accumulate, (X, Y), lambda a, b: f32((a.astype(np.float64) + b) * 2),
                                    refusal=Refusal(e_tile_accumulate, (X, Y), *wrong("add", "dst"))),
        "tile.astype": CallCase(k_tile_astype, (X,), lambda a: a.astype(BF16),
                                refusal=Refusal(e_tile_astype, HBM_IN, *inner_wrong_space())),
        "tile.broadcast_to": CallCase(k_tile_broadcast_to, (col,), lambda r: np.repeat(r, 128, axis=0),
                                      refusal=Refusal(e_tile_broadcast_to, (col,), ValueError,
                                                      "err_param_shape_incompatible_with_numpy",
                                                      "could not be broadcast together")),
        "tile.expand_dims": CallCase(k_tile_expand_dims, (X,), lambda a: a[:, :, None],
                                     refusal=Refusal(e_tile_expand_dims, (X,), ValueError, None,
                                                     "only supports adding an axis after the last one")),
        "tile.reshape": CallCase(k_tile_reshape, (X,), lambda a: a.reshape(128, 8, 8),
                                 refusal=Refusal(e_tile_reshape, (X,), ValueError, "err_param_shape_mismatch",
                                                 "cannot be reshaped to [128, 65]")),
        "tile.reshape_access": CallCase(k_tile_reshape_access, (X,), lambda a: a.reshape(128, 4, 16),
                                        refusal=Refusal(e_tile_reshape_access, (X,), ValueError,
                                                        "err_param_shape_mismatch",
                                                        "cannot be reshaped to [128, 4, 15]")),
        "tile.subaccess": CallCase(k_tile_subaccess, (X,), lambda a: a[0:64][:, 16:48],
                                   refusal=Refusal(e_tile_subaccess, (X,), IndexError, "err_tensor_access_out_of_bound",
                                                   "3 indices for a tile of rank 2")),
        "tile.transpose": CallCase(k_tile_transpose, (uniform(-3, 3, (64, 32)),), lambda a: a.T.copy(),
                                   refusal=Refusal(e_tile_transpose, (uniform(0, 1, (128, 256)),), ValueError,
                                                   "err_size_of_dimension_exceed_arch_limit",
                                                   "exceed architecture limitation of 128.")),
        "tile.view": CallCase(k_tile_view, (X,), lambda a: a.view(np.int32),
                              refusal=Refusal(e_tile_view, (i8,), ValueError, None, "last axis")),
        "tile.assert_shape": CallCase(k_tile_assert_shape, (X,), lambda a: a,
                                      refusal=Refusal(e_tile_assert_shape, (X,), TypeError,
                                                      "err_annotation_shape_mismatch",
                                                      "does not match the expected shape of [128, 32]")),
    }


CASES: dict[str, CallCase] = {**family_cases(), **language_cases(), **isa_cases(), **tile_cases()}
