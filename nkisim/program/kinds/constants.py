"""Operand kinds that are constants: non-finite floats, ``par_dim``, dtypes, NumPy scalars and arrays, operators and
buffers.

Each kind is one class with its whole table (JSON, parser, encoder, check, tensor ids, decoder, plan); see
``program.operands``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.buffers import Buffer, ModAlloc, Space
from nkisim.ops.creation import par_dim
from nkisim.ops.optable import is_operator, op_name
from nkisim.program.limits import MAX_NAME, RecordError, integer, integers, need, text, text_ok
from nkisim.program.operands import (
    DTYPES,
    SCALAR_DTYPES,
    Decoding,
    Encoding,
    Kind,
    Operand,
    Part,
    Planning,
    Scope,
    fields,
    kind,
    operand_json,
    parse_operand,
)

# --- constants -----------------------------------------------------------------------------------------------
_FLOAT_WORDS = ("nan", "inf", "-inf")


@kind
@dataclass(frozen=True, slots=True)
class Float(Kind):
    """A float JSON cannot hold: ``{"float": "nan" | "inf" | "-inf"}``."""

    word: str
    tag = "float"

    def json(self) -> Any:
        return {"float": self.word}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "float")
        need(isinstance(raw["float"], str) and raw["float"] in _FLOAT_WORDS, "float words are nan, inf and -inf")
        return cls(raw["float"])

    def decode(self, dec: Decoding) -> Any:
        return float(self.word)


@kind
@dataclass(frozen=True, slots=True)
class ParDim(Kind):
    """``nl.par_dim(n)`` in a shape: ``{"par_dim": n}``."""

    size: int
    tag = "par_dim"
    encodes = (par_dim,)
    rank = 10  # before the plain integers it subclasses

    def json(self) -> Any:
        return {"par_dim": self.size}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "par_dim")
        return cls(integer(raw["par_dim"], "a par_dim"))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(int(x))

    def decode(self, dec: Decoding) -> Any:
        return par_dim(self.size)


@kind
@dataclass(frozen=True, slots=True)
class DType(Kind):
    """A dtype argument (``nl.float32``, ``np.float32``): ``{"dtype": name}``."""

    name: str
    tag = "dtype"
    encodes = (np.dtype,)
    rank = 80

    def json(self) -> Any:
        return {"dtype": self.name}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "dtype")
        need(isinstance(raw["dtype"], str) and raw["dtype"] in DTYPES, f"unknown dtype {text(raw['dtype'], 'a dtype', MAX_NAME)!r}")
        return cls(raw["dtype"])

    @classmethod
    def matches(cls, x: Any) -> bool:
        return isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        """Any dtype is recorded (the op refuses one NKI has not, with the compiler's error); a program's parser
        accepts NKI's only, as no op accepts another."""
        return cls(dt.name(dt.normalize(x)))

    def decode(self, dec: Decoding) -> Any:
        return dt.normalize(self.name)


@kind
@dataclass(frozen=True, slots=True)
class NpScalar(Kind):
    """A NumPy scalar argument: ``{"np": dtype, "v": number}`` (the dtype kept: it decides type promotion)."""

    dtype: str
    value: Operand
    tag = "np"
    encodes = (np.generic,)
    rank = 70

    def json(self) -> Any:
        return {"np": self.dtype, "v": operand_json(self.value)}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "np", "v")
        need(isinstance(raw["np"], str) and raw["np"] in SCALAR_DTYPES, f"unknown dtype {text(raw['np'], 'a dtype', MAX_NAME)!r}")
        v = raw["v"]
        need(type(v) in (int, float, bool) or (isinstance(v, dict) and list(v) == ["float"]),
             "a NumPy scalar holds a number")
        return cls(raw["np"], parse_operand(v, depth + 1))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(dt.name(dt.normalize(x.dtype)), plain(x.item()))  # (as a dtype: the parser bounds it)

    def decode(self, dec: Decoding) -> Any:
        v = dec.value(self.value)
        if self.dtype == "bfloat16":
            return np.asarray(v, dtype=dt.normalize(self.dtype))[()]
        return dt.normalize(self.dtype).type(v)


@kind
@dataclass(frozen=True, slots=True)
class ArrayRef(Kind):
    """A NumPy array argument, by its place in the program's table of constant arrays: ``{"arr": k}``."""

    index: int
    tag = "arr"
    encodes = (np.ndarray,)
    rank = 60

    def json(self) -> Any:
        return {"arr": self.index}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "arr")
        return cls(integer(raw["arr"], "an array number", 0))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        if x.ndim == 0:  # a 0-d array is a scalar
            return NpScalar.encode(x[()] if isinstance(x[()], np.generic) else x.dtype.type(x[()]), enc)
        return cls(enc.array(x))

    def check(self, scope: Scope, depth: int) -> None:
        scope.array(self.index)

    def decode(self, dec: Decoding) -> Any:
        return dec.array(self.index).copy()

    def plan(self, comp: Planning) -> Part:
        return False, comp.dec.array(self.index).copy


