"""What every NKI 0.6 ``nisa`` adapter shares: the ``NkiInstruction`` an instruction returns, operand helpers, and
the target queries (``get_nc_version``) with the generation check some instructions need."""

from __future__ import annotations

from nkisim.core.context import active as _active
from nkisim.core.location import user_location
from nkisim.frontend.v06.adapters import binding as _b
from nkisim.frontend.v06.adapters.control import dynamic_scope
from nkisim.frontend.v06.adapters.errors import error as _error
from nkisim.frontend.v06.adapters.order import Issued, against_program_order, scheduling
from nkisim.frontend.v06.isa_constants import nc_version
from nkisim.runtime.order import MAX_EDGES, move_after


class NkiInstruction:
    """What an ``nisa`` call returns: a handle on the instruction it issued (``name=`` labels it)."""

    def __init__(self, name: str | None, scope: tuple[int, ...] = (), issued: Issued | None = None) -> None:
        self.name = name
        #: the dynamic loops (``nl.fori_loop``, ``nl.while_loop``, ``nl.dynamic_range``) it was issued in
        self.scope = scope
        #: the registry call it made, which an edge orders (``order.Issued``; None if it made none)
        self.issued = issued

    def depends_on(self, *producers: NkiInstruction) -> NkiInstruction:
        """Schedule this instruction after ``producers``: the cost model makes it wait for them
        (``adapters.order``).  An edge is a semaphore wait fixed when the kernel is compiled, so it may not cross
        a dynamic loop's boundary: the producer sits in the consumer's dynamic loop or in one enclosing it (Python
        loops are unrolled and do not count).  The edge is given while the consumer's dynamic loop still runs: after
        it, the loop's other iterations have been issued without it.  A producer issued after this instruction
        moves this one after it (``runtime.order.move_after``), when nothing issued between them touches what this
        one touches."""
        if dynamic_scope()[:len(self.scope)] != self.scope:
            # rule: schedule.dynamic_loop_edge
            raise _error("err_dependency_across_dynamic_loop",
                         f"depends_on: {_label(self)} was issued inside a dynamic loop that has ended: give its edges "
                         f"inside the loop body (a scheduling edge may not cross a dynamic loop's boundary)")
        for p in producers:
            if not isinstance(p, NkiInstruction):
                # rule: python.argument_type
                raise TypeError(f"depends_on takes the NkiInstruction handles nisa calls return, got {p!r}")
            if self.scope[:len(p.scope)] != p.scope:  # p sits in a dynamic loop the consumer is not in
                # rule: schedule.dynamic_loop_edge
                raise _error("err_dependency_across_dynamic_loop",
                             f"depends_on: {_label(self)} cannot depend on {_label(p)}, issued inside a dynamic loop "
                             f"it is not in: a scheduling "
                             f"edge may not cross a dynamic loop's boundary (nl.fori_loop / nl.while_loop), or its "
                             f"semaphore could fire unconditionally or never fire (deadlock); both instructions must "
                             f"sit at the same dynamic-loop nesting, or the producer in an enclosing scope")
            if self.issued is not None and p.issued is self.issued:
                # rule: limit.program_order
                raise _error("err_schedule_against_program_order", f"depends_on: {_label(self)} cannot depend on "
                                                                   f"itself")
        ctx = _active()
        if self.issued is not None and ctx is not None:
            for p in producers:  # a producer issued after the consumer: the consumer moves after it
                if p.issued is not None and self.issued.before(p.issued):
                    why = "it sits in another dynamic loop" if p.scope != self.scope else \
                        move_after(self.issued, p.issued, scheduling(ctx).moves)
                    if why:
                        # rule: limit.program_order
                        raise against_program_order(f"depends_on: {_label(self)}", _label(p), why)
        if self.issued is not None and ctx is not None:
            state = scheduling(ctx)
            labels = tuple(state.label(p.issued) for p in producers if p.issued is not None)
            have = self.issued.order.after if self.issued.order is not None else ()
            if len(set(have) | set(labels)) > MAX_EDGES:
                # rule: limit.edges
                raise _error("err_too_many_edges", f"depends_on: {_label(self)} would wait for more than "
                                                   f"{MAX_EDGES} instructions, more than a program holds")
            self.issued.wait_for(labels)
        return self

    def __repr__(self) -> str:
        return f"NkiInstruction({self.name!r})"


class NkiValidationError(Exception):
    """Raised for a violated hardware constraint (the simulator raises its catalogued errors instead)."""


def _label(i: NkiInstruction) -> str:
    return f"instruction {i.name!r}" if i.name else "this instruction"


def done(name: str | None) -> NkiInstruction:
    """The ``NkiInstruction`` an ``nisa`` adapter returns for the registry call it just made, labelled ``name``."""
    if name is not None and not isinstance(name, str):
        # rule: python.argument_type
        raise TypeError(f"name= must be a string, got {type(name).__name__}")
    scope = dynamic_scope()
    ctx = _active()
    issued = None
    if ctx is not None:
        state = scheduling(ctx)
        issued = state.take(ctx)
        if issued is not None and name is not None:
            state.name(issued, name, scope, user_location())
    return NkiInstruction(name, scope, issued)


#: an ``nisa`` adapter's tensor operands: the binding's own functions, without a call in between (every operand of
#: every instruction passes here)
tensor = _b.tensor
tensor_or_scalar = _b.tensor_or_scalar


def _nc_version_number() -> int:
    ctx = _active()
    if ctx is not None:
        return ctx.nc_version
    from nkisim.runtime.kernel import default_target

    return default_target().nc_version


def get_nc_version() -> nc_version:
    """The target's NeuronCore generation: gen2 (trn1), gen3 (trn2) or gen4 (trn3)."""
    return nc_version(_nc_version_number())


def get_nc_sub_version() -> int:
    """The silicon revision (0 or 1): the simulator models revision 0."""
    return 0


def needs_gen(gen: int, what: str) -> None:
    have = _nc_version_number()
    if have < gen:
        # rule: target.generation
        raise _error("err_unsupported_target", f"{what} needs NeuronCore-v{gen} (gen{gen}); the target is gen{have}")


