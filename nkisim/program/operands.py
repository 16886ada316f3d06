"""The operands of a call as typed records: one class per kind, holding everything about that kind.

An NKI call's arguments are recorded as operands: plain ``None``, ``bool``, ``int``, finite ``float`` and ``str``
values as they are, and every other kind of value as a frozen record of one of the classes below and in
``program.indexing`` (a tensor by its program id, an access pattern of index expressions over loop ids, a mask
predicate, a dtype, a buffer...).  Each kind is one class, registered with ``@kind``, that says in one place

- ``tag``/``json``/``parse``: its JSON form (``{tag: ...}``), and the parser that types and bounds every field of
  it in a program from outside (``ProgramError`` for anything else, never another exception);
- ``encodes``/``encode``: which live values it records (``Encoder.value`` finds the kind by the value's class);
- ``check``: what ``program.validate`` checks of it in its place in a program (tensors made, loops running);
- ``tensors``: the tensor ids it names (the program's last uses, the recorder's checks);
- ``decode``: the live value the executor passes the op (``Decoder.value``);
- ``plan``: the same, split into what is fixed for a loop body and what is made afresh each run (``program.plan``).

A new kind of operand is one more class here (or in a module of its own imported by ``program.encode``): nothing
else dispatches on kinds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Union

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.buffers import Buffer, ModAlloc, Space
from nkisim.core.indexing import DynSlice
from nkisim.ops.creation import par_dim
from nkisim.ops.optable import is_operator, op_name
from nkisim.program.limits import (
    MAX_DEPTH,
    MAX_NAME,
    RecordError,
    integer,
    integers,
    need,
    text,
    text_ok,
)

#: a recorded operand: a plain value or a record of one of the kinds
Operand = Union[None, bool, int, float, str, "Kind"]
#: (True, value): the operand is this very value every run; (False, getter): ``getter()`` makes it each run
Part = tuple[bool, Any]
Getter = Callable[[], Any]
#: the classes of operands that are plain values
PLAIN = frozenset({type(None), bool, int, float, str})
#: dtypes an array constant may have: a tile's (tfloat32 is a float32 array), index grids' int64, host float64
ARRAY_DTYPES = tuple(dt.name(d) for d in dt.SUPPORTED if d is not dt.tfloat32) + ("int64", "float64")
#: dtypes a tile may have (``{"dtype": name}``)
DTYPES = frozenset(dt.name(d) for d in dt.SUPPORTED)
#: dtypes of a NumPy scalar argument (``{"np": dtype, "v": number}``): a tile's, or a host integer or double
SCALAR_DTYPES = DTYPES | {"int64", "float64"}


# --- what a kind's methods are handed ------------------------------------------------------------------------
class Encoding(Protocol):
    """What ``Kind.encode`` records into (``program.encode.Encoder``)."""

    frozen: set[Any]

    def value(self, x: Any) -> Operand: ...

    def tensor(self, t: Any) -> int: ...

    def loop(self, loop: Any) -> int: ...

    def array(self, a: np.ndarray) -> int: ...


class Decoding(Protocol):
    """What ``Kind.decode`` reads live values from (``program.encode.Decoder``)."""

    tensors: dict[int, Any]
    loops: dict[int, Any]

    def value(self, x: Operand) -> Any: ...

    def tensor(self, pid: int) -> Any: ...

    def array(self, k: int) -> np.ndarray: ...

    def buffer(self, space: Space) -> Buffer: ...


class Planning(Protocol):
    """What ``Kind.plan`` builds with (``program.plan.Compiler``)."""

    rebinders: list[Callable[[], None]]

    @property
    def dec(self) -> Decoding: ...

    def value(self, x: Operand) -> Part: ...

    def tensor(self, pid: int, whole: bool = False) -> Getter: ...

    def affine(self, x: Any) -> Any: ...

    def note(self, x: Any) -> None: ...


class Scope(Protocol):
    """What ``Kind.check`` checks against (``program.validate``): the program at the operand's place in it."""

    arrays: tuple[Any, ...]

    def value(self, x: Operand, depth: int) -> None: ...

    def tensor(self, pid: int) -> None: ...

    def loop(self, lid: int) -> None: ...

    def array(self, k: int) -> Any: ...

    def fail(self, what: str) -> None: ...


