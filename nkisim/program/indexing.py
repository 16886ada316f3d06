"""Operand kinds that name tensors and loops: tensors, accesses, index expressions, dynamic indices and masks.

Each kind is one class with its whole table (JSON, parser, encoder, check, tensor ids, decoder, plan), as in
``program.operands``.  Index expressions name loops by their program ids and arange/mgrid grids by their place
in the program's table of arrays; a mask predicate over index expressions stays symbolic (``Cmp`` and the
``and``/``or``/``not`` of predicates), so a loop body traced once masks every iteration by its own values.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, ClassVar, Union

import numpy as np

from nkisim.core.access import Access
from nkisim.core.dynamic import DynamicIndex
from nkisim.core.indexing import Affine, MaskExpr
from nkisim.core.tensor import Tensor
from nkisim.program.limits import (
    MAX_DIMS,
    MAX_LOOP_DEPTH,
    MAX_NAME,
    MAX_TENSORS,
    RecordError,
    flag,
    integer,
    need,
    text,
    text_ok,
)
from nkisim.program.operands import (
    Decoding,
    Encoding,
    Getter,
    Kind,
    Operand,
    Part,
    Planning,
    Scope,
    fields,
    getter,
    kind,
    parse_operand,
)

#: a symbolic mask predicate's comparison operators
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
           "!=": operator.ne}
#: loop ids (and index terms) an index expression may name: at most one per loop open at once
_MAX_TERMS = MAX_LOOP_DEPTH


def _tensor_id(raw: Any, what: str) -> int:
    return integer(raw, what, 0, MAX_TENSORS - 1)


# --- index expressions ---------------------------------------------------------------------------------------
@kind
@dataclass(frozen=True, slots=True)
class Index(Kind):
    """An index expression ``const + sum(coef * loop) + grid``: ``{"X": const, "t": [[loop, coef], ...], "g":
    array | null, "affine": bool, "loops": [loop, ...]}``.  ``affine`` false: its value was frozen at the
    iteration it was recorded in (``i % 2``), and ``loops`` says which loops it depended on."""

    const: int
    terms: tuple[tuple[int, int], ...]
    grid: int | None
    affine: bool
    loops: tuple[int, ...]
    tag = "X"
    encodes = (Affine,)
    exact = True

    def json(self) -> Any:
        return {"X": self.const, "t": [[lid, c] for lid, c in self.terms], "g": self.grid, "affine": self.affine,
                "loops": list(self.loops)}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Index:
        need(isinstance(raw, dict), "an index expression is an object")
        fields(raw, "X", "t", "g", "affine", "loops")
        const = raw["X"]
        if not raw["t"] and raw["g"] is None and raw["affine"] is True and not raw["loops"] and type(const) is int \
                and raw["t"] == [] and raw["loops"] == []:  # a constant (most index expressions): shared
            hit = _CONSTANTS.get(const)
            if hit is None:
                hit = cls(integer(const, "an index constant"), (), None, True, ())
                if len(_CONSTANTS) < 4096:
                    _CONSTANTS[const] = hit
            return hit
        t = raw["t"]
        need(isinstance(t, list) and len(t) <= _MAX_TERMS and all(isinstance(p, list) and len(p) == 2 for p in t),
             "index terms are at most 32 [loop, coefficient] pairs")
        loops = raw["loops"]
        need(isinstance(loops, list) and len(loops) <= _MAX_TERMS, "an index expression names at most 32 loops")
        return cls(integer(raw["X"], "an index constant"),
                   tuple((integer(lid, "a loop id", 0), integer(c, "an index coefficient")) for lid, c in t),
                   None if raw["g"] is None else integer(raw["g"], "an array number", 0),
                   flag(raw["affine"], "affine"), tuple(integer(lid, "a loop id", 0) for lid in loops))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Index:
        if not x.affine and x.loops:  # its value was frozen at this iteration
            enc.frozen |= x.loops
        return cls(int(x.const), tuple((enc.loop(lp), int(c)) for lp, c in x.terms.items()),
                   None if x.grid is None else enc.array(np.asarray(x.grid, dtype=np.int64)), bool(x.affine),
                   tuple(sorted(enc.loop(lp) for lp in x.loops)))

    def check(self, scope: Scope, depth: int) -> None:
        for lid, _ in self.terms:
            scope.loop(lid)
        for lid in self.loops:
            scope.loop(lid)
        if self.grid is not None and scope.array(self.grid).dtype != "int64":
            scope.fail("an index grid holds int64")

    def decode(self, dec: Decoding) -> Affine:
        if not self.terms and self.grid is None and self.affine and not self.loops:
            return Affine.constant(self.const)
        loops = dec.loops
        return Affine(self.const, {loops[lid]: coef for lid, coef in self.terms},
                      None if self.grid is None else dec.array(self.grid), self.affine,
                      frozenset(loops[lid] for lid in self.loops))

    def plan(self, comp: Planning) -> Part:
        return True, comp.affine(self)

    def loop_ids(self) -> list[int]:
        """The loop ids it names (the plan's bindings)."""
        return [lid for lid, _ in self.terms] + list(self.loops)


#: Index.parse's memo of constant index expressions (records are immutable)
_CONSTANTS: dict[int, Index] = {}


def _index(raw: Any, depth: int, what: str) -> Index:
    if raw.__class__ is not dict or next(iter(raw), None) != "X":
        need(False, f"{what} is an index expression")
    return Index.parse(raw, depth)


# --- tensors and accesses ------------------------------------------------------------------------------------
@kind
@dataclass(frozen=True, slots=True)
class TensorRef(Kind):
    """A tensor, by its program id: ``{"T": id}``."""

    id: int
    tag = "T"
    encodes = (Tensor,)
    rank = 1

    def json(self) -> Any:
        return {"T": self.id}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "T")
        return cls(_tensor_id(raw["T"], "a tensor id"))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(enc.tensor(x))

    def check(self, scope: Scope, depth: int) -> None:
        scope.tensor(self.id)

    def tensors(self, out: set[int]) -> None:
        out.add(self.id)

    def decode(self, dec: Decoding) -> Any:
        t = dec.tensors.get(self.id)
        return t if t is not None else dec.tensor(self.id)

    def plan(self, comp: Planning) -> Part:
        return False, comp.tensor(self.id)


