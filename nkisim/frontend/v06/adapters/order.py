"""NKI 0.6's scheduling edges: ``kernel.with_schedule``, ``NkiInstruction.depends_on`` and ``nl.no_reorder``.

All three say the same thing -- "this instruction runs after that one" -- so they become one thing: an
``ir.Order`` on the instruction's ``Call`` (the label it carries, the labels it waits for), copied onto the
instructions the call put in the trace (``cost.trace.set_order``), which the cost model's scheduler turns into a
wait.  The executor copies a program's orders onto the trace the same way, so a program replays its edges.

An edge is usually given after its instructions were issued (``depends_on`` on two handles, a ``name=`` read by
``with_schedule``), so each registry call the kernel's Python makes through ``binding.call`` is an ``Issued``:
where its ``Call`` sits in the program being recorded and which instructions it emitted, so a label or an edge
can still reach both.  The launch keeps one ``Scheduling`` for this (``KernelContext.schedule``).

Labels: a ``name=`` labels its instruction with that name; an unnamed instruction an edge refers to gets a
number.  An instruction waits for the latest one issued before it (in its SPMD instance) with a label it names,
so an edge inside a loop body holds within an iteration; two instructions sharing a name make an edge wait for
the later of them.  The simulator runs instructions in the order they are issued, so an edge whose producer comes
after its consumer holds by issuing the consumer again right after the producer (``runtime.order.move_after``), when
nothing issued between them touches what it touches; otherwise it is refused, with the instruction in the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nkisim.core.context import KernelContext
from nkisim.frontend.v06.adapters.errors import error
from nkisim.runtime.order import Issued, Moves, issued_since, move_after

#: how deep the kernel is inside ``with nl.no_reorder():`` blocks (``control.no_reorder``)
NO_REORDER = [0]


@dataclass
class Scheduling:
    """The scheduling edges of one launch.  ``edges``: ``with_schedule``'s consumer name -> producer names;
    ``where``: the line that called ``with_schedule`` (where an edge naming no instruction is blamed)."""

    edges: dict[str, tuple[str, ...]] = field(default_factory=dict)
    where: tuple[str, int] | None = None
    anonymous: int = -1
    issued: int = 0
    #: the call ``binding.call`` made last, until an ``nisa`` adapter takes it for its ``NkiInstruction``
    latest: Issued | None = None
    #: (instance, name) -> the dynamic-loop scopes the instructions of that name were issued in
    named: dict[tuple[int, str], list[tuple[int, ...]]] = field(default_factory=dict)
    #: instance -> the last call issued inside ``nl.no_reorder()`` (the next one waits for it)
    chain: dict[int, Issued] = field(default_factory=dict)
    #: with_schedule edges whose producer had not been issued when the consumer was, until it is: (consumer,
    #: producer, the consumer's line, its call, its dynamic-loop scope)
    late: list[tuple[str, str, tuple[str, int], Issued, tuple[int, ...]]] = field(default_factory=list)
    #: the calls moved after a producer issued after them (``runtime.order.Moves``)
    moves: Moves = field(default_factory=list)

    def issue(self, ctx: KernelContext, trace_from: int, body: list | None, body_from: int) -> None:
        """``binding.call`` made a registry call, which added the trace's instructions from ``trace_from`` on and
        the recorder's events (``body``, if it records) from ``body_from`` on."""
        self.issued += 1
        issued = self.latest = issued_since(ctx, self.issued, trace_from, body, body_from, self.moves)
        if NO_REORDER[0] and issued.hi > issued.lo:  # (a call that issues no instruction, nl.ndarray, is no link of the chain)
            before = self.chain.get(ctx.instance)
            if before is not None:
                issued.wait_for((self.label(before),))
            self.chain[ctx.instance] = issued

    def label(self, issued: Issued) -> str | int:
        """The label an edge refers to ``issued`` by: its name, else a number given now."""
        if issued.order is None or issued.order.label is None:
            self.anonymous += 1
            return issued.labelled(self.anonymous)
        return issued.order.label

    def take(self, ctx: KernelContext) -> Issued | None:
        """The call just made, for the ``NkiInstruction`` of the ``nisa`` adapter that made it."""
        issued, self.latest = self.latest, None
        return issued if issued is not None and issued.instance == ctx.instance else None

    def name(self, issued: Issued, name: str, scope: tuple[int, ...], loc: tuple[str, int]) -> None:
        """``name=``: the call's label, the ``with_schedule`` edges whose consumer it is, and those whose producer it
        is for consumers issued before it (each moved after it: ``runtime.order.move_after``)."""
        issued.labelled(name)
        self.named.setdefault((issued.instance, name), []).append(scope)
        if self.late:
            self._keep_late(issued, name, scope)
        producers = self.edges.get(name, ())
        for p in producers:
            scopes = self.named.get((issued.instance, p))
            if not scopes:
                self.late.append((name, p, loc, issued, scope))
                continue
            for sc in scopes:
                if scope[:len(sc)] != sc:
                    # rule: schedule.dynamic_loop_edge
                    raise error("err_dependency_across_dynamic_loop",
                                f"with_schedule edge ({name!r}, {p!r}): instruction {name!r} cannot depend on "
                                f"{p!r}, issued inside a dynamic loop it is not in: a scheduling edge may not cross "
                                f"a dynamic loop's boundary (nl.fori_loop / nl.while_loop), or its semaphore could "
                                f"fire unconditionally or never fire (deadlock)")
        if producers:
            issued.wait_for(producers)

    def finish(self, instance: int) -> None:
        """The kernel's Python has returned (for one SPMD instance): every name ``with_schedule`` gave must label
        an instruction, and every producer must have come before its consumer."""
        for consumer, producers in self.edges.items():
            for n in (consumer, *producers):
                if (instance, n) not in self.named:
                    err = error("err_schedule_unknown_instruction",
                                f"kernel.with_schedule names instruction {n!r}, but no instruction of the kernel "
                                f"has name={n!r}: give the instruction that name (every nisa call takes name=)")
                    err.nki_location = self.where
                    # rule: schedule.unknown_name
                    raise err

    def _keep_late(self, producer: Issued, name: str, scope: tuple[int, ...]) -> None:
        """Instruction ``name`` (``producer``) was just issued: each consumer issued before it that
        ``with_schedule`` puts after it moves after it, or the edge is refused with the reason."""
        keep = []
        for entry in self.late:
            consumer, p, loc, issued, c_scope = entry
            if p != name or issued.instance != producer.instance:
                keep.append(entry)
                continue
            why = "it sits in another dynamic loop" if c_scope != scope else move_after(issued, producer, self.moves)
            if why:
                err = against_program_order(f"with_schedule edge ({consumer!r}, {p!r}): instruction {consumer!r}",
                                            repr(p), why)
                err.nki_location = loc
                # rule: limit.program_order
                raise err
        self.late = keep

    def leave_no_reorder(self, ctx: KernelContext) -> None:
        """The outermost ``nl.no_reorder()`` block ended: the next instruction starts no chain."""
        self.chain.pop(ctx.instance, None)


def against_program_order(consumer: str, producer: str, why: str) -> Exception:
    """The refusal of an edge whose producer was issued after its consumer, when the simulator cannot issue the
    consumer again after it: ``why``."""
    return error("err_schedule_against_program_order",
                 f"{consumer} is issued before {producer}, which it must run after; the simulator runs instructions "
                 f"in the order they are issued and moves the consumer after its producer only when nothing issued "
                 f"between them touches what it touches, but {why}: issue {producer} first")


def scheduling(ctx: KernelContext) -> Scheduling:
    """The launch's scheduling state (made on first use)."""
    state = ctx.schedule
    if state is None:
        state = ctx.schedule = Scheduling()
    return state
