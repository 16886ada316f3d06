"""NeuronCore-v4's MX (OCP microscaling) instructions: ``nisa.quantize_mx`` and ``nisa.nc_matmul_mx``.

MX data lives in the x4 packed dtypes (``core.dtypes.PACKED``): a tensor of shape ``[P, F]`` holds ``4 F`` values per
partition, four consecutive ones in each container (element i in byte i, or nibble i for fp4).  The four values of a
container and eight consecutive partitions form one scaling group of 32 that shares one 8-bit exponent (an
``float8_e8m0fnu`` or ``uint8`` scale, bias 127).  Scales sit in the SBUF quadrant their group's data came from:
group ``g`` of a tile (partitions ``8g .. 8g+7``) is row ``(g // 4) * 32 + g % 4`` of the scale tile (AWS's
mxfp-matmul deep dive, "Scale Tensor"; a scale tile that is a slice at row 4, 8 or 12 packs several tensors' scales
into one allocation).  Both instructions exist on NeuronCore-v4 (trn3) only.

Sources: ``nki/api/nki/isa/__init__.py`` (``quantize_mx``, ``nc_matmul_mx``) and
``nki/guides/architecture/trainium3_arch.rst`` in AWS's docs; the numbers (group height, PE and VectorE rates) are
the target file's.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read, write
from nkisim.core.tensor import Access, as_access, shape_str
from nkisim.cost.instructions import NC_MATMUL_MX, QUANTIZE_MX
from nkisim.ops.base import dtype_in, emit, operand, region
from nkisim.ops.matmul import into_psum
from nkisim.ops.registry import op

#: values per x4 container (the dtypes' definition, AWS's "4-packed" types)
PACK = 4
#: the e8m0 scale's exponent bias and its exponent range (OCP MX v1.0: 2^-127 .. 2^127)
SCALE_BIAS = 127
_SCALE_DTYPES = (dt.float8_e8m0fnu, dt.uint8)
_QUANTIZE_SRC = (dt.bfloat16, dt.float16)
_QUANTIZE_DST = (dt.float8_e5m2_x4, dt.float8_e4m3fn_x4)


def _decode_table(element: np.dtype) -> np.ndarray:
    """fp32 value of every code of ``element`` (256 fp8 codes, or 16 fp4 codes)."""
    bits = 4 if element == _FP4 else 8  # fp4 codes sit in the low nibble of a byte
    codes = np.arange(1 << bits, dtype=np.uint8)
    return codes.view(element).astype(np.float32)


_FP4 = np.dtype(ml_dtypes.float4_e2m1fn)
_TABLES = {d: _decode_table(e) for d, e in dt.PACKED_ELEMENT.items()}


def unpack(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The values of x4 containers ``bits`` (``[..., F]``) as fp32 ``[..., F, 4]``."""
    table = _TABLES[dtype]
    if dtype == dt.float4_e2m1fn_x4:
        b = bits.astype(np.uint16)[..., None] >> (np.arange(PACK, dtype=np.uint16) * PACK)
        return table[(b & 0xF).astype(np.uint8)]
    return table[np.ascontiguousarray(bits.astype(np.uint32)).view(np.uint8).reshape(bits.shape + (PACK,))]


