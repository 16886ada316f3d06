"""The executor's loop: program events run against live tensors and loops.

One loop serves both halves of compile-then-execute: ``runtime.execute`` runs a whole program with it, and a
recording launch (``runtime.recording``) runs the other iterations of a loop body it traced once.  Each call is
dispatched through the one registry of NKI calls (``core.recording.CALLS``) to the implementation the eager
path runs, so every check of an op runs again on the runner's own tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nkisim.core import loops as loopmod
from nkisim.core.context import KernelContext
from nkisim.core.errors import NKIError
from nkisim.core.indexing import Loop
from nkisim.core.location import REPLAYED
from nkisim.core.recording import CALLS
from nkisim.core.tensor import Tensor
from nkisim.cost.trace import set_order
from nkisim.program.encode import Decoder, result_tensors
from nkisim.program.ir import Call, Instance, LoopEnter, LoopLeave, LoopStep, Path, ProgramError, exact_iteration
from nkisim.program.kinds.indexing import TensorRef
from nkisim.program.kinds.masks import truth
from nkisim.program.operands import operand_tensors
from nkisim.program.plan import CallPlan, Compiler


class Runner:
    """Runs program events against live tensors and loops: the executor's loop, shared by ``execute`` and by a
    recording launch that traced a loop body once and runs its other iterations from it (``runtime.recording``).

    ``drops``: event index -> tensor ids to let go after it (``Program.last_uses``); ``ends``: where each body
    traced once ends (``program.ir.once_bodies``)."""

    def __init__(self, ctx: KernelContext, events: Sequence[Any], dec: Decoder,
                 drops: dict[int, tuple[int, ...]], ends: dict[int, int], at: Any, traced_here: bool = False) -> None:
        self.ctx, self.events, self.dec, self.drops, self.ends, self.at = ctx, events, dec, drops, ends, at
        #: the events come from this very launch's trace, not from outside: an op's own exception (an
        #: IndexError of a dynamic index, say) is the kernel's, as it would be in the iteration traced
        self.traced_here = traced_here
        #: event index -> its call's operands decoded once (``program.plan``), for calls in bodies traced once;
        #: a list, as ``gone`` (``drops`` by event index), because the loop of a body reads both every event
        self.plans: list[CallPlan | None] = [None] * len(events)
        self.gone: list[tuple[int, ...] | None] = [drops.get(i) or None for i in range(len(events))] if drops \
            else [None] * len(events)
        #: how many loops this runner has entered: while it stays the same, so do the loops every plan was bound
        #: to (only a ``LoopEnter`` binds a loop id to a new ``Loop``), and plans need not check them again
        self.entered = 0

    def run(self, lo: int, hi: int, planned: bool = False) -> None:
        """Events ``lo`` .. ``hi - 1``; ``planned``: they run again and again (a body traced once), so each call
        keeps its operands decoded (``program.plan``) instead of decoding them every time."""
        if planned:
            self._body(lo, hi)
            return
        events, gone = self.events, self.gone
        tensors = self.dec.tensors
        i = lo
        while i < hi:
            ev = events[i]
            if ev.__class__ is Call:
                self.call(ev, i)
            else:
                i = self._loop_event(ev, i)
            if gone:
                dropped = gone[i]
                if dropped:
                    for pid in dropped:
                        tensors.pop(pid, None)
            i += 1

    def _body(self, lo: int, hi: int) -> None:
        """``run(lo, hi, planned=True)``: the events of a body that runs again and again.  The executor's cost per
        instruction is this loop's, so a call's plan is looked up, checked and run here rather than in ``call``,
        and its common result (one tile) stored here; everything else goes through the same helpers as ``run``."""
        events, plans, gone = self.events, self.plans, self.gone
        tensors, loops = self.dec.tensors, self.dec.loops
        replayed = REPLAYED  # (what ``self.at``, the ``replaying`` setter, sets: here without a call per event)
        i = lo
        while i < hi:
            ev = events[i]
            if ev.__class__ is Call:
                plan = plans[i]
                if plan is None or (plan.lids and plan.entered != self.entered and not self._bound(plan, loops)):
                    plan = self._plan(ev, i)
                replayed[0] = ev.loc
                if ev.order is None:
                    try:
                        result = plan.run()
                    except Exception as err:
                        self._failed(ev, err, plan)
                else:
                    result = self._ordered(ev, plan)
                out = ev.out
                if result.__class__ is Tensor and len(out) == 1:
                    tensors[out[0]] = result
                elif result is not None or out:  # (None from a call that makes nothing: t[...] = v)
                    self._results(ev, result)
            else:
                i = self._loop_event(ev, i)
            dropped = gone[i]
            if dropped is not None:
                for pid in dropped:
                    tensors.pop(pid, None)
            i += 1

    def _ordered(self, ev: Call, plan: CallPlan) -> Any:
        """``plan.run()`` for a call with scheduling edges: its instructions carry them (``cost.trace.set_order``)."""
        before = len(self.ctx.trace)
        try:
            result = plan.run()
        except Exception as err:
            self._failed(ev, err, plan)
        set_order(self.ctx.trace[before:], ev.order)
        return result

    def _loop_event(self, ev: Any, i: int) -> int:
        """A loop or instance event at index ``i``; returns the index of the last event it covered (a loop traced
        once runs its whole body here)."""
        ctx, loops = self.ctx, self.dec.loops
        cls = ev.__class__
        if cls is LoopStep:
            loopmod.step(ctx, loops[ev.loop], ev.value)
        elif cls is LoopEnter:
            loop = loops[ev.loop] = Loop(ev.kind.value, ev.start, ev.stop, ev.step)
            self.entered += 1
            loopmod.enter(ctx, loop)
            if ev.once:
                end = self.ends[i]
                if i + 1 < end and self.events[i + 1].__class__ is Path:
                    self._paths(loop, ev.loop, range(ev.start, ev.stop, ev.step), i + 1, end)
                else:
                    self.iterate(loop, range(ev.start, ev.stop, ev.step), i + 1, end)
                loopmod.leave(ctx, loop)
                return end
        elif cls is LoopLeave:
            loopmod.leave(ctx, loops[ev.loop])
        elif cls is Instance:
            ctx.program, ctx.instance, ctx.core = ev.index, ev.number, ev.core
        return i

    def iterate(self, loop: Loop, values: range, lo: int, hi: int) -> None:
        """The body ``lo`` .. ``hi - 1`` of a loop traced once, for each of ``values``."""
        ctx, body = self.ctx, self._body
        for v in values:
            loopmod.step(ctx, loop, v)
            body(lo, hi)

    def _paths(self, loop: Loop, lid: int, values: range, lo: int, hi: int) -> None:
        """The body ``lo`` .. ``hi - 1`` of a loop traced once in paths (``program.ir.Path``), for each of
        ``values``: each iteration runs the first path whose guards hold as they did when it was traced (a path
        whose first guard is ``loop == value`` is looked up by its value).  The guards' predicates are bound to the
        loops running now, once per entry of the loop."""
        events = self.events
        starts = [hi]  # the paths of this body (not those of a loop inside it)
        depth = 0
        for k in range(lo, hi):
            cls = events[k].__class__
            if cls is LoopEnter:
                depth += 1
            elif cls is LoopLeave:
                depth -= 1
            elif cls is Path and not depth:
                starts.insert(-1, k)
        comp = Compiler(self.dec)
        exact: dict[int, tuple[list, int, int]] = {}
        general: list[tuple[list, int, int]] = []
        for a, b in zip(starts, starts[1:]):
            guards = events[a].guards
            checks = [(truth(comp.value(g.condition)[1]), g.held) for g in guards]
            value = exact_iteration(guards[0], lid) if guards else None
            if value is not None and value not in exact:
                exact[value] = (checks[1:], a + 1, b)
            else:
                general.append((checks, a + 1, b))
        ctx, body = self.ctx, self._body
        for v in values:
            loopmod.step(ctx, loop, v)
            path = exact.get(v)
            if path is None or not all(check() == held for check, held in path[0]):
                path = next((p for p in general if all(check() == held for check, held in p[0])), None)
                if path is None:
                    raise ProgramError(f"invalid program: no path of the loop body at event {lo - 1} holds at "
                                       f"iteration {v}")
            body(path[1], path[2])

    def _plan(self, ev: Call, at: int) -> CallPlan:
        """A new plan for event ``at`` (its first run, or a loop it names was entered again)."""
        plan = CallPlan(ev if ev.fn != _ASSIGN else self._last_use(ev, at), self.dec, CALLS[ev.fn])
        plan.entered = self.entered
        self.plans[at] = plan
        return plan

    def _bound(self, plan: CallPlan, loops: dict[int, Loop]) -> bool:
        """Whether ``plan`` is bound to the loops running now: still (``CallPlan.valid``), or again
        (``CallPlan.rebind``); it notes the count of loops entered it was found bound at."""
        if plan.valid(loops) or plan.rebind(loops):
            plan.entered = self.entered
            return True
        return False

    def call(self, ev: Call, at: int) -> None:
        """Event ``at``, a call that runs once: its operands are decoded as they are."""
        dec = self.dec
        self.at(ev.loc)
        before = len(self.ctx.trace)
        try:
            args = ev.args if ev.fn != _ASSIGN else self._last_use(ev, at).args
            value, kwargs = dec.value, ev.kwargs
            if kwargs:
                result = CALLS[ev.fn](*[value(a) for a in args], **{k: value(v) for k, v in kwargs})
            else:
                result = CALLS[ev.fn](*[value(a) for a in args])
        except Exception as err:
            self._failed(ev, err)
        if ev.order is not None:  # its instructions carry the call's scheduling edges (cost.trace.set_order)
            set_order(self.ctx.trace[before:], ev.order)
        out = ev.out
        if result.__class__ is Tensor and len(out) == 1:  # (the common case: one tile made)
            dec.tensors[out[0]] = result
            return
        self._results(ev, result)

    def _failed(self, ev: Call, err: Exception, plan: CallPlan | None = None) -> None:
        """Raises what a call's exception ``err`` means (called in its ``except`` clause): a program's error as it
        is, the compiler's error at the call's line, any other exception a ``ProgramError`` unless the events were
        traced in this very launch.  A ``KeyError`` of a plan that names a tensor nothing made is that error."""
        if isinstance(err, ProgramError):
            raise
        if isinstance(err, KeyError) and plan is not None:
            try:
                plan.missing()
            except ProgramError as missing:
                raise missing from None
        if isinstance(err, (NKIError, MemoryError)):  # the compiler's error, or the run's own limit
            if getattr(err, "nki_location", None) is None:
                err.nki_location = ev.loc  # type: ignore[union-attr]
            raise
        if self.traced_here:
            raise
        raise ProgramError(f"invalid program: {ev.fn} at line {ev.loc[1]} failed: "
                           f"{type(err).__name__}: {err}") from None

    def _results(self, ev: Call, result: Any) -> None:
        """The tensors of a call's result bound to the ids the program gives them (the call made as many)."""
        out = ev.out
        made = [] if result is None else result_tensors(result)
        if len(made) != len(out):
            raise ProgramError(f"call {ev.fn} at line {ev.loc[1]} made {len(made)} tensors, the program "
                               f"says {len(out)}")
        tensors = self.dec.tensors
        for pid, t in zip(out, made):
            tensors[pid] = t

    def _last_use(self, ev: Call, at: int) -> Call:
        """``t[...] = value`` where event ``at`` is the last use of the tile ``value`` (the program lets it go
        right after, ``Program.last_uses``): the call as if ``value`` were a temporary, so the assignment may
        take over its storage instead of copying it (``ops.memory.assign``, which does so only where that is
        unobservable).  A recording launch passes the last uses of the tiles its replayed iterations make, which
        the kernel's Python never holds."""
        args = ev.args
        if len(args) == 3 and args[2] is False and not ev.kwargs:
            value = args[1]
            if value.__class__ is TensorRef:
                pid = value.id  # type: ignore[union-attr]
                gone = self.drops.get(at)
                if gone and pid in gone and pid not in operand_tensors(args[0], set()):
                    return Call(ev.fn, (args[0], value, True), (), ev.out, ev.loc, ev.order)
        return ev


#: the call ``t[...] = value`` (ops.memory.assign), whose value may be a temporary
_ASSIGN = "tile.assign"

