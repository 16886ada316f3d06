"""``neuronxcc.nki.language`` (``nl``) on the simulator."""

from __future__ import annotations

import sys
from typing import Any

import ml_dtypes as _ml_dtypes
import numpy as np

from nkisim.core import dtypes as _dt
from nkisim.core.buffers import hbm, private_hbm, psum, sbuf, shared_hbm  # noqa: F401
from nkisim.core.context import current as _current
from nkisim.core.errors import nki_error as _nki_error
from nkisim.core.grids import arange, ds, mgrid  # noqa: F401
from nkisim.core.loops import affine_range, sequential_range, static_range  # noqa: F401
from nkisim.core.target import DEFAULT as _DEFAULT_NAME
from nkisim.core.target import get as _get_target
from nkisim.frontend.typing import tensor  # noqa: F401
from nkisim.ops import catalog as _catalog
from nkisim.ops.creation import par_dim  # noqa: F401
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
    bn_stats_fmax = _DEFAULT_TARGET.limits.bn_stats_free_max
    psum_min_align = _DEFAULT_TARGET.limits.psum_min_align
    sbuf_min_align = _DEFAULT_TARGET.limits.sbuf_min_align
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


# --- every NKI call of nl: generated from the op registry (ops.registry), recorded into programs ---------
# (index expressions, loop ranges and SPMD queries above are trace-time values that reach a program through
# the calls' arguments; an operator passed as ``op=nl.add`` is known by its registered name)
globals().update(_catalog.namespace("nl"))


__all__ = [n for n in list(globals()) if not n.startswith("_")]

