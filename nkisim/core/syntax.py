"""Python syntax on tiles: operators, in-place updates and tile methods, and what truth-testing means.

``t + u``, ``t[...] += x``, ``t.broadcast_to(...)``, ``t.T`` are the same operations as ``nl.add``
& co, which live in ``nkisim.ops``.  Core does not import ops (ops imports core): it declares the
operations tile syntax needs as ``TileMethods`` and each ops module provides its own when imported
(``provide``).  ``TileSyntax`` is the mixin both ``Tensor`` and ``Access`` take their operators from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nkisim.core.dynamic import DynamicIndex
from nkisim.core.errors import nki_error
from nkisim.core.indexing import Affine
from nkisim.core.location import bytecode, user_frame
from nkisim.core.recording import call_name


@dataclass(slots=True)
class TileMethods:
    """The ops tile syntax calls, provided by ``nkisim.ops`` modules (None until one is imported)."""

    #: (tile, other, ALU op name, reversed) -> tile: ``t + u`` (no partition broadcast), ops.elementwise
    binary: Callable[[Any, Any, str, bool], Any] | None = None
    #: (activation or ALU name, tile) -> tile: ``-t``, ``abs(t)``, ``~t``, ops.elementwise
    unary: Callable[[str, Any], Any] | None = None
    #: (access, value[, value is a temporary]) -> None: ``t[idx] = value``, ops.memory
    assign: Callable[..., None] | None = None
    #: (access, value, ALU op name) -> None: ``t[idx] += value``, ops.memory
    accumulate: Callable[[Any, Any, str], None] | None = None
    #: (tile, dtype) -> tile: ``t.astype(dtype)``, ops.memory
    astype: Callable[[Any, Any], Any] | None = None
    #: (tile, shape) -> tile, ops.memory
    broadcast_to: Callable[[Any, Any], Any] | None = None
    #: (tile, axis) -> tile, ops.memory
    expand_dims: Callable[[Any, int], Any] | None = None
    #: tile -> tile: ``t.T``, ops.matmul
    transpose: Callable[[Any], Any] | None = None
    #: (access, key) -> access: ``t[i][j]``, ops.memory
    subaccess: Callable[[Any, Any], Any] | None = None
    #: (access, shape) -> tensor: ``t[i].reshape(...)``, ops.memory
    reshape_access: Callable[[Any, Any], Any] | None = None


METHODS = TileMethods()


def provide(**methods: Callable) -> None:
    """An ops module hands tile syntax its operations (an unknown name is an AttributeError).  Each is an NKI
    call of its own, registered as ``tile.<name>`` (``ops.registry``): ``t + u`` is recorded like ``nl.add``."""
    for name, fn in methods.items():
        if not hasattr(METHODS, name):
            raise AttributeError(f"tile syntax has no operation {name!r}")
        if call_name(fn) != f"tile.{name}":
            raise ValueError(f"tile syntax's {name!r} must be the registered call 'tile.{name}', got {call_name(fn)!r}")
        setattr(METHODS, name, fn)


_VALUE_TRUTH_OPS = frozenset({"UNARY_NOT", "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"})


def truth_value_error(t: Any) -> Exception:
    """The compiler's error for Python truth-testing a tensor.

    ``not t``, ``t and x`` and ``t or x`` are err_ambiguous_tensor_truth_value; branching on a computed
    tile (``if t:``, ``while t:``) is err_dynamic_control_flow_not_supported.  Which one applies is read
    from the student's bytecode.  (A kernel argument itself is true: see ``TileSyntax.__bool__``.)
    """
    f = user_frame()
    op = None
    if f is not None:
        step = bytecode(f.f_code).get(f.f_lasti)
        if step is not None:
            op = step.next_opname if step.opname == "TO_BOOL" else step.opname  # 3.13 splits the test from its use
    if op in _VALUE_TRUTH_OPS:
        return nki_error("err_ambiguous_tensor_truth_value",
                         "Cannot evaluate truth value of a multi-element tensor/array. Use the elementwise "
                         "operators ~, &, | on tiles, and `x is None` to test an optional argument.")
    return nki_error("err_dynamic_control_flow_not_supported",
                     "dynamic control-flow depending on tensor value is not supported.")


#: NumPy ufunc -> (the tile's operator, its reflected form) for operator syntax with a NumPy value on the left
#: (``np.float32(2) * t`` reaches the tile through NumPy's ``__mul__``, which calls ``np.multiply``)
_UFUNC_OPERATORS = {
    "add": ("__add__", "__radd__"), "subtract": ("__sub__", "__rsub__"), "multiply": ("__mul__", "__rmul__"),
    "true_divide": ("__truediv__", "__rtruediv__"), "divide": ("__truediv__", "__rtruediv__"),
    "power": ("__pow__", "__rpow__"), "bitwise_and": ("__and__", "__and__"), "bitwise_or": ("__or__", "__or__"),
    "bitwise_xor": ("__xor__", "__xor__"), "less": ("__lt__", "__gt__"), "less_equal": ("__le__", "__ge__"),
    "greater": ("__gt__", "__lt__"), "greater_equal": ("__ge__", "__le__"), "equal": ("__eq__", "__eq__"),
    "not_equal": ("__ne__", "__ne__"),
}
#: NumPy's name -> the NKI call that does the same on tiles, where the names differ
_NKI_NAMES = {"true_divide": "divide", "absolute": "abs", "dot": "matmul", "amax": "max", "amin": "min",
              "fmax": "maximum", "fmin": "minimum", "conjugate": "copy", "copyto": "copy", "array": "copy",
              "asarray": "copy"}
_OPERATOR_SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "divide": "/",
                     "power": "**", "matmul": "@"}
_OPERATOR_STEPS = frozenset({"BINARY_OP", "COMPARE_OP"})


def numpy_on_tile(name: str, method: str = "__call__") -> TypeError:
    """What ``np.add(x, y)`` (any NumPy function given a tile) raises: NumPy computes on the host, and inside a
    kernel a tile's values exist only on the chip, so the NKI call of the same job is what to write."""
    shown = f"np.{name}" + (f".{method}" if method != "__call__" else "")
    nki = "sum" if method == "reduce" and name == "add" else _NKI_NAMES.get(name, name)
    symbol = _OPERATOR_SYMBOLS.get(name)
    also = f" (or the operator: x {symbol} y)" if symbol and method == "__call__" else ""
    return TypeError(f"{shown} cannot compute on an NKI tile: NumPy runs on the host, and inside a kernel a tile's "
                     f"values exist only on the NeuronCore. Use the NKI call that does this on tiles, "
                     f"nl.{nki}(...){also}; NumPy is for host-side values such as shapes and constants.")


