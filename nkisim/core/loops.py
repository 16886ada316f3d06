"""Loop iterators: ``nl.affine_range``, ``nl.sequential_range``, ``nl.static_range``.

All three run sequentially on the CPU.  ``affine_range`` and ``sequential_range`` yield symbolic
loop variables (``Affine``) so indices stay analysable and writes can be checked against the
affine_range rule; ``static_range`` is unrolled at trace time and yields plain ints.  While a launch
records (``runtime.recording``), the body of an affine or sequential loop is traced once: the recorder
runs the iterations after the first from the events it recorded, and ``step`` tells the loop to stop.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nkisim.core.context import KernelContext, current
from nkisim.core.indexing import Affine, Loop
from nkisim.core.recording import HOOK, RUN, STOP


def _args(args: tuple) -> tuple[int, int, int]:
    ints = [int(a) for a in args]
    if len(ints) == 1:
        return 0, ints[0], 1
    if len(ints) == 2:
        return ints[0], ints[1], 1
    if len(ints) == 3:
        if ints[2] == 0:
            raise ValueError("loop step cannot be zero")
        return ints[0], ints[1], ints[2]
    raise TypeError(f"expected 1 to 3 integer arguments like range(), got {len(args)}")


class LoopRange:
    """An NKI loop; iterating it pushes a loop frame on the kernel context."""

    def __init__(self, kind: str, *args: Any, **_: Any) -> None:
        self.kind = kind
        self.start, self.stop, self.step = _args(args)

    def __len__(self) -> int:
        return len(range(self.start, self.stop, self.step))

    def __iter__(self) -> Iterator[Any]:
        if self.kind == "static":
            yield from range(self.start, self.stop, self.step)
            return
        ctx = current()
        loop = Loop(self.kind, self.start, self.stop, self.step)
        var = Affine(0, {loop: 1})
        enter(ctx, loop)
        try:
            for v in range(self.start, self.stop, self.step):
                ran = step(ctx, loop, v)
                if ran:  # a recording launch ran this iteration (SKIP), or it and the rest (STOP), from the body
                    if ran == STOP:  # it traced once
                        break
                    continue
                yield var
        finally:
            leave(ctx, loop)


def enter(ctx: KernelContext, loop: Loop) -> None:
    """``loop`` starts: it joins the context's loop stack (and a recording launch notes it)."""
    ctx.loops.append(loop)
    ctx.loops_changed()
    rec = HOOK.recorder
    if rec is not None:
        rec.loop_enter(loop)


def step(ctx: KernelContext, loop: Loop, value: int) -> int:
    """``loop`` runs its iteration ``value``.  ``RUN`` (0): the kernel's Python runs it; ``SKIP``/``STOP``: a
    recording launch has run this iteration (and, with ``STOP``, the rest) from the body it traced once
    (``runtime.recording``), so the kernel's Python must not run them again."""
    loop.current = value
    ctx.loop_state = None
    rec = HOOK.recorder
    return RUN if rec is None else rec.loop_step(loop, value)


def leave(ctx: KernelContext, loop: Loop) -> None:
    """``loop`` has ended (also when its body raised or broke out): it leaves the loop stack."""
    for i in range(len(ctx.loops) - 1, -1, -1):
        if ctx.loops[i] is loop:
            del ctx.loops[i]
            break
    ctx.loops_changed()
    rec = HOOK.recorder
    if rec is not None:
        rec.loop_leave(loop)


def affine_range(*args: Any, **kwargs: Any) -> LoopRange:
    """Parallel loop: iterations must not write the same location (except += accumulation)."""
    return LoopRange("affine", *args, **kwargs)


def sequential_range(*args: Any, **kwargs: Any) -> LoopRange:
    """Sequential loop: loop-carried dependencies allowed."""
    return LoopRange("sequential", *args, **kwargs)


def static_range(*args: Any, **kwargs: Any) -> LoopRange:
    """Fully unrolled loop: plain Python ints."""
    return LoopRange("static", *args, **kwargs)