@kind
@dataclass(frozen=True, slots=True)
class Whole(Kind):
    """A tensor's whole access ``t[...]`` (which the ops treat as the tensor itself): ``{"W": id}``."""

    id: int
    tag = "W"

    def json(self) -> Any:
        return {"W": self.id}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "W")
        return cls(_tensor_id(raw["W"], "a tensor id"))

    def check(self, scope: Scope, depth: int) -> None:
        scope.tensor(self.id)

    def tensors(self, out: set[int]) -> None:
        out.add(self.id)

    def decode(self, dec: Decoding) -> Any:
        return dec.tensor(self.id).full()

    def plan(self, comp: Planning) -> Part:
        return False, comp.tensor(self.id, whole=True)


class Key:
    """One component of an access, per tensor dimension (``core.access.Access.comps``)."""

    __slots__ = ()
    word: ClassVar[str]

    def json(self) -> list[Any]:
        raise NotImplementedError

    def check(self, scope: Scope, depth: int) -> None:
        raise NotImplementedError

    def tensors(self, out: set[int]) -> None:
        """The tensor ids it names (an indirect or dynamic index reads a tile)."""

    def decode(self, dec: Decoding) -> Any:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class IntKey(Key):
    """``["int", X]``: one position, the dimension dropped."""

    at: Index
    word = "int"

    def json(self) -> list[Any]:
        return [self.word, self.at.json()]

    def check(self, scope: Scope, depth: int) -> None:
        self.at.check(scope, depth)

    def decode(self, dec: Decoding) -> Any:
        return self.at.decode(dec)


