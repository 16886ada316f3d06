"""Recording a launch into a ``Program``: the compile half of compile-then-execute.

While a launch records, ``core.recording.HOOK`` holds a ``ProgramRecorder``.  Every NKI call the kernel makes
at statement level comes here: its arguments are encoded (``program.encode``) *before* it runs, it runs as it
always does (so every check of the compiler raises at the student's line, and the values are there when the
launch has inputs), and the tensors its result holds get program ids.  Loop entries, iterations and exits
and the start of each SPMD instance are events of their own, so the executor rebuilds the same loop stack
and the cost model sees the same loop structure.

**Loop bodies are traced once**, as the compiler traces them: the kernel's Python runs an ``affine_range`` or
``sequential_range`` body for its first iteration, and the recorder runs the other iterations from the events
it recorded (``runtime.runner.Runner``), so Python side effects in a body (an address counter, a list of
names) happen once, as on a device.

A body whose Python branches on the loop's index (``if i == 0:``, ``if i < n - 1:``, ``if i % 2 == 0:``,
``if i // 4 == 0:``) is traced once per way its branches go: each condition is kept as a guard (its predicate, symbolic like a mask's, and whether it
held), and an iteration whose guards hold as a traced iteration's did runs from that iteration's events (a
``Path`` of the program); one whose guards go another way is run by the kernel's Python once more, and traced.
So ``if i == 0:`` runs the body's Python twice, whatever the trip count.

An iteration's events cannot stand for others when its Python depended on the iteration in another way; that
iteration keeps its events for itself alone (a path guarded by ``i == value``), and when no iteration could
run from another's, the loop is unrolled in the program as before:

- it took a concrete value of the loop variable other than a branch on a predicate: ``range(i)``, ``lst[i]``,
  an operand frozen at this iteration (``t[i % 2]``), a condition the program cannot hold (``if lst[i * i]:``,
  ``if (i * i) % 2:``; a predicate holds affine index expressions, and those divided by a positive integer);
- it rebound a variable that held a tile some iteration reads (``acc = acc + t``: each iteration reads the tile
  the last one made), collected the body's tiles in a list, dict or tuple, or read a tile an earlier iteration
  made.

A kernel whose Python reads, through a variable, a tile an earlier iteration made after iterations have run from
the traced body gets the compiler's scope error: that tile is local to the iteration (or branch) that made it.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nkisim.core import context
from nkisim.core.errors import nki_error
from nkisim.core.indexing import Affine, Loop, MaskExpr
from nkisim.core.location import replaying, user_frame, user_location
from nkisim.core.recording import HOOK, RUN, SKIP, STOP
from nkisim.core.tensor import Tensor
from nkisim.ops.base import legacy_call_in_06_kernel
from nkisim.ops.registry import check_emits
from nkisim.program.encode import Decoder, Encoder, RecordError, result_tensors
from nkisim.program.ir import (
    Call,
    Event,
    Guard,
    Input,
    Instance,
    LoopEnter,
    LoopKind,
    LoopLeave,
    LoopStep,
    Path,
    Program,
    last_uses,
    once_bodies,
)
from nkisim.program.kinds.indexing import Index
from nkisim.program.kinds.masks import Cmp, MaskConst, Symbolic
from nkisim.runtime.runner import Runner

#: the most container items looked at for a body's tiles (a list the body fills); past it the body is unrolled
_SCAN_LIMIT = 4096


@dataclass
class _Segment:
    """One iteration of a probed loop that the kernel's Python ran: its events and what they hold for."""

    value: int  # the iteration
    marker: int  # index of its LoopStep in the body (its Path, if the loop is traced once)
    first_pid: int  # program ids from here on are of tensors its Python made
    #: the kernel frame's variables when it started: name -> (id of the value, its tensor id or None); ids rather
    #: than the values, so a segment keeps none of its iteration's tiles alive
    names: dict[str, tuple[int, int | None]]
    end: int = -1  # index after its last event, once it has ended
    made_end: int = -1  # the first program id it did not make, once it has ended
    guards: list[Guard] = field(default_factory=list)
    dirty: bool = False  # its Python took the loop's index in a way no guard holds
    replayable: bool = False  # other iterations may run from its events (set when it ends)
    replayed: bool = False
    runner: Runner | None = None


