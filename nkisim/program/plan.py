"""A call's operands decoded once and rebuilt cheaply every time the call runs again.

A loop body traced once runs the same ``Call`` events every iteration, and ``Decoder.value`` would walk each
encoded operand again each time (dict lookups, index expressions rebuilt, a list per call).  Almost none of
that changes between iterations: an index expression (``Affine``) is valued lazily through its loops'
``current``, and constants (dtypes, shapes, operator names, buffers) never change.  What does change is which
tensor an id names (a tile made inside the body is made again every iteration) and the loop objects
themselves (a loop entered again is a new ``Loop``, with a new uid the trace records).

So a ``CallPlan`` keeps every part that depends only on the encoded text and the loops it names, and rebuilds
per run only what must be fresh: tensors are looked up by id, ``Access`` objects are made again (they cache
their NumPy index and trace box for the iteration they were made in), and mutable values (lists, dicts,
array copies, buffers with an allocation, masks, dynamic indices) are new objects as the decoder makes them.
A plan holds the ``Loop`` objects its index expressions were bound to and is rebuilt when any of them is no
longer the one bound to its id.  Values and errors are the decoder's: every kind mirrors ``Decoder.value``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nkisim.core.access import Access
from nkisim.core.buffers import Buffer, ModAlloc
from nkisim.core.dynamic import DynamicIndex
from nkisim.core.indexing import Affine, DynSlice, Loop, MaskExpr
from nkisim.program.encode import COMPARE, Decoder
from nkisim.program.ir import Call

#: (True, value): the part decodes to this very value every run; (False, getter): call ``getter()`` each run
Part = tuple[bool, Any]
Getter = Callable[[], Any]


def _getter(part: Part) -> Getter:
    const, v = part
    if const:
        return lambda: v
    return v


class CallPlan:
    """One call's operands, decoded against the loops bound when it was made (see the module docstring).

    ``lids``/``bound``: the loop ids its index expressions name and the ``Loop`` objects they were bound to;
    ``args``: the positional arguments when all are constant, else None and ``arg_getters`` builds them;
    ``kwargs``: likewise (``kw_getters``), an empty dict when the call has none."""

    __slots__ = ("fn", "lids", "bound", "args", "arg_getters", "kwargs", "kw_getters")

    def __init__(self, ev: Call, dec: Decoder, fn: Callable[..., Any]) -> None:
        self.fn = fn  # the call's implementation (core.recording.CALLS)
        comp = _Compiler(dec)
        parts = [comp.value(a) for a in ev.args]
        if all(c for c, _ in parts):
            self.args: tuple | None = tuple(v for _, v in parts)
            self.arg_getters: list[Getter] = []
        else:
            self.args = None
            self.arg_getters = [_getter(p) for p in parts]
        kparts = [(k, comp.value(v)) for k, v in ev.kwargs]
        if all(p[0] for _, p in kparts):
            self.kwargs: dict[str, Any] | None = {k: p[1] for k, p in kparts}
            self.kw_getters: list[tuple[str, Getter]] = []
        else:
            self.kwargs = None
            self.kw_getters = [(k, _getter(p)) for k, p in kparts]
        self.lids = tuple(sorted(comp.lids))
        self.bound = tuple(dec.loops[lid] for lid in self.lids)

    def valid(self, loops: dict[int, Loop]) -> bool:
        """Every loop the plan's index expressions name is still the one bound to its id."""
        for lid, loop in zip(self.lids, self.bound):
            if loops.get(lid) is not loop:
                return False
        return True

    def run(self) -> Any:
        """The call, with this run's operands."""
        args = self.args
        if args is None:
            args = [g() for g in self.arg_getters]
        kwargs = self.kwargs
        if kwargs is None:
            kwargs = {k: g() for k, g in self.kw_getters}
        return self.fn(*args, **kwargs) if kwargs else self.fn(*args)