@kind
@dataclass(frozen=True, slots=True)
class Fn(Kind):
    """An ALU operator or activation function argument (``op=np.add``, ``nl.exp``), by its op-table name."""

    name: str
    tag = "fn"
    rank = 95

    def json(self) -> Any:
        return {"fn": self.name}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "fn")
        name = text(raw["fn"], "an operator", MAX_NAME)
        need(is_operator(name), f"unknown operator {name!r}")
        return cls(name)

    @classmethod
    def matches(cls, x: Any) -> bool:
        return callable(x) and is_operator(op_name(x))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(op_name(x))

    def decode(self, dec: Decoding) -> Any:
        return self.name  # the ops take an operator by its op-table name

#: the largest tile step a program may give a direct allocation: a cap on hostile input, not a hardware number
#: (a placement past the memory is refused when the tensor is placed, core.physical.check)
MAX_TILE_STEP = 1 << 20


@dataclass(frozen=True, slots=True)
class Alloc:
    """A direct allocation (``ncc.sbuf.mod_alloc``) of a buffer argument."""

    space: Space
    base_addr: int
    base_partition: int
    par_tiles: tuple[int, ...]
    free_tiles: tuple[int, ...]
    base_bank: int | None
    #: per block dimension, the step in tiles (SBUF) or banks (PSUM) an allocation function spaced its blocks
    #: by, where that is not mod_alloc's C order; empty otherwise (and then left out of the JSON)
    tile_steps: tuple[int, ...] = ()

    def json(self) -> Any:
        raw = [self.space.value, self.base_addr, self.base_partition, list(self.par_tiles), list(self.free_tiles),
               self.base_bank]
        return raw + [list(self.tile_steps)] if self.tile_steps else raw

    @classmethod
    def parse(cls, raw: Any) -> Alloc:
        need(isinstance(raw, list) and len(raw) in (6, 7) and raw[0] in (Space.SBUF.value, Space.PSUM.value),
             "a direct allocation is [sbuf|psum, base_addr, base_partition, [par tiles], [free tiles], base_bank] "
             "and, for blocks an allocation function spaced, [tile steps]")
        steps = integers(raw[6], "tile steps", 0, MAX_TILE_STEP) if len(raw) == 7 else ()
        need(len(raw) == 6 or any(steps), "tile steps, when given, must not all be 0")
        return cls(Space(raw[0]), integer(raw[1], "a base address"), integer(raw[2], "a base partition"),
                   integers(raw[3], "tile counts"), integers(raw[4], "tile counts"),
                   None if raw[5] is None else integer(raw[5], "a base bank"), steps)

    def live(self) -> ModAlloc:
        return ModAlloc(self.space.value, self.base_addr, self.base_partition, self.par_tiles, self.free_tiles,
                        self.base_bank, self.tile_steps)


@kind
@dataclass(frozen=True, slots=True)
class Buf(Kind):
    """A buffer argument (``nl.sbuf``, a ``mod_alloc``): ``{"buf": space, "alloc": null | [...]}``."""

    space: Space
    alloc: Alloc | None
    tag = "buf"
    encodes = (Buffer,)

    def json(self) -> Any:
        return {"buf": self.space.value, "alloc": None if self.alloc is None else self.alloc.json()}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "buf", "alloc")
        space = raw["buf"]
        need(isinstance(space, str) and space in Space._value2member_map_,
             f"unknown memory space {text(space, 'a memory space', MAX_NAME)!r}")
        return cls(Space(space), None if raw["alloc"] is None else Alloc.parse(raw["alloc"]))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        a = x.alloc
        alloc = None if a is None else Alloc(Space(a.space), int(a.base_addr), int(a.base_partition),
                                             tuple(int(v) for v in a.num_par_tiles),
                                             tuple(int(v) for v in a.num_free_tiles),
                                             None if a.base_bank is None else int(a.base_bank),
                                             tuple(int(v) for v in a.tile_steps))
        return cls(Space(x.space), alloc)

    def decode(self, dec: Decoding) -> Any:
        if self.alloc is None:
            return dec.buffer(self.space)
        return Buffer(self.space.value, self.alloc.live())

    def plan(self, comp: Planning) -> Part:
        if self.alloc is None:
            return True, comp.dec.buffer(self.space)
        space, alloc = self.space.value, self.alloc
        return False, lambda: Buffer(space, alloc.live())


class Subclassed(Kind):
    """Integer, bool and float values of subclasses (``nisa.engine`` and other ``IntEnum``s): their plain value.
    Not a record: it only encodes."""

    __slots__ = ()
    rank = 90

    @classmethod
    def matches(cls, x: Any) -> bool:
        return isinstance(x, (int, float))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        if isinstance(x, bool):
            return bool(x)
        if isinstance(x, int):
            return int(x)
        return plain(float(x))


kind(Subclassed)


def plain(x: Any) -> Operand:
    """A plain value as an operand: a string only if it may be recorded (``limits.text``), a float as itself if
    finite."""
    if x.__class__ is str and not text_ok(x):
        raise RecordError("a string argument must be at most 4096 printable characters on one line to be recorded")
    if x.__class__ is float and not math.isfinite(x):
        return Float("nan" if x != x else ("inf" if x > 0 else "-inf"))
    return x
