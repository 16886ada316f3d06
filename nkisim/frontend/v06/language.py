"""``nki.language`` (``nl``) of NKI 0.6: dtypes, buffers, tile sizes, tensor creation, the convenience compute
functions, loops and SPMD queries.

The compute functions (``nl.add``, ``nl.exp``, ``nl.sum``, ``nl.load``...) take exactly the arguments AWS
documents for 0.6 (``nki/api/nki/language/__init__.py``: no ``mask=``; an unknown keyword is an error) and call
the op registry's entry of the same name, which allocates the result tile, checks and computes it and prices
what it issues, as for legacy kernels; the result comes back as an ``NkiTensor``.  Where 0.6 differs from
legacy, the adapter says how (comparisons default to the input dtype; ``nl.copy`` is the Vector engine's
``tensor_copy``; the deprecated loop helpers are Python's ``range``).  The same functions are the operator
constants passed to ``nisa`` calls (``op=nl.add``): each carries its op-table name.
"""

from __future__ import annotations

import builtins as _builtins
import dataclasses as _dataclasses
import os as _os
from collections.abc import Callable
from typing import Any

import numpy as np

from nkisim.core import dtypes as _dt
from nkisim.core.buffers import Buffer
from nkisim.core.buffers import hbm as _hbm
from nkisim.core.buffers import private_hbm as _private_hbm
from nkisim.core.buffers import psum as _psum
from nkisim.core.buffers import sbuf as _sbuf
from nkisim.core.buffers import shared_hbm as _shared_hbm
from nkisim.core.context import active as _active
from nkisim.core.context import current as _current
from nkisim.core.grids import DynSlice
from nkisim.frontend import language as _legacy_nl
from nkisim.frontend.v06.adapters import binding as _b
from nkisim.frontend.v06.adapters.control import dynamic_range, fori_loop, no_reorder, while_loop  # noqa: F401
from nkisim.frontend.v06.adapters.creation import (  # noqa: F401  (nl's tensor creation)
    empty_like,
    full,
    ndarray,
    ones,
    rand,
    random_seed,
    shared_constant,
    shared_identity_matrix,
    zeros,
    zeros_like,
)
from nkisim.frontend.v06.adapters.errors import error as _error
from nkisim.frontend.v06.adapters.tensor import NkiTensor
from nkisim.frontend.v06.isa_constants import canonical as _canonical
from nkisim.frontend.v06.isa_constants import engine as _isa_engine

# --- dtypes ---------------------------------------------------------------------------------------------------
DType = np.dtype
bool_ = _dt.bool_
bool = _dt.bool_  # noqa: A001 - real 0.6 code writes nl.bool
int8, int16, int32, uint8, uint16, uint32 = _dt.int8, _dt.int16, _dt.int32, _dt.uint8, _dt.uint16, _dt.uint32
float16, float32, bfloat16, tfloat32 = _dt.float16, _dt.float32, _dt.bfloat16, _dt.tfloat32
float8_e4m3, float8_e5m2 = _dt.float8_e4m3, _dt.float8_e5m2
float8_e4m3fn, float8_e8m0fnu = _dt.float8_e4m3fn, _dt.float8_e8m0fnu


#: NeuronCore-v4's x4 packed MX dtypes (four fp8 values in a 32-bit container, four fp4 in a 16-bit one): a tensor's
#: shape counts containers; nisa.quantize_mx writes them, nisa.nc_matmul_mx reads them, .ap(dtype=)/.view reinterpret
#: HBM bytes as them, and copies move them unconverted (core.dtypes, ops.mx)
float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4 = _dt.float8_e5m2_x4, _dt.float8_e4m3fn_x4, _dt.float4_e2m1fn_x4


# --- memory ---------------------------------------------------------------------------------------------------
class MemoryRegion:
    """The memories a tensor lives in (``nl.sbuf`` & co are these members)."""

    sbuf = _sbuf
    psum = _psum
    private_hbm = _private_hbm
    shared_hbm = _shared_hbm


sbuf, psum, hbm, private_hbm, shared_hbm = _sbuf, _psum, _hbm, _private_hbm, _shared_hbm


