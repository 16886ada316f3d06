"""Stand-in for ``neuron_dtypes``, an AWS-internal package nki-library's tests import but AWS does not publish.

Only what nki-library uses: ``static_cast`` (a value cast, rounding to nearest even like ml_dtypes, that packs
and unpacks the x4 MX dtypes along the last axis), ``bfloat16``, the x4 dtypes (nkisim's, the same objects as
``nl.float8_e4m3fn_x4`` ...), ``is_float_type``, ``sizeinbytes`` and ``finfo``.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from nkisim.core import dtypes as _dt
from nkisim.ops import mx as _mx

bfloat16 = ml_dtypes.bfloat16
float8_e4m3fn = ml_dtypes.float8_e4m3fn
float8_e5m2 = ml_dtypes.float8_e5m2
float8_e5m2_x4 = _dt.float8_e5m2_x4
float8_e4m3fn_x4 = _dt.float8_e4m3fn_x4
float4_e2m1fn_x4 = _dt.float4_e2m1fn_x4
finfo = ml_dtypes.finfo


def _pack(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """fp32 ``[..., 4F]`` -> x4 containers ``[..., F]`` (each value rounded to the element type first)."""
    groups = np.asarray(values, np.float32).reshape(values.shape[:-1] + (-1, _mx.PACK))
    if dtype == _dt.float4_e2m1fn_x4:
        codes = groups.astype(ml_dtypes.float4_e2m1fn).view(np.uint8).astype(np.uint16) & 0xF
        return (codes << (np.arange(_mx.PACK, dtype=np.uint16) * 4)).sum(axis=-1, dtype=np.uint16).view(dtype)
    return _mx.pack(groups, dtype).view(dtype)


def static_cast(array: Any, dtype: Any) -> np.ndarray:
    """``array`` converted to ``dtype``; an x4 dtype on either side packs / unpacks four values per element."""
    a = np.asarray(array)
    target = np.dtype(dtype)
    if _dt.is_packed(a.dtype):
        a = _mx.unpack(a.view(_dt.storage_dtype(a.dtype)), a.dtype).reshape(a.shape[:-1] + (-1,))
    if _dt.is_packed(target):
        return _pack(a, target)
    return a.astype(target)


def is_float_type(dtype: Any) -> bool:
    d = np.dtype(dtype)
    return d.kind == "f" or d in (np.dtype(bfloat16), np.dtype(float8_e4m3fn), np.dtype(float8_e5m2))


def sizeinbytes(dtype: Any) -> int:
    return np.dtype(dtype).itemsize
