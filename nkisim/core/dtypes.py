"""NKI data types and the documented type-promotion table.

NKI dtypes are NumPy dtypes (bf16 and fp8 come from ``ml_dtypes``).  Vector and Scalar engines
compute in fp32 and round once when writing the result, so numerics here do the same: widen to
``compute_dtype`` and cast with ``ml_dtypes`` round-to-nearest-even on write.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(getattr(ml_dtypes, "float8_e4m3", ml_dtypes.float8_e4m3fn))
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
#: NKI 0.6's fp8 types: e4m3 without infinities (max 448, the OCP format) and the exponent-only MX scale type
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
#: tf32 is a storage tag in NKI ('|V4'); numerically it behaves like fp32 with a 10-bit mantissa.
tfloat32 = np.dtype("V4")
int8, int16, int32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
uint8, uint16, uint32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)



def _packed(name: str, container: str) -> np.dtype:
    """An x4 packed MX dtype: one field named after the type, so each is a dtype of its own (``V4`` tags would
    compare equal to each other and to tfloat32) held in an unsigned container."""
    return np.dtype([(name, container)])


#: NeuronCore-v4's x4 packed MX dtypes (NKI 0.6, AWS's mxfp-matmul deep dive): four fp8 values in a 32-bit container,
#: four fp4 values in a 16-bit one.  A tensor's shape counts containers; values are the containers' bits (element i
#: in byte i, or in nibble i for fp4), read and written only by ``nc_matmul_mx``, ``quantize_mx``, copies of the
#: same dtype and a memset of 0.
float8_e5m2_x4 = _packed("float8_e5m2_x4", "<u4")
float8_e4m3fn_x4 = _packed("float8_e4m3fn_x4", "<u4")
float4_e2m1fn_x4 = _packed("float4_e2m1fn_x4", "<u2")
PACKED = (float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4)
#: each x4 dtype's element type (ml_dtypes') and storage container
PACKED_ELEMENT = {float8_e5m2_x4: float8_e5m2, float8_e4m3fn_x4: float8_e4m3fn,
                  float4_e2m1fn_x4: np.dtype(ml_dtypes.float4_e2m1fn)}
_STORAGE = {tfloat32: float32, **{d: np.dtype(d[0]) for d in PACKED}}

FLOATS = (float8_e4m3, float8_e5m2, float16, bfloat16, tfloat32, float32, float8_e4m3fn, float8_e8m0fnu)
INTS = (int8, int16, int32, uint8, uint16, uint32)
SUPPORTED = FLOATS + INTS + (bool_,) + PACKED
_FP8 = (float8_e4m3, float8_e5m2, float8_e4m3fn, float8_e8m0fnu)


def normalize(dtype: Any) -> np.dtype:
    """Turn nl.float32 / np.float32 / 'bfloat16' / torch-like names into a NumPy dtype."""
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, str):
        aliases = {"bfloat16": bfloat16, "float8_e4m3": float8_e4m3, "float8_e5m2": float8_e5m2,
                   "float8_e4m3fn": float8_e4m3fn, "float8_e8m0fnu": float8_e8m0fnu, "tfloat32": tfloat32,
                   "bool": bool_, **{d.names[0]: d for d in PACKED}}
        if dtype in aliases:
            return aliases[dtype]
    return np.dtype(dtype)


#: Memo of is_float: tuple membership compares dtypes one by one, and every op asks several times.
_IS_FLOAT: dict[Any, bool] = {}


def is_float(dt: np.dtype) -> bool:
    try:
        hit = _IS_FLOAT.get(dt)
    except TypeError:  # unhashable: no memo
        return dt in FLOATS
    if hit is None:
        hit = _IS_FLOAT[dt] = dt in FLOATS
    return hit


def is_int(dt: np.dtype) -> bool:
    return dt in INTS or dt == bool_


def storage_dtype(dt: np.dtype) -> np.dtype:
    """NumPy dtype used to hold values of ``dt`` (tf32 is held as fp32, an x4 type as its unsigned container)."""
    return _STORAGE.get(dt, dt)


def is_packed(dt: np.dtype) -> bool:
    """``dt`` is one of the x4 packed MX dtypes."""
    return dt in _PACKED_SET


_PACKED_SET = frozenset(PACKED)


def _float_rank(dt: np.dtype) -> int:
    return {float8_e4m3: 1, float8_e5m2: 1, float8_e4m3fn: 1, float8_e8m0fnu: 1, float16: 2, bfloat16: 2,
            tfloat32: 3, float32: 4}[dt]


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """NKI's promotion of two operand dtypes (nki.api.shared 'NKI Type Promotion')."""
    if a == b:
        return a
    if a == bool_:
        return b
    if b == bool_:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        pair = {a, b}
        if pair == {float16, bfloat16}:
            return float32
        if pair == {float8_e4m3, float8_e5m2}:
            return bfloat16
        if a in _FP8 and b in _FP8:
            return a
        return a if _float_rank(a) >= _float_rank(b) else b
    # both integers
    sa, sb = a.kind == "i", b.kind == "i"
    if sa == sb:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if sa else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    if unsigned.itemsize == 4:
        return float32
    return np.dtype(f"int{unsigned.itemsize * 16}")


def scalar_dtype(value: Any) -> np.dtype:
    """Python scalars are weakly typed: bool -> uint8, int -> int32, float -> float32."""
    if isinstance(value, (bool, np.bool_)):
        return uint8
    if isinstance(value, (int, np.integer)):
        return int32
    return float32


def compute_dtype(*dts: np.dtype) -> np.dtype:
    """The dtype arithmetic runs in: fp32 when any operand is a float, otherwise int64."""
    return float32 if any(is_float(d) for d in dts) else np.dtype(np.int64)


def cast(values: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Round/convert computed values to ``dt`` once, as an engine does on write."""
    if values.dtype is dt and dt is not tfloat32:  # already stored as it should be (the common case)
        return values
    target = storage_dtype(dt)
    if values.dtype == target:
        return values
    if dt == tfloat32:
        bits = np.asarray(values, dtype=np.float32).view(np.uint32)
        rounded = (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
        return rounded.view(np.float32)
    if target.kind in "iu" and values.dtype.kind == "f":
        info = np.iinfo(target)
        with np.errstate(invalid="ignore"):
            values = np.nan_to_num(np.rint(values), nan=0.0, posinf=info.max, neginf=info.min)
            return np.clip(values, info.min, info.max).astype(target)
    if target == bool_:
        return values != 0
    return values.astype(target)


_NAMES: dict[Any, str] = {}


def name(dt: np.dtype) -> str:
    """Short dtype name as the compiler prints it (memoised: str(dtype) is slow and traced per op)."""
    try:
        hit = _NAMES.get(dt)
    except TypeError:  # unhashable: no memo
        return "tfloat32" if dt == tfloat32 else str(dt)
    if hit is None:
        hit = _NAMES[dt] = "tfloat32" if dt == tfloat32 else dt.names[0] if dt in PACKED else str(dt)
    return hit


def fill_value(dt: np.dtype) -> Any:
    """Value of uninitialised memory: NaN for floats (so bad reads show), 4 for integers; an fp8 x4 container holds
    four NaN bytes (0x7F is NaN in both e4m3fn and e5m2), an fp4 one (fp4 has no NaN) the integer pattern."""
    if is_float(dt):
        return np.nan
    return 0x7F7F7F7F if dt == float8_e5m2_x4 or dt == float8_e4m3fn_x4 else 4