def _family(buffer: Any) -> str:
    if isinstance(buffer, str):
        # rule: buffer.string
        raise _error("err_string_buffer", f"buffer {buffer!r}: NKI 0.6 takes buffers as nl.sbuf, nl.psum, nl.hbm or "
                                          f"nl.shared_hbm, not strings (NKI 0.3 dropped string buffer names)")
    if not isinstance(buffer, Buffer):
        # rule: python.argument_type
        raise TypeError(f"expected a buffer (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm), got {buffer!r}")
    return buffer.family


def is_hbm(buffer: Any) -> _builtins.bool:
    return _family(buffer) == "hbm"


def is_sbuf(buffer: Any) -> _builtins.bool:
    return _family(buffer) == "sbuf"


def is_psum(buffer: Any) -> _builtins.bool:
    return _family(buffer) == "psum"


def is_on_chip(buffer: Any) -> _builtins.bool:
    return _family(buffer) != "hbm"


def _target() -> Any:
    ctx = _active()
    if ctx is not None:
        return ctx.target
    from nkisim.runtime.kernel import default_target

    return default_target()


class _TileSize:
    """``nl.tile_size``: the hardware's tile limits, read from the kernel's target (``nkisim/targets/``)."""

    @property
    def bn_stats_fmax(self) -> int:
        return _target().limits.bn_stats_free_max

    @property
    def psum_min_align(self) -> int:
        return _target().limits.psum_min_align

    @property
    def sbuf_min_align(self) -> int:
        return _target().limits.sbuf_min_align

    @property
    def pmax(self) -> int:
        return _target().partitions

    @property
    def psum_bank_fmax(self) -> int:
        return _target().psum_free_max

    psum_fmax = psum_bank_fmax  # deprecated in 0.4: the same number

    @property
    def psum_bank_fmax_bytes(self) -> int:
        return _target().psum_bank_bytes

    @property
    def gemm_stationary_fmax(self) -> int:
        return _target().gemm_stationary_free_max

    @property
    def gemm_moving_fmax(self) -> int:
        return _target().gemm_moving_free_max

    @property
    def psum_num_banks(self) -> int:
        banks = _target().psum_banks
        pe_transpose = _os.environ.get("NKI_DMA_TRANSPOSE_AS_PE_TRANSPOSE", "").lower() in ("1", "true")
        return banks - 1 if pe_transpose and _target().nc_version >= 3 else banks

    @property
    def sbuf_fmax_bytes(self) -> int:
        return _target().sbuf_partition_bytes

    @property
    def sbuf_fmax(self) -> int:
        return self.sbuf_fmax_bytes // 4

    @property
    def sbuf_size_bytes(self) -> int:
        return self.sbuf_fmax_bytes * self.pmax

    @property
    def total_available_sbuf_size(self) -> int:
        return self.sbuf_fmax_bytes


tile_size = _TileSize()


class _NKIObjectType(type):
    """Construction of every ``NKIObject`` as AWS's compiler does it, also under ``@dataclass``.

    - A field given no value is None: "The compiler will create the initializer functions ... the default
      initializers are: ``def __init__(self, x = None, y = False)``" for ``x: int`` and ``y: bool = False``
      (nki/get-started/nki-language-guide.rst:590-595), "with and without the @dataclass decorator".  nki-library's
      mlp_tkg (2.29_release and main) declares ``remainderIFused: int`` in ``MLPTKGConstantsDimensionSizes`` and
      never passes it.
    - Keywords the dataclass's ``__init__`` does not take are set on the object, as ``NKIObject.__init__`` sets
      every keyword: nki-library's kernels (validated on the compiler) declare ``@dataclass class
      SectionParams(nl.NKIObject)`` with unannotated class attributes, so the dataclass has no fields, and build it
      as ``SectionParams(section_idx=..., ...)``."""

    def __new__(mcs, name: str, bases: tuple, namespace: dict, **kw: Any) -> Any:
        cls = super().__new__(mcs, name, bases, namespace, **kw)
        cls.__nki_own_init__ = "__init__" in namespace  # (an __init__ @dataclass adds later is the generated one)
        return cls

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        fields = getattr(cls, "__dataclass_fields__", None)
        if fields is None:
            return super().__call__(*args, **kwargs)
        if not _generated_init(cls):  # a class's own __init__ takes its own parameters ("if they are not provided")
            return super().__call__(*args, **kwargs)
        required = [n for n, f in fields.items() if f.init and f.default is _dataclasses.MISSING
                    and f.default_factory is _dataclasses.MISSING]
        positional = [n for n, f in fields.items() if f.init][:len(args)]
        for n in required:
            if n not in positional and n not in kwargs:
                kwargs[n] = None
        extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in fields}
        obj = super().__call__(*args, **kwargs)
        for k, v in extra.items():
            object.__setattr__(obj, k, v)  # (a frozen dataclass too)
        return obj


