"""An instruction the kernel's Python has issued, which a scheduling edge given later can still reach.

NKI 0.6 orders instructions after they were issued (``depends_on`` on two handles, ``name=`` read by
``kernel.with_schedule``, a ``no_reorder`` chain: ``frontend.v06.adapters.order``).  An ``Issued`` is one registry
call: where its ``Call`` sits in the program being recorded and the instructions it added to the trace, so its
``ir.Order`` reaches both -- the program keeps the edge, the cost model waits on it (``cost.trace.set_order``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from nkisim.core.context import KernelContext
from nkisim.core.recording import HOOK
from nkisim.cost.trace import set_order
from nkisim.program.ir import Call, Event, Label, Order
from nkisim.program.limits import MAX_EDGES


class Issued:
    """One registry call the kernel's Python made: its ``Call`` in the recorded program (None when the launch
    does not record) and the instructions it added to the trace (``trace[lo:hi]``; a trace only grows).  A plain
    class with slots: every call of a 0.6 kernel makes one."""

    __slots__ = ("instance", "seq", "body", "call", "trace", "lo", "hi", "order")

    def __init__(self, instance: int, seq: int, body: list[Event] | None, call: Call | None, trace: list[Any],
                 lo: int, hi: int) -> None:
        self.instance = instance
        self.seq = seq  # its place in the launch's order of issue
        self.body, self.call = body, call
        self.trace, self.lo, self.hi = trace, lo, hi
        self.order: Order | None = None

    @property
    def instructions(self) -> list[Any]:
        return self.trace[self.lo:self.hi]

    def set(self, order: Order) -> None:
        """Give the call ``order``: its instructions now, and its ``Call`` in the program being recorded."""
        self.order = order
        set_order(self.instructions, order)
        body, call = self.body, self.call
        if body is None or call is None:
            return
        new = dataclasses.replace(call, order=order)
        for k in range(len(body) - 1, -1, -1):  # (the call is near the end: edges are given soon after)
            if body[k] is call:
                body[k] = new
                break
        self.call = new

    def labelled(self, label: Label) -> Label:
        """The call carries ``label`` (its ``name=``, or a number an edge refers to it by)."""
        self.set(dataclasses.replace(self.order or Order(), label=label))
        return label

    def wait_for(self, labels: tuple[Label, ...]) -> None:
        """The call waits for the instructions carrying ``labels`` too (at most ``limits.MAX_EDGES`` in all, which
        a program may hold)."""
        order = self.order or Order()
        new = tuple(dict.fromkeys(lb for lb in labels if lb not in order.after))
        if len(order.after) + len(new) > MAX_EDGES:
            raise ValueError(f"an instruction may wait for at most {MAX_EDGES} others (scheduling edges); this one "
                             f"would wait for {len(order.after) + len(new)}")
        if new:
            self.set(dataclasses.replace(order, after=order.after + new))


def recording_body() -> list[Event] | None:
    """The events of the program being recorded, if a launch records and no NKI call is running (a call made
    inside another is not an event of its own)."""
    rec = HOOK.recorder
    return getattr(rec, "body", None) if rec is not None and not HOOK.depth else None


def issued_since(ctx: KernelContext, seq: int, trace_from: int, body: list[Event] | None, body_from: int) -> Issued:
    """The registry call just made: it added the trace's instructions from ``trace_from`` on and, when the launch
    records (``body``), the one event at ``body_from`` of the recorder's body."""
    call = None
    if body is not None and len(body) == body_from + 1 and body[-1].__class__ is Call:
        call = body[-1]
    trace = ctx.trace
    return Issued(ctx.instance, seq, body, call, trace, trace_from, len(trace))
