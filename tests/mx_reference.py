"""An independent NumPy model of OCP MX data for the MX tests: fp8/fp4 codes decoded from their bit fields, values
encoded by nearest-even search over every code, the quantisation rule of AWS's ``nisa.quantize_mx`` docstring and
the dequantised matmul of ``nisa.nc_matmul_mx``.  Nothing here comes from nkisim or ml_dtypes (the tests check this
model against ml_dtypes separately), so a wrong op cannot agree with itself.

Layout (AWS's mxfp-matmul deep dive): an x4 container holds four consecutive values of a partition, value i in byte
i (fp8, 32-bit container) or nibble i (fp4, 16-bit container); a scaling group is 8 partitions x 4 values; scales are
e8m0 (bias 127) and group g's scale sits in row (g // 4) * 32 + g % 4 of the scale tile.
"""

from __future__ import annotations

import numpy as np

#: element kind -> (exponent bits, mantissa bits, bias, Emax of the docstring's scale rule)
KINDS = {"e4m3fn": (4, 3, 7, 8), "e5m2": (5, 2, 15, 15), "e2m1fn": (2, 1, 1, 2)}


def decode(kind: str) -> np.ndarray:
    """fp64 value of every code of ``kind`` (256 for fp8, 16 for fp4), NaN for NaN codes."""
    e_bits, m_bits, bias, _ = KINDS[kind]
    width = 1 + e_bits + m_bits
    out = np.empty(1 << width)
    for code in range(1 << width):
        sign = -1.0 if code >> (width - 1) else 1.0
        e = (code >> m_bits) & ((1 << e_bits) - 1)
        m = code & ((1 << m_bits) - 1)
        if kind == "e5m2" and e == (1 << e_bits) - 1:
            out[code] = sign * np.inf if m == 0 else np.nan
        elif kind == "e4m3fn" and e == (1 << e_bits) - 1 and m == (1 << m_bits) - 1:
            out[code] = np.nan
        elif e == 0:
            out[code] = sign * m / (1 << m_bits) * 2.0 ** (1 - bias)
        else:
            out[code] = sign * (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)
    return out


def largest(kind: str) -> float:
    v = decode(kind)
    return float(np.max(v[np.isfinite(v)]))


def encode(x: np.ndarray, kind: str) -> np.ndarray:
    """Codes of ``x``: saturated to +-largest, then the nearest value, ties to the even code (OCP's conversion)."""
    table = decode(kind)
    codes = np.array([c for c in range(len(table)) if np.isfinite(table[c])])
    vals = table[codes]
    x = np.clip(np.asarray(x, dtype=np.float64), -largest(kind), largest(kind))
    flat = x.reshape(-1, 1)
    dist = np.abs(flat - vals.reshape(1, -1))
    best = dist.min(axis=1, keepdims=True)
    # the nearest value; between two, the even code (mantissa bit 0); between +0 and -0, x's sign
    score = 4 * (dist > best) + 2 * (codes % 2 == 1) + (np.signbit(vals).reshape(1, -1) != np.signbit(flat))
    chosen = codes[np.argmin(score, axis=1)]
    return chosen.reshape(x.shape).astype(np.uint8)


def pack(codes: np.ndarray, kind: str) -> np.ndarray:
    """Codes ``[P, 4F]`` as x4 containers ``[P, F]``: uint32 (fp8, code i in byte i) or uint16 (fp4, nibble i)."""
    p, f = codes.shape
    c = codes.reshape(p, f // 4, 4).astype(np.uint64)
    shift = 4 if kind == "e2m1fn" else 8
    out = sum(c[:, :, i] << np.uint64(shift * i) for i in range(4))
    return out.astype(np.uint16 if kind == "e2m1fn" else np.uint32)


def unpack(bits: np.ndarray, kind: str) -> np.ndarray:
    """x4 containers ``[P, F]`` as values ``[P, F, 4]`` (fp64)."""
    shift = 4 if kind == "e2m1fn" else 8
    b = bits.astype(np.uint64)
    codes = np.stack([(b >> np.uint64(shift * i)) & np.uint64((1 << shift) - 1) for i in range(4)], axis=-1)
    return decode(kind)[codes.astype(np.int64)]


def quantize(x: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(x4 data ``[P, F/4]``, biased e8m0 scales ``[P/8, F/4]`` uint8) of ``x [P, F]`` by the docstring's rule:
    scale 2^(floor(log2 amax) - (Emax - 1)), 2^-127 for an all-zero group."""
    p, f = x.shape
    emax = KINDS[kind][3]
    x = np.asarray(x, dtype=np.float64)
    groups = x.reshape(p // 8, 8, f // 4, 4)
    amax = np.abs(groups).max(axis=(1, 3))
    with np.errstate(divide="ignore"):
        e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - (emax - 1), -127)
    e = np.clip(e, -127, 127)
    scaled = groups / 2.0 ** e[:, None, :, None]
    codes = encode(scaled.reshape(p, f), kind)
    return pack(codes, kind), (e + 127).astype(np.uint8)


def scale_rows(groups: int) -> np.ndarray:
    g = np.arange(groups)
    return (g // 4) * 32 + g % 4


def spread(scales: np.ndarray, rows: int | None = None) -> np.ndarray:
    """Contiguous scales ``[P/8, F]`` placed in a scale tile as the hardware wants them (the rest zero)."""
    g, f = scales.shape
    r = scale_rows(g)
    out = np.zeros((rows or int(r[-1]) + 1, f), dtype=np.uint8)
    out[r] = scales
    return out


def dequantize(bits: np.ndarray, scales: np.ndarray, kind: str) -> np.ndarray:
    """Values ``[P, F, 4]`` of x4 data with contiguous biased scales ``[P/8, F]``."""
    v = unpack(bits, kind)
    return v * 2.0 ** (np.repeat(scales.astype(np.float64), 8, axis=0) - 127)[:, :, None]


def matmul(stat: np.ndarray, s_scale: np.ndarray, s_kind: str, mov: np.ndarray, m_scale: np.ndarray,
           m_kind: str) -> np.ndarray:
    """``nc_matmul_mx``: [M, N] = sum over partitions k and packed q of S[k, m, q] * V[k, n, q] (fp64)."""
    return np.einsum("kmq,knq->mn", dequantize(stat, s_scale, s_kind), dequantize(mov, m_scale, m_kind))


def random_mx(rng: np.random.Generator, p: int, f: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Random x4 data ``[p, f]`` (finite codes) and contiguous scales ``[p/8, f]`` near 2^0."""
    table = decode(kind)
    finite = np.array([c for c in range(len(table)) if np.isfinite(table[c])])
    codes = rng.choice(finite, size=(p, 4 * f)).astype(np.uint8)
    return pack(codes, kind), rng.integers(120, 130, size=(p // 8, f)).astype(np.uint8)