@dataclass(frozen=True, slots=True)
class AdvKey(IntKey):
    """``["adv", X]``: an arange/mgrid expression (advanced indexing)."""

    word = "adv"


@dataclass(frozen=True, slots=True)
class SliceKey(Key):
    """``["slice", X, X, step]``: ``start:stop:step``, the dimension kept."""

    start: Index
    stop: Index
    step: int
    word = "slice"

    def json(self) -> list[Any]:
        return [self.word, self.start.json(), self.stop.json(), self.step]

    def check(self, scope: Scope, depth: int) -> None:
        self.start.check(scope, depth)
        self.stop.check(scope, depth)

    def decode(self, dec: Decoding) -> Any:
        return slice(self.start.decode(dec), self.stop.decode(dec), self.step)


@dataclass(frozen=True, slots=True)
class IndKey(Key):
    """``["ind", A | W]``: positions read from an index tile when the instruction runs."""

    by: AccessOf | Whole
    word = "ind"

    def json(self) -> list[Any]:
        return [self.word, self.by.json()]

    def check(self, scope: Scope, depth: int) -> None:
        self.by.check(scope, depth + 1)

    def tensors(self, out: set[int]) -> None:
        self.by.tensors(out)

    def decode(self, dec: Decoding) -> Any:
        return self.by.decode(dec)


@dataclass(frozen=True, slots=True)
class DynKey(Key):
    """``["dyn", D]``: a free-axis position read from one tile element when the instruction runs."""

    by: Dynamic
    word = "dyn"

    def json(self) -> list[Any]:
        return [self.word, self.by.json()]

    def check(self, scope: Scope, depth: int) -> None:
        self.by.check(scope, depth + 1)

    def tensors(self, out: set[int]) -> None:
        self.by.tensors(out)

    def decode(self, dec: Decoding) -> Any:
        return self.by.decode(dec)


def _key(raw: Any, depth: int) -> Key:
    need(isinstance(raw, list) and bool(raw) and isinstance(raw[0], str), "an access component is [kind, ...]")
    word, n = raw[0], len(raw)
    if word in ("int", "adv") and n == 2:
        at = _index(raw[1], depth, "an index")
        return IntKey(at) if word == "int" else AdvKey(at)
    if word == "slice" and n == 4:
        step = integer(raw[3], "a slice step")
        need(step != 0, "a slice step cannot be zero")
        return SliceKey(_index(raw[1], depth, "a slice start"), _index(raw[2], depth, "a slice stop"), step)
    if word == "ind" and n == 2:
        by = parse_operand(raw[1], depth + 1)
        need(isinstance(by, (AccessOf, Whole)), "an indirect index reads a tile")
        return IndKey(by)  # type: ignore[arg-type]
    if word == "dyn" and n == 2:
        dyn = parse_operand(raw[1], depth + 1)
        need(isinstance(dyn, Dynamic), "a dynamic index component holds a dynamic index")
        return DynKey(dyn)  # type: ignore[arg-type]
    need(False, f"malformed access component {text(word, 'an access component', MAX_NAME)!r}")
    raise AssertionError  # (need raised)