def pack(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """fp8 values ``[..., F, 4]`` (already representable) as x4 containers ``[..., F]`` (fp8 x4 only)."""
    codes = np.ascontiguousarray(values.astype(dt.PACKED_ELEMENT[dtype]).view(np.uint8))
    return codes.view(np.uint32).reshape(values.shape[:-1])


def scale_rows(groups: int, quadrant: int, group_rows: int) -> np.ndarray:
    """Scale-tile row of each of ``groups`` scaling groups: each quadrant of ``quadrant`` partitions keeps its
    ``quadrant // group_rows`` groups' scales in its first rows."""
    per_quadrant = quadrant // group_rows
    g = np.arange(groups)
    return (g // per_quadrant) * quadrant + g % per_quadrant


def needs_v4(api: str) -> None:
    """The MX instructions and dtypes exist on NeuronCore-v4 only: a clear refusal on an earlier target."""
    ctx = current()
    if ctx.nc_version < 4:
        raise nki_error("err_min_arch_support_for_inst",
                        f"inst {api} requires min target gen4 (trn3, NeuronCore-v4), got {ctx.target}: MX "
                        f"instructions and the x4 packed dtypes exist on trn3 only (nki.jit(platform_target='trn3'))")


def check_packed_copy(api: str, src_dtype: np.dtype, dst_dtype: np.dtype) -> None:
    """A copy may move x4 containers as they are but never convert them (AWS: no DMA cast for MX/x4 types)."""
    if src_dtype != dst_dtype and (dt.is_packed(src_dtype) or dt.is_packed(dst_dtype)):
        raise nki_error("err_supported_operand_dtype",
                        f"'{api}' cannot cast {dt.name(src_dtype)} to {dt.name(dst_dtype)}: x4 packed MX dtypes are "
                        f"copied bit for bit only (same dtype on both sides); reinterpret bytes with .view(), "
                        f"quantize with nisa.quantize_mx")


def check_packed_fill(api: str, dtype: np.dtype, value: Any) -> None:
    """NKI 0.3+ (error E7): a memset of an x4 packed dtype takes the value 0 only."""
    if dt.is_packed(dtype) and value != 0:
        raise nki_error("err_unsupported_dtype_value",
                        f"'value' {value!r} of '{api}' into an x4 packed dtype ({dt.name(dtype)}): only value=0 is "
                        f"supported for float8_e4m3fn_x4, float8_e5m2_x4 and float4_e2m1fn_x4")


def _partitions(api: str, pname: str, acc: Access, quadrant: int, limit: int) -> int:
    """The partition count of an MX data operand: a multiple of the quadrant, at most ``limit``."""
    p = acc.shape[0]
    if len(acc.shape) != 2:
        raise nki_error("err_exceed_max_supported_dimension",
                        f"parameter '{shape_str(pname, acc.shape)}' of '{api}' exceed max supported number of "
                        f"dimensions of 2.")
    if p % quadrant or p > limit:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"size of dimension 0 in '{shape_str(pname, acc.shape)}' of '{api}' must be a multiple of "
                        f"{quadrant} and at most {limit} (MX scaling groups span whole quadrants)")
    return p


def _scale_tile(api: str, pname: str, acc: Access, data: Access, dname: str, rows: np.ndarray) -> None:
    """``acc`` can hold the scales of ``data``: one column per container column, a row for every group, starting at
    one of the quadrant offsets the hardware reads scales at (0, 4, 8 or 12 on trn3: up to four tensors' scales
    packed in one tile)."""
    dtype_in(api, pname, acc, _SCALE_DTYPES)
    tgt = current().target
    quadrant, per_tensor = tgt.limits.quadrant_partitions, tgt.limits.quadrant_partitions // \
        tgt.limits.mx_group_partitions
    box = region(acc)[2]
    offset = (box[0][0] if box else 0) % quadrant
    if offset % per_tensor or offset // per_tensor >= tgt.limits.mx_scale_offsets:
        allowed = ", ".join(str(i * per_tensor) for i in range(tgt.limits.mx_scale_offsets))
        raise nki_error("err_param_shape_mismatch",
                        f"'{pname}' of '{api}' starts at partition {offset} of its quadrant: MX scales are read and "
                        f"written at quadrant offsets {allowed} only")
    need = int(rows[-1]) + 1
    if len(acc.shape) != 2 or acc.shape[1] != data.shape[1] or acc.shape[0] < need:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str(pname, acc.shape)}, {shape_str(dname, data.shape)}) of '{api}' "
                        f"has mismatched shapes: the scales of a [{data.shape[0]}, {data.shape[1]}] MX tile need "
                        f"[{need}, {data.shape[1]}] or more rows (the scales of each 32-partition quadrant in its "
                        f"first rows) and one column per data column")


def _scale_exponents(acc: Access, rows: np.ndarray) -> np.ndarray:
    """The unbiased exponents stored at ``rows`` of scale tile ``acc`` (``[groups, F]``)."""
    raw = np.asarray(read(acc))[rows]
    return (raw.view(np.uint8) if raw.dtype == dt.float8_e8m0fnu else raw.astype(np.uint8)).astype(np.int32) - SCALE_BIAS


