"""``neuronxcc.nki.language`` (``nl``) on the simulator."""

from __future__ import annotations

import functools
import sys
from typing import Any

import ml_dtypes as _ml_dtypes
import numpy as np

from nkisim.core import dtypes as _dt
from nkisim.core.buffers import hbm, private_hbm, psum, sbuf, shared_hbm  # noqa: F401
from nkisim.core.context import active as _active
from nkisim.core.context import current as _current
from nkisim.core.errors import nki_error as _nki_error
from nkisim.core.indexing import arange, ds, mgrid  # noqa: F401
from nkisim.core.loops import affine_range, sequential_range, static_range  # noqa: F401
from nkisim.core.recording import record_namespace as _record_namespace
from nkisim.core.target import DEFAULT as _DEFAULT_NAME
from nkisim.core.target import get as _get_target
from nkisim.frontend.typing import tensor  # noqa: F401
from nkisim.ops import elementwise as _ew
from nkisim.ops import matmul as _mm
from nkisim.ops import memory as _mem
from nkisim.ops import reduce as _red
from nkisim.ops import transpose as _tr
from nkisim.ops.creation import (  # noqa: F401
    empty_like,
    full,
    full_like,
    ndarray,
    ones,
    ones_like,
    par_dim,
    rand,
    random_seed,
    shared_constant,
    shared_identity_matrix,
    zeros,
    zeros_like,
)
from nkisim.ops.movement import atomic_rmw, gather_flattened  # noqa: F401
from nkisim.ops.optable import ACTIVATIONS as _ACT
from nkisim.ops.optable import ALU as _ALU
from nkisim.runtime.grid import NC as _NC
from nkisim.runtime.grid import SpmdDim as _SpmdDim

# --- dtypes ---------------------------------------------------------------------------------
float32, float16, bfloat16, tfloat32 = _dt.float32, _dt.float16, _dt.bfloat16, _dt.tfloat32
float8_e4m3, float8_e5m2 = _dt.float8_e4m3, _dt.float8_e5m2
int8, int16, int32, uint8, uint16, uint32 = _dt.int8, _dt.int16, _dt.int32, _dt.uint8, _dt.uint16, _dt.uint32
bool_ = _dt.bool_
float32r = _dt.float32  # fp32 "round" perf-mode tag; numerically fp32


_DEFAULT_TARGET = _get_target(_DEFAULT_NAME)


class tile_size:  # noqa: N801 - NKI's name
    """Hardware tile limits (``nl.tile_size.pmax`` …), the default target's (``nkisim/targets/``)."""

    pmax = _DEFAULT_TARGET.partitions
    psum_fmax = _DEFAULT_TARGET.psum_free_max
    gemm_stationary_fmax = _DEFAULT_TARGET.gemm_stationary_free_max
    gemm_moving_fmax = _DEFAULT_TARGET.gemm_moving_free_max
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1
    total_available_sbuf_size = _DEFAULT_TARGET.sbuf_partition_bytes  # per partition, despite the name


class _FInfo:
    """Limits of a float dtype (``min``, ``max``, ``eps``, ``tiny``, ``bits``, ``dtype``), like ``np.finfo``.

    Built on ``ml_dtypes.finfo``, which knows NumPy's floats and also bfloat16 and the float8 types
    (NumPy's own finfo refuses those, and kernels ask for ``nl.finfo(nl.bfloat16).min`` as a fill value).
    """

    def __init__(self, d: Any) -> None:
        info = _ml_dtypes.finfo(_dt.normalize(d))
        self.min, self.max, self.eps, self.tiny = info.min, info.max, info.eps, info.tiny
        self.bits, self.dtype = info.bits, np.dtype(info.dtype)

    def __repr__(self) -> str:
        return f"finfo(min={self.min}, max={self.max}, eps={self.eps}, dtype={_dt.name(self.dtype)})"


def finfo(d: Any) -> _FInfo:
    """``nl.finfo``: machine limits (min, max, eps) of a float dtype, like ``np.finfo``."""
    return _FInfo(d)


fp32 = finfo(np.float32)


# --- memory -------------------------------------------------------------------------------
load = _mem.load
store = _mem.store
load_transpose2d = _tr.load_transpose2d
copy = _mem.copy
broadcast_to = _mem.broadcast_to
matmul = _mm.matmul
transpose = _mm.transpose
where = _ew.where


def expand_dims(data: Any, axis: int) -> tensor:
    """``nl.expand_dims``: the tile with a new axis of size 1 at ``axis``."""
    return _mem.expand_dims(data, axis)