def _generated_init(cls: type) -> bool:
    """The ``__init__`` ``cls`` is built by is the one ``@dataclass`` generated, not one a class body wrote."""
    for klass in cls.__mro__:
        if "__init__" in klass.__dict__:
            return not klass.__dict__.get("__nki_own_init__", True)
    return False


class NKIObject(metaclass=_NKIObjectType):
    """Base class of the plain classes a kernel may pass as compile-time arguments.  Without ``@dataclass`` and
    without an ``__init__`` of its own, a subclass is built as a dataclass would be (AWS: "classes with and without
    the @dataclass decorator will be compiled in the same way"): its annotated fields in order, positionally or by
    keyword, None when not given."""

    def __init__(self, *args: Any, **fields: Any) -> None:
        names = [n for c in reversed(type(self).__mro__) for n in getattr(c, "__annotations__", {})
                 if c is not NKIObject and c is not object]
        names = list(dict.fromkeys(names))
        if len(args) > len(names):
            # rule: python.argument_type
            raise TypeError(f"{type(self).__name__}() takes at most {len(names)} positional arguments ({len(args)} "
                            f"given)")
        for n, v in zip(names, args):
            fields.setdefault(n, v)
        for n in names:
            if n not in fields and not hasattr(type(self), n):
                fields[n] = None
        for k, v in fields.items():
            setattr(self, k, v)
        post = getattr(self, "__post_init__", None)
        if callable(post):
            post()


# --- operator constants ---------------------------------------------------------------------------------------
class _OpToken:
    """An operator that is not a function (``nl.bypass``, ``nl.prelu``, ``nl.average``)."""

    def __init__(self, name: str) -> None:
        self.__nki_op__ = name

    def __repr__(self) -> str:
        return f"nl.{self.__nki_op__}"


average, prelu, bypass = _OpToken("average"), _OpToken("prelu"), _OpToken("bypass")


def _named(fn: Callable, name: str, op_name: str | None) -> Callable:
    fn.__name__ = name
    fn.__qualname__ = f"nki.language.{name}"
    if op_name is not None:
        fn.__nki_op__ = op_name  # type: ignore[attr-defined]
    return fn


def _tile(x: Any, api: str, pname: str = "x") -> Any:
    return _b.tensor(x, api, pname)


def _first_dtype(x: Any, y: Any) -> Any:
    return x.dtype if isinstance(x, NkiTensor) else y.dtype


# --- compute functions: one adapter per registry entry ----------------------------------------------------------
_COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
            "logical_and", "logical_or", "logical_xor")


def _binary(name: str) -> Callable:
    def fn(x: Any, y: Any, dtype: Any = None) -> NkiTensor:
        if not isinstance(x, NkiTensor) and not isinstance(y, NkiTensor):
            # rule: operator.tile_operand
            raise _error("err_operand_type", f"nl.{name} needs at least one tile operand")
        d = _b.dtype(dtype, name)
        if d is None and name in _COMPARE:
            d = _first_dtype(x, y)  # NKI 0.3+: comparisons and logical ops produce 1/0 in the input dtype
        if name in ("abs_max", "abs_min") and _target().nc_version < 4:
            # rule: target.generation
            raise _error("err_unsupported_target", f"nl.{name} needs NeuronCore-v4 (trn3); the target is "
                                                   f"{_target()}")
        return _b.wrap(_b.call(f"nl.{name}", _b.tensor_or_scalar(x, name, "x"), _b.tensor_or_scalar(y, name, "y"),
                               dtype=d))

    return _named(fn, name, name)


