"""Index expressions: loop variables, ``nl.arange``/``nl.mgrid`` grids, affine forms and masks.

The compiler analyses an index like ``i * 128 + nl.arange(128)[:, None]`` over the *whole* loop
range, so its out-of-bound messages quote the full range ("index range [0, 4095]").  The simulator
executes eagerly but keeps every index in a dual form: the concrete value for this iteration and an
affine form ``const + sum(coef * loop) + grid`` that can be bounded over all iterations.  Masks are
comparisons of such forms; anything non-affine is remembered so a mask built from it is rejected
with the compiler's error.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from nkisim.core import conjunction
from nkisim.core.errors import nki_error
from nkisim.core.location import bytecode, user_frame, user_variable, warn
from nkisim.core.recording import HOOK

_loop_ids = itertools.count()


class Loop:
    """One active loop (affine/sequential/static range) and its current iteration value."""

    __slots__ = ("kind", "start", "stop", "step", "current", "uid", "trip", "_bounds")

    def __init__(self, kind: str, start: int, stop: int, step: int) -> None:
        self.kind, self.start, self.stop, self.step = kind, start, stop, step
        self.current = start
        self.uid = next(_loop_ids)
        self.trip = len(range(start, stop, step))
        self._bounds: tuple[int, int] | None = None

    def bounds(self) -> tuple[int, int]:
        b = self._bounds  # the range never changes, and every bound check asks for it
        if b is None:
            r = range(self.start, self.stop, self.step)
            b = self._bounds = (self.start, self.start) if not r else (min(r[0], r[-1]), max(r[0], r[-1]))
        return b


def _concrete(loops: frozenset, condition: Any = None) -> None:
    """The kernel's Python took a concrete value of loop variables (a Python int, or ``condition``'s truth in an
    ``if``): a recording launch is told, so a loop body that did so is traced once per way its branches go, or
    not at all (``runtime.recording``).  Inside an NKI call (``HOOK.depth``) it is the op reading its operand, which
    the program keeps symbolic."""
    rec = HOOK.recorder
    if rec is not None and not HOOK.depth:
        rec.concrete(loops, condition)


#: what a branch on an ``nl.affine_range`` variable is told (``branch_on_affine_loop``); check() says the same
AFFINE_BRANCH_ADVICE = ("the compiler traces an nl.affine_range body once for all its iterations, so a branch on "
                        "its loop variable is undefined behaviour in NKI (AWS's migration guide: `if i == 0:` in a loop "
                        "gives an undefined result in Beta 1); the simulator runs each way the branch goes, the "
                        "hardware may not. Keep the body the same for every iteration: handle the special iteration "
                        "before or after the loop, use a mask, or loop with nl.static_range (plain Python ints)")


class AffineBranchWarning(UserWarning):
    """A kernel's ``if`` reads an ``nl.affine_range`` loop variable (see ``AFFINE_BRANCH_ADVICE``)."""


def branch_on_affine_loop(loops: frozenset, subject: Any) -> None:
    """Warn, at the student's line, when an ``if`` (``while``, ``x if c else y``) tests an ``nl.affine_range``
    loop variable; any other truth test passes silently.

    Not a compile error in the legacy compiler (nor in the compiler's error catalogue), but undefined there: the
    body is traced once.  The recording launch traces it once per way the branch goes (``runtime.recording``), which
    computes what an unrolled loop would; the warning says the hardware may not."""
    if not any(loop.kind == "affine" for loop in loops):
        return
    f = user_frame()
    step = bytecode(f.f_code).get(f.f_lasti) if f is not None else None
    op = step and (step.next_opname if step.opname == "TO_BOOL" else step.opname)
    if not op or not op.startswith("POP_JUMP"):
        return
    name = None
    for part in (subject, *(subject.expr[2:] if isinstance(subject, MaskExpr) and subject.expr else ())):
        if isinstance(part, Affine) and part.loops:
            name = user_variable(part)
            if name:
                break
    var = f"variable `{name}`" if name else "variable"
    warn(f"control flow depends on the nl.affine_range loop {var}: {AFFINE_BRANCH_ADVICE}.", AffineBranchWarning)


def _is_int(x: Any) -> bool:
    if x.__class__ is int:  # the common case, one test
        return True
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


_NO_LOOPS: frozenset = frozenset()


#: Affine.constant's memo of integer expressions.
_CONSTANTS: dict[int, Affine] = {}


