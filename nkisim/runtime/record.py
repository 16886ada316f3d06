"""Recording a launch into a ``Program``: the compile half of compile-then-execute.

While a launch records, ``core.recording.HOOK`` holds a ``ProgramRecorder``.  Every NKI call the kernel makes
at statement level comes here: its arguments are encoded (``program.encode``) *before* it runs, it runs as it
always does (so every check of the compiler raises at the student's line, and the values are there when the
launch has inputs), and the tensors its result holds get program ids.  Loop entries, iterations and exits
and the start of each SPMD instance are events of their own, so the executor rebuilds the same loop stack
and the cost model sees the same loop structure.

**Loop bodies are traced once**, as the compiler traces them: the kernel's Python runs an ``affine_range`` or
``sequential_range`` body for the first iteration only, and the recorder runs the other iterations from the
events it recorded (``runtime.execute.Runner``), so Python side effects in a body (an address counter, a
list of names) happen once, as on a device.  A body whose Python depended on the iteration cannot be traced
once, and runs iteration by iteration as before (unrolled in the program):

- it took a concrete value of the loop variable: ``if i == 0``, ``range(i)``, ``lst[i]``, or an operand
  frozen at this iteration (``i % 2``), none of which the compiler can trace either;
- it rebound a variable that held a tile the body reads (``acc = acc + t``: each iteration reads the tile the
  last one made) or collected the body's tiles in a list, dict or tuple.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nkisim.core import context
from nkisim.core.indexing import Loop
from nkisim.core.location import replaying, user_frame, user_location
from nkisim.core.recording import HOOK
from nkisim.core.tensor import Tensor
from nkisim.ops.base import legacy_call_in_06_kernel
from nkisim.ops.registry import check_emits
from nkisim.program.encode import Decoder, Encoder, RecordError, result_tensors, tensor_ids
from nkisim.program.ir import (
    Call,
    Event,
    Input,
    Instance,
    LoopEnter,
    LoopLeave,
    LoopStep,
    Program,
    last_uses,
    once_bodies,
)
from nkisim.runtime.runner import Runner

#: the most container items looked at for a body's tiles (a list the body fills); past it the body is unrolled
_SCAN_LIMIT = 4096


@dataclass
class _Probe:
    """A loop whose first iteration is being traced, to run the others from it (see the module docstring)."""

    loop: Loop
    enter: int  # index of its LoopEnter in the body
    frame: types.FrameType | None  # the kernel frame running the ``for``
    names: dict[str, Any] = field(default_factory=dict)  # that frame's variables when the loop started
    steps: int = 0
    dirty: bool = False
    first_pid: int = 0  # program ids from here on are of tensors the body made


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
        try:
            eargs = tuple(enc.value(a) for a in args)
            ekw = tuple((k, enc.value(v)) for k, v in kwargs.items())
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
            frame = user_frame()
            names = dict(frame.f_locals) if frame is not None else {}
            self.probes.append(_Probe(loop, len(self.body), frame, names, first_pid=len(self.enc.tensor_ids)))
            if self.enc.seen is None:
                self.enc.seen = {}
        self.body.append(LoopEnter(lid, loop.kind, loop.start, loop.stop, loop.step))

    def loop_step(self, loop: Loop, value: int) -> bool:
        probe = self.probes[-1] if self.probes else None
        if probe is not None and probe.loop is loop:
            probe.steps += 1
            if probe.steps == 2:
                seen = self.enc.seen or {}
                self._end_probe()
                if self._traceable(probe):
                    self._run_rest(probe, range(value, loop.stop, loop.step), seen)
                    return True
        self.body.append(LoopStep(self.enc.loop(loop), int(value)))
        return False

    def loop_leave(self, loop: Loop) -> None:
        if self.probes and self.probes[-1].loop is loop:  # it ran once, broke out or raised
            self._end_probe()
        self.enc.frozen.discard(loop)
        self.body.append(LoopLeave(self.enc.loop(loop)))

    def concrete(self, loops: Any) -> None:
        for probe in self.probes:
            if probe.loop in loops:
                probe.dirty = True

    # --- loop bodies traced once ----------------------------------------------------------------
    def _end_probe(self) -> None:
        self.probes.pop()
        if not self.probes:
            self.enc.seen = None

    def _tensor_id(self, x: Any) -> int | None:
        t = x if isinstance(x, Tensor) else getattr(x, "tensor", None)
        return self.enc.tensor_ids.get(t.uid) if isinstance(t, Tensor) else None

    def _traceable(self, probe: _Probe) -> bool:
        """Whether the first iteration's events hold for every iteration (see the module docstring)."""
        if probe.dirty or probe.loop in self.enc.frozen:
            return False
        frame = probe.frame
        if frame is None:
            return True
        body = self.body[probe.enter + 2:]
        read: set[int] = set()
        for ev in body:
            if ev.__class__ is Call:
                tensor_ids([list(ev.args), [v for _, v in ev.kwargs]], read)
        now = frame.f_locals
        for name, old in probe.names.items():
            if now.get(name, old) is not old and self._tensor_id(old) in read:
                return False  # ``acc = acc + t``: the next iteration would read this one's tile
        scanned = 0
        for value in now.values():
            if isinstance(value, (list, tuple, dict)):
                for item in (value.values() if isinstance(value, dict) else value):
                    scanned += 1
                    pid = self._tensor_id(item)
                    if scanned > _SCAN_LIMIT or (pid is not None and pid >= probe.first_pid):
                        return False  # the body's tiles collected: later iterations would add theirs
        return True

    def _run_rest(self, probe: _Probe, values: range, seen: dict[int, Tensor]) -> None:
        """Keep the first iteration's events as the loop's body and run it for ``values``; ``seen``: the tensors
        the body names, by program id."""
        body = self.body
        e = body[probe.enter]
        body[probe.enter] = LoopEnter(e.loop, e.kind, e.start, e.stop, e.step, True)
        del body[probe.enter + 1]  # the first iteration's LoopStep
        events = body[probe.enter + 1:]
        dec = Decoder(tuple(self.enc.arrays), dict(seen), dict(self.loops))
        # the tiles a replayed iteration makes are the runner's alone (the kernel's Python holds the first
        # iteration's): it lets them go, and hands their storage over, at their last use in the body
        first = probe.first_pid
        drops = last_uses(events, keep=lambda pid: pid < first)
        ctx = context.current()
        HOOK.recorder = None
        try:
            with replaying() as at:
                Runner(ctx, events, dec, drops, once_bodies(events), at, traced_here=True).iterate(probe.loop, values, 0, len(events))
        finally:
            HOOK.recorder = self

    # --- the result ---------------------------------------------------------------------------
    def program(self, kernel: str, target: str, grid: tuple[int, ...], cores: int, outputs: Any, *,
                skip_middle_end: bool, stack_allocator: bool, on_chip_outputs: bool, dialect: str = "legacy") -> Program:
        return Program(kernel=kernel, target=target, grid=tuple(grid), cores=cores, inputs=tuple(self.inputs),
                       arrays=tuple(self.enc.arrays), body=tuple(self.body), outputs=self.enc.value(outputs),
                       skip_middle_end=skip_middle_end, stack_allocator=stack_allocator,
                       on_chip_outputs=on_chip_outputs, tensors=len(self.enc.tensor_ids), dialect=dialect)
