"""Top-8 Vector-engine instructions: ``max8``, ``nc_find_index8`` and ``nc_match_replace8`` (issue 12;
semantics from the NKI ISA reference).  Top-k kernels chain them: ``max8`` finds each partition's
eight largest values, ``nc_find_index8`` / ``nc_match_replace8`` locate them (and knock them out
for the next round).  All work on the flattened free elements of each partition, in fp32; a
``mask`` leaves elements out of the search.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import KernelContext, current
from nkisim.core.errors import nki_error
from nkisim.core.storage import write
from nkisim.core.tensor import Access, Tensor, shape_str
from nkisim.cost.instructions import MAX8, NC_FIND_INDEX8, NC_MATCH_REPLACE8
from nkisim.ops.base import mask_array, operands
from nkisim.ops.outputs import F32, deliver, flat
from nkisim.ops.registry import op


def _data(inst: str, pname: str, value: Any, mask: Any, ctx: KernelContext,
          min_elems: int | None = None) -> tuple[Access, np.ndarray | None, np.ndarray | None]:
    """(access, values as (P, N) fp32, the mask as (P, N) booleans or None) of the searched tile."""
    a = operands(inst, **{pname: value})[pname]
    n = int(np.prod(a.shape[1:] or (1,)))
    lo = ctx.target.limit("max8_min_elems") if min_elems is None else min_elems
    hi = ctx.target.limit("max8_max_elems")
    if not lo <= n <= hi:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"number of elements per partition in '{shape_str(pname, a.shape)}' of '{inst}' must be "
                        f"between {lo} and {hi}, got {n}.")
    valid = mask_array(mask, a.shape, inst, ctx)
    keep = None
    if valid is not None:
        keep = np.broadcast_to(valid, a.shape).reshape(a.shape[0], -1)
    return a, (flat(a, ctx) if ctx.numerics else None), keep


def _eight(inst: str, pname: str, value: Any, parts: int) -> Access:
    v = operands(inst, **{pname: value})[pname]
    if v.shape[0] != parts or int(np.prod(v.shape[1:] or (1,))) != 8:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str(pname, v.shape)}) of '{inst}' has mismatched shapes: "
                        f"'{pname}' must hold 8 elements in each of {parts} partitions")
    return v


def _rows(keep: np.ndarray | None, parts: int) -> np.ndarray | None:
    """Output partitions that saw at least one unmasked element, as a (P, 1) validity array."""
    return None if keep is None else keep.any(axis=1)[:, None]


@op("nisa.max8", emits=(MAX8,))
def max8(src: Any = None, *, mask: Any = None, dtype: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.max8``: the 8 largest values of each partition, in descending order (shape ``[P, 8]``)."""
    ctx = current()
    a, x, keep = _data("max8", "src", src, mask, ctx)
    vals = None
    if x is not None:
        x = x if keep is None else np.where(keep, x, -np.inf)
        vals = top8(x)
    rows = _rows(keep, a.shape[0])
    out_dt = a.dtype if dtype is None else dtype
    return deliver(ctx, MAX8, (a.shape[0], 8), out_dt, vals, dst, reads=[a],
                   valid=None if rows is None else np.broadcast_to(rows, (a.shape[0], 8)))


#: ``top8`` and ``first_matches`` work on the few elements that can be among the answer, not on whole rows:
#: nki-library's top-k kernels chain hundreds of max8 / match_replace8 rounds on [128, 4096] tiles (its sweep case
#: [1024-5-4058-2048-2] issues 40,960 of them), and a sort of every row per round took 300 s there.  At most this
#: many groups of a row (see ``top8``).
_GROUPS = 256
#: the shortest row dealt into groups: shorter rows sort whole (the grouping's set-up costs more than it saves; a
#: performance threshold, half the most groups, not a hardware number)
_GROUPED_MIN = _GROUPS // 2
#: a row with more search candidates than this (or an eighth of its width) is searched whole: a row of one repeated
#: value (a padding row) would make the candidate search slower than the plain one (a performance threshold)
_CROWD_MIN = _GROUPS // 4


