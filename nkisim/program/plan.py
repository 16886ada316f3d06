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
A plan holds the ``Loop`` objects its index expressions were bound to; when any of them is no longer the one
bound to its id, the index expressions of its accesses and masks are decoded again in place (``rebind``), and a
plan holding index expressions anywhere else is made again.  Values and errors are the decoder's: each kind's
``plan`` (``program.kinds``) mirrors its ``decode``.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from nkisim.core.access import Access
from nkisim.core.indexing import Affine, Loop
from nkisim.ops.registry import without_scalar_notes
from nkisim.program.encode import Decoder
from nkisim.program.ir import Call
from nkisim.program.kinds.indexing import Index, TensorRef, Whole
from nkisim.program.operands import PLAIN, Getter, Operand, Part, getter


class CallPlan:
    """One call's operands, decoded against the loops bound when it was made (see the module docstring).

    ``lids``/``bound``: the loop ids its index expressions name and the ``Loop`` objects they were bound to;
    ``args``: the positional arguments when all are constant, else None; ``pids``: the tensor ids its leading
    tensor operands name; ``run()``: the call with this run's operands.

    ``run`` is built for the call's shape, because it is the executor's cost per instruction on top of the op's
    own: most calls are leading tile operands (``{"T": id}`` or ``{"W": id}``) followed by constants, so those
    look their tensors up straight from the executor's dict (``operator.itemgetter`` for several) and pass the
    constants as they are, with no getter called per operand; a call without tile operands is a
    ``functools.partial`` of its implementation.  Any other operand (an access, a mask, a mutable value) takes
    the getters' path.  A tensor id with no tensor raises ``KeyError`` on the fast paths: ``missing`` turns it
    into the decoder's ``ProgramError`` (the executor asks when the call raised ``KeyError``)."""

    __slots__ = ("fn", "lids", "bound", "args", "pids", "run", "dec", "entered", "rebinders")

    def __init__(self, ev: Call, dec: Decoder, fn: Callable[..., Any]) -> None:
        self.fn = fn  # the call's implementation (core.recording.CALLS)
        self.dec = dec
        self.entered = -1  # the runner's count of loops entered when ``bound`` was last found valid (runner.Runner)
        comp = Compiler(dec)
        lead = []  # the leading tile operands: (tensor id, whole access)
        for a in ev.args:
            tid = _tile_operand(a)
            if tid is None:
                break
            lead.append(tid)
        self.pids = tuple(pid for pid, _ in lead)
        parts = [comp.value(a) for a in ev.args[len(lead):]]
        kparts = [(k, comp.value(v)) for k, v in ev.kwargs]
        # (a part made afresh each run is a container, an array, a tensor, an access or a mask: never a scalar)
        fn = self.fn = without_scalar_notes(fn, [v for c, v in parts if c] + [p[1] for _, p in kparts if p[0]])
        self.lids = tuple(sorted(comp.lids))
        self.bound = tuple(dec.loops[lid] for lid in self.lids)
        self.rebinders = comp.rebinders if not comp.fixed else None
        self.args: tuple | None = None
        fresh = [(k, p[1]) for k, p in kparts if not p[0]]  # keyword values made each run (an ``axis`` list)
        if all(c for c, _ in parts) and (not fresh or (len(lead) == 1 and not lead[0][1])):
            tail = tuple(v for _, v in parts)
            kwargs = {k: p[1] for k, p in kparts if p[0]}
            if not lead:
                self.args = tail
            self.run: Callable[[], Any] = _leading(fn, dec.tensors, lead, tail, kwargs) if not fresh else \
                _one_tile_fresh(fn, dec.tensors, lead[0][0], tail, kwargs, fresh)
        else:
            self.run = _general(fn, [comp.tensor(pid, whole) for pid, whole in lead] + [getter(p) for p in parts],
                                [(k, getter(p)) for k, p in kparts])

    def valid(self, loops: dict[int, Loop]) -> bool:
        """Every loop the plan's index expressions name is still the one bound to its id."""
        for lid, loop in zip(self.lids, self.bound):
            if loops.get(lid) is not loop:
                return False
        return True

    def rebind(self, loops: dict[int, Loop]) -> bool:
        """Bind the plan to the loops now running (a loop it names was entered again), when its only index
        expressions are its accesses' keys and mask predicates: they are decoded again, as a new plan would, without
        compiling the rest of the call again (a body inside a loop of few iterations is re-bound at every entry
        of that loop).  False: the plan holds index expressions elsewhere, and a new plan is needed."""
        if self.rebinders is None or not all(lid in loops for lid in self.lids):
            return False
        for rebind in self.rebinders:
            rebind()
        self.bound = tuple(loops[lid] for lid in self.lids)
        return True

    def missing(self) -> None:
        """The decoder's ``ProgramError`` for the first tensor id this call names that no call has made, if any."""
        for pid in self.pids:
            self.dec.tensor(pid)


def _tile_operand(x: Operand) -> tuple[int, bool] | None:
    """``(id, whole)`` of a ``TensorRef`` (the tensor) or a ``Whole`` (its whole access), else None."""
    cls = x.__class__
    if cls is TensorRef:
        return x.id, False  # type: ignore[union-attr]
    if cls is Whole:
        return x.id, True  # type: ignore[union-attr]
    return None