def _unary(name: str, call: str | None = None) -> Callable:
    def fn(x: Any, dtype: Any = None) -> NkiTensor:
        return _b.wrap(_b.call(call or f"nl.{name}", _tile(x, name), dtype=_b.dtype(dtype, name)))

    return _named(fn, name, name)


def _reduction(name: str, op_name: str) -> Callable:
    def fn(x: Any, axis: Any, dtype: Any = None, keepdims: _builtins.bool = False) -> NkiTensor:
        if name == "var":
            keepdims = True  # NKI 0.6's nl.var always keeps the reduced dims
        return _b.wrap(_b.call(f"nl.{name}", _tile(x, name), _axes(axis, x, name), dtype=_b.dtype(dtype, name),
                               keepdims=_builtins.bool(keepdims)))

    return _named(fn, name, op_name)


def _axes(axis: Any, x: Any, api: str) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    rank = x.ndim
    norm = sorted(int(a) + rank if int(a) < 0 else int(a) for a in axes)
    if not norm or norm[0] == 0 or norm != list(_builtins.range(norm[0], rank)):
        # rule: reduce.trailing_axes
        raise _error("err_reduce_axis", f"axis={axis!r} of 'nl.{api}' on a rank-{rank} tile: reductions run over "
                                        f"trailing free dimensions ending at the last one (NKI 0.3 dropped axis=1 meaning the last one), "
                                        f"e.g. [{rank - 1}] or "
                                        f"[1, ..., {rank - 1}]")
    return tuple(norm)


for _name in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal", "less",
              "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
              "right_shift", "logical_and", "logical_or", "logical_xor", "mod", "fmod", "abs_max", "abs_min"):
    globals()[_name] = _binary(_name)
for _name in ("abs", "square", "invert", "logical_not", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
              "gelu", "gelu_apprx_sigmoid", "gelu_apprx_tanh", "gelu_dx", "gelu_apprx_sigmoid_dx", "silu", "silu_dx",
              "softplus", "mish",
              "erf", "erf_dx", "reciprocal", "sin", "cos", "tan", "arctan", "ceil", "floor", "trunc", "negative",
              "sign"):
    globals()[_name] = _unary(_name)
for _name, _op in (("sum", "add"), ("max", "max"), ("min", "min"), ("mean", "add"), ("prod", "multiply"),
                   ("var", "add")):
    globals()[_name] = _reduction(_name, _op)


def rsqrt(x: Any, dtype: Any = None) -> NkiTensor:
    """``nl.rsqrt``: 1/sqrt(x) on the GpSimd engine, as NKI 0.5 moved it ("now runs on the GpSimd Engine for higher
    numerical precision and no longer accepts PSUM inputs", nki/migration/index.rst:162): the instruction AWS gives
    for it, ``nisa.tensor_scalar(op0=nl.rsqrt, operand0=0.0)`` on GpSimd (nki.api.shared.rst:260), priced at GpSimd's
    rate for it (4x below ScalarE's); a PSUM input is refused."""
    if isinstance(x, NkiTensor) and is_psum(x.buffer):
        # rule: rsqrt.psum_input
        raise _error("err_operand_type", "'x' of 'nl.rsqrt' is in PSUM (NKI 0.5 dropped PSUM inputs of nl.rsqrt): nl.rsqrt "
                                         "runs on GpSimd, which cannot read "
                                         "PSUM (NKI 0.5+); copy it to SBUF first")
    return _b.wrap(_b.call("nisa.tensor_scalar", _tile(x, "rsqrt"), "rsqrt", 0.0,
                           engine=_canonical(_isa_engine.gpsimd), dtype=_b.dtype(dtype, "rsqrt")))


rsqrt.__nki_op__ = "rsqrt"  # type: ignore[attr-defined]


def all(x: Any, axis: Any, dtype: Any = None) -> NkiTensor:  # noqa: A001 - NKI's name
    return _b.wrap(_b.call("nl.all", _tile(x, "all"), _axes(axis, x, "all"),
                           dtype=_b.dtype(dtype, "all") or x.dtype))


