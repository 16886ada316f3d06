"""The operands of a call as typed records: what a kind of operand is, and the registry of kinds.

An NKI call's arguments are recorded as operands: plain ``None``, ``bool``, ``int``, finite ``float`` and ``str``
values as they are, and every other kind of value as a frozen record of one of the classes in ``program.kinds``
(a tensor by its program id, an access pattern of index expressions over loop ids, a mask predicate, a dtype, a
buffer...).  Each kind is one class, registered with ``@kind``, that says in one place

- ``tag``/``json``/``parse``: its JSON form (``{tag: ...}``), and the parser that types and bounds every field of
  it in a program from outside (``ProgramError`` for anything else, never another exception);
- ``encodes``/``encode``: which live values it records (``Encoder.value`` finds the kind by the value's class);
- ``check``: what ``program.validate`` checks of it in its place in a program (tensors made, loops running);
- ``tensors``: the tensor ids it names (the program's last uses, the recorder's checks);
- ``decode``: the live value the executor passes the op (``Decoder.value``);
- ``plan``: the same, split into what is fixed for a loop body and what is made afresh each run (``program.plan``).

A new kind of operand is one more class in ``program.kinds`` (or in a module of its own imported by
``program/kinds/__init__.py``): nothing else dispatches on kinds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, Union

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.buffers import Buffer, Space
from nkisim.program.limits import (
    MAX_DEPTH,
    MAX_NAME,
    integer,
    need,
    text,
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
SCALAR_DTYPES = DTYPES | {"int64", "uint64", "float64"}


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
    #: its JSON form is a JSON list rather than an object (one kind has it: a Python list)
    list_form: ClassVar[bool] = False

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
#: the kind whose JSON form is a list
LISTS: list[type[Kind]] = []


def kind(cls: type[Kind]) -> type[Kind]:
    """Register a kind: its JSON tag, the live classes it encodes."""
    if cls.tag:
        assert cls.tag not in PARSERS, f"two kinds with the JSON tag {cls.tag!r}"
        PARSERS[cls.tag] = cls.parse
    if cls.list_form:
        assert not LISTS, "two kinds whose JSON form is a list"
        LISTS.append(cls)
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
        return LISTS[0].parse(raw, depth)
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