class Affine:
    """An integer index expression: ``const + sum(coef * loop) + grid`` (grid from arange/mgrid).

    ``affine`` turns False after a non-affine operation (``%``, ``//``, products of two indices);
    the concrete value is then frozen into ``const``/``grid`` and only ``loops`` remembers which
    loop variables it depended on.  ``div``: for ``e % m`` and ``e // m`` of a scalar affine ``e`` and a
    positive integer ``m``, ``(op, e, m)``, so a branch on it (``if i % 2 == 0:``) can be kept as a guard of a
    loop body traced once (``runtime.recording``); everything else reads the frozen value as before.
    """

    __slots__ = ("const", "terms", "grid", "affine", "loops", "_memo", "_bounds", "div")
    __array_priority__ = 1000  # numpy scalars defer to our operators

    def __init__(self, const: int = 0, terms: dict | None = None, grid: np.ndarray | None = None,
                 affine: bool = True, loops: frozenset = frozenset()) -> None:
        self.const = const if const.__class__ is int else int(const)
        self.terms: dict[Loop, int] = terms or {}
        self.grid = grid
        self.affine = affine
        self.loops = loops if loops else (frozenset(terms) if terms else _NO_LOOPS)
        #: results of ``self * int`` and ``self +/- other`` (see ``_memoised``), None until the first
        self._memo: dict | None = None
        self._bounds: tuple[int, int] | None = None  # scalar_bounds of an affine expression
        self.div: tuple[str, Affine, int] | None = None

    @staticmethod
    def constant(v: int) -> Affine:
        """The index expression of a plain integer, shared: expressions are never changed in place
        and tile indices use the same few constants over and over."""
        a = _CONSTANTS.get(v)
        if a is None:
            a = Affine(v)
            if len(_CONSTANTS) < 65536:
                _CONSTANTS[v] = a
        return a

    # --- values -------------------------------------------------------------------------------
    def value(self) -> Any:
        """Concrete value at the current iteration (int, or int64 array if there is a grid)."""
        v = self.const
        if self.terms:
            for loop, coef in self.terms.items():
                v += coef * loop.current
        return v if self.grid is None else self.grid + v

    def scalar_bounds(self) -> tuple[int, int]:
        """Min and max over every iteration of the loops involved (grid included)."""
        b = self._bounds
        if b is not None:  # an affine form's range is fixed once its loops exist
            return b
        if not self.affine:
            v = self.value()
            return (int(np.min(v)), int(np.max(v)))
        lo = hi = self.const
        if not self.terms and self.grid is None:  # a constant (shared, see Affine.constant): remembered too
            b = self._bounds = (lo, hi)
            return b
        for loop, coef in self.terms.items():
            a, b = loop.bounds()
            lo += min(coef * a, coef * b)
            hi += max(coef * a, coef * b)
        if self.grid is not None and self.grid.size:
            lo += int(self.grid.min())
            hi += int(self.grid.max())
        self._bounds = (lo, hi)
        return lo, hi

    @property
    def has_grid(self) -> bool:
        return self.grid is not None

    @property
    def shape(self) -> tuple[int, ...]:
        return () if self.grid is None else self.grid.shape

    # --- arithmetic ---------------------------------------------------------------------------
    @staticmethod
    def lift(x: Any) -> Affine | None:
        if x.__class__ is Affine:
            return x
        if _is_int(x):
            return Affine.constant(int(x))
        return x if isinstance(x, Affine) else None

    def _combine(self, other: Affine, sign: int) -> Affine:
        if not other.terms and other.grid is None:  # + an integer: only the constant moves
            return Affine(self.const + sign * other.const, self.terms, self.grid, self.affine and other.affine,
                          self.loops | other.loops if other.loops else self.loops)
        terms = dict(self.terms)
        for loop, coef in other.terms.items():
            terms[loop] = terms.get(loop, 0) + sign * coef
        terms = {k: v for k, v in terms.items() if v}
        if self.grid is None:
            grid = None if other.grid is None else sign * other.grid
        else:
            grid = self.grid if other.grid is None else self.grid + sign * other.grid
        return Affine(self.const + sign * other.const, terms, grid, self.affine and other.affine,
                      self.loops | other.loops)

    def _frozen(self, value: Any, other: Affine | None = None) -> Affine:
        loops = self.loops | (other.loops if other is not None else frozenset())
        if isinstance(value, np.ndarray):
            return Affine(0, None, value.astype(np.int64), False, loops)
        return Affine(int(value), None, None, False, loops)

    def _memoised(self, key: Any, other: Any, make: Any) -> Affine:
        """``make()``, remembered on ``self`` under ``key``.

        Expressions are immutable and a loop variable is one object for the whole loop, so the index
        arithmetic of a loop body (``k * 128``, ``(k + 1) * 128``, ``i + nl.arange(128)[:, None]``) builds
        the same forms every iteration; their values still follow the loop (``value()`` reads the
        loop's current iteration).  An expression operand (``other``; None when ``key`` holds an integer) is
        kept with the result, so an id in ``key`` is never mistaken for a later object's.
        """
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        hit = memo.get(key)
        if hit is not None and hit[0] is other:
            return hit[1]
        res = make()
        if len(memo) < 256:
            memo[key] = (other, res)
        return res

    def _shifted(self, other: Any, sign: int) -> Affine:
        """``self + other`` (sign 1) or ``self - other`` (sign -1), memoised (see ``_memoised``)."""
        op = "+" if sign > 0 else "-"
        if other.__class__ is int:
            memo = self._memo  # (the memo hit inline: loop bodies do this index arithmetic every iteration)
            if memo is not None:
                hit = memo.get((op, other))
                if hit is not None and hit[0] is None:  # (an expression's id may equal an integer)
                    return hit[1]
            return self._memoised((op, other), None, lambda: self._combine(Affine.constant(other), sign))
        o = Affine.lift(other)
        if o is None:
            return NotImplemented
        return self._memoised((op, id(o)), o, lambda: self._combine(o, sign))

    def __add__(self, other: Any) -> Affine:
        return self._shifted(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Affine:
        return self._shifted(other, -1)

    def __rsub__(self, other: Any) -> Affine:
        o = Affine.lift(other)
        return NotImplemented if o is None else o._combine(self, -1)

    def __neg__(self) -> Affine:
        return self * -1

    def __mul__(self, other: Any) -> Affine:
        if other.__class__ is int:
            memo = self._memo
            if memo is not None:
                hit = memo.get(("*", other))
                if hit is not None and hit[0] is None:  # (an expression's id may equal an integer)
                    return hit[1]
            return self._memoised(("*", other), None, lambda: self._scaled(other))
        if _is_int(other):
            k = int(other)
            return self._memoised(("*", k), None, lambda: self._scaled(k))
        o = Affine.lift(other)
        if o is None:
            return NotImplemented
        if not o.terms and o.grid is None:
            return self * o.const
        if not self.terms and self.grid is None:
            return o * self.const
        return self._frozen(self.value() * o.value(), o)

    __rmul__ = __mul__

    def _scaled(self, k: int) -> Affine:
        return Affine(self.const * k, {lp: c * k for lp, c in self.terms.items() if c * k} if k else None,
                      None if self.grid is None else self.grid * k, self.affine, self.loops)

    def _nonaffine(self, other: Any, fn: Any, reverse: bool = False) -> Affine:
        o = Affine.lift(other)
        if o is None:
            return NotImplemented
        a, b = (o.value(), self.value()) if reverse else (self.value(), o.value())
        return self._frozen(fn(a, b), o)

    def _divided(self, other: Any, op: str) -> Affine:
        """``self // other`` or ``self % other``: a value frozen at this iteration, which remembers how it was made
        when ``self`` is a scalar affine expression of loop variables and ``other`` a positive integer."""
        res = self._nonaffine(other, (lambda a, b: a // b) if op == "//" else (lambda a, b: a % b))
        if res is not NotImplemented and self.affine and self.grid is None and self.terms and _is_int(other) \
                and int(other) > 0:
            res.div = (op, self, int(other))
        return res

    def __floordiv__(self, other: Any) -> Affine:
        return self._divided(other, "//")

    def __rfloordiv__(self, other: Any) -> Affine:
        return self._nonaffine(other, lambda a, b: a // b, True)

    def __mod__(self, other: Any) -> Affine:
        return self._divided(other, "%")

    def __rmod__(self, other: Any) -> Affine:
        return self._nonaffine(other, lambda a, b: a % b, True)

    def __index__(self) -> int:
        if self.grid is not None:
            raise TypeError("an nl.arange/nl.mgrid index cannot be used as a Python integer")
        if self.loops:
            _concrete(self.loops)
        return int(self.value())

    __int__ = __index__

    def __hash__(self) -> int:
        return id(self)

    # --- comparisons build masks --------------------------------------------------------------
    def _cmp(self, other: Any, op: str) -> MaskExpr | bool:
        o = Affine.lift(other)
        if o is None:
            if hasattr(other, "__nki_tile__"):
                return MaskExpr(np.True_, ok=False, reason="runtime")
            return NotImplemented
        a, b = self.value(), o.value()
        res = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
               "==": np.equal, "!=": np.not_equal}[op](a, b)
        m = MaskExpr(res, ok=self.affine and o.affine, reason=None if self.affine and o.affine else "nonaffine",
                     has_grid=self.grid is not None or o.grid is not None, expr=("cmp", op, self, o),
                     loops=self.loops | o.loops)
        if op == "!=":
            m.reason = "ne"
        return conjunction.joined(m) if m.has_grid else m

    def __lt__(self, o: Any) -> Any:
        return self._cmp(o, "<")

    def __le__(self, o: Any) -> Any:
        return self._cmp(o, "<=")

    def __gt__(self, o: Any) -> Any:
        return self._cmp(o, ">")

    def __ge__(self, o: Any) -> Any:
        return self._cmp(o, ">=")

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return self._cmp(o, "==")

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return self._cmp(o, "!=")

    def __bool__(self) -> bool:
        if self.grid is not None:
            raise nki_error("err_control_flow_condition_depending_on_arange",
                            "Control-flow depending on `nl.arange` or `nl.mgrid` is not supported.")
        if self.loops:
            branch_on_affine_loop(self.loops, self)
            _concrete(self.loops, self)
        return bool(self.value())

    # --- reshaping of grids: nl.arange(128)[:, None] ------------------------------------------
    def __getitem__(self, key: Any) -> Affine:
        if self.grid is None:
            raise TypeError("only nl.arange/nl.mgrid index expressions can be reshaped")
        return Affine(self.const, dict(self.terms), self.grid[key], self.affine, self.loops)

    def __setitem__(self, key: Any, value: Any) -> None:
        """Index expressions are symbolic and read-only, as in the compiler."""
        raise nki_error("err_cannot_assign_to_index", "'index' tensor does not support item assignment; "
                        "materialise index values with nisa.iota first")

    def __repr__(self) -> str:
        if self.grid is None and not self.terms:
            return f"Affine({self.const})"
        return f"<index expr {self.value()!r}>"


class MaskExpr:
    """A predicate over index expressions, usable as ``mask=`` (boolean value + validity flags).

    ``value`` is the predicate at the current iteration; ``expr`` says how it was built (``("cmp", op, a, b)``
    over index expressions, ``("and"|"or", m, n)``, ``("not", m)``; None for a constant), so a program can
    keep the predicate itself and a loop body traced once still masks every iteration right.  ``loops``: the
    loops whose variables it reads."""

    __slots__ = ("value", "ok", "reason", "has_grid", "expr", "loops")

    def __init__(self, value: Any, ok: bool = True, reason: str | None = None, has_grid: bool = False,
                 expr: tuple | None = None, loops: frozenset = frozenset()):
        self.value, self.ok, self.reason, self.has_grid = value, ok, reason, has_grid
        self.expr, self.loops = expr, loops

    def __and__(self, other: Any) -> MaskExpr:
        if isinstance(other, (bool, np.bool_)):
            other = MaskExpr(np.bool_(other))
        if not isinstance(other, MaskExpr):
            return NotImplemented
        reason = self.reason or other.reason
        return MaskExpr(np.logical_and(self.value, other.value), self.ok and other.ok, reason,
                        self.has_grid or other.has_grid, ("and", self, other), self.loops | other.loops)

    __rand__ = __and__

    def __or__(self, other: Any) -> MaskExpr:
        if not isinstance(other, MaskExpr):
            return NotImplemented
        return MaskExpr(np.logical_or(self.value, other.value), False, "or", True, ("or", self, other),
                        self.loops | other.loops)

    __ror__ = __or__

    def __invert__(self) -> MaskExpr:
        return MaskExpr(np.logical_not(self.value), self.ok, self.reason, self.has_grid, ("not", self), self.loops)

    def __bool__(self) -> bool:
        if self.has_grid:
            if conjunction.defer(self):  # ``left and right`` in a mask: both must hold (core.conjunction)
                return True
            raise nki_error("err_control_flow_condition_depending_on_arange",
                            "Control-flow depending on `nl.arange` or `nl.mgrid` is not supported.")
        if self.loops:
            branch_on_affine_loop(self.loops, self)
            _concrete(self.loops, self)
        return bool(np.all(self.value))

    def validated(self, api: str = "") -> np.ndarray:
        """The boolean value, after the compiler's rules for mask expressions."""
        if self.reason == "ne":
            raise nki_error("err_mask_not_equal_not_supported", "'not equal' mask is not supported")
        if self.reason == "or":
            raise nki_error("err_logic_or_not_supported", f"'logical or' is not supported for the `{api or 'mask'}`")
        if not self.ok:
            raise nki_error("err_unsupported_expression_in_mask",
                            "NKI mask expressions must be affine expressions of static loop indices. Dynamic "
                            "values, tensor elements, or non-affine operations are not supported in mask predicates.")
        return np.asarray(self.value, dtype=bool)


def check_mask(mask: Any, api: str = "") -> np.ndarray | None:
    """Validate a ``mask=`` argument and return its boolean array (None for no mask)."""
    if mask is None:
        return None
    if isinstance(mask, MaskExpr):
        return mask.validated(api)
    if isinstance(mask, (bool, np.bool_)):
        return np.asarray(mask)
    raise nki_error("err_unsupported_expression_in_mask",
                    "NKI mask expressions must be affine expressions of static loop indices. Dynamic values, "
                    "tensor elements, or non-affine operations are not supported in mask predicates.")