def _operator_syntax() -> bool:
    """The student's line is executing an operator (``a * t``, ``a < t``), not calling a NumPy function."""
    f = user_frame()
    if f is None:
        return False
    step = bytecode(f.f_code).get(f.f_lasti)
    return step is not None and step.opname in _OPERATOR_STEPS


class TileSyntax:
    """Operators of NKI tiles: the nl ops, without partition broadcasting (what the compiler allows)."""

    __slots__ = ()
    __nki_tile__ = True
    __array_priority__ = 1000

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """A NumPy scalar or array on the left of an operator (``np.float32(2) * t``) is the tile's own
        operator; a NumPy function called on a tile (``np.add(x, y)``, ``np.exp(x)``) is refused, naming the
        NKI call to use (without this, NumPy tries to read the tile as a sequence and fails obscurely)."""
        ops = _UFUNC_OPERATORS.get(ufunc.__name__)
        if ops is not None and method == "__call__" and not kwargs and len(inputs) == 2 and _operator_syntax():
            forward = inputs[0] is self
            other = inputs[1] if forward else inputs[0]
            if getattr(other, "ndim", None) == 0:  # NumPy hands a scalar over as a 0-d array
                other = other[()]
            return getattr(self, ops[0] if forward else ops[1])(other)
        raise numpy_on_tile(ufunc.__name__, method)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise numpy_on_tile(getattr(func, "__name__", "function"))

    def __bool__(self) -> bool:
        # A kernel argument is a Python object the kernel was handed: ``imm = nl.load(imm) if imm else None``
        # tests an optional argument, as AWS's own API tests do (v2.27.1 nki/test, tensor_scalar_cumulative).
        if getattr(self, "argument", False):
            return True
        raise truth_value_error(getattr(self, "tensor", self))

    def _binop(self, other: Any, op: str, reverse: bool = False) -> Any:
        return METHODS.binary(self, other, op, reverse)

    def __add__(self, o: Any) -> Any:
        if o.__class__ is Affine:  # offsets[0, i] + iy: an index read at run time (core.dynamic)
            return DynamicIndex(self, o)
        return METHODS.binary(self, o, "add", False)

    def __radd__(self, o: Any) -> Any:
        if o.__class__ is Affine:
            return DynamicIndex(self, o)
        return METHODS.binary(self, o, "add", True)

    def __sub__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "subtract", False)

    def __rsub__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "subtract", True)

    def __mul__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "multiply", False)

    def __rmul__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "multiply", True)

    def __truediv__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "divide", False)

    def __rtruediv__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "divide", True)

    def __pow__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "power", False)

    def __rpow__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "power", True)

    def __mod__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "mod", False)

    def __and__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "bitwise_and", False)

    def __or__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "bitwise_or", False)

    def __xor__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "bitwise_xor", False)

    def __lshift__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "left_shift", False)

    def __rshift__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "right_shift", False)

    def __lt__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "less", False)

    def __le__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "less_equal", False)

    def __gt__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "greater", False)

    def __ge__(self, o: Any) -> Any:
        return METHODS.binary(self, o, "greater_equal", False)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return METHODS.binary(self, o, "equal", False)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return METHODS.binary(self, o, "not_equal", False)

    __hash__ = object.__hash__

    def __neg__(self) -> Any:
        return METHODS.unary("negative", self)

    def __abs__(self) -> Any:
        return METHODS.unary("abs", self)

    def __invert__(self) -> Any:
        return METHODS.unary("invert", self)

    def _inplace(self, other: Any, op: str) -> Any:
        raise NotImplementedError

    def __iadd__(self, o: Any) -> Any:
        return self._inplace(o, "add")

    def __isub__(self, o: Any) -> Any:
        return self._inplace(o, "subtract")

    def __imul__(self, o: Any) -> Any:
        return self._inplace(o, "multiply")

    def __itruediv__(self, o: Any) -> Any:
        return self._inplace(o, "divide")

    def astype(self, dtype: Any) -> Any:
        return METHODS.astype(self, dtype)

    def broadcast_to(self, shape: Any) -> Any:
        return METHODS.broadcast_to(self, shape)

    def expand_dims(self, axis: int) -> Any:
        return METHODS.expand_dims(self, axis)

    @property
    def T(self) -> Any:  # noqa: N802 - NKI's name
        return METHODS.transpose(self)