@dataclass
class _Probe:
    """A loop whose body is being traced (see the module docstring)."""

    loop: Loop
    lid: int
    enter: int  # index of its LoopEnter in the body
    frame: types.FrameType | None  # the kernel frame running the ``for``
    first_pid: int  # program ids from here on are of tensors the body made
    segments: list[_Segment] = field(default_factory=list)
    candidates: list[_Segment] = field(default_factory=list)  # the replayable segments, in order
    carried: set[int] = field(default_factory=set)  # tiles an iteration read that were made before it started
    open: _Segment | None = None  # the iteration the kernel's Python is running
    replays: int = 0
    dec: Decoder | None = None  # the replays' live tensors and loops


class ProgramRecorder:
    """Collects one launch's events (see the module docstring)."""

    def __init__(self) -> None:
        self.enc = Encoder()
        self.body: list[Event] = []
        self.inputs: list[Input] = []
        self.probes: list[_Probe] = []
        self.loops: dict[int, Loop] = {}  # program loop id -> the launch's loop

    # --- launch-level events ------------------------------------------------------------------
    def add_input(self, name: str, t: Tensor) -> None:
        from nkisim.core import dtypes as dt

        self.enc.new_tensor(t)
        self.inputs.append(Input(name, tuple(int(s) for s in t.shape), dt.name(t.dtype), not t.param))

    def instance(self, index: tuple[int, ...], number: int, core: int) -> None:
        self.body.append(Instance(tuple(index), number, core))

    # --- the hook's protocol (core.recording.Recorder) ----------------------------------------
    def call(self, name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
        loc = user_location(3)
        enc = self.enc
        value = enc.value
        try:  # (lists, not generators: a generator costs more than the few operands a call has)
            eargs = tuple([value(a) for a in args])
            ekw = tuple([(k, value(v)) for k, v in kwargs.items()])
        except RecordError:
            if any(getattr(type(v), "__nki_view__", False) for v in (*args, *kwargs.values())):
                raise legacy_call_in_06_kernel(f"an argument of '{name}'") from None  # a legacy call in a 0.6 kernel
            raise
        ctx = context.active()
        trace = ctx.trace if ctx is not None else []
        before = len(trace)
        HOOK.depth += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            HOOK.depth -= 1
        if len(trace) > before:
            check_emits(name, trace, before)
        ids = []
        for t in result_tensors(result):
            pid = enc.tensor_ids.get(t.uid)
            ids.append(enc.new_tensor(t) if pid is None else pid)
        self.body.append(Call(name, eargs, ekw, tuple(ids), loc))
        return result

    def loop_enter(self, loop: Loop) -> None:
        lid = self.enc.new_loop(loop)
        self.loops[lid] = loop
        if loop.trip > 1:
            self.probes.append(_Probe(loop, lid, len(self.body), user_frame(), len(self.enc.tensor_ids)))
            if self.enc.seen is None:
                self.enc.seen = {}
            self.enc.seen_below = self.probes[-1].first_pid
        self.body.append(LoopEnter(lid, LoopKind(loop.kind), loop.start, loop.stop, loop.step))

    def loop_step(self, loop: Loop, value: int) -> int:
        probe = self.probes[-1] if self.probes and self.probes[-1].loop is loop else None
        if probe is None:
            self.body.append(LoopStep(self.enc.loop(loop), int(value)))
            return RUN
        if probe.open is not None:
            self._end(probe)
        seg = self._match(probe)
        if seg is not None:
            segs = probe.segments
            if len(segs) == 1 and not seg.guards:  # one way through the body: it runs every iteration left
                self._replay(probe, seg, range(value, loop.stop, loop.step))
                return STOP
            self._replay(probe, seg, range(value, value + 1))
            return SKIP
        frame = probe.frame
        names = {} if frame is None else {n: (id(v), self._tensor_id(v)) for n, v in frame.f_locals.items()}
        probe.open = _Segment(int(value), len(self.body), len(self.enc.tensor_ids), names)
        probe.segments.append(probe.open)
        self.body.append(LoopStep(probe.lid, int(value)))
        return RUN

    def loop_leave(self, loop: Loop) -> None:
        if self.probes and self.probes[-1].loop is loop:  # it ended, broke out or raised
            probe = self.probes[-1]
            if probe.open is not None:
                self._end(probe)
            self.probes.pop()
            if not self.probes:
                self.enc.seen = None
            else:  # (the enclosing iteration's tiles read inside the loop are no longer needed for replays)
                below = self.enc.seen_below = self.probes[-1].first_pid
                seen = self.enc.seen
                if seen is not None:
                    for pid in [pid for pid in seen if pid >= below]:
                        del seen[pid]
            if probe.replays:
                self._traced_once(probe)
        self.enc.frozen.discard(loop)
        self.body.append(LoopLeave(self.enc.loop(loop)))

    def concrete(self, loops: Any, condition: Any = None) -> None:
        """The kernel's Python took a value of these loops' variables: ``condition``'s truth in a branch (see the
        module docstring), or a plain value (``condition`` None)."""
        named = [p for p in self.probes if p.loop in loops and p.open is not None]
        if not named:
            return
        if condition is not None and len(named) == 1 and loops == {named[0].loop}:
            guard = self._guard(condition)
            if guard is not None:
                seg = named[0].open
                assert seg is not None
                if guard not in seg.guards:
                    seg.guards.append(guard)
                return
        for p in named:
            p.open.dirty = True  # type: ignore[union-attr]

    # --- loop bodies traced once ----------------------------------------------------------------
    def _guard(self, condition: Any) -> Guard | None:
        """A branch's condition as a guard, if the program can hold it as a predicate over index expressions."""
        enc = self.enc
        frozen = set(enc.frozen)
        if isinstance(condition, Affine):  # ``if i:``
            held = bool(condition.value())
            condition = condition != 0
        elif isinstance(condition, MaskExpr):
            held = bool(np.all(condition.value))
        else:
            return None
        try:
            pred = MaskConst.encode(condition, enc)
        except Exception:  # noqa: BLE001 - a condition the program cannot hold: the iteration is not traced once
            pred = None
        if not isinstance(pred, Symbolic) or enc.frozen != frozen or _holds_constant(pred):
            enc.frozen = frozen
            return None
        return Guard(pred, held)

    def _match(self, probe: _Probe) -> _Segment | None:
        """The first traced iteration whose events this iteration can run from: every guard holds as it did."""
        dec: Decoder | None = None
        for seg in probe.candidates:
            if seg.guards:
                if dec is None:
                    dec = Decoder(tuple(self.enc.arrays), {}, self.loops)
                if not all(bool(np.all(g.condition.decode(dec).value)) == g.held for g in seg.guards):
                    continue
            return seg
        return None

    def _end(self, probe: _Probe) -> None:
        """The kernel's Python has run the probe's open iteration: whether others may run from its events."""
        seg = probe.open
        assert seg is not None
        probe.open = None
        seg.end = len(self.body)
        seg.made_end = len(self.enc.tensor_ids)
        events = self.body[seg.marker + 1:seg.end]
        reads: set[int] = set()
        for ev in events:
            if ev.__class__ is Call:
                reads |= ev.tensors()  # type: ignore[union-attr]
        frozen = probe.loop in self.enc.frozen
        self.enc.frozen.discard(probe.loop)
        earlier = {pid for pid in reads if probe.first_pid <= pid < seg.first_pid}
        self._stale(probe, seg, earlier, events)
        probe.carried |= {pid for pid in reads if pid < seg.first_pid}
        seg.replayable = not (seg.dirty or frozen or earlier) and self._independent(probe, seg)
        if seg.replayable:
            probe.candidates.append(seg)
        seg.names = {}
        if probe.dec is not None:  # the replays' tensors: those made before the loop its Python read first
            probe.dec.tensors.update((pid, t) for pid, t in (self.enc.seen or {}).items() if pid < probe.first_pid)

    def _independent(self, probe: _Probe, seg: _Segment) -> bool:
        """Whether the segment left nothing in the kernel's variables that another iteration would read: no variable
        was rebound whose old tile some iteration reads without having made it (``acc = acc + t``), and no
        container holds a tile it made."""
        frame = probe.frame
        if frame is None:
            return True
        carried = probe.carried
        now = frame.f_locals
        for name, (old, pid) in seg.names.items():
            if pid is not None and pid in carried and name in now and id(now[name]) != old:
                return False  # ``acc = acc + t``: the next iteration would read this one's tile
        scanned = 0
        for value in now.values():
            if isinstance(value, (list, tuple, dict)):
                for item in (value.values() if isinstance(value, dict) else value):
                    scanned += 1
                    pid = self._tensor_id(item)
                    if scanned > _SCAN_LIMIT or (pid is not None and pid >= seg.first_pid):
                        return False  # the body's tiles collected: later iterations would add theirs
        return True

    def _stale(self, probe: _Probe, seg: _Segment, earlier: set[int], events: list[Event]) -> None:
        """The compiler's scope error, if the kernel's Python just read a tile an earlier iteration made whose
        later copies ran from the traced body: what it read is not what that iteration would have read."""
        for other in probe.candidates:  # (only a replayable segment is ever replayed)
            if other is seg or not other.replayed:
                continue
            made = sorted(pid for pid in earlier if other.first_pid <= pid < other.made_end)
            if made:
                pid = made[0]
                name = self._name_of(probe, pid) or f"tensor {pid}"
                loc = next((ev.loc for ev in events if isinstance(ev, Call) and pid in ev.tensors()), None)
                err = nki_error("err_local_variable_used_out_of_scope",
                                f"Local variable '{name}' is referenced outside of its parent scope: it holds a tile "
                                f"made in iteration {other.value} of the loop, and the loop's body branches on its "
                                f"index, so the compiler traces it once per branch. Allocate the tile before the "
                                f"loop and update it in place with '{name}[...] = ...'")
                err.nki_location = loc
                raise err

    def _name_of(self, probe: _Probe, pid: int) -> str | None:
        frame = probe.frame
        if frame is None:
            return None
        return next((n for n, v in frame.f_locals.items() if self._tensor_id(v) == pid), None)

    def _tensor_id(self, x: Any) -> int | None:
        t = x if isinstance(x, Tensor) else getattr(x, "tensor", None)
        return self.enc.tensor_ids.get(t.uid) if isinstance(t, Tensor) else None

    def _replay(self, probe: _Probe, seg: _Segment, values: range) -> None:
        """Run the segment's events for the iterations ``values`` (the tiles they make are the runner's alone: it
        lets them go, and hands their storage over, at their last use in the body)."""
        dec = probe.dec
        if dec is None:
            dec = probe.dec = Decoder(tuple(self.enc.arrays), dict(self.enc.seen or {}), dict(self.loops))
        else:
            dec.arrays = tuple(self.enc.arrays)
            dec.loops.update(self.loops)
        runner = seg.runner
        if runner is None:
            events = self.body[seg.marker + 1:seg.end]
            first = seg.first_pid
            runner = seg.runner = Runner(context.current(), events, dec, last_uses(events, keep=lambda pid: pid < first),
                                         once_bodies(events), None, traced_here=True)
        HOOK.recorder = None
        try:
            with replaying() as at:
                runner.at = at
                runner.iterate(probe.loop, values, 0, len(runner.events))
        finally:
            HOOK.recorder = self
        seg.replayed = True
        probe.replays += len(values)

    def _traced_once(self, probe: _Probe) -> None:
        """Some iterations ran from traced ones: the loop's events become its body traced once, one ``Path`` per
        iteration the kernel's Python ran (none if there was one and it branched nowhere)."""
        body = self.body
        e = body[probe.enter]
        assert isinstance(e, LoopEnter)
        body[probe.enter] = LoopEnter(e.loop, e.kind, e.start, e.stop, e.step, True)
        segs = probe.segments
        if len(segs) == 1 and not segs[0].guards and segs[0].replayable:
            del body[segs[0].marker]
            return
        for seg in segs:
            guards = tuple(seg.guards)
            if not seg.replayable:  # its events hold for its own iteration only
                var = Index(0, ((probe.lid, 1),), None, True, (probe.lid,))
                guards = (Guard(Cmp("==", var, Index(seg.value, (), None, True, ())), True), *guards)
            body[seg.marker] = Path(guards)

    # --- the result ---------------------------------------------------------------------------
    def program(self, kernel: str, target: str, grid: tuple[int, ...], cores: int, outputs: Any, *,
                skip_middle_end: bool, stack_allocator: bool, on_chip_outputs: bool, dialect: str = "legacy") -> Program:
        return Program(kernel=kernel, target=target, grid=tuple(grid), cores=cores, inputs=tuple(self.inputs),
                       arrays=tuple(self.enc.arrays), body=tuple(self.body), outputs=self.enc.value(outputs),
                       skip_middle_end=skip_middle_end, stack_allocator=stack_allocator,
                       on_chip_outputs=on_chip_outputs, tensors=len(self.enc.tensor_ids), dialect=dialect)


def _holds_constant(pred: Any) -> bool:
    """Whether a predicate holds a constant mask (a value frozen when it was recorded) anywhere."""
    if isinstance(pred, MaskConst):
        return True
    return any(_holds_constant(getattr(pred, f)) for f in ("a", "b") if hasattr(pred, f))
