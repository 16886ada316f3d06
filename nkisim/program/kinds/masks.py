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

from nkisim.core.access import MaskedAccess
from nkisim.core.indexing import MaskExpr
from nkisim.program.kinds.indexing import AccessOf, Index, Whole, index
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
            return Cmp(e[1], _side(e[2], enc), _side(e[3], enc))
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

    def holds_at(self, env: dict[int, int]) -> bool | None:
        """Whether it holds when each loop id ``lid`` is at ``env[lid]``; None if that cannot be told from
        ``env`` alone (another loop, a grid, a constant mask)."""
        return None

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "M")
        m = raw["M"]
        need(isinstance(m, list) and bool(m) and isinstance(m[0], str), "malformed mask expression")
        word, n = m[0], len(m)
        if word == "cmp" and n == 4:
            need(isinstance(m[1], str) and m[1] in COMPARE, "a mask compares with < <= > >= == or !=")
            return Cmp(m[1], _parse_side(m[2], depth + 1), _parse_side(m[3], depth + 1))
        need((word in ("and", "or") and n == 3) or (word == "not" and n == 2), "malformed mask expression")
        subs = [parse_operand(sub, depth + 1) for sub in m[1:]]
        need(all(isinstance(s, (Symbolic, MaskConst)) for s in subs), f"{word} joins mask expressions")
        if word == "not":
            return Negation(subs[0])  # type: ignore[arg-type]
        return (Both if word == "and" else Either)(subs[0], subs[1])  # type: ignore[arg-type]


kind(Symbolic)


@dataclass(frozen=True, slots=True)
class Divided:
    """A side of a comparison: ``base // m`` or ``base % m`` of a scalar index expression and a positive integer,
    ``{"D": [op, X, m]}``, evaluated at every iteration it runs in (``if i % 2 == 0:`` in a loop body traced once,
    ``core.indexing.Affine.div``).  Its value, like the ``Affine`` it decodes to, is not affine: as a mask it is
    refused by the op that reads it, as the recorded call was."""

    op: str
    base: Index
    m: int

    def json(self) -> Any:
        return {"D": [self.op, self.base.json(), self.m]}

    def check(self, scope: Scope, depth: int) -> None:
        if self.op not in ("%", "//") or self.m < 1:
            scope.fail(f"an index divided by {self.m} with {self.op!r}: only % and // by a positive integer")
        if self.base.grid is not None or not self.base.affine:
            scope.fail("only a scalar affine index expression is divided")
        self.base.check(scope, depth + 1)

    def decode(self, dec: Decoding) -> Any:
        base = self.base.decode(dec)
        return base // self.m if self.op == "//" else base % self.m

    def loop_ids(self) -> list[int]:
        return self.base.loop_ids()

    def value_at(self, env: dict[int, int]) -> int | None:
        v = self.base.value_at(env)
        if v is None or self.m < 1:
            return None
        return v // self.m if self.op == "//" else v % self.m


Side = Index | Divided


def _side(x: Any, enc: Encoding) -> Side:
    div = getattr(x, "div", None)
    if div is not None:
        return Divided(div[0], Index.encode(div[1], enc), div[2])
    return Index.encode(x, enc)


def _parse_side(raw: Any, depth: int) -> Side:
    if raw.__class__ is dict and next(iter(raw), None) == "D":
        fields(raw, "D")
        d = raw["D"]
        need(isinstance(d, list) and len(d) == 3 and d[0] in ("%", "//"), "a divided index is [op, X, m]")
        return Divided(d[0], index(d[1], depth + 1, "a divided index"), integer(d[2], "a divisor"))
    return index(raw, depth, "a mask's side")


