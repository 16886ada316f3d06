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
from nkisim.core import loops as loopmod
from nkisim.core.context import KernelContext
from nkisim.core.errors import NKIError
from nkisim.core.indexing import Loop
from nkisim.core.location import replaying
from nkisim.core.recording import CALLS, HOOK
from nkisim.core.target import Target
from nkisim.core.tensor import Tensor
from nkisim.cost.trace import Trace
from nkisim.program.encode import Decoder, result_tensors
from nkisim.program.ir import Call, Instance, LoopEnter, LoopLeave, LoopStep, Program, ProgramError
from nkisim.program.validate import validate
from nkisim.runtime import arguments
from nkisim.runtime.kernel import LaunchResult, check_outputs, default_target, engine_numerics


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
_READY: OrderedDict[int, tuple[Program, str, dict[int, tuple[int, ...]]]] = OrderedDict()
_READY_SIZE = 16


def _prepared(program: Program, tgt: Target, checked: bool) -> dict[int, tuple[int, ...]]:
    hit = _READY.get(id(program))
    if hit is not None and hit[0] is program and hit[1] == tgt.name:
        _READY.move_to_end(id(program))
        return hit[2]
    if not checked:
        validate(program, tgt)
    drops = program.last_uses()
    _READY[id(program)] = (program, tgt.name, drops)
    while len(_READY) > _READY_SIZE:
        _READY.popitem(last=False)
    return drops


def execute(program: Program, inputs: Sequence[Any], *, target: Target | str | None = None,
            numerics: bool = True, checked: bool = False) -> LaunchResult:
    """Run ``program`` on ``inputs`` (NumPy arrays, or ``nki.typing`` placeholders with ``numerics=False``).

    ``target``: the target to run for; a program traced for another is refused (default: the program's own).
    ``checked``: the caller already validated the program."""
    tgt = default_target(target or program.target)
    if tgt.name != program.target:
        raise ProgramError(f"the program was traced for {program.target}, not {tgt.name}")
    drops = _prepared(program, tgt, checked)
    trace = Trace()
    trace.skip_middle_end = program.skip_middle_end
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
            for i, ev in enumerate(program.body):
                if ev.__class__ is Call:
                    at(ev.loc)
                    try:
                        result = CALLS[ev.fn](*[dec.value(a) for a in ev.args],
                                              **{k: dec.value(v) for k, v in ev.kwargs})
                    except ProgramError:
                        raise
                    except (NKIError, MemoryError) as err:  # the compiler's error, or the run's own limit
                        if getattr(err, "nki_location", None) is None:
                            err.nki_location = ev.loc  # type: ignore[union-attr]
                        raise
                    except Exception as err:  # only a program no trace made gets here
                        raise ProgramError(f"invalid program: {ev.fn} at line {ev.loc[1]} failed: "
                                           f"{type(err).__name__}: {err}") from None
                    made = result_tensors(result)
                    if len(made) != len(ev.out):
                        raise ProgramError(f"call {ev.fn} at line {ev.loc[1]} made {len(made)} tensors, the program "
                                           f"says {len(ev.out)}")
                    for pid, t in zip(ev.out, made):
                        tensors[pid] = t
                    for pid in drops.get(i, ()):
                        tensors.pop(pid, None)
                elif ev.__class__ is LoopStep:
                    loopmod.step(ctx, loops[ev.loop], ev.value)
                elif ev.__class__ is LoopEnter:
                    loop = loops[ev.loop] = Loop(ev.kind, ev.start, ev.stop, ev.step)
                    loopmod.enter(ctx, loop)
                elif ev.__class__ is LoopLeave:
                    loopmod.leave(ctx, loops[ev.loop])
                elif ev.__class__ is Instance:
                    ctx.program, ctx.instance, ctx.core = ev.index, ev.number, ev.core
            out = dec.value(program.outputs)
            check_outputs(out, {d.name: t for d, t in zip(program.inputs, bound)}, None, program.on_chip_outputs)
    finally:
        context.pop()
    return LaunchResult(arguments.from_tensor(out, False), ctx)
