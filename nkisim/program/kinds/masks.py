"""Operand kinds of masks: a predicate over index expressions kept symbolic (``Cmp`` and the and/or/not of
predicates), so a loop body traced once masks every iteration by its own values, or a constant mask's value.

Each kind is one class with its whole table (JSON, parser, encoder, check, tensor ids, decoder, plan); see
``program.operands``.  The symbolic ones are also the guards of a loop body's paths (``program.ir.Path``).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from nkisim.core.indexing import MaskExpr
from nkisim.program.kinds.indexing import Index, index
from nkisim.program.limits import MAX_NAME, RecordError, flag, integer, need, text, text_ok
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
            return Cmp(m[1], index(m[2], depth + 1, "a mask's side"), index(m[3], depth + 1, "a mask's side"))
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
