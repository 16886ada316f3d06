"""The executor's loop: program events run against live tensors and loops.

One loop serves both halves of compile-then-execute: ``runtime.execute`` runs a whole program with it, and a
recording launch (``runtime.record``) runs the other iterations of a loop body it traced once.  Each call is
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
from nkisim.core.recording import CALLS
from nkisim.core.tensor import Tensor
from nkisim.program.encode import Decoder, result_tensors, tensor_ids
from nkisim.program.ir import Call, Instance, LoopEnter, LoopLeave, LoopStep, ProgramError
from nkisim.program.plan import CallPlan


class Runner:
    """Runs program events against live tensors and loops: the executor's loop, shared by ``execute`` and by a
    recording launch that traced a loop body once and runs its other iterations from it (``runtime.record``).

    ``drops``: event index -> tensor ids to let go after it (``Program.last_uses``); ``ends``: where each body
    traced once ends (``program.ir.once_bodies``)."""

    def __init__(self, ctx: KernelContext, events: Sequence[Any], dec: Decoder,
                 drops: dict[int, tuple[int, ...]], ends: dict[int, int], at: Any, traced_here: bool = False) -> None:
        self.ctx, self.events, self.dec, self.drops, self.ends, self.at = ctx, events, dec, drops, ends, at
        #: the events come from this very launch's trace, not from outside: an op's own exception (an
        #: IndexError of a dynamic index, say) is the kernel's, as it would be in the iteration traced
        self.traced_here = traced_here
        #: event index -> its call's operands decoded once (``program.plan``), for calls in bodies traced once
        self.plans: dict[int, CallPlan] = {}

    def run(self, lo: int, hi: int, planned: bool = False) -> None:
        """Events ``lo`` .. ``hi - 1``; ``planned``: they run again and again (a body traced once), so each call
        keeps its operands decoded (``program.plan``) instead of decoding them every time."""
        events, ctx, dec, drops = self.events, self.ctx, self.dec, self.drops
        tensors, loops = dec.tensors, dec.loops
        call = self.call
        i = lo
        while i < hi:
            ev = events[i]
            cls = ev.__class__
            if cls is Call:
                call(ev, i, planned)
            elif cls is LoopStep:
                loopmod.step(ctx, loops[ev.loop], ev.value)
            elif cls is LoopEnter:
                loop = loops[ev.loop] = Loop(ev.kind, ev.start, ev.stop, ev.step)
                loopmod.enter(ctx, loop)
                if ev.once:
                    end = self.ends[i]
                    self.iterate(loop, range(ev.start, ev.stop, ev.step), i + 1, end)
                    loopmod.leave(ctx, loop)
                    i = end
            elif cls is LoopLeave:
                loopmod.leave(ctx, loops[ev.loop])
            elif cls is Instance:
                ctx.program, ctx.instance, ctx.core = ev.index, ev.number, ev.core
            if drops:
                gone = drops.get(i)
                if gone:
                    for pid in gone:
                        tensors.pop(pid, None)
            i += 1

    def iterate(self, loop: Loop, values: range, lo: int, hi: int) -> None:
        """The body ``lo`` .. ``hi - 1`` of a loop traced once, for each of ``values``."""
        ctx, run = self.ctx, self.run
        for v in values:
            loopmod.step(ctx, loop, v)
            run(lo, hi, True)

    def call(self, ev: Call, at: int, planned: bool = False) -> None:
        """Event ``at``, a call; ``planned``: it runs again and again (its operands' ``CallPlan`` is kept while
        the loops it names stay the same), else its operands are decoded once."""
        dec = self.dec
        self.at(ev.loc)
        try:
            if not planned:
                args = ev.args if ev.fn != _ASSIGN else self._last_use(ev, at).args
                result = CALLS[ev.fn](*[dec.value(a) for a in args], **{k: dec.value(v) for k, v in ev.kwargs})
            else:
                plan = self.plans.get(at)
                if plan is None or (plan.lids and not plan.valid(dec.loops)):
                    fn = CALLS[ev.fn]
                    plan = self.plans[at] = CallPlan(ev if ev.fn != _ASSIGN else self._last_use(ev, at), dec, fn)
                result = plan.run()
        except ProgramError:
            raise
        except (NKIError, MemoryError) as err:  # the compiler's error, or the run's own limit
            if getattr(err, "nki_location", None) is None:
                err.nki_location = ev.loc  # type: ignore[union-attr]
            raise
        except Exception as err:  # only a program no trace made gets here, or the kernel's own failure
            if self.traced_here:
                raise
            raise ProgramError(f"invalid program: {ev.fn} at line {ev.loc[1]} failed: "
                               f"{type(err).__name__}: {err}") from None
        out = ev.out
        if result.__class__ is Tensor and len(out) == 1:  # (the common case: one tile made)
            dec.tensors[out[0]] = result
            return
        made = [] if result is None else result_tensors(result)
        if len(made) != len(out):
            raise ProgramError(f"call {ev.fn} at line {ev.loc[1]} made {len(made)} tensors, the program "
                               f"says {len(out)}")
        tensors = dec.tensors
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
            pid = value.get("T") if type(value) is dict and len(value) == 1 else None
            gone = self.drops.get(at) if type(pid) is int else None
            if gone and pid in gone and pid not in tensor_ids(args[0]):
                return Call(ev.fn, (args[0], value, True), (), ev.out, ev.loc)
        return ev


#: the call ``t[...] = value`` (ops.memory.assign), whose value may be a temporary
_ASSIGN = "tile.assign"