def static_cast(input_data: Any, dtype: Any) -> Any:
    """``nl.static_cast``: a copy of the tile converted to ``dtype``.

    Outside a kernel it converts a host array (test harnesses prepare bfloat16 / float8 inputs this
    way): the result is a NumPy array of ``dtype``, rounded as the device would store it.
    """
    if not hasattr(input_data, "__nki_tile__") and _active() is None:
        return _dt.cast(np.asarray(input_data), _dt.normalize(dtype))
    return _mem.copy(input_data, dtype=dtype)


def device_print(prefix: str, x: Any, *, mask: Any = None, **_: Any) -> None:
    """Print a tile's values from inside the kernel (simulation only), to stdout."""
    ctx = _current()
    if not ctx.numerics:
        return
    from nkisim.core.storage import read
    from nkisim.core.tensor import as_access

    vals = read(as_access(x)) if hasattr(x, "__nki_tile__") else np.asarray(x)
    where_ = f" [instance {list(ctx.program)}]" if ctx.grid else ""
    print(f"{prefix}{where_} {np.asarray(vals, dtype=np.float32) if vals is not None else vals}", file=sys.stdout)


# --- elementwise ops are generated from the op table -------------------------------------------
#: The implementations, bound once: every nl.* call goes through these wrappers, so they pass their
#: arguments positionally and look up no module attribute (they are the whole of the wrapper's cost).
_unary, _binary = _ew.unary_op, _ew.binary_op


def _make_unary(name: str) -> Any:
    def fn(x: Any, *, dtype: Any = None, mask: Any = None, **kw: Any) -> tensor:
        return _unary(name, x, dtype, mask)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``nl.{name}``: elementwise {name} of a tile (computed in fp32)."
    return fn


def _make_binary(name: str) -> Any:
    def fn(x: Any, y: Any, *, dtype: Any = None, mask: Any = None, **kw: Any) -> tensor:
        return _binary(name, x, y, dtype, mask)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``nl.{name}``: elementwise {name} of two tiles or a tile and a scalar (NumPy broadcasting)."
    return fn


for _n in [n for n in _ACT if n not in ("copy", "identity")] + ["invert", "logical_not"]:
    globals()[_n] = _make_unary(_n)
for _n in [a.name for a in _ALU.values() if a.nl_function]:  # the op table says which operators nl offers
    globals()[_n] = _make_binary(_n)


def mod(x: Any, y: Any, dtype: Any = None, mask: Any = None) -> tensor:
    """``nl.mod``: remainder with the sign of the divisor (Python %)."""
    return _ew.binary_op("mod", x, y, dtype=dtype, mask=mask)


def fmod(x: Any, y: Any, dtype: Any = None, mask: Any = None) -> tensor:
    """``nl.fmod``: remainder with the sign of the dividend (C fmod)."""
    return _ew.binary_op("fmod", x, y, dtype=dtype, mask=mask)



# --- reductions -----------------------------------------------------------------------------
def _make_reduce(api: str, op: str, kind: str = "plain") -> Any:
    def fn(x: Any, axis: Any, *, dtype: Any = None, mask: Any = None, keepdims: bool = False, **kw: Any) -> tensor:
        return _red.reduce(op, x, axis, dtype=dtype, mask=mask, keepdims=keepdims, api=api, kind=kind)

    fn.__name__ = fn.__qualname__ = api
    what = {"mean": "the mean", "var": "the population variance"}.get(kind, f"a reduction with {op}")
    fn.__doc__ = f"``nl.{api}``: {what} over the given free axes of a tile (``keepdims`` keeps them as size 1)."
    return fn


sum = _make_reduce("sum", "add")  # noqa: A001
prod = _make_reduce("prod", "multiply")
max = _make_reduce("max", "max")  # noqa: A001
min = _make_reduce("min", "min")  # noqa: A001
mean = _make_reduce("mean", "add", "mean")


def all(x: Any, axis: Any, *, dtype: Any = _dt.bool_, mask: Any = None, **_: Any) -> tensor:  # noqa: A001
    """``nl.all``: logical AND over free axes."""
    return _red.reduce("logical_and", x, axis, dtype=dtype, mask=mask, api="all")