def _leading(fn: Callable[..., Any], tensors: dict[int, Any], lead: list[tuple[int, bool]], tail: tuple,
             kwargs: dict[str, Any]) -> Callable[[], Any]:
    """``fn(<the lead tiles>, *tail, **kwargs)`` with the tiles looked up at each run (see ``CallPlan``)."""
    if not lead:
        return functools.partial(fn, *tail, **kwargs)
    whole = Access.whole  # what ``Tensor.full`` is
    direct = None if kwargs else _direct(fn, tensors, lead, tail, whole)
    if direct is not None:
        return direct
    if len(lead) == 1:
        (p, w), = lead
        if w:
            return lambda: fn(whole(tensors[p]), *tail, **kwargs)
        if kwargs:
            return lambda: fn(tensors[p], *tail, **kwargs)
        return lambda: fn(tensors[p], *tail)
    if not any(w for _, w in lead):
        get = operator.itemgetter(*[p for p, _ in lead])
        if kwargs:
            return lambda: fn(*get(tensors), *tail, **kwargs)
        return lambda: fn(*get(tensors), *tail)
    if len(lead) == 2:
        (p, w), (q, v) = lead
        if w and v:
            return lambda: fn(whole(tensors[p]), whole(tensors[q]), *tail, **kwargs)
        if w:
            return lambda: fn(whole(tensors[p]), tensors[q], *tail, **kwargs)
        return lambda: fn(tensors[p], whole(tensors[q]), *tail, **kwargs)
    return lambda: fn(*[whole(tensors[p]) if w else tensors[p] for p, w in lead], *tail, **kwargs)


def _direct(fn: Callable[..., Any], tensors: dict[int, Any], lead: list[tuple[int, bool]], tail: tuple,
            whole: Callable[[Any], Any]) -> Callable[[], Any] | None:
    """The commonest shapes of call without keywords as plain calls: a call that unpacks ``*args`` takes
    CPython's slow path, about 0.1 us more per instruction.  None for any other shape."""
    shape = (tuple(w for _, w in lead), len(tail))
    if shape == ((False,), 0):  # nl.exp(t), nl.copy(t)
        (p, _), = lead
        return lambda: fn(tensors[p])
    if shape == ((False,), 1):  # nl.multiply(t, 0.5)
        (p, _), = lead
        c, = tail
        return lambda: fn(tensors[p], c)
    if shape == ((False, False), 0):  # nl.add(t, u)
        (p, _), (q, _) = lead
        return lambda: fn(tensors[p], tensors[q])
    if shape == ((False, False), 2):  # t * u (tile.binary)
        (p, _), (q, _) = lead
        c, d = tail
        return lambda: fn(tensors[p], tensors[q], c, d)
    if shape == ((True, False), 1):  # t[...] = u (tile.assign), t[...] += u (tile.accumulate)
        (p, _), (q, _) = lead
        c, = tail
        return lambda: fn(whole(tensors[p]), tensors[q], c)
    return None


def _one_tile_fresh(fn: Callable[..., Any], tensors: dict[int, Any], pid: int, tail: tuple, kwargs: dict[str, Any],
                    fresh: list[tuple[str, Getter]]) -> Callable[[], Any]:
    """``fn(tensor, *tail, **kwargs)`` with keyword values made anew each run (``nl.max(t, axis=[1])``: a
    reduction of one tile, the commonest call whose operands are not all constant)."""
    def run() -> Any:
        kw = kwargs.copy()
        for k, g in fresh:
            kw[k] = g()
        return fn(tensors[pid], *tail, **kw)
    return run


def _general(fn: Callable[..., Any], getters: list[Getter], kw_getters: list[tuple[str, Getter]]) -> Callable[[], Any]:
    """``fn`` with every operand built by its getter at each run."""
    if kw_getters:
        return lambda: fn(*[g() for g in getters], **{k: g() for k, g in kw_getters})
    return lambda: fn(*[g() for g in getters])


class Compiler:
    """Turns operands into ``Part``s (each kind's ``plan``), noting the loop ids their index expressions name."""

    def __init__(self, dec: Decoder) -> None:
        self.dec = dec
        self.lids: set[int] = set()
        #: what binds the plan's accesses and mask predicates to the loops running now again (``CallPlan.rebind``),
        #: and how many index expressions it holds elsewhere (an ``X`` argument, ``nl.ds``, a dynamic offset), which
        #: only a new plan binds
        self.rebinders: list[Callable[[], None]] = []
        self.fixed = 0

    def tensor(self, pid: int, whole: bool = False) -> Getter:
        """The tensor id ``pid`` names at each run (``Decoder.tensor``: a ProgramError when nothing made it)."""
        tensors, lookup = self.dec.tensors, self.dec.tensor

        def get() -> Any:
            t = tensors.get(pid)  # (the dict first: this runs for every tensor operand of every call)
            return t if t is not None else lookup(pid)

        if whole:
            return lambda: get().full()
        return get

    def value(self, x: Operand) -> Part:
        if x.__class__ in PLAIN:
            return True, x
        return x.plan(self)  # type: ignore[union-attr]

    def affine(self, x: Index) -> Affine:
        """An index expression bound to the loops now, held where a new plan must bind it again."""
        self.fixed += 1
        self.note(x)
        return x.decode(self.dec)

    def note(self, x: Index) -> None:
        """The loop ids an index expression names."""
        self.lids.update(x.loop_ids())
