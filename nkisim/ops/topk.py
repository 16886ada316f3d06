"""Searching a partition's values: the Vector engine's top-8 instructions ``max8``, ``nc_find_index8`` and
``nc_match_replace8`` (issue 12; semantics from the NKI ISA reference), and NKI 0.6's GpSimd ``nisa.topk`` and
``nisa.nonzero_with_count`` (at the end of the module).  Top-k kernels chain the top-8 ones: ``max8`` finds each partition's
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
from nkisim.core.tensor import Access, Tensor, as_access, shape_str
from nkisim.cost.instructions import MAX8, NC_FIND_INDEX8, NC_MATCH_REPLACE8, NONZERO_WITH_COUNT, TOPK
from nkisim.ops.base import dtype_in, emit, mask_array, operand, operands, write_dst
from nkisim.ops.elementwise import values
from nkisim.ops.outputs import F32, deliver, flat, free_elements
from nkisim.ops.registry import op


def _data(inst: str, pname: str, value: Any, mask: Any, ctx: KernelContext,
          min_elems: int | None = None) -> tuple[Access, np.ndarray | None, np.ndarray | None]:
    """(access, values as (P, N) fp32, the mask as (P, N) booleans or None) of the searched tile."""
    a = operands(inst, **{pname: value})[pname]
    n = int(np.prod(a.shape[1:] or (1,)))
    lo = ctx.target.limits.max8_min_elems if min_elems is None else min_elems
    hi = ctx.target.limits.max8_max_elems
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


def first_matches(x: np.ndarray, vals: np.ndarray, keep: np.ndarray | None, consume: bool,
                  missing: int = 0) -> np.ndarray:
    """Index of the first (unmasked) occurrence of each of the 8 values in every row.

    With ``consume`` a matched element is used up, so equal values find successive occurrences, in the order of
    ``vals``' columns; otherwise each value finds the first occurrence.  A value that is not present gives index
    ``missing``.

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
            return first_matches_rows(x, vals, keep, consume, missing)
        idx = np.empty(vals.shape, dtype=np.int64)
        idx[crowd] = first_matches_rows(x[crowd], vals[crowd], None if keep is None else keep[crowd], consume,
                                        missing)
        few = ~crowd
        idx[few] = first_matches(x[few], vals[few], None if keep is None else keep[few], consume, missing)
        return idx
    seen = x[rows, cols]
    idx = np.full(vals.shape, missing, dtype=np.int64)
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


def first_matches_rows(x: np.ndarray, vals: np.ndarray, keep: np.ndarray | None, consume: bool,
                       missing: int = 0) -> np.ndarray:
    """``first_matches`` over whole rows, value by value."""
    avail = np.ones(x.shape, dtype=bool) if keep is None else keep.copy()
    idx = np.zeros(vals.shape, dtype=np.int64)
    rows = np.arange(x.shape[0])
    for j in range(vals.shape[1]):
        hit = (x == vals[:, j:j + 1]) & avail
        found = hit.any(axis=1)
        first = np.argmax(hit, axis=1)
        idx[:, j] = np.where(found, first, missing)
        if consume:
            avail[rows[found], first[found]] = False
    return idx


@op("nisa.nc_find_index8", emits=(NC_FIND_INDEX8,))
def nc_find_index8(data: Any = None, vals: Any = None, *, mask: Any = None, dtype: Any = dt.uint32, dst: Any = None,
                   name: str = "") -> Tensor | None:
    """``nisa.nc_find_index8``: per partition, the index (in the flattened free elements) of the first
    occurrence of each of 8 values, as uint32 (or uint16).  As the hardware does (NKI 0.6.0 release notes, Neuron
    2.32: "Duplicate search values now advance through successive occurrences"; "unmatched slots now return
    all-ones"): equal values take successive occurrences in column order (isa ``nc_match_replace8``: "the opposite
    of nc_find_index8, which pairs duplicate vals with their matching positions in ascending order"), and a value
    not found gives 0xFFFFFFFF (0xFFFF for uint16)."""
    ctx = current()
    a, x, keep = _data("nc_find_index8", "data", data, mask, ctx)
    v = _eight("nc_find_index8", "vals", vals, a.shape[0])
    out_dt = dt.uint32 if dtype is None else dtype
    if dt.normalize(out_dt) not in (dt.uint32, dt.uint16):
        raise nki_error("err_supported_operand_dtype",
                        f"'dst' of 'nc_find_index8' has dtype {dt.name(dt.normalize(out_dt))}, expected one of the "
                        f"following dtypes: uint16, uint32")
    out = None
    if x is not None:
        out = first_matches(x, flat(v, ctx), keep, consume=True, missing=int(np.iinfo(dt.normalize(out_dt)).max))
    return deliver(ctx, NC_FIND_INDEX8, (a.shape[0], 8), out_dt, out, dst, reads=[a, v])