# --- the registry --------------------------------------------------------------------------------------------
class Kind:
    """A kind of operand (see the module docstring).  Subclasses are frozen slotted dataclasses."""

    __slots__ = ()
    #: the key of its JSON object (``{tag: ..., ...}``); empty for kinds with no JSON object of their own
    tag: ClassVar[str] = ""
    #: the live classes it records (``isinstance``; with ``exact``, only those very classes)
    encodes: ClassVar[tuple[type, ...]] = ()
    exact: ClassVar[bool] = False
    #: the order in which kinds try a value whose class is not one they name exactly (lower first)
    rank: ClassVar[int] = 50

    def json(self) -> Any:
        raise NotImplementedError

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        raise NotImplementedError

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        raise NotImplementedError

    @classmethod
    def matches(cls, x: Any) -> bool:
        """Whether it records ``x`` (a value whose class the table of exact classes does not hold)."""
        return not cls.exact and bool(cls.encodes) and isinstance(x, cls.encodes)

    def check(self, scope: Scope, depth: int) -> None:
        """What the validator checks of the operand in its place (nothing for constants)."""

    def tensors(self, out: set[int]) -> None:
        """Add the tensor ids it names to ``out``."""

    def decode(self, dec: Decoding) -> Any:
        raise NotImplementedError

    def plan(self, comp: Planning) -> Part:
        """Default: an immutable value, decoded once for every run."""
        return True, self.decode(comp.dec)


#: JSON tag -> the parser of its kind
PARSERS: dict[str, Callable[[dict[str, Any], int], Operand]] = {}
#: live class -> the encoder of the kind that records it (exact classes: one lookup per operand)
ENCODERS: dict[type, Callable[[Any, Encoding], Operand]] = {}
#: kinds that may record values of other classes, in the order they are tried
FALLBACKS: list[type[Kind]] = []


def kind(cls: type[Kind]) -> type[Kind]:
    """Register a kind: its JSON tag, the live classes it encodes."""
    if cls.tag:
        assert cls.tag not in PARSERS, f"two kinds with the JSON tag {cls.tag!r}"
        PARSERS[cls.tag] = cls.parse
    for c in cls.encodes:
        ENCODERS.setdefault(c, cls.encode)
    if not cls.exact and (cls.encodes or cls.matches.__func__ is not Kind.matches.__func__):  # type: ignore[attr-defined]
        FALLBACKS.append(cls)
        FALLBACKS.sort(key=lambda k: k.rank)
    return cls


def parse_operand(raw: Any, depth: int = 0) -> Operand:
    """An operand from its JSON form, every field typed and bounded (``ProgramError`` otherwise)."""
    cls = raw.__class__
    if raw is None or cls is bool:
        return raw
    if cls is int:
        return integer(raw, "an integer argument")
    if cls is float:
        need(math.isfinite(raw), "a float argument must be finite (else {'float': word})")
        return raw
    if cls is str:
        return text(raw, "a string argument")
    need(depth < MAX_DEPTH, f"operands nest at most {MAX_DEPTH} deep")
    if cls is list:
        return ListOf(tuple(parse_operand(v, depth + 1) for v in raw))
    need(cls is dict and bool(raw), "an operand is a value, a list or an object naming its kind")
    tag = next(iter(raw))
    parser = PARSERS.get(tag)
    need(parser is not None, f"unknown operand kind {text(tag, 'an operand kind', MAX_NAME)!r}")
    return parser(raw, depth)  # type: ignore[misc]


_FIELDS: dict[tuple[str, ...], frozenset[str]] = {}


def fields(raw: dict[str, Any], *names: str) -> None:
    """The JSON object of a kind has exactly these fields."""
    want = _FIELDS.get(names)
    if want is None:
        want = _FIELDS[names] = frozenset(names)
    if raw.keys() != want:
        need(False, f"operand {next(iter(raw))!r} has exactly the fields {list(names)}")


def operand_json(x: Operand) -> Any:
    return x if x.__class__ in PLAIN else x.json()  # type: ignore[union-attr]


def operand_tensors(x: Operand, out: set[int]) -> set[int]:
    """The tensor ids an operand names, added to ``out``."""
    if x.__class__ not in PLAIN:
        x.tensors(out)  # type: ignore[union-attr]
    return out


def getter(part: Part) -> Getter:
    const, v = part
    if const:
        return lambda: v
    return v