class _Compiler:
    """Turns encoded values into ``Part``s, noting the loop ids their index expressions name."""

    def __init__(self, dec: Decoder) -> None:
        self.dec = dec
        self.lids: set[int] = set()

    def tensor(self, pid: int, whole: bool = False) -> Getter:
        """The tensor id ``pid`` names at each run (``Decoder.tensor``: a ProgramError when nothing made it)."""
        tensors, lookup = self.dec.tensors, self.dec.tensor

        def get() -> Any:
            t = tensors.get(pid)  # (the dict first: this runs for every tensor operand of every call)
            return t if t is not None else lookup(pid)

        if whole:
            return lambda: get().full()
        return get

    def value(self, x: Any) -> Part:  # noqa: C901 - one case per kind, mirroring Decoder.value
        if x is None or isinstance(x, (bool, int, float, str)):
            return True, x
        if isinstance(x, list):
            getters = [_getter(self.value(v)) for v in x]
            return False, lambda: [g() for g in getters]
        (key, first), = list(x.items())[:1]
        dec = self.dec
        if key == "T":
            return False, self.tensor(first)
        if key == "W":
            return False, self.tensor(first, whole=True)
        if key == "A":
            return False, self.access(x)
        if key == "X":
            return True, self.affine(x)
        if key in ("tuple", "slice"):
            parts = [self.value(v) for v in first]
            make = tuple if key == "tuple" else (lambda vs: slice(*vs))
            if all(c for c, _ in parts):
                return True, make([v for _, v in parts])
            getters = [_getter(p) for p in parts]
            return False, lambda: make([g() for g in getters])
        if key == "dict":
            kgetters = [(k, _getter(self.value(v))) for k, v in first]
            return False, lambda: {k: g() for k, g in kgetters}
        if key == "ds":
            start, size = _getter(self.value(first[0])), first[1]
            return False, lambda: DynSlice(start(), size)
        if key == "D":
            element, offset = _getter(self.value(first)), self.affine(x["off"])
            return False, lambda: DynamicIndex(element(), offset)
        if key == "mask":
            arr, ok, reason, grid = dec.array(first), x["ok"], x["reason"], x["grid"]
            return False, lambda: MaskExpr(arr, ok, reason, grid)
        if key == "M":
            return False, self.mask(first)
        if key == "buf" and x["alloc"] is not None:
            a = x["alloc"]
            return False, lambda: Buffer(first, ModAlloc(a[0], a[1], a[2], tuple(a[3]), tuple(a[4]), a[5]))
        if key == "arr":
            arr = dec.array(first)
            return False, arr.copy
        # the rest are immutable values the decoder makes alike each time (floats, dtypes, scalars, names)
        return True, dec.value(x)

    def mask(self, m: list) -> Getter:
        """A symbolic predicate: its index expressions decoded once, compared at every run's iterations."""
        kind = m[0]
        if kind == "cmp":
            cmp, a, b = COMPARE[m[1]], self.affine(m[2]), self.affine(m[3])
            return lambda: cmp(a, b)
        if kind == "not":
            sub = _getter(self.value(m[1]))
            return lambda: ~sub()
        p, q = _getter(self.value(m[1])), _getter(self.value(m[2]))
        if kind == "and":
            return lambda: p() & q()
        return lambda: p() | q()

    def affine(self, x: dict) -> Affine:
        self.lids.update(lid for lid, _ in x["t"])
        self.lids.update(x["loops"])
        return self.dec.affine(x)

    def access(self, x: dict) -> Getter:
        if "W" in x:
            return self.tensor(x["W"], whole=True)
        parts: list[Part] = []
        for comp in x["c"]:
            kind = comp[0]
            if kind == "slice":
                parts.append((True, slice(self.affine(comp[1]), self.affine(comp[2]), comp[3])))
            elif kind in ("int", "adv"):
                parts.append((True, self.affine(comp[1])))
            elif kind == "ind":
                parts.append((False, self.access(comp[1])))
            else:
                parts.append(self.value(comp[1]))
        tensor = self.tensor(x["A"])
        if all(c for c, _ in parts):
            key = tuple(v for _, v in parts)
            return lambda: Access(tensor(), key)
        getters = [_getter(p) for p in parts]

        def get() -> Access:
            key = tuple([g() for g in getters])  # (the key first, as the decoder decodes it)
            return Access(tensor(), key)
        return get
