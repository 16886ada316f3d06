"""``nkilab.isolate._io``: the framed messages grading children send back over a pipe. The parent reads them as hostile
data, so every malformed stream must end in ``ProtocolError`` (never a crash, a hang or an oversized allocation),
and every well-formed one must come back bit for bit."""

from __future__ import annotations

import io
import json
import struct

import ml_dtypes
import numpy as np
import pytest

from nkilab.isolate._io import DTYPES, MAGIC, MAX_DIMS, MAX_HEADER, ProtocolError, read_message, write_message


def framed(header: dict, arrays: list[np.ndarray] = ()) -> bytes:  # type: ignore[assignment]
    buf = io.BytesIO()
    write_message(buf, header, list(arrays))
    return buf.getvalue()


def raw(header: object, tail: bytes = b"") -> bytes:
    """A message built by hand: MAGIC, the JSON header's length and bytes, then ``tail``."""
    blob = json.dumps(header).encode()
    return MAGIC + struct.pack("<Q", len(blob)) + blob + tail


def read(data: bytes, budget: int = 1 << 30):
    return read_message(io.BytesIO(data), [budget])


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_allowed_dtype_round_trips_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    a = np.frombuffer(rng.bytes(np.dtype(dtype).itemsize * 6), dtype=dtype).reshape(2, 3)
    header, [back] = read(framed({"kind": "result", "n": 1}, [a]))
    assert header == {"kind": "result", "n": 1}
    assert back.dtype == a.dtype and back.shape == a.shape
    assert back.tobytes() == a.tobytes()  # NaN payloads and bfloat16 bits included


@pytest.mark.parametrize("make", [lambda: np.full((1, 1), 2.5, np.float32),  # one element
                                  lambda: np.zeros((0, 5), ml_dtypes.bfloat16),  # no elements
                                  lambda: np.arange(24, dtype=np.int16).reshape(4, 6)[:, ::2],  # not contiguous
                                  lambda: np.arange(12, dtype=np.float64).reshape(3, 4).T])  # Fortran order
def test_any_shape_and_layout_round_trips(make):
    a = make()
    _, [back] = read(framed({}, [a]))
    assert back.dtype == a.dtype and back.shape == a.shape and np.array_equal(back, a)


class _Trickle(io.BytesIO):
    """A pipe that hands over at most 7 bytes per read, as a pipe may."""

    def read(self, n: int = -1) -> bytes:
        return super().read(7 if n is None or n < 0 else min(n, 7))

    def readinto(self, b) -> int:  # type: ignore[override]
        return super().readinto(memoryview(b)[:7])


def test_arrays_arrive_whole_from_short_reads():
    a = np.arange(100, dtype=np.float32).reshape(10, 10)
    _, arrays = read_message(_Trickle(framed({}, [a, a[:3]])), [1 << 20])
    assert np.array_equal(arrays[0], a) and np.array_equal(arrays[1], a[:3])
    with pytest.raises(ProtocolError, match="cut short"):
        read_message(_Trickle(framed({}, [a])[:-5]), [1 << 20])


def test_several_messages_and_a_clean_end():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((4,), dtype=ml_dtypes.bfloat16)
    stream = io.BytesIO(framed({"i": 0}, [a, b]) + framed({"i": 1}) + framed({"i": 2}, [a.T]))
    budget = [1 << 20]
    first = read_message(stream, budget)
    assert first[0] == {"i": 0} and np.array_equal(first[1][0], a) and first[1][1].dtype == b.dtype
    assert read_message(stream, budget) == ({"i": 1}, [])
    _, [t] = read_message(stream, budget)
    assert np.array_equal(t, a.T)  # a non-contiguous array is sent as its values
    assert read_message(stream, budget) is None  # end of stream between messages: not an error


def test_arrays_come_back_writable_and_owning_their_memory():
    _, [back] = read(framed({}, [np.zeros((3,), np.int32)]))
    back[0] = 7  # a view of the read buffer would be read-only
    assert back.flags.writeable and back.flags.owndata


def test_the_budget_counts_headers_and_arrays():
    msg = framed({"pad": "x" * 100}, [np.zeros((1000,), np.float32)])
    budget = [len(msg)]
    read_message(io.BytesIO(msg), budget)
    assert 0 <= budget[0] < 100  # everything but the framing was charged
    with pytest.raises(ProtocolError, match="more array data than allowed"):
        read(msg, budget=3000)  # the header fits, the 4000 array bytes do not
    with pytest.raises(ProtocolError, match="more data than allowed"):
        read(msg, budget=50)  # not even the header


@pytest.mark.parametrize(("data", "words"), [
    (b"NKL", "cut short"),  # a partial magic
    (b"XXXX" + b"\0" * 8, "does not start with a message"),
    (MAGIC + struct.pack("<Q", MAX_HEADER + 1), "header of"),
    (MAGIC + struct.pack("<Q", 10) + b"{", "cut short"),
    (MAGIC + struct.pack("<Q", 3) + b"{x}", "not JSON"),
    (MAGIC + struct.pack("<Q", 1000) + b"[" * 1000, "not JSON"),  # nesting deep enough to hit the recursion limit
    (raw([1, 2]), "not a message header"),
    (raw({"kind": "x"}), "not a message header"),  # no "arrays" list
    (raw({"arrays": "none"}), "not a message header"),
    (raw({"arrays": [{"dtype": "object", "shape": [1]}]}), "not allowed"),
    (raw({"arrays": [{"dtype": "complex64", "shape": [1]}]}), "not allowed"),
    (raw({"arrays": ["float32"]}), "not allowed"),
    (raw({"arrays": [{"dtype": "float32", "shape": [-1]}]}), "bad array shape"),
    (raw({"arrays": [{"dtype": "float32", "shape": [True]}]}), "bad array shape"),
    (raw({"arrays": [{"dtype": "float32", "shape": [1.5]}]}), "bad array shape"),
    (raw({"arrays": [{"dtype": "float32", "shape": [2**40]}]}), "bad array shape"),
    (raw({"arrays": [{"dtype": "float32", "shape": [1] * (MAX_DIMS + 1)}]}), "bad array shape"),
    (raw({"arrays": [{"dtype": "float32", "shape": 4}]}), "bad array shape"),
    (raw({"arrays": [{"dtype": "float32", "shape": [2]}]}, struct.pack("<Q", 4) + b"\0" * 4), "declared 4 bytes"),
    (raw({"arrays": [{"dtype": "float32", "shape": [2]}]}, struct.pack("<Q", 8) + b"\0" * 5), "cut short"),
    (raw({"arrays": [{"dtype": "float32", "shape": [2]}]}), "cut short"),  # the array never comes
])
def test_a_malformed_stream_is_a_protocol_error(data, words):
    with pytest.raises(ProtocolError, match=words):
        read(data)


def test_a_huge_declared_array_is_refused_before_any_allocation():
    """A child that declares a terabyte array is stopped by the budget, not by the machine's memory."""
    data = raw({"arrays": [{"dtype": "float64", "shape": [2**20, 2**20]}]}, struct.pack("<Q", 8 * 2**40))
    with pytest.raises(ProtocolError, match="more array data than allowed"):
        read(data, budget=1 << 20)
