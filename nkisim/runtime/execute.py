"""The executor: run a valid ``Program`` on NumPy inputs, without the kernel's Python.

It rebuilds what the kernel's Python did from the program's events alone: the SPMD instances, the loop stack
(so index expressions over loop ids take their values and every loop rule is checked again), and each call,
dispatched through the one registry of NKI calls (``core.recording.CALLS``) to the same implementation the
eager path ran.  Every check of an op runs again on the executor's own tensors, so a program that was
forged rather than traced still cannot read or write outside a tensor.  The trace it leaves is the one the
cost model reads: a program is executed and costed as one thing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from nkisim.core import context
from nkisim.core.context import KernelContext
from nkisim.core.indexing import Loop
from nkisim.core.location import replaying
from nkisim.core.recording import HOOK
from nkisim.core.target import Target
from nkisim.core.tensor import Tensor
from nkisim.cost.trace import Trace
from nkisim.program.encode import Decoder
from nkisim.program.ir import Program, ProgramError, once_bodies
from nkisim.program.validate import validate
from nkisim.runtime import arguments
from nkisim.runtime.kernel import LaunchResult, check_outputs, default_target, engine_numerics
from nkisim.runtime.runner import Runner


def _bind_inputs(program: Program, inputs: Sequence[Any]) -> list[Tensor]:
    if len(inputs) != len(program.inputs):
        raise ProgramError(f"the program takes {len(program.inputs)} inputs, got {len(inputs)}")
    from nkisim.core import dtypes as dt

    tensors = []
    for decl, value in zip(program.inputs, inputs):
        t, _ = arguments.to_tensor(decl.name, value, arguments.Mutable if decl.mutable else None)
        if not isinstance(t, Tensor) or t.shape != decl.shape or dt.name(t.dtype) != decl.dtype:
            got = f"{list(t.shape)} {dt.name(t.dtype)}" if isinstance(t, Tensor) else type(value).__name__
            raise ProgramError(f"input `{decl.name}` must be {list(decl.shape)} {decl.dtype} (the signature the "
                               f"program was traced for), got {got}")
        tensors.append(t)
    return tensors


#: programs already validated for a target, with their tensors' last uses: a program is executed on many
#: inputs (every case of its signature), and both depend on the program alone.  Keyed by identity, holding
#: the program, so an id is never reused while its entry lives.
_READY: OrderedDict[int, tuple[Program, str, dict[int, tuple[int, ...]], dict[int, int]]] = OrderedDict()
_READY_SIZE = 16


def _prepared(program: Program, tgt: Target, checked: bool) -> tuple[dict[int, tuple[int, ...]], dict[int, int]]:
    hit = _READY.get(id(program))
    if hit is not None and hit[0] is program and hit[1] == tgt.name:
        _READY.move_to_end(id(program))
        return hit[2], hit[3]
    if not checked:
        validate(program, tgt)
    drops, ends = program.last_uses(), once_bodies(program.body)
    _READY[id(program)] = (program, tgt.name, drops, ends)
    while len(_READY) > _READY_SIZE:
        _READY.popitem(last=False)
    return drops, ends


def execute(program: Program, inputs: Sequence[Any], *, target: Target | str | None = None,
            numerics: bool = True, checked: bool = False) -> LaunchResult:
    """Run ``program`` on ``inputs`` (NumPy arrays, or ``nki.typing`` placeholders with ``numerics=False``).

    ``target``: the target to run for; a program traced for another is refused (default: the program's own).
    ``checked``: the caller already validated the program."""
    tgt = default_target(target or program.target)
    if tgt.name != program.target:
        raise ProgramError(f"the program was traced for {program.target}, not {tgt.name}")
    drops, ends = _prepared(program, tgt, checked)
    trace = Trace()
    trace.skip_middle_end = program.skip_middle_end
    trace.dialect = program.dialect
    ctx = KernelContext(tgt, program.grid, numerics, program.cores, trace=trace,
                        stack_allocator=program.stack_allocator)
    bound = _bind_inputs(program, inputs)
    tensors: dict[int, Tensor] = dict(enumerate(bound))
    loops: dict[int, Loop] = {}
    dec = Decoder(program.arrays, tensors, loops)
    if HOOK.recorder is not None:
        raise RuntimeError("a program cannot be executed while a launch is being recorded")
    context.push(ctx)
    try:
        with engine_numerics(numerics), replaying() as at:
            Runner(ctx, program.body, dec, drops, ends, at).run(0, len(program.body))
            out = dec.value(program.outputs)
            check_outputs(out, {d.name: t for d, t in zip(program.inputs, bound)}, None, program.on_chip_outputs,
                          program.dialect)
    finally:
        context.pop()
    return LaunchResult(arguments.from_tensor(out, False), ctx)