def copy(x: Any, dtype: Any = None) -> NkiTensor:
    """``nl.copy``: a new SBUF tile with ``x``'s values; NKI 0.6 runs it as the Vector engine's ``tensor_copy``
    (bit-exact when the dtypes match), not the Scalar engine's copy of legacy ``nl.copy``."""
    return _b.wrap(_b.call("nisa.tensor_copy", _tile(x, "copy"), dtype=_b.dtype(dtype, "copy")))


copy.__nki_op__ = "copy"  # type: ignore[attr-defined]  (as an operator: the identity activation)


def softmax(x: Any, axis: Any = -1, dtype: Any = None) -> NkiTensor:
    return _b.wrap(_b.call("nl.softmax", _tile(x, "softmax"), _axes(axis, x, "softmax"),
                           dtype=_b.dtype(dtype, "softmax")))


def rms_norm(x: Any, w: Any, axis: Any, n: Any, epsilon: Any = 1e-06, dtype: Any = None,
             compute_dtype: Any = None) -> NkiTensor:
    return _b.wrap(_b.call("nl.rms_norm", _tile(x, "rms_norm"), _b.tensor_or_scalar(w, "rms_norm", "w"),
                           _axes(axis, x, "rms_norm"), n, epsilon, dtype=_b.dtype(dtype, "rms_norm"),
                           compute_dtype=_b.dtype(compute_dtype, "rms_norm", "compute_dtype")))


def where(condition: Any, x: Any, y: Any, dtype: Any = None) -> NkiTensor:
    return _b.wrap(_b.call("nl.where", _tile(condition, "where", "condition"), _b.tensor_or_scalar(x, "where", "x"),
                           _b.tensor_or_scalar(y, "where", "y"), dtype=_b.dtype(dtype, "where")))


def dropout(x: Any, rate: Any, dtype: Any = None) -> NkiTensor:
    return _b.wrap(_b.call("nl.dropout", _tile(x, "dropout"), _b.tensor_or_scalar(rate, "dropout", "rate"),
                           dtype=_b.dtype(dtype, "dropout")))


def transpose(x: Any, dtype: Any = None) -> NkiTensor:
    """``nl.transpose``: P <-> F transpose of a 2-D tile on the Tensor Engine; the result is in PSUM."""
    return _b.wrap(_b.call("nl.transpose", _tile(x, "transpose"), dtype=_b.dtype(dtype, "transpose")))


def matmul(x: Any, y: Any, transpose_x: _builtins.bool = False) -> NkiTensor:
    """``nl.matmul``: ``x @ y`` (``x.T @ y`` with ``transpose_x=True``) on the Tensor Engine; fp32 result in PSUM."""
    return _b.wrap(_b.call("nl.matmul", _tile(x, "matmul"), _tile(y, "matmul", "y"),
                           transpose_x=_builtins.bool(transpose_x)))


def gather_flattened(data: Any, indices: Any, axis: Any = 0, dtype: Any = None) -> NkiTensor:
    if axis != 0:
        # rule: limit.gather_axis
        raise NotImplementedError("nl.gather_flattened is simulated along axis 0 only")
    return _b.wrap(_b.call("nl.gather_flattened", _tile(data, "gather_flattened", "data"),
                           _tile(indices, "gather_flattened", "indices"), dtype=_b.dtype(dtype, "gather_flattened")))


