"""Recording a launch into a ``Program``: the compile half of compile-then-execute.

While a launch records, ``core.recording.HOOK`` holds a ``ProgramRecorder``.  Every NKI call the kernel makes
at statement level comes here: its arguments are encoded (``program.encode``) *before* it runs, it runs as it
always does (so every check of the compiler raises at the student's line, and the values are there when the
launch has inputs), and the tensors its result holds get program ids.  Loop entries, iterations and exits
and the start of each SPMD instance are events of their own, so the executor rebuilds the same loop stack
and the cost model sees the same loop structure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nkisim.core.indexing import Loop
from nkisim.core.location import user_location
from nkisim.core.recording import HOOK
from nkisim.core.tensor import Tensor
from nkisim.program.encode import Encoder, result_tensors
from nkisim.program.ir import Call, Event, Input, Instance, LoopEnter, LoopLeave, LoopStep, Program


class ProgramRecorder:
    """Collects one launch's events (see the module docstring)."""

    def __init__(self) -> None:
        self.enc = Encoder()
        self.body: list[Event] = []
        self.inputs: list[Input] = []

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
        eargs = tuple(enc.value(a) for a in args)
        ekw = tuple((k, enc.value(v)) for k, v in kwargs.items())
        HOOK.depth += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            HOOK.depth -= 1
        ids = []
        for t in result_tensors(result):
            pid = enc.tensor_ids.get(t.uid)
            ids.append(enc.new_tensor(t) if pid is None else pid)
        self.body.append(Call(name, eargs, ekw, tuple(ids), loc))
        return result

    def loop_enter(self, loop: Loop) -> None:
        self.body.append(LoopEnter(self.enc.new_loop(loop), loop.kind, loop.start, loop.stop, loop.step))

    def loop_step(self, loop: Loop, value: int) -> None:
        self.body.append(LoopStep(self.enc.loop(loop), int(value)))

    def loop_leave(self, loop: Loop) -> None:
        self.body.append(LoopLeave(self.enc.loop(loop)))

    # --- the result ---------------------------------------------------------------------------
    def program(self, kernel: str, target: str, grid: tuple[int, ...], cores: int, outputs: Any, *,
                skip_middle_end: bool, stack_allocator: bool, on_chip_outputs: bool) -> Program:
        return Program(kernel=kernel, target=target, grid=tuple(grid), cores=cores, inputs=tuple(self.inputs),
                       arrays=tuple(self.enc.arrays), body=tuple(self.body), outputs=self.enc.value(outputs),
                       skip_middle_end=skip_middle_end, stack_allocator=stack_allocator,
                       on_chip_outputs=on_chip_outputs, tensors=len(self.enc.tensor_ids))