def _group_rows(ctx: Any) -> tuple[int, int]:
    return ctx.target.limits.quadrant_partitions, ctx.target.limits.mx_group_partitions


@op("nisa.quantize_mx", emits=(QUANTIZE_MX,), spaces="sbuf")
def quantize_mx(src: Any, dst: Any, dst_scale: Any, name: str = "") -> None:
    """``nisa.quantize_mx``: bf16/fp16 ``src [P, 4F]`` to MXFP8 data ``dst [P, F]`` (x4) and e8m0 scales.

    Each group of 8 partitions x 4 elements gets the scale ``2^(floor(log2 amax) - (Emax - 1))`` (Emax 8 for e4m3fn,
    15 for e5m2: twice the OCP sample scale, so the group's largest value never saturates), clamped to the e8m0
    range, and ``2^-127`` for an all-zero group; each value is divided by its scale, saturated to the element's
    largest finite value (OCP's saturating conversion) and rounded to nearest even."""
    ctx = current()
    api = "quantize_mx"
    needs_v4(api)
    allowed = ["sbuf"]
    s, d, sc = (as_access(operand(api, n, v, allowed, ctx)) for n, v in (("src", src), ("dst", dst),
                                                                        ("dst_scale", dst_scale)))
    dtype_in(api, "src", s, _QUANTIZE_SRC)
    dtype_in(api, "dst", d, _QUANTIZE_DST)
    quadrant, group = _group_rows(ctx)
    p = _partitions(api, "src", s, quadrant, ctx.target.partitions)
    f = s.shape[1]
    if f % PACK or d.shape != (p, f // PACK):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('src', s.shape)}, {shape_str('dst', d.shape)}) of '{api}' has "
                        f"mismatched shapes: src's free size must be a multiple of {PACK} and dst must be "
                        f"[{p}, {f // PACK if f % PACK == 0 else f'{f}/{PACK}'}] (four values per x4 element)")
    rows = scale_rows(p // group, quadrant, group)
    _scale_tile(api, "dst_scale", sc, d, "dst", rows)
    for a in (d, sc):
        a.check_write()
    if ctx.numerics:
        element = dt.PACKED_ELEMENT[d.dtype]
        info = ml_dtypes.finfo(element)
        x = np.asarray(read(s)).astype(np.float64).reshape(p // group, group, f // PACK, PACK)
        amax = np.max(np.abs(x), axis=(1, 3))
        _m, e = np.frexp(np.where(np.isfinite(amax), amax, np.finfo(np.float64).max))
        exp = np.clip(e - 1 - (info.maxexp - 2), -SCALE_BIAS, SCALE_BIAS)  # floor(log2 amax) - (Emax - 1)
        exp = np.where(amax > 0, exp, -SCALE_BIAS)
        q = np.clip(x / np.exp2(exp)[:, None, :, None], -float(info.max), float(info.max))
        write(d, pack(q.reshape(p, f // PACK, PACK), d.dtype))
        full = np.zeros(sc.shape, dtype=np.float64)
        full[rows] = exp + SCALE_BIAS if sc.dtype == dt.uint8 else np.exp2(exp)
        valid = np.zeros(sc.shape, dtype=bool)
        valid[rows] = True
        write(sc, full, valid)
    else:
        write(d, None)
        write(sc, None)
    emit(ctx, QUANTIZE_MX, reads=[s], writes=[d, sc], p=p, n=f)


def _tiling(api: str, tile_position: Any, tile_size: Any, partitions: int, k: int) -> None:
    """Row tiling only: ``tile_size`` (rows, all columns) and ``tile_position`` (a multiple of rows, column 0)."""
    if not tile_position and not tile_size:
        return
    if not tile_position or not tile_size:
        raise nki_error("err_param_shape_mismatch", f"'tile_position' and 'tile_size' of '{api}' must be given together")
    (row, col), (rows, cols) = (tuple(int(v) for v in tile_position), tuple(int(v) for v in tile_size))
    if col != 0 or cols != partitions or rows <= 0 or partitions % rows or row % rows or not 0 <= row < partitions \
            or k > rows:
        raise nki_error("err_param_shape_mismatch",
                        f"tile_position=({row}, {col}), tile_size=({rows}, {cols}) of '{api}': only row tiling is "
                        f"supported (column 0, column size {partitions}; a row size dividing {partitions}, a start row "
                        f"that is a multiple of it, and at most that many contraction partitions, here {k})")


@op("nisa.nc_matmul_mx", emits=(NC_MATMUL_MX,), spaces="sbuf")
def nc_matmul_mx(stationary: Any, moving: Any, stationary_scale: Any, moving_scale: Any, *, dst: Any,
                 tile_position: Any = (), tile_size: Any = (), accumulate: bool | None = None,
                 name: str = "") -> None:
    """``nisa.nc_matmul_mx``: ``dst[M, N] = sum over k, q of S[k, m, q] * V[k, n, q]``, the MX-dequantised
    stationary ``[K, M]`` and moving ``[K, N]`` x4 tiles (each value times its group's scale), on the PE array
    into PSUM (fp32 or bf16), accumulated as ``nc_matmul`` accumulates (``accumulate``)."""
    ctx = current()
    api = "nc_matmul_mx"
    needs_v4(api)
    allowed = ["sbuf"]
    st, mv, ss, ms = (as_access(operand(api, n, v, allowed, ctx)) for n, v in (
        ("stationary", stationary), ("moving", moving), ("stationary_scale", stationary_scale),
        ("moving_scale", moving_scale)))
    for pname, a in (("stationary", st), ("moving", mv)):
        dtype_in(api, pname, a, dt.PACKED)
    quadrant, group = _group_rows(ctx)
    tgt = ctx.target
    k = _partitions(api, "stationary", st, quadrant, tgt.partitions)
    if _partitions(api, "moving", mv, quadrant, tgt.partitions) != k:
        raise nki_error("err_param_shape_incompatible_with_matmul",
                        f"Number of partitions mismatch in '{api}': contraction dimension of "
                        f"{shape_str('stationary', st.shape)} and {shape_str('moving', mv.shape)} must match")
    m, n = st.shape[1], mv.shape[1]
    if m % 2 or m > tgt.gemm_stationary_free_max:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"size of dimension 1 in '{shape_str('stationary', st.shape)}' of '{api}' must be even and "
                        f"at most {tgt.gemm_stationary_free_max}")
    d_dtype = as_access(operand(api, "dst", dst, ["psum"], ctx)).dtype
    limit = tgt.psum_partition_bytes // dt.storage_dtype(d_dtype).itemsize  # the whole PSUM (8 banks) per partition
    if n > limit:
        raise nki_error("err_size_of_dimension_exceed_arch_limit",
                        f"size of dimension 1 in '{shape_str('moving', mv.shape)}' of '{api}' exceed architecture "
                        f"limitation of {limit} (all of PSUM in {dt.name(d_dtype)})")
    _tiling(api, tile_position, tile_size, tgt.partitions, k)
    rows = scale_rows(k // group, quadrant, group)
    _scale_tile(api, "stationary_scale", ss, st, "stationary", rows)
    _scale_tile(api, "moving_scale", ms, mv, "moving", rows)
    vals = None
    if ctx.numerics:
        sv, mvv = (_dequantised(a, s, rows, group) for a, s in ((st, ss), (mv, ms)))
        vals = np.einsum("kmq,knq->mn", sv, mvv).astype(np.float32)
    extra = {"k": k, "m": m, "n": n, "pack": PACK, "in_dtype": dt.name(mv.dtype)}
    into_psum(ctx, api, dst, (m, n), vals, None, [st, mv, ss, ms], extra, accumulate, NC_MATMUL_MX)


def _dequantised(data: Access, scale: Access, rows: np.ndarray, group: int) -> np.ndarray:
    """The fp64 values of an MX tile ``[K, F]`` as ``[K, F, 4]``, each times its group's scale."""
    v = unpack(np.asarray(read(data)), data.dtype).astype(np.float64)
    exp = np.repeat(_scale_exponents(scale, rows), group, axis=0)  # [K, F]
    return v * np.exp2(exp.astype(np.float64))[:, :, None]