@kind
@dataclass(frozen=True, slots=True)
class AccessOf(Kind):
    """``t[key]``: ``{"A": id, "c": [component, ...]}``, one component per dimension (``Key``)."""

    tensor: int
    keys: tuple[Key, ...]
    tag = "A"
    encodes = (Access,)
    rank = 2

    def json(self) -> Any:
        return {"A": self.tensor, "c": [k.json() for k in self.keys]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "A", "c")
        comps = raw["c"]
        need(isinstance(comps, list) and len(comps) <= MAX_DIMS, "an access has one component per dimension")
        return cls(_tensor_id(raw["A"], "a tensor id"), tuple(_key(c, depth + 1) for c in comps))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        if x.is_whole:
            return Whole(enc.tensor(x.tensor))
        keys: list[Key] = []
        for c in x.comps:
            word = c[0]
            if word == "slice":
                keys.append(SliceKey(Index.encode(Affine.lift(c[1]), enc), Index.encode(Affine.lift(c[2]), enc),
                                     int(c[3])))
            elif word == "int":
                keys.append(IntKey(Index.encode(c[1], enc)))
            elif word == "adv":
                keys.append(AdvKey(Index.encode(c[1], enc)))
            elif word == "ind":
                by = cls.encode(c[1], enc)
                keys.append(IndKey(by))  # type: ignore[arg-type]
            else:
                keys.append(DynKey(Dynamic.encode(c[1], enc)))
        return cls(enc.tensor(x.tensor), tuple(keys))

    def check(self, scope: Scope, depth: int) -> None:
        scope.tensor(self.tensor)
        for k in self.keys:
            k.check(scope, depth)

    def tensors(self, out: set[int]) -> None:
        out.add(self.tensor)
        for k in self.keys:
            k.tensors(out)

    def decode(self, dec: Decoding) -> Any:
        return Access(dec.tensor(self.tensor), tuple(k.decode(dec) for k in self.keys))

    def plan(self, comp: Planning) -> Part:
        """A key of index expressions only is bound to the loops once and re-bound when a loop it names is entered
        again (``CallPlan.rebind``); any other key is made each run from its parts."""
        tensor = comp.tensor(self.tensor)
        keys = self.keys
        if all(k.__class__ in (IntKey, AdvKey, SliceKey) for k in keys):
            dec = comp.dec
            # (index, None, 0) for a position, (start, stop, step) for a slice: bound again at every entry of a
            # loop they name, so decoded here without a method call per key
            bounds: list[tuple[Index, Index | None, int]] = []
            for k in keys:
                if isinstance(k, SliceKey):
                    bounds.append((k.start, k.stop, k.step))
                    comp.note(k.start)
                    comp.note(k.stop)
                elif isinstance(k, IntKey):
                    bounds.append((k.at, None, 0))
                    comp.note(k.at)
            decode = Index.decode

            def key_now() -> tuple[Any, ...]:
                """The key with its index expressions bound to the loops running now."""
                return tuple([decode(a, dec) if b is None else slice(decode(a, dec), decode(b, dec), step)
                              for a, b, step in bounds])

            cell = [key_now()]
            comp.rebinders.append(lambda: cell.__setitem__(0, key_now()))
            return False, lambda: Access(tensor(), cell[0])
        parts: list[Part] = []
        for k in keys:
            if k.__class__ is SliceKey:
                parts.append((True, slice(comp.affine(k.start), comp.affine(k.stop), k.step)))
            elif k.__class__ in (IntKey, AdvKey):
                parts.append((True, comp.affine(k.at)))
            else:
                parts.append(k.by.plan(comp))  # type: ignore[attr-defined]
        if all(c for c, _ in parts):
            key = tuple(v for _, v in parts)
            return False, lambda: Access(tensor(), key)
        getters = [getter(p) for p in parts]

        def get() -> Access:
            key = tuple([g() for g in getters])  # (the key first, as the decoder decodes it)
            return Access(tensor(), key)
        return False, get


