"""The program validator: the trust boundary between a program and the executor.

A program may have been written by someone else (a hostile grading child can send anything).  Its parser
(``program.ir.from_json``) has typed and bounded every field (``program.limits``); ``validate`` accepts only
programs the executor can run safely: every call is a registered NKI call (``core.recording.CALLS``), every
operand checks out in its place (each kind's ``check``: tensors are used only after a call made them, index
expressions name only loops that are running, arrays exist with the right dtype), loops nest at most
``MAX_LOOP_DEPTH`` deep and iterate inside their ranges, a body traced once is split into paths only at its
top, every scheduling edge waits for a label an earlier call carries, SPMD instances fit the grid and the
target's cores, and what the program asks of the executor -- events, tensors, calls run counting every
iteration -- stays within fixed caps.  What only the ops know (an index out of
a tensor's bounds, an illegal shape or memory space) the executor checks on its own tensors with the ops' own
checks, so those raise the compiler's error there.
"""

from __future__ import annotations

import math

from nkisim.core import dtypes as dt
from nkisim.core.recording import CALLS
from nkisim.core.target import Target
from nkisim.program.ir import (
    Array,
    Call,
    Guard,
    Instance,
    LoopEnter,
    LoopLeave,
    LoopStep,
    Path,
    Program,
    exact_iteration,
)
from nkisim.program.limits import (
    EDGES_PER_CALL,
    MAX_ARRAY_BYTES,
    MAX_EDGES,
    MAX_EVENTS,
    MAX_EXECUTED_CALLS,
    MAX_INPUT_ELEMENTS,
    MAX_INSTANCES,
    MAX_LOOP_DEPTH,
    MAX_PATH_CHECKS,
    MAX_TENSORS,
    MAX_TRIP,
    fail,
)
from nkisim.program.operands import ARRAY_DTYPES, DTYPES, PLAIN, Operand

__all__ = ["MAX_EVENTS", "MAX_TENSORS", "validate"]


class _Scope:
    """What is defined at the current point of the body: tensors made, loops running, the arrays; the ``Scope``
    each operand kind's ``check`` is handed (``program.operands``)."""

    def __init__(self, program: Program) -> None:
        self.arrays: tuple[Array, ...] = program.arrays
        self.defined: set[int] = set(range(len(program.inputs)))
        self.running: set[int] = set()
        #: the labels of the calls so far (``ir.Order``): a scheduling edge may wait only for one of them
        self.labels: set[object] = set()
        self.where = ""

    def fail(self, what: str) -> None:
        fail(f"{self.where}: {what}")

    def value(self, x: Operand, depth: int) -> None:
        if x.__class__ not in PLAIN:
            x.check(self, depth)  # type: ignore[union-attr]

    def tensor(self, pid: int) -> None:
        if pid not in self.defined:
            self.fail(f"tensor {pid} is used before any call made it")

    def loop(self, lid: int) -> None:
        if lid not in self.running:
            self.fail(f"an index expression names loop {lid}, which is not running here")

    def array(self, k: int) -> Array:
        if not 0 <= k < len(self.arrays):
            self.fail(f"no array {k}")
        return self.arrays[k]


class _Loop:
    """A loop open at the current point of the body, with what the executor will run of it."""

    __slots__ = ("enter", "values", "last", "paths", "calls", "best", "tried", "guards")

    def __init__(self, enter: LoopEnter) -> None:
        self.enter = enter
        self.values = range(enter.start, enter.stop, enter.step)
        self.last: int | None = None  # the last iteration an unrolled loop ran
        self.paths = 0  # paths of a body traced once
        self.calls = 0  # calls run by one iteration of the body (of the current path)
        self.best = 0  # of the paths before the current one, the most calls one iteration runs
        self.tried = 0  # guards an iteration may evaluate to find its path (a path for one iteration: one lookup)
        self.guards: list[tuple[Guard, ...]] = []  # each path's guards