def plain(x: Any) -> Operand:
    """A plain value as an operand: a string only if it may be recorded (``limits.text``), a float as itself if
    finite."""
    if x.__class__ is str and not text_ok(x):
        raise RecordError("a string argument must be at most 4096 printable characters on one line to be recorded")
    if x.__class__ is float and not math.isfinite(x):
        return Float("nan" if x != x else ("inf" if x > 0 else "-inf"))
    return x


# --- containers ----------------------------------------------------------------------------------------------
@kind
@dataclass(frozen=True, slots=True)
class ListOf(Kind):
    """A Python list argument (``axis=[1]``): its JSON form is the list of its items."""

    items: tuple[Operand, ...]
    encodes = (list,)
    exact = True

    def json(self) -> Any:
        return [operand_json(v) for v in self.items]

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(tuple(enc.value(v) for v in x))

    def check(self, scope: Scope, depth: int) -> None:
        for v in self.items:
            scope.value(v, depth + 1)

    def tensors(self, out: set[int]) -> None:
        for v in self.items:
            operand_tensors(v, out)

    def decode(self, dec: Decoding) -> Any:
        return [dec.value(v) for v in self.items]

    def plan(self, comp: Planning) -> Part:
        parts = [comp.value(v) for v in self.items]
        if all(c for c, _ in parts):  # a fresh list each run, of values shared as the decoder's would be
            return False, functools.partial(list, tuple(v for _, v in parts))
        getters = [getter(p) for p in parts]
        return False, lambda: [g() for g in getters]


@kind
@dataclass(frozen=True, slots=True)
class TupleOf(Kind):
    """A tuple argument (a shape): ``{"tuple": [item, ...]}``."""

    items: tuple[Operand, ...]
    tag = "tuple"
    encodes = (tuple,)
    exact = True

    def json(self) -> Any:
        return {"tuple": [operand_json(v) for v in self.items]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "tuple")
        need(isinstance(raw["tuple"], list), "a tuple holds a list")
        return cls(tuple(parse_operand(v, depth + 1) for v in raw["tuple"]))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(tuple(enc.value(v) for v in x))

    def check(self, scope: Scope, depth: int) -> None:
        for v in self.items:
            scope.value(v, depth + 1)

    def tensors(self, out: set[int]) -> None:
        for v in self.items:
            operand_tensors(v, out)

    def decode(self, dec: Decoding) -> Any:
        return tuple(dec.value(v) for v in self.items)

    def plan(self, comp: Planning) -> Part:
        parts = [comp.value(v) for v in self.items]
        if all(c for c, _ in parts):
            return True, tuple(v for _, v in parts)
        getters = [getter(p) for p in parts]
        return False, lambda: tuple([g() for g in getters])


@kind
@dataclass(frozen=True, slots=True)
class DictOf(Kind):
    """A dict argument with string keys: ``{"dict": [[key, value], ...]}``."""

    items: tuple[tuple[str, Operand], ...]
    tag = "dict"
    encodes = (dict,)
    exact = True

    def json(self) -> Any:
        return {"dict": [[k, operand_json(v)] for k, v in self.items]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "dict")
        items = raw["dict"]
        need(isinstance(items, list) and all(isinstance(p, list) and len(p) == 2 for p in items),
             "a dict holds [key, value] pairs")
        return cls(tuple((text(k, "a dict key", MAX_NAME), parse_operand(v, depth + 1)) for k, v in items))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        if not all(k.__class__ is str and text_ok(k, MAX_NAME) for k in x):
            raise RecordError("a dict argument can be recorded only with short one-line string keys")
        return cls(tuple((k, enc.value(v)) for k, v in x.items()))

    def check(self, scope: Scope, depth: int) -> None:
        for _, v in self.items:
            scope.value(v, depth + 1)

    def tensors(self, out: set[int]) -> None:
        for _, v in self.items:
            operand_tensors(v, out)

    def decode(self, dec: Decoding) -> Any:
        return {k: dec.value(v) for k, v in self.items}

    def plan(self, comp: Planning) -> Part:
        kgetters = [(k, getter(comp.value(v))) for k, v in self.items]
        return False, lambda: {k: g() for k, g in kgetters}


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
class SliceOf(Kind):
    """A raw ``slice`` argument: ``{"slice": [start, stop, step]}``."""

    start: Operand
    stop: Operand
    step: Operand
    tag = "slice"
    encodes = (slice,)
    exact = True

    def json(self) -> Any:
        return {"slice": [operand_json(self.start), operand_json(self.stop), operand_json(self.step)]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "slice")
        need(isinstance(raw["slice"], list) and len(raw["slice"]) == 3, "a slice has three parts")
        start, stop, step = (parse_operand(v, depth + 1) for v in raw["slice"])
        return cls(start, stop, step)

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(enc.value(x.start), enc.value(x.stop), enc.value(x.step))

    def check(self, scope: Scope, depth: int) -> None:
        for v in (self.start, self.stop, self.step):
            scope.value(v, depth + 1)

    def tensors(self, out: set[int]) -> None:
        for v in (self.start, self.stop, self.step):
            operand_tensors(v, out)

    def decode(self, dec: Decoding) -> Any:
        return slice(dec.value(self.start), dec.value(self.stop), dec.value(self.step))

    def plan(self, comp: Planning) -> Part:
        parts = [comp.value(v) for v in (self.start, self.stop, self.step)]
        if all(c for c, _ in parts):
            return True, slice(*(v for _, v in parts))
        getters = [getter(p) for p in parts]
        return False, lambda: slice(*[g() for g in getters])