@kind
@dataclass(frozen=True, slots=True)
class Dynamic(Kind):
    """``element + offset``, a position read from one tile element when the instruction runs: ``{"D": tile,
    "off": X}``."""

    element: TensorRef | Whole | AccessOf
    offset: Index
    tag = "D"
    encodes = (DynamicIndex,)
    exact = True

    def json(self) -> Any:
        return {"D": self.element.json(), "off": self.offset.json()}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "D", "off")
        element = parse_operand(raw["D"], depth + 1)
        need(isinstance(element, (TensorRef, Whole, AccessOf)), "a dynamic index reads a tile")
        return cls(element, _index(raw["off"], depth + 1, "a dynamic offset"))  # type: ignore[arg-type]

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Dynamic:
        element = enc.value(x.element)
        if not isinstance(element, (TensorRef, Whole, AccessOf)):
            raise RecordError("a dynamic index reads a tile")
        return cls(element, Index.encode(x.offset, enc))

    def check(self, scope: Scope, depth: int) -> None:
        self.element.check(scope, depth + 1)
        self.offset.check(scope, depth + 1)

    def tensors(self, out: set[int]) -> None:
        self.element.tensors(out)

    def decode(self, dec: Decoding) -> Any:
        return DynamicIndex(self.element.decode(dec), self.offset.decode(dec))

    def plan(self, comp: Planning) -> Part:
        element, offset = getter(self.element.plan(comp)), comp.affine(self.offset)
        return False, lambda: DynamicIndex(element(), offset)


# --- masks ---------------------------------------------------------------------------------------------------
Predicate = Union["Cmp", "Both", "Either", "Negation", "MaskConst"]


@kind
@dataclass(frozen=True, slots=True)
class MaskConst(Kind):
    """A mask predicate's value, when it is a constant (or was frozen at its iteration): ``{"mask": array,
    "ok": bool, "reason": str | null, "grid": bool}``."""

    array: int
    ok: bool
    reason: str | None
    grid: bool
    tag = "mask"
    encodes = (MaskExpr,)
    exact = True

    def json(self) -> Any:
        return {"mask": self.array, "ok": self.ok, "reason": self.reason, "grid": self.grid}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "mask", "ok", "reason", "grid")
        return cls(integer(raw["mask"], "an array number", 0), flag(raw["ok"], "ok"),
                   None if raw["reason"] is None else text(raw["reason"], "a mask's reason", MAX_NAME),
                   flag(raw["grid"], "grid"))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        """A predicate over index expressions stays one, so a loop body traced once masks each iteration by its own
        values; a constant predicate is its value."""
        e = x.expr
        if e is None:
            if x.loops:
                enc.frozen |= x.loops
            if x.reason is not None and not text_ok(x.reason, MAX_NAME):
                raise RecordError("a mask's reason must be a short line")
            return cls(enc.array(np.asarray(x.value, dtype=bool)), bool(x.ok), x.reason, bool(x.has_grid))
        if e[0] == "cmp":
            return Cmp(e[1], Index.encode(e[2], enc), Index.encode(e[3], enc))
        subs = [cls.encode(sub, enc) for sub in e[1:]]
        if e[0] == "not":
            return Negation(subs[0])  # type: ignore[arg-type]
        return (Both if e[0] == "and" else Either)(subs[0], subs[1])  # type: ignore[arg-type]

    def check(self, scope: Scope, depth: int) -> None:
        if scope.array(self.array).dtype != "bool":
            scope.fail("a mask's value is a bool array")

    def decode(self, dec: Decoding) -> Any:
        return MaskExpr(dec.array(self.array), self.ok, self.reason, self.grid)

    def plan(self, comp: Planning) -> Part:
        arr, ok, reason, grid = comp.dec.array(self.array), self.ok, self.reason, self.grid
        return False, lambda: MaskExpr(arr, ok, reason, grid)


class Symbolic(Kind):
    """A mask predicate kept symbolic: ``{"M": ["cmp", op, X, X]}``, ``{"M": ["and" | "or", P, P]}``,
    ``{"M": ["not", P]}``, of predicates ``P`` (symbolic or constant)."""

    __slots__ = ()
    tag = "M"

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "M")
        m = raw["M"]
        need(isinstance(m, list) and bool(m) and isinstance(m[0], str), "malformed mask expression")
        word, n = m[0], len(m)
        if word == "cmp" and n == 4:
            need(isinstance(m[1], str) and m[1] in COMPARE, "a mask compares with < <= > >= == or !=")
            return Cmp(m[1], _index(m[2], depth + 1, "a mask's side"), _index(m[3], depth + 1, "a mask's side"))
        need((word in ("and", "or") and n == 3) or (word == "not" and n == 2), "malformed mask expression")
        subs = [parse_operand(sub, depth + 1) for sub in m[1:]]
        need(all(isinstance(s, (Symbolic, MaskConst)) for s in subs), f"{word} joins mask expressions")
        if word == "not":
            return Negation(subs[0])  # type: ignore[arg-type]
        return (Both if word == "and" else Either)(subs[0], subs[1])  # type: ignore[arg-type]


