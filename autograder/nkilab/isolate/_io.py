"""Arrays across the process boundary: framed messages (a JSON header, then raw array bytes) over a pipe.

The grading parent sends the job on the child's stdin and reads results from a pipe it opened itself (the
child's fd 3), never from files: a kernel cannot plant results where the parent would look, and the parent
treats every byte as hostile -- a bounded header, a whitelist of dtypes, shapes that must match the byte
counts, a total byte budget.  (bfloat16 does not survive ``.npy``, hence raw bytes plus dtype names.)
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from typing import IO, BinaryIO

import ml_dtypes  # noqa: F401  (registers bfloat16 / float8 with NumPy)
import numpy as np

MAGIC = b"NKL1"
MAX_HEADER = 1 << 20  # bytes of JSON per message
MAX_DIMS = 8
#: the dtypes an NKI kernel's output (or a job's input) may have
DTYPES = frozenset({"float64", "float32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn",
                    "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool"})


class ProtocolError(ValueError):
    """The other side sent something that is not a well-formed message."""


def write_message(fh: IO[bytes], header: dict, arrays: Sequence[np.ndarray] = ()) -> None:
    arrays = [np.ascontiguousarray(a) for a in arrays]
    head = dict(header, arrays=[{"dtype": str(a.dtype), "shape": list(a.shape)} for a in arrays])
    blob = json.dumps(head).encode()
    fh.write(MAGIC + struct.pack("<Q", len(blob)) + blob)
    for a in arrays:
        fh.write(struct.pack("<Q", a.nbytes))
        fh.write(_bytes_of(a))  # the array's own memory: no copy of it (``tobytes`` made one per array)
    fh.flush()


def _bytes_of(a: np.ndarray) -> memoryview:
    """A C-contiguous array's memory as bytes, without copying (any dtype, bfloat16's included; writable if the
    array is)."""
    return a.reshape(-1).view(np.uint8).data


def _read_exact(fh: BinaryIO, n: int) -> bytes:
    parts, left = [], n
    while left:
        chunk = fh.read(left)
        if not chunk:
            raise ProtocolError(f"message cut short ({n - left} of {n} bytes)")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _meta(m: object) -> tuple[np.dtype, tuple[int, ...], int]:
    if not isinstance(m, dict) or m.get("dtype") not in DTYPES:
        raise ProtocolError(f"array of a dtype that is not allowed: {str(m)[:80]}")
    shape = m.get("shape")
    if not (isinstance(shape, list) and len(shape) <= MAX_DIMS
            and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40 for d in shape)):
        raise ProtocolError(f"bad array shape: {str(shape)[:80]}")
    dtype = np.dtype(m["dtype"])
    return dtype, tuple(shape), math.prod(shape) * dtype.itemsize


def read_message(fh: BinaryIO, budget: list[int]) -> tuple[dict, list[np.ndarray]] | None:
    """The next message, or None at a clean end of stream.  ``budget`` ([bytes left]) caps every byte read
    (headers and arrays): what the other side sends cannot make this process hold more than it allowed."""
    first = fh.read(len(MAGIC))
    if not first:
        return None
    magic = first + (_read_exact(fh, len(MAGIC) - len(first)) if len(first) < len(MAGIC) else b"")
    if magic != MAGIC:
        raise ProtocolError("stream does not start with a message")
    (size,) = struct.unpack("<Q", _read_exact(fh, 8))
    if size > MAX_HEADER:
        raise ProtocolError(f"header of {size} bytes")
    if size > budget[0]:
        raise ProtocolError("more data than allowed")
    budget[0] -= size
    blob = _read_exact(fh, size)  # (outside the try: a stream cut short is not "not JSON")
    try:
        header = json.loads(blob)
    except (ValueError, RecursionError) as err:
        raise ProtocolError(f"header is not JSON ({type(err).__name__})") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
        raise ProtocolError("header is not a message header")
    arrays = []
    for m in header.pop("arrays"):
        dtype, shape, nbytes = _meta(m)
        (declared,) = struct.unpack("<Q", _read_exact(fh, 8))
        if declared != nbytes:
            raise ProtocolError(f"array of shape {list(shape)} {dtype} declared {declared} bytes")
        if nbytes > budget[0]:
            raise ProtocolError("more array data than allowed")
        budget[0] -= nbytes
        arrays.append(_read_array(fh, dtype, shape, nbytes))
    return header, arrays


def _read_array(fh: BinaryIO, dtype: np.dtype, shape: tuple[int, ...], nbytes: int) -> np.ndarray:
    """``nbytes`` from ``fh`` straight into a new array of ``dtype`` and ``shape`` (allowed by the caller's budget):
    one copy out of the pipe, where reading a bytes object and copying it into an array made two."""
    out = np.empty(shape, dtype=dtype)
    view, got = _bytes_of(out), 0
    while got < nbytes:
        n = fh.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            raise ProtocolError(f"message cut short ({got} of {nbytes} bytes)")
        got += n
    return out