@kind
@dataclass(frozen=True, slots=True)
class DynSliceOf(Kind):
    """``nl.ds(start, size)``: ``{"ds": [start, size]}``."""

    start: Operand
    size: int
    tag = "ds"
    encodes = (DynSlice,)
    exact = True

    def json(self) -> Any:
        return {"ds": [operand_json(self.start), self.size]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "ds")
        need(isinstance(raw["ds"], list) and len(raw["ds"]) == 2, "nl.ds has a start and a size")
        return cls(parse_operand(raw["ds"][0], depth + 1), integer(raw["ds"][1], "an nl.ds size"))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(enc.value(x.start), int(x.size))

    def check(self, scope: Scope, depth: int) -> None:
        scope.value(self.start, depth + 1)

    def tensors(self, out: set[int]) -> None:
        operand_tensors(self.start, out)

    def decode(self, dec: Decoding) -> Any:
        return DynSlice(dec.value(self.start), self.size)

    def plan(self, comp: Planning) -> Part:
        start, size = getter(comp.value(self.start)), self.size
        return False, lambda: DynSlice(start(), size)


@kind
@dataclass(frozen=True, slots=True)
class EllipsisOf(Kind):
    """``...`` as an argument: ``{"ellipsis": 1}``."""

    tag = "ellipsis"
    encodes = (type(Ellipsis),)
    exact = True

    def json(self) -> Any:
        return {"ellipsis": 1}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "ellipsis")
        need(raw["ellipsis"] == 1, "an ellipsis is {'ellipsis': 1}")
        return cls()

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls()

    def decode(self, dec: Decoding) -> Any:
        return Ellipsis


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
        name = dt.name(dt.normalize(x))
        if name not in DTYPES:
            raise RecordError(f"dtype {name} is not an NKI dtype")
        return cls(name)

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
        name = dt.name(dt.normalize(x.dtype))
        if name not in SCALAR_DTYPES:
            raise RecordError(f"a NumPy scalar of dtype {name} cannot be recorded")
        return cls(name, plain(x.item()))

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


@dataclass(frozen=True, slots=True)
class Alloc:
    """A direct allocation (``ncc.sbuf.mod_alloc``) of a buffer argument."""

    space: Space
    base_addr: int
    base_partition: int
    par_tiles: tuple[int, ...]
    free_tiles: tuple[int, ...]
    base_bank: int | None

    def json(self) -> Any:
        return [self.space.value, self.base_addr, self.base_partition, list(self.par_tiles), list(self.free_tiles),
                self.base_bank]

    @classmethod
    def parse(cls, raw: Any) -> Alloc:
        need(isinstance(raw, list) and len(raw) == 6 and raw[0] in (Space.SBUF.value, Space.PSUM.value),
             "a direct allocation is [sbuf|psum, base_addr, base_partition, [par tiles], [free tiles], base_bank]")
        return cls(Space(raw[0]), integer(raw[1], "a base address"), integer(raw[2], "a base partition"),
                   integers(raw[3], "tile counts"), integers(raw[4], "tile counts"),
                   None if raw[5] is None else integer(raw[5], "a base bank"))

    def live(self) -> ModAlloc:
        return ModAlloc(self.space.value, self.base_addr, self.base_partition, self.par_tiles, self.free_tiles,
                        self.base_bank)


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
                                             None if a.base_bank is None else int(a.base_bank))
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

