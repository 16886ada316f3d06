"""The operator tables: ALU operators and activation functions, shared by checks, numerics and cost.

Like Triton's interpreter (which reuses the compiler's semantic layer), every API here reads the
same entries: the ALU operators usable by Vector/Scalar/GpSimd instructions, the activation
functions of the Scalar engine with their numerics, and the names by which an ``op=`` argument may
name them.  Adding an operator means adding a row, not a code path; the calls themselves are entries
of ``ops.registry`` and the instructions they issue are ``cost.instructions``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nkisim.core.recording import call_name

# ----------------------------------------------------------------------------------------------
# numerics helpers (fp32 in, fp32 out)
# ----------------------------------------------------------------------------------------------


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 absolute (Abramowitz & Stegun 7.1.26 refined with one Newton step)."""
    x = np.asarray(x, dtype=np.float64)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) \
        * t * np.exp(-a * a)
    return (s * y).astype(np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(np.float32(0), x)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_dx(x: np.ndarray) -> np.ndarray:
    cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return cdf + x * pdf


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _silu_dx(x: np.ndarray) -> np.ndarray:
    s = _sigmoid(x)
    return s * (1 + x * (1 - s))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


def _recip(x: np.ndarray) -> np.ndarray:
    return 1.0 / x


@dataclass(frozen=True)
class Activation:
    """A Scalar-engine function: numerics and the input range the hardware approximation covers."""

    name: str
    fn: Callable[[np.ndarray], np.ndarray]
    valid_range: tuple[float, float] | None = None


_ACT_LIST = [
    Activation("copy", lambda x: x),
    Activation("identity", lambda x: x),
    Activation("abs", np.abs),
    Activation("negative", np.negative),
    Activation("sign", np.sign),
    Activation("trunc", np.trunc),
    Activation("floor", np.floor),
    Activation("ceil", np.ceil),
    Activation("exp", np.exp),
    Activation("log", np.log, (2.0 ** -64, 2.0 ** 64)),
    Activation("cos", np.cos),
    Activation("sin", np.sin, (-math.pi, math.pi)),
    Activation("tan", np.tan),
    Activation("tanh", np.tanh),
    Activation("arctan", np.arctan, (-math.pi / 2, math.pi / 2)),
    Activation("sqrt", np.sqrt, (2.0 ** -116, 2.0 ** 118)),
    Activation("rsqrt", _rsqrt, (2.0 ** -87, 2.0 ** 97)),
    Activation("reciprocal", _recip),
    Activation("sigmoid", _sigmoid),
    Activation("relu", lambda x: np.maximum(x, np.float32(0))),
    Activation("gelu", _gelu),
    Activation("gelu_dx", _gelu_dx),
    Activation("gelu_apprx_tanh", _gelu_tanh),
    Activation("gelu_apprx_sigmoid", lambda x: x * _sigmoid(1.702 * x)),
    Activation("gelu_apprx_sigmoid_dx", lambda x: _sigmoid(1.702 * x) * (1 + 1.702 * x * (1 - _sigmoid(1.702 * x)))),
    Activation("silu", lambda x: x * _sigmoid(x)),
    Activation("silu_dx", _silu_dx),
    Activation("erf", _erf),
    Activation("erf_dx", lambda x: (2 / math.sqrt(math.pi)) * np.exp(-x * x)),
    Activation("softplus", _softplus),
    Activation("mish", lambda x: x * np.tanh(_softplus(x))),
    Activation("square", np.square),
]
ACTIVATIONS: dict[str, Activation] = {a.name: a for a in _ACT_LIST}


@dataclass(frozen=True)
class AluOp:
    """A binary ALU operator of the Vector/GpSimd/Scalar engines."""

    name: str
    fn: Callable[[Any, Any], Any]
    reducible: bool = False
    bitvec: bool = False
    compare: bool = False  # result defaults to bool
    reduce_fn: Callable[..., Any] | None = None
    #: ``nl.<name>`` is this operator as an elementwise function (nl.max/nl.min are reductions; nl.mod and
    #: nl.fmod take their dtype and mask positionally and are written out in ops.elementwise)
    nl_function: bool = True
    #: true division: computed in fp32 whatever the operands, and an integer result floors (pos // w)
    true_division: bool = False
    #: ``nisa.tensor_tensor`` runs it on GpSimd: always (power), or when both operands are integers (integer
    #: add, multiply and subtract run only on GpSimd, spec §2.8 / §2.9)
    gpsimd: bool = False
    gpsimd_for_integers: bool = False


def _div(a: Any, b: Any) -> Any:
    if np.asarray(a).dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu":
        return np.true_divide(a, b).astype(np.float32)
    return np.true_divide(a, b)


def _power(a: Any, b: Any) -> Any:
    return np.power(a, b)


def _int_only(fn: Callable) -> Callable:
    def wrapped(a: Any, b: Any) -> Any:
        return fn(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64))

    return wrapped


def _lshift(a: Any, b: Any) -> Any:
    return np.left_shift(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)) & 0xFFFFFFFF


def _rshift(a: Any, b: Any) -> Any:  # logical shift on the 32-bit pattern
    return np.right_shift(np.asarray(a).astype(np.int64) & 0xFFFFFFFF, np.asarray(b).astype(np.int64))


def _abs_max(a: Any, b: Any) -> Any:
    """The operand of larger magnitude, sign kept; ``b`` on a tie (NKI 0.4's abs_max)."""
    return np.where(np.abs(a) > np.abs(b), a, b)


