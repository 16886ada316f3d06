"""Operand kinds that name tensors and loops: tensors, accesses, index expressions and dynamic indices.

Each kind is one class with its whole table (JSON, parser, encoder, check, tensor ids, decoder, plan), as in
``program.operands``.  Index expressions name loops by their program ids and arange/mgrid grids by their place
in the program's table of arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from nkisim.core.access import Access
from nkisim.core.dynamic import DynamicIndex, IndirectRows
from nkisim.core.indexing import Affine
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
)
from nkisim.program.operands import (
    Decoding,
    Encoding,
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
        if not x.terms and x.grid is None and not x.loops and x.affine:  # a constant: shared, as ``parse`` shares it
            hit = _CONSTANTS.get(x.const)
            if hit is None:
                hit = cls(int(x.const), (), None, True, ())
                if len(_CONSTANTS) < 4096:
                    _CONSTANTS[hit.const] = hit
            return hit
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

    def value_at(self, env: dict[int, int]) -> int | None:
        """Its value when each loop id ``lid`` is at ``env[lid]`` (None if it has a grid or names another loop; a
        frozen value is its constant): what the validator checks a loop's paths with."""
        if self.grid is not None or any(lid not in env for lid, _ in self.terms):
            return None
        return self.const + sum(c * env[lid] for lid, c in self.terms)


#: Index.parse's memo of constant index expressions (records are immutable)
_CONSTANTS: dict[int, Index] = {}

#: id of an access's components -> (those components, their keys, the last record made of them), for an access of
#: constant bounds (no loop index, no index array): the components ``core.access`` shares between the accesses it
#: makes of one key (``Access.again``, ``Access.sliced``, ``whole``) are encoded once (the components are held: the
#: id is unique)
_CONSTANT_KEYS: dict[int, tuple[Any, tuple[Key, ...], AccessOf | None]] = {}


def index(raw: Any, depth: int, what: str) -> Index:
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
    """``["ind", A | W]``: positions read from an index tile when the instruction runs; ``["ind", A | W, X | null,
    bound | null, scale]`` with them times ``scale`` plus a row shift, and the index's own bound
    (``core.dynamic.IndirectRows``)."""

    by: AccessOf | Whole
    shift: Index | None = None
    bound: int | None = None
    scale: int = 1
    word = "ind"

    def json(self) -> list[Any]:
        if self.shift is None and self.bound is None and self.scale == 1:
            return [self.word, self.by.json()]
        return [self.word, self.by.json(), None if self.shift is None else self.shift.json(), self.bound, self.scale]

    def check(self, scope: Scope, depth: int) -> None:
        self.by.check(scope, depth + 1)
        if self.shift is not None:
            self.shift.check(scope, depth + 1)

    def tensors(self, out: set[int]) -> None:
        self.by.tensors(out)

    def decode(self, dec: Decoding) -> Any:
        by = self.by.decode(dec)
        if self.shift is None and self.bound is None and self.scale == 1:
            return by
        return IndirectRows(by, None if self.shift is None else self.shift.decode(dec), self.bound, self.scale)


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
        at = index(raw[1], depth, "an index")
        return IntKey(at) if word == "int" else AdvKey(at)
    if word == "slice" and n == 4:
        step = integer(raw[3], "a slice step")
        need(step != 0, "a slice step cannot be zero")
        return SliceKey(index(raw[1], depth, "a slice start"), index(raw[2], depth, "a slice stop"), step)
    if word == "ind" and n in (2, 5):
        by = parse_operand(raw[1], depth + 1)
        need(isinstance(by, (AccessOf, Whole)), "an indirect index reads a tile")
        if n == 2:
            return IndKey(by)  # type: ignore[arg-type]
        shift = None if raw[2] is None else index(raw[2], depth, "an indirect row shift")
        bound = None if raw[3] is None else integer(raw[3], "an indirect index bound", 0)
        return IndKey(by, shift, bound, integer(raw[4], "an indirect index scale", 1))  # type: ignore[arg-type]
    if word == "dyn" and n == 2:
        dyn = parse_operand(raw[1], depth + 1)
        need(isinstance(dyn, Dynamic), "a dynamic index component holds a dynamic index")
        return DynKey(dyn)  # type: ignore[arg-type]
    need(False, f"malformed access component {text(word, 'an access component', MAX_NAME)!r}")
    raise AssertionError  # (need raised)


def _rows_part(k: IndKey, comp: Planning) -> Part:
    """The plan of an index tile with a row shift: the tile's access made each run, the shift bound once."""
    index = getter(k.by.plan(comp))
    shift = None if k.shift is None else comp.affine(k.shift)
    bound, scale = k.bound, k.scale
    return False, lambda: IndirectRows(index(), shift, bound, scale)


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
        constant = not x.loops and not x.advanced  # keys of constants only: a function of the components alone
        if constant:
            hit = _CONSTANT_KEYS.get(id(x.comps))
            if hit is not None and hit[0] is x.comps:
                pid = enc.tensor(x.tensor)
                if hit[2] is not None and hit[2].tensor == pid:  # (records are immutable: shared)
                    return hit[2]
                made = cls(pid, hit[1])
                _CONSTANT_KEYS[id(x.comps)] = (x.comps, hit[1], made)
                return made
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
                shift = None if c[2] is None else Index.encode(c[2], enc)
                keys.append(IndKey(by, shift, c[3], c[4]))  # type: ignore[arg-type]
            else:
                keys.append(DynKey(Dynamic.encode(c[1], enc)))
        if constant:
            if len(_CONSTANT_KEYS) > 4096:
                _CONSTANT_KEYS.clear()
            _CONSTANT_KEYS[id(x.comps)] = (x.comps, tuple(keys), None)
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

            def bind() -> tuple[tuple[Any, ...], tuple | None]:
                """The key bound now, and its components when ``Access.sliced`` can make the access of it."""
                key = key_now()
                return key, Access.components(key)

            cell = [bind()]
            comp.rebinders.append(lambda: cell.__setitem__(0, bind()))
            sliced = Access.sliced

            def access() -> Access:
                key, parts = cell[0]
                t = tensor()
                if parts is not None and len(t.shape) == len(key):
                    return sliced(t, parts[0], parts[1])
                return Access(t, key)

            return False, access
        parts: list[Part] = []
        for k in keys:
            if k.__class__ is SliceKey:
                parts.append((True, slice(comp.affine(k.start), comp.affine(k.stop), k.step)))
            elif k.__class__ in (IntKey, AdvKey):
                parts.append((True, comp.affine(k.at)))
            elif isinstance(k, IndKey) and (k.shift is not None or k.bound is not None or k.scale != 1):
                parts.append(_rows_part(k, comp))
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
        return cls(element, index(raw["off"], depth + 1, "a dynamic offset"))  # type: ignore[arg-type]

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