def _check_header(program: Program, target: Target) -> None:
    if program.target != target.name:
        fail(f"traced for {program.target!r}, not {target.name!r}")
    if math.prod(program.grid) > MAX_INSTANCES:
        fail(f"grid {list(program.grid)} is not a launch grid of at most {MAX_INSTANCES} instances")
    if not 1 <= program.cores <= max(target.spmd_cores, 1):
        fail(f"{program.cores} cores requested, {target.name} has {target.spmd_cores}")
    if not len(program.inputs) <= program.tensors <= MAX_TENSORS:
        fail("tensor count out of range")
    if len(program.body) > MAX_EVENTS:
        fail(f"more than {MAX_EVENTS} events")
    for i in program.inputs:
        if i.dtype not in DTYPES or not i.shape or any(s < 1 for s in i.shape) or \
                math.prod(i.shape) > MAX_INPUT_ELEMENTS:
            fail(f"input {i.name!r} has no valid shape and dtype")
    total = 0
    for k, a in enumerate(program.arrays):
        if a.dtype not in ARRAY_DTYPES or any(s < 0 for s in a.shape):
            fail(f"array {k} has no valid dtype and shape")
        size = math.prod(a.shape) * dt.storage_dtype(dt.normalize(a.dtype)).itemsize
        if size != len(a.data):
            fail(f"array {k} holds {len(a.data)} bytes, its shape needs {size}")
        total += size
    if total > MAX_ARRAY_BYTES:
        fail("constant arrays too large")


def validate(program: Program, target: Target) -> None:
    """Raise ``ProgramError`` unless ``program`` is one the executor may run for ``target``."""
    _check_header(program, target)
    st = _Scope(program)
    stack: list[_Loop] = []
    ids: set[int] = set()
    instances = 0
    executed = [0]  # calls run at the top level, every iteration of every loop traced once counted

    for i, ev in enumerate(program.body):
        st.where = f"event {i}"
        cls = ev.__class__
        if cls is Call:
            _call(ev, st, program)  # type: ignore[arg-type]
            runs = 1 if ev.order is None else 1 + len(ev.order.after) // EDGES_PER_CALL  # type: ignore[union-attr]
            if stack:
                stack[-1].calls += runs
            else:
                executed[0] += runs
        elif cls is LoopStep:
            _step(ev, stack, st)  # type: ignore[arg-type]
        elif cls is LoopEnter:
            _enter(ev, stack, ids, st)  # type: ignore[arg-type]
        elif cls is LoopLeave:
            _leave(ev, stack, st, executed)  # type: ignore[arg-type]
        elif cls is Path:
            _path(ev, stack, st, program, i)  # type: ignore[arg-type]
        elif isinstance(ev, Instance):
            if stack:
                st.fail("an SPMD instance starts inside a loop")
            resumed = program.dialect == "0.6" and ev.number < instances  # LNC2 cores take turns (runtime.lnc)
            if (ev.number != instances and not resumed) or len(ev.index) != len(program.grid) or \
                    any(not 0 <= v < g for v, g in zip(ev.index, program.grid)) or not 0 <= ev.core < program.cores:
                st.fail(f"SPMD instance {list(ev.index)} does not fit grid {list(program.grid)}")
            instances += not resumed
        else:
            st.fail("unknown event")
    if stack:
        fail("loops still running at the end of the program")
    if instances != max(math.prod(program.grid), 1):
        fail(f"{instances} SPMD instances for a grid of {math.prod(program.grid)}")
    st.where = "outputs"
    st.value(program.outputs, 0)


def _call(ev: Call, st: _Scope, program: Program) -> None:
    st.where = f"{st.where} ({ev.fn}, line {ev.loc[1]})"
    if ev.fn not in CALLS:
        st.fail(f"{ev.fn!r} is not an NKI call")
    for a in ev.args:
        st.value(a, 0)
    for _, v in ev.kwargs:
        st.value(v, 0)
    for pid in ev.out:
        if not 0 <= pid < program.tensors:
            st.fail(f"result tensor id {pid} out of range")
        st.defined.add(pid)
    if ev.order is not None:
        if len(ev.order.after) > MAX_EDGES:
            st.fail(f"a call waits for more than {MAX_EDGES} labels (limits.MAX_EDGES)")
        for label in ev.order.after:
            if label not in st.labels:
                st.fail(f"a scheduling edge waits for instruction {label!r}, which no earlier call is labelled "
                        f"(the producer of an edge is issued before its consumer)")
        if ev.order.label is not None:
            st.labels.add(ev.order.label)