def broadcast_to(x: Any, shape: Any, dtype: Any = None) -> NkiTensor:
    """``nl.broadcast_to``: ``x`` repeated to ``shape`` (same rank; each dimension equal or broadcast from 1, the
    partition dimension included).  ``x`` itself when the shape is unchanged and no dtype is asked for."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != x.ndim or _builtins.any(a != b and a != 1 for a, b in zip(x.shape, shape)):
        # rule: view.method_arguments
        raise _error("err_invalid_view", f"nl.broadcast_to: shape {list(shape)} is not a broadcast of "
                                         f"{list(x.shape)} (same rank; each dimension equal or from 1)")
    d = _b.dtype(dtype, "broadcast_to")
    out = x if shape == x.shape else _b.wrap(_b.call("nl.broadcast_to", _tile(x, "broadcast_to"), shape=shape))
    if d is not None and d != out.dtype:
        out = _b.wrap(_b.call("nisa.tensor_copy", out.lower(), dtype=d))
    return out


def expand_dims(x: Any, axis: Any) -> NkiTensor:
    """``nl.expand_dims``: a view of ``x`` with a new size-1 dimension at ``axis`` (no instruction)."""
    _tile(x, "expand_dims")
    return x.expand_dim(axis)


# --- tensor creation and data movement ---------------------------------------------------------------------------
def load(src: Any, dtype: Any = None) -> NkiTensor:
    return _b.wrap(_b.call("nl.load", _tile(src, "load", "src"), dtype=_b.dtype(dtype, "load")))


def store(dst: Any, value: Any) -> None:
    _b.call("nl.store", _tile(dst, "store", "dst"), _b.tensor_or_scalar(value, "store", "value"))


def load_transpose2d(src: Any, dtype: Any = None) -> NkiTensor:
    return _b.wrap(_b.call("nl.load_transpose2d", _tile(src, "load_transpose2d", "src"),
                           dtype=_b.dtype(dtype, "load_transpose2d")))


def device_print(print_prefix: Any, tensor: Any) -> None:
    if not isinstance(print_prefix, str):
        # rule: device_print.prefix
        raise TypeError("nl.device_print: the prefix must be a constant string")
    _legacy_nl.device_print(print_prefix, _tile(tensor, "device_print", "tensor"))


def ds(start: Any, size: Any) -> DynSlice:
    return DynSlice(start, size)


# --- loops -----------------------------------------------------------------------------------------------------
def affine_range(start: Any, stop: Any = None, step: Any = 1) -> _builtins.range:
    """Deprecated alias of Python's ``range`` (NKI 0.6 unrolls static loops)."""
    return _builtins.range(start, stop, step) if stop is not None else _builtins.range(start)


def sequential_range(start: Any, stop: Any = None, step: Any = 1) -> _builtins.range:
    """Deprecated alias of Python's ``range``."""
    return affine_range(start, stop, step)


def static_range(start: Any, stop: Any = None, step: Any = 1) -> _builtins.range:
    """Deprecated alias of Python's ``range``."""
    return affine_range(start, stop, step)


def range(start: Any, stop: Any = None, step: Any = 1) -> _builtins.range:  # noqa: A001 - NKI's name
    """Python's ``range``: not in AWS's 0.6 API files, but nki-library's main branch loops with ``nl.range``
    (experimental/mxfp_subkernels/mxfp_load_utils.py), so the compiler it targets has it."""
    return affine_range(start, stop, step)




# --- SPMD / LNC ------------------------------------------------------------------------------------------------
def program_id(axis: Any = 0) -> int:
    """This logical core's index (0 or 1 under ``kernel[2]``)."""
    ctx = _current()
    if int(axis) != 0 and int(axis) >= len(ctx.grid):
        # rule: python.index
        raise IndexError(f"nl.program_id: axis {axis} is out of range for a launch of rank {len(ctx.grid)}")
    return ctx.program[int(axis)] if ctx.grid else 0


def num_programs(axes: Any = 0) -> int:
    """The number of logical cores along ``axes`` (1 without a bracket, 2 under ``kernel[2]``)."""
    ctx = _current()
    if not ctx.grid:
        return 1
    if axes is None:
        return int(np.prod(ctx.grid))
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    return int(np.prod([ctx.grid[int(a)] for a in axes]))


def program_ndim() -> int:
    return len(_current().grid)


for _name, _fn in list(globals().items()):  # TypeErrors name the API as NKI does: nki.language.ndarray() got ...
    if callable(_fn) and getattr(_fn, "__module__", None) == __name__ and not isinstance(_fn, type) \
            and not _name.startswith("_"):
        _fn.__qualname__ = f"nki.language.{_name}"


__all__ = [n for n in list(globals()) if not n.startswith("_") and n not in (
    "annotations", "np", "Any", "Callable", "Buffer",
    "DynSlice")]