def var(x: Any, axis: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> tensor:
    """``nl.var``: population variance over free axes."""
    return _red.reduce("add", x, axis, dtype=dtype, mask=mask, api="var", kind="var")


def loop_reduce(x: Any, op: Any, loop_indices: Any = (), *, dtype: Any = None, mask: Any = None, **_: Any) -> tensor:
    """``nl.loop_reduce``: ``dst[...] = nl.loop_reduce(x, op, loop_indices=(k,))`` reduces ``x`` into ``dst``
    over the loop (see ``ops.memory.loop_reduce``)."""
    return _mem.loop_reduce(x, op, loop_indices, dtype=dtype, mask=mask)


# --- SPMD -----------------------------------------------------------------------------------
def program_id(axis: int) -> int:
    """Index of this SPMD instance along ``axis``."""
    ctx = _current()
    if not 0 <= int(axis) < len(ctx.grid):
        raise _nki_error("err_program_id_axis_out_of_bounds",
                         f"axis in `program_id` is out-of-bound(s) of the spmd launch grid (axis={axis}, "
                         f"launch grid rank {len(ctx.grid)})")
    return ctx.program[int(axis)]


def num_programs(axes: Any = None) -> int:
    """Number of SPMD instances (along ``axes`` if given)."""
    ctx = _current()
    if axes is None:
        return int(np.prod(ctx.grid)) if ctx.grid else 1
    if isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    for a in axes:
        if not 0 <= int(a) < len(ctx.grid):
            raise _nki_error("err_program_id_axis_out_of_bounds",
                             f"axis in `num_programs` is out-of-bound(s) of the spmd launch grid (axis={a}, "
                             f"launch grid rank {len(ctx.grid)})")
    return int(np.prod([ctx.grid[int(a)] for a in axes]))


def program_ndim() -> int:
    """``nl.program_ndim``: the number of dimensions of the SPMD launch grid (0 without a grid)."""
    return len(_current().grid)


def nc(k: int) -> _NC:
    """Spread a grid dimension over ``k`` NeuronCores (trn2)."""
    return _NC(k)


def spmd_dim(*dims: Any) -> _SpmdDim:
    """``nl.spmd_dim``: a launch-grid dimension built from several (e.g. ``nl.spmd_dim(nl.nc(2), 4)``)."""
    return _SpmdDim(*dims)


# --- higher-level helpers of nl built from the ops above --------------------------------------
def softmax(x: Any, axis: Any, *, dtype: Any = None, compute_dtype: Any = None, mask: Any = None, **_: Any) -> tensor:
    """``nl.softmax`` along free axes (max-subtracted for stability)."""
    m = max(x, axis=axis, keepdims=True, mask=mask)
    e = exp(subtract(x, m, mask=mask), mask=mask)  # noqa: F821 - generated above
    return divide(e, sum(e, axis=axis, keepdims=True, mask=mask), dtype=dtype, mask=mask)  # noqa: F821


def rms_norm(x: Any, w: Any, axis: Any, n: int, epsilon: float = 1e-6, *, dtype: Any = None,
             compute_dtype: Any = None, mask: Any = None, **_: Any) -> tensor:
    """``nl.rms_norm``: x / sqrt(mean(x^2) + eps) * w over ``axis`` (``n`` elements)."""
    sq = square(x, mask=mask)  # noqa: F821
    ms = sum(sq, axis=axis, keepdims=True, mask=mask)
    inv = rsqrt(add(multiply(ms, 1.0 / n, mask=mask), epsilon, mask=mask), mask=mask)  # noqa: F821
    return multiply(multiply(x, inv, mask=mask), w, dtype=dtype, mask=mask)  # noqa: F821


def dropout(x: Any, rate: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> tensor:
    """``nl.dropout``: zero elements with probability ``rate`` (deterministic generator)."""
    r = rand(x.shape, dtype=_dt.float32)
    keep = greater_equal(r, float(rate) if not hasattr(rate, "__nki_tile__") else rate)  # noqa: F821
    return where(keep, x, 0.0, dtype=dtype, mask=mask)


__all__ = [n for n in list(globals()) if not n.startswith("_")]

# Every nl.* function that issues instructions is an NKI call a program records (core.recording); index
# expressions, loop ranges and SPMD queries are trace-time values that reach a program through the calls'
# arguments.  An operator passed as ``op=nl.add`` is known by its registered name (ops.optable.op_name).
_record_namespace(globals(), "nl", skip=("arange", "ds", "affine_range", "sequential_range", "static_range",
                                         "program_id", "num_programs", "program_ndim", "nc", "spmd_dim", "finfo",
                                         "device_print", "tensor"))
_ = functools  # keep import for introspection helpers