@op("nisa.nc_match_replace8", emits=(NC_MATCH_REPLACE8,))
def nc_match_replace8(data: Any = None, vals: Any = None, imm: Any = 0.0, dst_idx: Any = None, *, mask: Any = None,
                      dtype: Any = None, dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.nc_match_replace8``: ``data`` with the first occurrence of each of 8 values replaced by
    ``imm``; the flattened indices of the matches go to ``dst_idx`` when given.  The values are matched in reverse
    column order (isa: "processes ``vals`` in reverse order (``i = 7, 6, ..., 0``)"), so among equal values the
    last column takes the first occurrence."""
    ctx = current()
    a, x, keep = _data("nc_match_replace8", "data", data, mask, ctx, min_elems=1)
    v = _eight("nc_match_replace8", "vals", vals, a.shape[0])
    out = idx = None
    if x is not None:
        idx = first_matches(x, flat(v, ctx)[:, ::-1], keep, consume=True)[:, ::-1]
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


# --- nonzero_with_count (GpSimd, NeuronCore-v3+) ----------------------------------------------------------------
def core_rows(parts: int, stride: int) -> np.ndarray:
    """The partitions GpSimd's cores read and write in ``nonzero_with_count``: each core's first one."""
    return np.arange(parts) % stride == 0


def _int32(api: str, pname: str, v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not -2**31 <= int(v) < 2**31:
        raise nki_error("err_supported_operand_dtype", f"'{pname}' of '{api}' must be an int32 integer, got {v!r}")
    return int(v)


@op("nisa.nonzero_with_count", emits=(NONZERO_WITH_COUNT,), spaces="sbuf")
def nonzero_with_count(src: Any, *, dst: Any, index_offset: Any = 0, padding_val: Any = -1, name: str = "") -> None:
    """``nisa.nonzero_with_count``: on partitions 0, 16, 32, ... only (the first partition of each GpSimd core's
    16), ``dst`` gets the free indices of ``src``'s nonzero elements plus ``index_offset``, then ``padding_val``
    up to ``src``'s length, then the count in its last slot; every other partition of ``dst`` is left as it was."""
    ctx = current()
    api = "nonzero_with_count"
    if ctx.nc_version < 3:
        raise nki_error("err_min_arch_support_for_inst",
                        f"inst {api} requires min target gen3 (trn2), got {ctx.target}")
    a = operands(api, src=src)["src"]
    d = as_access(operand(api, "dst", dst, ["sbuf"], ctx))
    dtype_in(api, "src", a, ("float32", "int32"))
    dtype_in(api, "dst", d, ("int32",))
    t = free_elements(a.shape)
    if d.shape[0] != a.shape[0] or free_elements(d.shape) != t + 1:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('src', a.shape)}, {shape_str('dst', d.shape)}) of '{api}' has "
                        f"mismatched shapes: dst needs src's partitions and one more element per partition ({t + 1}) "
                        f"for the count")
    offset, pad = _int32(api, "index_offset", index_offset), _int32(api, "padding_val", padding_val)
    rows = core_rows(a.shape[0], ctx.target.limits.gpsimd_core_partitions)
    out_shape = (a.shape[0], t + 1)
    vals = None
    if ctx.numerics:
        x = values(a, ctx, np.dtype(np.float64)).reshape(a.shape[0], t)
        vals = np.full(out_shape, pad, dtype=np.int64)
        for p in np.flatnonzero(rows):
            idx = np.flatnonzero(x[p])
            vals[p, :len(idx)] = idx + offset
            vals[p, t] = len(idx)
        vals = vals.astype(np.int32).astype(np.int64)  # int32 wrap, as the 32-bit engine writes it
    # dst of any free shape holding t + 1 elements per partition (nki-library's find_nonzero_indices writes a
    # [C, 1, chunk + 1] tile): the values in its own shape
    shape = tuple(d.shape)
    valid = np.broadcast_to(rows.reshape((-1,) + (1,) * (len(shape) - 1)), shape)
    out = write_dst(ctx, api, dst, shape, None if vals is None else vals.reshape(shape), valid)
    emit(ctx, NONZERO_WITH_COUNT, reads=[a], writes=[out], n=t + 1)