kind(Symbolic)


@dataclass(frozen=True, slots=True)
class Cmp(Symbolic):
    """``lhs <op> rhs`` of two index expressions, compared at every iteration it runs in."""

    op: str
    lhs: Index
    rhs: Index

    def json(self) -> Any:
        return {"M": ["cmp", self.op, self.lhs.json(), self.rhs.json()]}

    def check(self, scope: Scope, depth: int) -> None:
        self.lhs.check(scope, depth + 1)
        self.rhs.check(scope, depth + 1)

    def decode(self, dec: Decoding) -> Any:
        return COMPARE[self.op](self.lhs.decode(dec), self.rhs.decode(dec))

    def plan(self, comp: Planning) -> Part:
        """Its index expressions decoded once (in a cell re-bound as an access's key is), compared every run."""
        cmp, lhs, rhs, dec = COMPARE[self.op], self.lhs, self.rhs, comp.dec
        comp.note(lhs)
        comp.note(rhs)
        cell = [lhs.decode(dec), rhs.decode(dec)]

        def rebind() -> None:
            cell[:] = lhs.decode(dec), rhs.decode(dec)

        comp.rebinders.append(rebind)
        return False, lambda: cmp(cell[0], cell[1])


@dataclass(frozen=True, slots=True)
class Both(Symbolic):
    """Both predicates hold (``&``, or ``and`` in a mask)."""

    a: Predicate
    b: Predicate

    def json(self) -> Any:
        return {"M": [self.word(), self.a.json(), self.b.json()]}

    def word(self) -> str:
        return "and"

    def check(self, scope: Scope, depth: int) -> None:
        self.a.check(scope, depth + 1)
        self.b.check(scope, depth + 1)

    def tensors(self, out: set[int]) -> None:
        """(Predicates name loops and arrays, never tensors.)"""

    def decode(self, dec: Decoding) -> Any:
        return self.a.decode(dec) & self.b.decode(dec)

    def plan(self, comp: Planning) -> Part:
        p, q = getter(self.a.plan(comp)), getter(self.b.plan(comp))
        return False, lambda: p() & q()


@dataclass(frozen=True, slots=True)
class Either(Both):
    """Either predicate holds (``|``, which NKI refuses in a mask: the op says so when it reads it)."""

    def word(self) -> str:
        return "or"

    def decode(self, dec: Decoding) -> Any:
        return self.a.decode(dec) | self.b.decode(dec)

    def plan(self, comp: Planning) -> Part:
        p, q = getter(self.a.plan(comp)), getter(self.b.plan(comp))
        return False, lambda: p() | q()


@dataclass(frozen=True, slots=True)
class Negation(Symbolic):
    """The predicate does not hold (``~``)."""

    a: Predicate

    def json(self) -> Any:
        return {"M": ["not", self.a.json()]}

    def check(self, scope: Scope, depth: int) -> None:
        self.a.check(scope, depth + 1)

    def decode(self, dec: Decoding) -> Any:
        return ~self.a.decode(dec)

    def plan(self, comp: Planning) -> Part:
        p = getter(self.a.plan(comp))
        return False, lambda: ~p()


def truth(predicate: Getter) -> Getter:
    """A predicate's getter as one that says whether it holds (a branch of a loop body on its index)."""
    return lambda: bool(np.all(predicate().value))