def _enter(ev: LoopEnter, stack: list[_Loop], ids: set[int], st: _Scope) -> None:
    if ev.loop != len(ids) or ev.step == 0:
        st.fail(f"malformed loop {ev.loop}")
    if len(stack) >= MAX_LOOP_DEPTH:
        st.fail(f"loops nest at most {MAX_LOOP_DEPTH} deep (limits.MAX_LOOP_DEPTH)")
    if len(range(ev.start, ev.stop, ev.step)) > MAX_TRIP:
        st.fail(f"loop of more than {MAX_TRIP} iterations")
    ids.add(ev.loop)
    stack.append(_Loop(ev))
    st.running.add(ev.loop)


def _step(ev: LoopStep, stack: list[_Loop], st: _Scope) -> None:
    if not stack or stack[-1].enter.loop != ev.loop:
        st.fail(f"iteration of loop {ev.loop}, which is not the innermost running loop")
    lp = stack[-1]
    if lp.enter.once:
        st.fail(f"loop {ev.loop} is traced once and has no iteration events")
    if ev.value not in lp.values:
        st.fail(f"iteration {ev.value} is outside the loop's range")
    if lp.last is not None and (ev.value - lp.last) * lp.enter.step <= 0:
        st.fail("loop iterations must follow the loop's order")
    lp.last = ev.value


def _path(ev: Path, stack: list[_Loop], st: _Scope, program: Program, i: int) -> None:
    """A path starts a part of a body traced once, right inside its loop; every event of a body with paths is in
    one (its first event is a path)."""
    if not stack or not stack[-1].enter.once:
        st.fail("a path starts only inside a loop body traced once")
    lp = stack[-1]
    if lp.paths == 0 and not isinstance(program.body[i - 1], LoopEnter):
        st.fail("a body with paths starts with its first path")
    lp.best = max(lp.best, lp.calls)
    lp.calls = 0
    lp.paths += 1
    lp.tried += 1 if ev.guards and exact_iteration(ev.guards[0], lp.enter.loop) is not None else len(ev.guards)
    for g in ev.guards:
        g.condition.check(st, 0)
    lp.guards.append(ev.guards)


def _nodes(pred: object) -> int:
    """Comparisons and joins in a predicate: what evaluating it once costs."""
    return 1 + sum(_nodes(getattr(pred, f)) for f in ("a", "b") if hasattr(pred, f))


def _covered(lp: _Loop, st: _Scope) -> None:
    """Some path of a body traced once holds at every iteration of its loop, when its guards name that loop
    alone (``Guard.condition.holds_at``) and checking costs at most ``MAX_PATH_CHECKS`` comparisons: a
    forged guard (``i % 2 == 5``) is refused here rather than when the executor reaches that iteration."""
    lid = lp.enter.loop
    if len(lp.values) * sum(_nodes(g.condition) for guards in lp.guards for g in guards) > MAX_PATH_CHECKS:
        return
    for v in lp.values:
        env = {lid: v}
        for guards in lp.guards:
            truths = [g.condition.holds_at(env) for g in guards]
            if any(t is None for t in truths):
                return  # a guard on another loop: told only while the program runs
            if all(t == g.held for t, g in zip(truths, guards)):
                break
        else:
            st.fail(f"no path of the body of loop {lid} holds at its iteration {v}")


def _leave(ev: LoopLeave, stack: list[_Loop], st: _Scope, executed: list[int]) -> None:
    """The loop ends: the calls it runs (a body traced once: its trip count times its longest path's, and the
    guards an iteration may try to find its path) count toward the enclosing body's, or the program's."""
    if not stack or stack[-1].enter.loop != ev.loop:
        st.fail(f"loop {ev.loop} ends but is not the innermost running loop")
    lp = stack.pop()
    if lp.enter.once and lp.guards:
        _covered(lp, st)
    st.running.discard(ev.loop)
    runs = (max(lp.best, lp.calls) + lp.tried) * (len(lp.values) if lp.enter.once else 1)
    if stack:
        stack[-1].calls += runs
    else:
        executed[0] += runs
    if (stack[-1].calls if stack else executed[0]) > MAX_EXECUTED_CALLS:
        st.fail(f"the program would run more than {MAX_EXECUTED_CALLS} calls (limits.MAX_EXECUTED_CALLS)")
