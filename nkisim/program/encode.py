"""A call's operands recorded as typed records, and the records decoded back into live values.

The kinds of operand and their JSON forms are in ``program.kinds`` (containers, constants, tensors and accesses,
masks; ``program.operands`` says what a kind holds): each kind is one class that knows how to encode, decode,
plan, check and serialise itself.  This module holds the two tables that kinds are looked up in:
the ``Encoder`` (a recording: tensors and loops by program id, constant arrays) and the ``Decoder`` (the
executor's live tensors and loops).  Nothing else is encodable: a call with any other argument cannot be
recorded (``RecordError``), and a decoder meets only what ``program.validate`` let through.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import buffers
from nkisim.core import dtypes as dt
from nkisim.core.access import Access
from nkisim.core.buffers import Buffer, Space
from nkisim.core.indexing import Affine, Loop
from nkisim.core.tensor import Tensor
from nkisim.program.ir import Array
from nkisim.program.kinds.constants import plain
from nkisim.program.kinds.indexing import Index
from nkisim.program.limits import ProgramError, RecordError
from nkisim.program.operands import ARRAY_DTYPES, ENCODERS, FALLBACKS, PLAIN, Operand

__all__ = ["Decoder", "Encoder", "RecordError", "result_tensors"]


class Encoder:
    """Encodes one recording's operands: tensors by their program id, loops by theirs, arrays into a table."""

    def __init__(self) -> None:
        self.tensor_ids: dict[int, int] = {}  # Tensor.uid -> program id
        self.loop_ids: dict[int, int] = {}  # Loop.uid -> program id
        self.arrays: list[Array] = []
        self._array_ids: dict[tuple[Any, ...], int] = {}
        #: id of a read-only array that owns its data -> (that array, its number): the index grids the front ends
        #: share between the accesses they make of one view (``frontend.v06.adapters.layout``), numbered without
        #: reading their bytes again for every instruction (the array is held, so its id is unique)
        self._frozen_ids: dict[int, tuple[np.ndarray, int]] = {}
        #: loops whose variables an encoded operand holds only as a value frozen at the current iteration
        #: (``i % 2``, a predicate computed by Python): a body that encodes one cannot be traced once
        self.frozen: set[Any] = set()
        #: program id -> tensor, for every tensor with an id below ``seen_below`` encoded while ``seen`` is a dict:
        #: the tensors made before the loops being traced that their bodies read (``runtime.recording``; the tiles a
        #: body makes are not kept, so a loop run iteration by iteration holds no more tiles than the kernel does)
        self.seen: dict[int, Tensor] | None = None
        self.seen_below = 0

    # --- tables --------------------------------------------------------------------------------
    def new_tensor(self, t: Tensor) -> int:
        pid = self.tensor_ids[t.uid] = len(self.tensor_ids)
        if self.seen is not None and pid < self.seen_below:
            self.seen[pid] = t
        return pid

    def tensor(self, t: Tensor) -> int:
        pid = self.tensor_ids.get(t.uid)
        if pid is None:
            raise RecordError(f"tensor `{t.label()}` was not made by an NKI call the program recorded")
        if self.seen is not None and pid < self.seen_below:
            self.seen[pid] = t
        return pid

    def new_loop(self, loop: Loop) -> int:
        lid = self.loop_ids[loop.uid] = len(self.loop_ids)
        return lid

    def loop(self, loop: Loop) -> int:
        lid = self.loop_ids.get(loop.uid)
        if lid is None:
            raise RecordError("an index expression uses a loop the program did not record")
        return lid

    def array(self, a: np.ndarray) -> int:
        hit = self._frozen_ids.get(id(a))
        if hit is not None and hit[0] is a:
            return hit[1]
        frozen = a if a.__class__ is np.ndarray and a.base is None and not a.flags.writeable else None
        a = np.ascontiguousarray(a)
        name = dt.name(dt.normalize(a.dtype)) if a.dtype != np.float64 else "float64"
        if name not in ARRAY_DTYPES:
            raise RecordError(f"an array of dtype {a.dtype} cannot be recorded")
        data = a.tobytes()
        key = (name, a.shape, data)
        k = self._array_ids.get(key)
        if k is None:
            k = self._array_ids[key] = len(self.arrays)
            self.arrays.append(Array(name, tuple(int(s) for s in a.shape), data))
        if frozen is not None:
            self._frozen_ids[id(frozen)] = (frozen, k)
        return k

    # --- values --------------------------------------------------------------------------------
    def value(self, x: Any) -> Operand:
        """``x`` as an operand: a plain value, or the record of the kind that encodes its class."""
        cls = x.__class__
        if cls in PLAIN:
            return plain(x)
        encode = ENCODERS.get(cls)
        if encode is not None:
            return encode(x, self)
        for k in FALLBACKS:
            if k.matches(x):
                return k.encode(x, self)
        raise RecordError(f"an argument of type {type(x).__name__} cannot be recorded into a program")

    def affine(self, a: Affine) -> Index:
        return Index.encode(a, self)


def result_tensors(value: Any, found: list[Tensor] | None = None) -> list[Tensor]:
    """The tensors a call's result holds, in a fixed walk order (tensors, accesses' tensors, sequences)."""
    out = [] if found is None else found
    if isinstance(value, Tensor):
        out.append(value)
    elif isinstance(value, Access):
        out.append(value.tensor)
    elif isinstance(value, (tuple, list)):
        for v in value:
            result_tensors(v, out)
    return out


class Decoder:
    """Decodes operands of a valid program against the executor's live tensors and loops."""

    def __init__(self, arrays: tuple[Array, ...], tensors: dict[int, Tensor], loops: dict[int, Loop]) -> None:
        self.arrays = arrays
        self.tensors = tensors
        self.loops = loops
        self._values: dict[int, np.ndarray] = {}

    def array(self, k: int) -> np.ndarray:
        v = self._values.get(k)
        if v is None:
            v = self._values[k] = self.arrays[k].value()
        return v

    def tensor(self, pid: int) -> Tensor:
        t = self.tensors.get(pid)
        if t is None:
            raise ProgramError(f"invalid program: tensor {pid} is used before any call made it")
        return t

    def buffer(self, space: Space) -> Buffer:
        """A memory space's own buffer (``nl.sbuf``...): the one object the ops compare against."""
        return getattr(buffers, space.value)

    def value(self, x: Operand) -> Any:
        if x.__class__ in PLAIN:
            return x
        return x.decode(self)  # type: ignore[union-attr]

    def affine(self, x: Index) -> Affine:
        return x.decode(self)