def top8(x: np.ndarray) -> np.ndarray:
    """``-np.sort(-x, axis=1)[:, :8]`` (NaN last) without sorting whole rows.  A row's columns are dealt into ``g``
    groups (column ``c`` into group ``c % g``, so that the groups' maxima are an elementwise maximum of whole slices,
    which NumPy vectorises); its 8 largest values lie in the 8 groups with the largest maxima (a top-8 element
    outside them would be outranked by those 8 maxima, each an element of the row), so only those groups are
    sorted.  Rows holding a NaN, and rows too short for groups to pay, are sorted whole."""
    p, n = x.shape
    if n < _GROUPED_MIN:
        return -np.sort(-x, axis=1)[:, :8]
    g = min(_GROUPS, n // 8)
    depth, tail = divmod(n, g)
    peaks = x[:, :depth * g].reshape(p, depth, g).max(axis=1)
    if tail:
        np.maximum(peaks[:, :tail], x[:, depth * g:], out=peaks[:, :tail])
    if np.isnan(peaks).any():  # (max propagates NaN: a group with one says so)
        return -np.sort(-x, axis=1)[:, :8]
    # the 8 groups of each row: those whose maxima reach the row's 8th largest maximum (a value partition is a
    # quarter of an ``argpartition``'s time), except in rows where ties there make more of them (a row of one
    # repeated value: a padding row, or one whose every element a top-k chain has knocked out)
    reach = np.flatnonzero(peaks >= np.partition(peaks, g - 8, axis=1)[:, g - 8:g - 7])
    tied = np.bincount(reach // g, minlength=p) != 8
    if not tied.any():
        best = (reach % g).reshape(p, 8)
    else:
        best = np.empty((p, 8), dtype=np.intp)
        best[~tied] = (reach[~tied[reach // g]] % g).reshape(-1, 8)
        best[tied] = np.argpartition(peaks[tied], g - 8, axis=1)[:, -8:]
    cols = (best[:, :, None] + g * np.arange(depth + (1 if tail else 0))).reshape(p, -1)
    beyond = cols >= n  # (the groups with no column in the last, short round)
    picked = np.take_along_axis(x, np.minimum(cols, n - 1), axis=1)
    picked[beyond] = -np.inf
    return -np.sort(-picked, axis=1)[:, :8]


def first_matches(x: np.ndarray, vals: np.ndarray, keep: np.ndarray | None, consume: bool) -> np.ndarray:
    """Index of the first (unmasked) occurrence of each of the 8 values in every row.

    With ``consume`` a matched element is used up, so equal values find successive occurrences (the
    match-and-replace semantics); otherwise each value finds the first occurrence.  A value that is
    not present gives index 0 (the ISA leaves that case undefined).

    Only the elements at least as large as a row's smallest (non-NaN) value can match; when those are few (a top-k
    round: about 8 per row), the search runs over them alone, in row-major order as the whole rows' search would."""
    lo = np.where(np.isnan(vals), np.inf, vals).min(axis=1, keepdims=True)  # (NaN matches nothing)
    cand = x >= lo
    if keep is not None:
        cand &= keep
    p, n = x.shape
    at = np.flatnonzero(cand)  # (row-major; a 2-D ``np.nonzero`` is ten times slower)
    rows, cols = np.divmod(at, n)
    counts = np.bincount(rows, minlength=p)  # (a count along the rows of ``cand`` would be another pass over it)
    crowd = counts > max(_CROWD_MIN, n // 8)  # rows of many candidates (one repeated value)
    if crowd.any():
        if crowd.all():
            return first_matches_rows(x, vals, keep, consume)
        idx = np.empty(vals.shape, dtype=np.int64)
        idx[crowd] = first_matches_rows(x[crowd], vals[crowd], None if keep is None else keep[crowd], consume)
        few = ~crowd
        idx[few] = first_matches(x[few], vals[few], None if keep is None else keep[few], consume)
        return idx
    seen = x[rows, cols]
    idx = np.zeros(vals.shape, dtype=np.int64)
    live = np.ones(rows.size, dtype=bool)
    for j in range(vals.shape[1]):
        hit = seen == vals[rows, j]
        if consume:
            hit &= live
        at = np.flatnonzero(hit)
        r = rows[at]
        first = at[np.concatenate(([True], r[1:] != r[:-1]))] if at.size else at  # each row's first hit
        idx[rows[first], j] = cols[first]
        if consume:
            live[first] = False
    return idx


def first_matches_rows(x: np.ndarray, vals: np.ndarray, keep: np.ndarray | None, consume: bool) -> np.ndarray:
    """``first_matches`` over whole rows, value by value."""
    avail = np.ones(x.shape, dtype=bool) if keep is None else keep.copy()
    idx = np.zeros(vals.shape, dtype=np.int64)
    rows = np.arange(x.shape[0])
    for j in range(vals.shape[1]):
        hit = (x == vals[:, j:j + 1]) & avail
        found = hit.any(axis=1)
        first = np.argmax(hit, axis=1)
        idx[:, j] = np.where(found, first, 0)
        if consume:
            avail[rows[found], first[found]] = False
    return idx


@op("nisa.nc_find_index8", emits=(NC_FIND_INDEX8,))
def nc_find_index8(data: Any = None, vals: Any = None, *, mask: Any = None, dtype: Any = dt.uint32, dst: Any = None,
                   name: str = "") -> Tensor | None:
    """``nisa.nc_find_index8``: per partition, the index (in the flattened free elements) of the first
    occurrence of each of 8 values, as uint32 (or uint16)."""
    ctx = current()
    a, x, keep = _data("nc_find_index8", "data", data, mask, ctx)
    v = _eight("nc_find_index8", "vals", vals, a.shape[0])
    out = None
    if x is not None:
        out = first_matches(x, flat(v, ctx), keep, consume=False)
    out_dt = dt.uint32 if dtype is None else dtype
    if dt.normalize(out_dt) not in (dt.uint32, dt.uint16):
        raise nki_error("err_supported_operand_dtype",
                        f"'dst' of 'nc_find_index8' has dtype {dt.name(dt.normalize(out_dt))}, expected one of the "
                        f"following dtypes: uint16, uint32")
    return deliver(ctx, NC_FIND_INDEX8, (a.shape[0], 8), out_dt, out, dst, reads=[a, v])


@op("nisa.nc_match_replace8", emits=(NC_MATCH_REPLACE8,))
def nc_match_replace8(data: Any = None, vals: Any = None, imm: Any = 0.0, dst_idx: Any = None, *, mask: Any = None,
                      dtype: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.nc_match_replace8``: ``data`` with the first occurrence of each of 8 values replaced by
    ``imm``; the flattened indices of the matches go to ``dst_idx`` when given."""
    ctx = current()
    a, x, keep = _data("nc_match_replace8", "data", data, mask, ctx, min_elems=1)
    v = _eight("nc_match_replace8", "vals", vals, a.shape[0])
    out = idx = None
    if x is not None:
        idx = first_matches(x, flat(v, ctx), keep, consume=True)
        out = x.copy()
        found = np.take_along_axis(x, idx, axis=1) == flat(v, ctx)
        rows = np.broadcast_to(np.arange(x.shape[0])[:, None], idx.shape)
        out[rows[found], idx[found]] = np.float32(imm)
        out = out.astype(F32, copy=False)
    extra_writes = []
    if dst_idx is not None:
        d = operands("nc_match_replace8", dst_idx=dst_idx)["dst_idx"]
        if int(np.prod(d.shape)) != a.shape[0] * 8:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('dst_idx', d.shape)}) of 'nc_match_replace8' has "
                            f"mismatched shapes: 'dst_idx' must hold 8 elements in each of {a.shape[0]} partitions")
        d.check_write()
        rows_ok = _rows(keep, a.shape[0])
        write(d, None if idx is None else idx.reshape(d.shape),
                 None if rows_ok is None else np.broadcast_to(rows_ok, (a.shape[0], 8)).reshape(d.shape))
        extra_writes.append(d)
    out_dt = a.dtype if dtype is None else dtype
    valid = None if keep is None else keep.reshape(a.shape)
    return deliver(ctx, NC_MATCH_REPLACE8, a.shape, out_dt, out, dst, reads=[a, v], valid=valid,
                   extra_writes=extra_writes)