# --- topk (GpSimd) ------------------------------------------------------------------------------------------------
def snake(block: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` elements of the snake a ``[16, cols]`` block holds: element ``i`` at ``[i % 16, i // 16]``."""
    return block.T.reshape(-1)[:n]


def ascending_top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``values`` (a lower index before a higher one among equals), in ascending order
    of value (so the largest comes last)."""
    return np.lexsort((np.arange(len(values)), -values))[:k][::-1]


@op("nisa.topk", emits=(TOPK,), spaces="sbuf")
def topk(src: Any, n: Any, *, val_dst: Any, idx_dst: Any, name: str = "") -> None:
    """``nisa.topk``: each group of 16 partitions holds one "snake" of ``n`` bf16 values (element ``i`` at partition
    ``i % 16`` of the group, column ``i // 16``); its K largest values (K = ``val_dst``'s free size) go to
    ``val_dst`` in ascending order and their snake indices to ``idx_dst`` (uint32).  Every partition of a group
    gets its group's result (AWS: each partition selects from the source snake).  Among equal values the lower
    index counts as larger, so it is written after the higher one."""
    ctx = current()
    api = "topk"
    a = operands(api, src=src)["src"]
    vd = as_access(operand(api, "val_dst", val_dst, ["sbuf"], ctx))
    idd = as_access(operand(api, "idx_dst", idx_dst, ["sbuf"], ctx))
    dtype_in(api, "src", a, ("bfloat16",))
    dtype_in(api, "val_dst", vd, ("bfloat16",))
    dtype_in(api, "idx_dst", idd, ("uint32",))
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise nki_error("err_supported_operand_dtype", f"'n' of '{api}' must be an integer, got {n!r}")
    n = int(n)
    group = ctx.target.limits.gpsimd_core_partitions
    parts, cols = a.shape[0], free_elements(a.shape)
    if parts % group:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"size of dimension 0 in '{shape_str('src', a.shape)}' of '{api}' must be a multiple of "
                        f"{group} (one snake per GpSimd core's {group} partitions)")
    lim = ctx.target.limits
    lo, hi, k_max = lim.topk_min_elements, lim.topk_max_elements, lim.topk_max_k
    if not lo <= n <= hi or cols * group < n:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"n={n} of '{api}' must be at least {lo}, at most {hi} and at most the snake's "
                        f"{cols * group} elements ({shape_str('src', a.shape)} holds {cols} per partition)")
    k = free_elements(vd.shape)
    for pname, acc in (("val_dst", vd), ("idx_dst", idd)):
        if len(acc.shape) != 2 or acc.shape[0] != parts or acc.shape[1] != k:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('val_dst', vd.shape)}, {shape_str(pname, acc.shape)}) of "
                            f"'{api}' has mismatched shapes: val_dst and idx_dst must both be [{parts}, K]")
    if not 1 <= k <= k_max or k > n:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"K={k} (val_dst's free size) of '{api}' must be at least 1, at most {k_max} and at most n={n}")
    top_v = top_i = None
    if ctx.numerics:
        x = values(a, ctx, F32).reshape(parts, cols)
        top_v = np.empty((parts, k), F32)
        top_i = np.empty((parts, k), np.int64)
        for g in range(parts // group):
            flat_snake = snake(x[g * group:(g + 1) * group], n)
            order = ascending_top(flat_snake, k)
            top_v[g * group:(g + 1) * group] = flat_snake[order]
            top_i[g * group:(g + 1) * group] = order
    vout = write_dst(ctx, api, val_dst, (parts, k), top_v)
    iout = write_dst(ctx, api, idx_dst, (parts, k), top_i)
    emit(ctx, TOPK, reads=[a], writes=[vout, iout], n=n, extra={"n": n, "k": k})
