"""An instruction the kernel's Python has issued, which a scheduling edge given later can still reach.

NKI 0.6 orders instructions after they were issued (``depends_on`` on two handles, ``name=`` read by
``kernel.with_schedule``, a ``no_reorder`` chain: ``frontend.v06.adapters.order``).  An ``Issued`` is one registry
call: where its ``Call`` sits in the program being recorded and the instructions it added to the trace, so its
``ir.Order`` reaches both -- the program keeps the edge, the cost model waits on it (``cost.trace.set_order``).

An edge whose producer was issued after its consumer is kept by issuing the consumer again right after its producer
(``move_after``), which is what AWS's scheduler may do with the edge: the simulator runs instructions in the order
they are issued, so the consumer moves, when no instruction it passes touches what it touches (its values are then
the same at either place).  Moving a call shifts the calls it passes; each ``Issued`` finds its place again from the
launch's log of moves (``Moves``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from nkisim.core.context import KernelContext
from nkisim.core.recording import HOOK
from nkisim.cost.deps import overlaps
from nkisim.cost.trace import set_order
from nkisim.program.ir import Call, Event, Label, Order
from nkisim.program.limits import MAX_EDGES

#: a launch's log of calls moved later in its trace: ``(start, end, k)`` -- every instruction of ``trace[start:end]``
#: moved ``k`` places earlier (the moved call's ``k`` instructions went after them)
Moves = list[tuple[int, int, int]]

#: instructions with state no operand shows (registers, the random generators' state, the Vector engine's
#: accumulator, a barrier's semaphores): never moved, and never passed by a move
STATEFUL = frozenset({"register_load", "register_store", "core_barrier", "rng", "rand2", "rng_state", "dropout",
                      "tensor_scalar_reduce"})


class Issued:
    """One registry call the kernel's Python made: its ``Call`` in the recorded program (None when the launch
    does not record) and the instructions it added to the trace (``trace[lo:hi]``; a trace only grows).  A plain
    class with slots: every call of a 0.6 kernel makes one."""

    __slots__ = ("instance", "seq", "body", "call", "trace", "lo", "hi", "order", "moves", "epoch")

    def __init__(self, instance: int, seq: int, body: list[Event] | None, call: Call | None, trace: list[Any],
                 lo: int, hi: int, moves: Moves | None = None) -> None:
        self.instance = instance
        self.seq = seq  # its place in the launch's order of issue
        self.body, self.call = body, call
        self.trace, self.lo, self.hi = trace, lo, hi
        self.order: Order | None = None
        #: the launch's log of moves, and how much of it ``lo`` / ``hi`` have followed
        self.moves = moves
        self.epoch = len(moves) if moves else 0

    def span(self) -> tuple[int, int]:
        """Where its instructions are in the trace now (``trace[lo:hi]``), after the moves since it was issued."""
        moves = self.moves
        if moves is not None and len(moves) > self.epoch:
            lo, hi = self.lo, self.hi
            for start, end, k in moves[self.epoch:]:
                if start <= lo < end:
                    lo, hi = lo - k, hi - k
            self.lo, self.hi, self.epoch = lo, hi, len(moves)
        return self.lo, self.hi

    @property
    def instructions(self) -> list[Any]:
        lo, hi = self.span()
        return self.trace[lo:hi]

    def before(self, other: Issued) -> bool:
        """Whether this call's instructions come before ``other``'s in the trace (an earlier issue, unless a move
        took it past)."""
        a, b = self.span(), other.span()
        return (a[0], self.seq) < (b[0], other.seq) if a[0] == b[0] else a[0] < b[0]

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


def issued_since(ctx: KernelContext, seq: int, trace_from: int, body: list[Event] | None, body_from: int,
                 moves: Moves | None = None) -> Issued:
    """The registry call just made: it added the trace's instructions from ``trace_from`` on and, when the launch
    records (``body``), the one event at ``body_from`` of the recorder's body; ``moves``: the launch's log of moves."""
    call = None
    if body is not None and len(body) == body_from + 1 and body[-1].__class__ is Call:
        call = body[-1]
    trace = ctx.trace
    return Issued(ctx.instance, seq, body, call, trace, trace_from, len(trace), moves)


def _clash(a: Any, b: Any) -> bool:
    """Whether regions ``a`` and ``b`` may share an element: one storage, and (seen through one tensor) overlapping
    boxes; two views of one storage count as sharing."""
    return a.root == b.root and (a.tensor != b.tensor or overlaps(a.box, b.box))


def _hazard(mine: list[Any], other: Any) -> str:
    """How ``other`` depends on the instructions ``mine`` through its operands ("" if it does not): it reads what
    they write, or writes what they read or write."""
    o_reads, o_writes = other.reads, other.writes
    for ins in mine:
        for w in ins.writes:
            if any(_clash(w, r) for r in o_reads):
                return "reads what it writes"
            if any(_clash(w, x) for x in o_writes):
                return "writes what it writes"
        for r in ins.reads:
            if any(_clash(r, x) for x in o_writes):
                return "writes what it reads"
    return ""


def move_after(consumer: Issued, producer: Issued, moves: Moves) -> str:
    """Issue ``consumer``'s call again right after ``producer``'s (issued after it), in the trace and in the program
    being recorded, logging the move in ``moves``; "" when done, else why it cannot be: an instruction between them
    (or the producer) touches what the consumer touches, one of them has state no operand shows (``STATEFUL``), one
    waits for the consumer, or the program between them is more than calls (a loop's boundary)."""
    trace = consumer.trace
    if producer.trace is not trace:
        return "the two were issued by different launches"
    c_lo, c_hi = consumer.span()
    p_lo, p_hi = producer.span()
    mine, passed = trace[c_lo:c_hi], trace[c_hi:p_hi]
    label = consumer.order.label if consumer.order is not None else None
    for ins in mine + passed:
        if ins.op in STATEFUL:
            return f"{ins.op} (line {ins.loc[1]}) has state no operand shows, so the simulator does not move past it"
    for ins in passed:
        why = _hazard(mine, ins)
        if why:
            return f"{ins.op} at line {ins.loc[1]}, issued between them, {why}"
        if label is not None and ins.order is not None and label in ins.order.after:
            return f"{ins.op} at line {ins.loc[1]}, issued between them, waits for it"
    body, call = consumer.body, consumer.call
    if body is not None:
        if producer.body is not body or call is None or producer.call is None:
            return "the two calls are not in one block of the program"
        i = next((k for k in range(len(body) - 1, -1, -1) if body[k] is call), -1)
        j = next((k for k in range(len(body) - 1, i, -1) if body[k] is producer.call), -1)
        if i < 0 or j < 0:
            return "the two calls are not in one block of the program"
        made = set(call.out)
        for ev in body[i + 1:j + 1]:
            if ev.__class__ is not Call:
                return "the program between them holds more than calls (a dynamic loop's boundary)"
            if made and made & ev.tensors():
                return f"{ev.fn} at line {ev.loc[1]}, issued between them, uses what it makes"
        del body[i]
        body.insert(j, call)
    k = c_hi - c_lo
    if k:
        del trace[c_lo:c_hi]
        trace[p_hi - k:p_hi - k] = mine
        moves.append((c_hi, p_hi, k))
    consumer.lo, consumer.hi, consumer.epoch = p_hi - k, p_hi, len(moves)
    if consumer.moves is None:
        consumer.moves = moves
    return ""
