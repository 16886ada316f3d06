"""The one door through which a kernel's NKI calls can be recorded into a program.

Every NKI call a kernel can make (``nl.*``, ``nisa.*``, tile syntax such as ``t + u`` or ``t[...] = v``,
``t.reshape``) is registered here under one name (``CALLS``) and wrapped by ``recorded``; the op registry
(``ops.registry``) does that for every op, with what the op emits.  While no
launch records, the wrapper only reads one attribute and calls through.  While one does (``HOOK.recorder``
is set, see ``runtime.recording``), the outermost call of each statement is handed to the recorder, which
encodes its arguments, runs it and notes the tensors it made; calls an API makes inside another API are
its own business and are not recorded.  The same table is what the executor dispatches on and what the
program validator accepts (``program.validate``): an instruction program can name nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol


class Recorder(Protocol):
    """What a launch that records provides (``runtime.recording.ProgramRecorder``)."""

    def call(self, name: str, fn: Callable, args: tuple, kwargs: dict) -> Any: ...

    def loop_enter(self, loop: Any) -> None: ...

    def loop_step(self, loop: Any, value: int) -> int: ...

    def loop_leave(self, loop: Any) -> None: ...

    def concrete(self, loops: Any, condition: Any = None) -> None: ...


#: what a recorder says of a loop's iteration (``Recorder.loop_step``): the kernel's Python runs it; the
#: recorder has run it from a body traced once; the recorder has run it and every later one
RUN, SKIP, STOP = 0, 1, 2


class Hook:
    """The active recorder (None: calls run straight through) and how deep inside a recorded call we are."""

    __slots__ = ("recorder", "depth")

    def __init__(self) -> None:
        self.recorder: Recorder | None = None
        self.depth = 0


HOOK = Hook()

#: call name -> the unwrapped implementation: every call a program may contain.
CALLS: dict[str, Callable] = {}


def recorded(name: str) -> Callable[[Callable], Callable]:
    """Register ``fn`` as the NKI call ``name`` and return it wrapped for recording."""

    def wrap(fn: Callable) -> Callable:
        CALLS[name] = fn
        hook = HOOK

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            rec = hook.recorder
            if rec is None or hook.depth:
                return fn(*args, **kwargs)
            return rec.call(name, fn, args, kwargs)

        wrapper.__nki_call__ = name  # type: ignore[attr-defined]
        return wrapper

    return wrap


def call_name(fn: Any) -> str | None:
    """The registered name of a wrapped call (None for anything else)."""
    return getattr(fn, "__nki_call__", None)
