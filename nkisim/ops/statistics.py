"""``nisa.bn_stats`` and ``nisa.bn_aggr``: a layer norm's statistics on the Vector engine, in two steps (per chunk of
at most ``bn_stats_free_max`` elements: count, mean and the sum of squared deviations of the even and the odd
elements; then those tuples combined into mean and variance per partition)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read, read_masked
from nkisim.core.tensor import Tensor, shape_str
from nkisim.cost.instructions import BN_AGGR, BN_STATS
from nkisim.ops.base import emit, mask_array, new_tile, operands, write_dst
from nkisim.ops.elementwise import values
from nkisim.ops.registry import op

F32 = np.dtype(np.float32)


@op("nisa.bn_stats", emits=(BN_STATS,))
def bn_stats(data: Any, *, mask: Any = None, dtype: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.bn_stats``: per partition (count, mean, var*count) of even and odd free elements."""
    ctx = current()
    a = operands("bn_stats", data=data)["data"]
    n = int(np.prod(a.shape[1:])) if len(a.shape) > 1 else 1
    limit = ctx.target.limits.bn_stats_free_max
    if n > limit:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"size of dimension 1 in '{shape_str('data', a.shape)}' of 'bn_stats' exceed architecture "
                        f"limitation of {limit}.")
    valid = mask_array(mask, a.shape, "bn_stats")
    out_shape = (a.shape[0], 6)
    vals = None
    if ctx.numerics:
        # the layernorm tutorial masks a ragged last chunk whose index runs past the tile: gather masked
        raw = read(a) if valid is None or valid.ndim == 0 else read_masked(a, valid)
        x = raw.astype(np.float64).reshape(a.shape[0], n)
        w = np.ones_like(x) if valid is None or valid.ndim == 0 else \
            np.broadcast_to(valid, a.shape).reshape(a.shape[0], n).astype(np.float64)
        cols = []
        for part in (slice(0, None, 2), slice(1, None, 2)):
            xs, ws = x[:, part], w[:, part]
            cnt = ws.sum(axis=1)
            mean = np.where(cnt > 0, (xs * ws).sum(axis=1) / np.maximum(cnt, 1), 0.0)
            m2 = ((xs - mean[:, None]) ** 2 * ws).sum(axis=1)
            cols += [cnt, mean, m2]
        vals = np.stack(cols, axis=1).astype(np.float32)
    if dst is not None:
        emit(ctx, BN_STATS, reads=[a], writes=[write_dst(ctx, "bn_stats", dst, out_shape, vals)], n=n)
        return None
    out_dt = dt.float32 if dtype is None else dt.normalize(dtype)
    tile = new_tile(ctx, out_shape, out_dt, vals)
    tile.producer = emit(ctx, BN_STATS, reads=[a], writes=[tile.full()], n=n)
    return tile


@op("nisa.bn_aggr", emits=(BN_AGGR,))
def bn_aggr(data: Any, *, mask: Any = None, dtype: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.bn_aggr``: combine bn_stats tuples into (mean, variance) per partition."""
    ctx = current()
    a = operands("bn_aggr", data=data)["data"]
    n = int(np.prod(a.shape[1:])) if len(a.shape) > 1 else 1
    if n % 3:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('data', a.shape)}) of 'bn_aggr' has mismatched shapes: the "
                        f"elements per partition must be a multiple of 3 (count, mean, var*count)")
    vals = None
    if ctx.numerics:
        x = values(a, ctx, F32).reshape(a.shape[0], n // 3, 3).astype(np.float64)
        cnt, mean, m2 = x[..., 0], x[..., 1], x[..., 2]
        total = cnt.sum(axis=1)
        mu = (cnt * mean).sum(axis=1) / total
        var = (m2 + cnt * (mean - mu[:, None]) ** 2).sum(axis=1) / total
        vals = np.stack([mu, var], axis=1).astype(np.float32)
    if dst is not None:
        emit(ctx, BN_AGGR, reads=[a], writes=[write_dst(ctx, "bn_aggr", dst, (a.shape[0], 2), vals)], n=n)
        return None
    out_dt = a.dtype if dtype is None else dt.normalize(dtype)
    tile = new_tile(ctx, (a.shape[0], 2), out_dt, vals)
    tile.producer = emit(ctx, BN_AGGR, reads=[a], writes=[tile.full()], n=n)
    return tile