def _abs_min(a: Any, b: Any) -> Any:
    """The operand of smaller magnitude, sign kept; ``b`` on a tie (NKI 0.4's abs_min)."""
    return np.where(np.abs(a) < np.abs(b), a, b)


# reductions call the ufunc's reduce directly: np.sum & co. are Python wrappers around the same call
_ALU_LIST = [
    AluOp("add", np.add, True, reduce_fn=np.add.reduce, gpsimd_for_integers=True),
    AluOp("subtract", np.subtract, True, gpsimd_for_integers=True),
    AluOp("multiply", np.multiply, True, reduce_fn=np.multiply.reduce, gpsimd_for_integers=True),
    AluOp("divide", _div, true_division=True),
    AluOp("power", _power, gpsimd=True),
    AluOp("maximum", np.maximum, True, reduce_fn=np.maximum.reduce),
    AluOp("minimum", np.minimum, True, reduce_fn=np.minimum.reduce),
    AluOp("max", np.maximum, True, reduce_fn=np.maximum.reduce, nl_function=False),
    AluOp("min", np.minimum, True, reduce_fn=np.minimum.reduce, nl_function=False),
    AluOp("bitwise_and", _int_only(np.bitwise_and), True, True, reduce_fn=np.bitwise_and.reduce),
    AluOp("bitwise_or", _int_only(np.bitwise_or), True, True, reduce_fn=np.bitwise_or.reduce),
    AluOp("bitwise_xor", _int_only(np.bitwise_xor), True, True, reduce_fn=np.bitwise_xor.reduce),
    AluOp("left_shift", _lshift, bitvec=True),
    AluOp("right_shift", _rshift, bitvec=True),
    AluOp("equal", np.equal, compare=True),
    AluOp("not_equal", np.not_equal, compare=True),
    AluOp("greater", np.greater, compare=True),
    AluOp("greater_equal", np.greater_equal, compare=True),
    AluOp("less", np.less, compare=True),
    AluOp("less_equal", np.less_equal, compare=True),
    AluOp("logical_and", np.logical_and, True, compare=True, reduce_fn=np.logical_and.reduce),
    AluOp("logical_or", np.logical_or, True, compare=True, reduce_fn=np.logical_or.reduce),
    AluOp("logical_xor", np.logical_xor, compare=True),
    AluOp("abs_max", _abs_max),
    AluOp("abs_min", _abs_min),
    AluOp("mod", lambda a, b: np.mod(a, b), nl_function=False),
    AluOp("fmod", lambda a, b: np.fmod(a, b), nl_function=False),
    AluOp("arctan2", np.arctan2, nl_function=False),
]
ALU: dict[str, AluOp] = {a.name: a for a in _ALU_LIST}

#: the "Arithmetic Unary" operators of AWS's operator table (nki.api.shared.rst, tbl-aluop): an ALU operand of
#: tensor_scalar / tensor_scalar_reduce that computes ``op(x)`` and ignores its scalar (AWS: "Reverse square root can
#: run on GpSIMD Engine with nki.isa.tensor_scalar(op0=nl.rsqrt, operand0=0.0)", nki.api.shared.rst:260)
ARITH_UNARY = ("abs", "square", "relu", "rsqrt", "reciprocal")

#: unary operators of the Vector engine that are not activation functions
BITWISE_UNARY = ("invert", "logical_not", "bitwise_not")


def is_operator(name: str) -> bool:
    """``name`` is an operator an instruction can apply: an ALU op, an activation function or a bitwise one."""
    return name in ALU or name in ACTIVATIONS or name in BITWISE_UNARY


#: NumPy callables accepted wherever an NKI op is expected (``op0=np.add``, ``op=np.exp``).
_NUMPY_NAMES: dict[Any, str] = {
    np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.divide: "divide",
    np.true_divide: "divide", np.power: "power", np.maximum: "maximum", np.minimum: "minimum",
    np.max: "max", np.min: "min", np.bitwise_and: "bitwise_and", np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor", np.left_shift: "left_shift", np.right_shift: "right_shift",
    np.equal: "equal", np.not_equal: "not_equal", np.greater: "greater", np.greater_equal: "greater_equal",
    np.less: "less", np.less_equal: "less_equal", np.logical_and: "logical_and", np.logical_or: "logical_or",
    np.logical_xor: "logical_xor", np.mod: "mod", np.fmod: "fmod", np.exp: "exp", np.log: "log",
    np.cos: "cos", np.sin: "sin", np.tan: "tan", np.tanh: "tanh", np.arctan: "arctan", np.sqrt: "sqrt",
    np.square: "square", np.abs: "abs", np.absolute: "abs", np.negative: "negative", np.sign: "sign",
    np.floor: "floor", np.ceil: "ceil", np.trunc: "trunc", np.reciprocal: "reciprocal",
    np.invert: "invert", np.logical_not: "logical_not", np.sum: "add", np.prod: "multiply",
    np.amax: "max", np.amin: "min",
}
#: nl reductions passed as an operator (``op=nl.sum``) stand for their ALU operator
_REDUCTION_OPS = {"sum": "add", "prod": "multiply", "max": "max", "min": "min"}


def op_name(op: Any) -> str:
    """Canonical op name for an ``op=`` argument (an nl function, by its registered call name; a NumPy ufunc;
    or a string)."""
    if isinstance(op, str):
        return op
    called = call_name(op)
    if called is not None:
        short = called.split(".", 1)[1]
        return _REDUCTION_OPS.get(short, short)
    try:
        if op in _NUMPY_NAMES:
            return _NUMPY_NAMES[op]
    except TypeError:
        pass
    return getattr(op, "__name__", repr(op))