@dataclass(frozen=True, slots=True)
class Cmp(Symbolic):
    """``lhs <op> rhs`` of two index expressions, compared at every iteration it runs in."""

    op: str
    lhs: Side
    rhs: Side

    def json(self) -> Any:
        return {"M": ["cmp", self.op, self.lhs.json(), self.rhs.json()]}

    def check(self, scope: Scope, depth: int) -> None:
        self.lhs.check(scope, depth + 1)
        self.rhs.check(scope, depth + 1)

    def decode(self, dec: Decoding) -> Any:
        return COMPARE[self.op](self.lhs.decode(dec), self.rhs.decode(dec))

    def plan(self, comp: Planning) -> Part:
        """Its index expressions decoded once (in a cell re-bound as an access's key is), compared every run (a
        divided side divided every run: its value is frozen where it is made)."""
        cmp, lhs, rhs, dec = COMPARE[self.op], self.lhs, self.rhs, comp.dec
        sides = [x.base if isinstance(x, Divided) else x for x in (lhs, rhs)]
        for x in sides:
            comp.note(x)
        cell = [x.decode(dec) for x in sides]

        def rebind() -> None:
            cell[:] = [x.decode(dec) for x in sides]

        comp.rebinders.append(rebind)
        if not isinstance(lhs, Divided) and not isinstance(rhs, Divided):
            return False, lambda: cmp(cell[0], cell[1])
        ops = [None if not isinstance(x, Divided) else (x.op, x.m) for x in (lhs, rhs)]

        def now(k: int) -> Any:
            how = ops[k]
            if how is None:
                return cell[k]
            return cell[k] // how[1] if how[0] == "//" else cell[k] % how[1]

        return False, lambda: cmp(now(0), now(1))

    def holds_at(self, env: dict[int, int]) -> bool | None:
        """Whether it holds when each loop id ``lid`` is at ``env[lid]`` (None: it names another loop or a grid)."""
        a, b = self.lhs.value_at(env), self.rhs.value_at(env)
        return None if a is None or b is None else bool(COMPARE[self.op](a, b))


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

    def holds_at(self, env: dict[int, int]) -> bool | None:
        a, b = _holds(self.a, env), _holds(self.b, env)
        return None if a is None or b is None else (a and b if self.word() == "and" else a or b)

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

    def holds_at(self, env: dict[int, int]) -> bool | None:
        a = _holds(self.a, env)
        return None if a is None else not a

    def plan(self, comp: Planning) -> Part:
        p = getter(self.a.plan(comp))
        return False, lambda: ~p()


def _holds(p: Any, env: dict[int, int]) -> bool | None:
    """``p.holds_at(env)`` for a symbolic predicate; None for a constant one (its value is an array)."""
    return p.holds_at(env) if isinstance(p, Symbolic) else None


def truth(predicate: Getter) -> Getter:
    """A predicate's getter as one that says whether it holds (a branch of a loop body on its index)."""
    return lambda: bool(np.all(predicate().value))


@kind
@dataclass(frozen=True, slots=True)
class OperandMasked(Kind):
    """``tile[...][mask]``, a matmul operand with AWS's operand mask (``core.access.MaskedAccess``): ``{"OM": A | W,
    "m": P}``, the access and its predicate (kept symbolic, so a loop body traced once masks each iteration by its
    own values)."""

    access: Operand
    mask: Operand
    tag = "OM"
    encodes = (MaskedAccess,)
    exact = True

    def json(self) -> Any:
        return {"OM": self.access.json(), "m": self.mask.json()}  # type: ignore[union-attr]

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "OM", "m")
        access = parse_operand(raw["OM"], depth + 1)
        need(isinstance(access, (AccessOf, Whole)), "an operand mask applies to a tile access")
        mask = parse_operand(raw["m"], depth + 1)
        need(isinstance(mask, (Symbolic, MaskConst)), "an operand mask is a mask expression")
        return cls(access, mask)

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(AccessOf.encode(x, enc), MaskConst.encode(x.operand_mask, enc))

    def check(self, scope: Scope, depth: int) -> None:
        self.access.check(scope, depth + 1)  # type: ignore[union-attr]
        self.mask.check(scope, depth + 1)  # type: ignore[union-attr]

    def tensors(self, out: set[int]) -> None:
        self.access.tensors(out)  # type: ignore[union-attr]

    def decode(self, dec: Decoding) -> Any:
        return MaskedAccess.of(self.access.decode(dec), self.mask.decode(dec))  # type: ignore[union-attr]

    def plan(self, comp: Planning) -> Part:
        access, mask = getter(self.access.plan(comp)), getter(self.mask.plan(comp))  # type: ignore[union-attr]
        return False, lambda: MaskedAccess.of(access(), mask())
