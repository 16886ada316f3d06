"""Finding the student's line: every error and every traced instruction points at user code.

The simulator's own frames are recognised by file path (anything under the ``nkisim`` package), the
same rule numba's CUDA simulator and triton-viz use.  Errors are re-raised with those frames cut out
of the traceback so the last frame a student sees is their own line.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import os
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

#: ``sys._getframe(n)``: the caller's frame ``n`` levels up, passing over the frames in between without
#: making Python frame objects for them (``inspect.currentframe().f_back`` would make one per level, on
#: every traced instruction).  Private to CPython, so reached for once, here.
_frame = sys._getframe  # noqa: SLF001 - nothing public skips levels without frame objects (see above)

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_internal_cache: dict[str, bool] = {}


def is_internal(filename: str) -> bool:
    """True for files that belong to the simulator itself."""
    hit = _internal_cache.get(filename)
    if hit is None:
        hit = os.path.abspath(filename).startswith(_PKG_DIR)
        _internal_cache[filename] = hit
    return hit


#: While the executor runs a program there is no kernel frame: each call's recorded line stands in for it
#: (``replaying``), so traced instructions, allocation sites and errors name the student's line, and
#: nothing reads the frames of whoever called the executor.
_REPLAYED: list[tuple[str, int] | None] = [None]
#: the same list, read inline where a call per instruction would cost more than the rest (``ops.base.emit``)
REPLAYED = _REPLAYED


@contextlib.contextmanager
def replaying() -> Iterator[Callable[[tuple[str, int]], None]]:
    """The executor's scope: yields a setter for the line of the call being executed."""
    def at(loc: tuple[str, int]) -> None:
        _REPLAYED[0] = loc

    before = _REPLAYED[0]  # (a recording launch runs the iterations of a body it traced once inside the launch)
    _REPLAYED[0] = ("<program>", 0)
    try:
        yield at
    finally:
        _REPLAYED[0] = before


def mark_internal(filename: str) -> None:
    """Count ``filename``'s frames as the simulator's: a tool that wraps the launch (the test suite's program
    check, ``tests/program_check.py``) must not become the student's line of the errors it passes on."""
    _internal_cache[filename] = True


def user_frame(depth: int = 1) -> types.FrameType | None:
    """The innermost frame outside the simulator (the student's call site); None while a program runs."""
    if _REPLAYED[0] is not None:
        return None
    f = _frame(depth)
    while f is not None and is_internal(f.f_code.co_filename):
        f = f.f_back
    return f


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """A warning at the student's line, however many simulator frames (op, front-end wrapper, recorder) lie
    between; while a program runs, at the line its call was recorded from."""
    replayed = _REPLAYED[0]
    if replayed is not None:
        warnings.warn_explicit(message, category, replayed[0], replayed[1])
        return
    f = _frame(1)
    level = 2  # stacklevel 1 is this function, 2 its caller (f)
    while f is not None and is_internal(f.f_code.co_filename):
        f = f.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


#: (id of a code object, bytecode offset) -> (that code object, (filename, lineno)).  Python finds a
#: line number by scanning the function's line table, which costs more than the rest of an NKI call;
#: call sites repeat, so each is resolved once.  The code object is kept so its id stays unique.
_LINES: dict[tuple[int, int], tuple[Any, tuple[str, int]]] = {}


def user_location(skip: int = 2) -> tuple[str, int]:
    """(filename, lineno) of the student's call site, ("<unknown>", 0) if none.

    Only simulator functions call this, so the walk starts at their caller: every frame walked
    costs a frame object on Python 3.11+, and this runs once per traced instruction.  ``skip``:
    frames known to be the simulator's, counting this function (2: this one and its caller; the
    trace emitter, only ever called by ops, passes 3), which sys._getframe passes over without
    making frame objects for them."""
    replayed = _REPLAYED[0]
    if replayed is not None:
        return replayed
    f = _frame(skip)
    cache = _internal_cache
    while f is not None:
        code = f.f_code
        filename = code.co_filename
        hit = cache.get(filename)
        if hit is None:
            hit = is_internal(filename)
        if not hit:
            key = (id(code), f.f_lasti)
            memo = _LINES.get(key)
            if memo is not None and memo[0] is code:
                return memo[1]
            loc = (filename, f.f_lineno)
            if len(_LINES) > 200_000:
                _LINES.clear()
            _LINES[key] = (code, loc)
            return loc
        f = f.f_back
    return ("<unknown>", 0)


def user_variable(obj: object) -> str | None:
    """The name a student's variable gives ``obj`` in the innermost kernel frame, if any.

    Error messages only (it walks frames and scans locals): the compiler names tensors by the
    variable they were assigned to, while the simulator only sees the object."""
    if _REPLAYED[0] is not None:
        return None
    f = _frame(1)
    while f is not None and is_internal(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return None
    for name, value in f.f_locals.items():
        if value is obj:
            return name
    for name, value in f.f_locals.items():  # an NKI 0.6 kernel holds views (``NkiTensor``) of the tensors
        if getattr(type(value), "__nki_view__", False) and value.view_base().root is obj:
            return name
    return None


def trim_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Drop the simulator's frames from a traceback, keeping the user's frames in order."""
    kept: list[types.TracebackType] = []
    while tb is not None:
        if not is_internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    new: types.TracebackType | None = None
    for entry in reversed(kept):
        new = types.TracebackType(new, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return new


def last_user_entry(tb: types.TracebackType | None) -> tuple[str, int] | None:
    """(filename, lineno) of the innermost user frame in a traceback."""
    loc = None
    while tb is not None:
        if not is_internal(tb.tb_frame.f_code.co_filename):
            loc = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return loc


def attach_location(err: BaseException) -> Any:
    """Record the student's line on an NKI error and return the trimmed traceback."""
    loc = last_user_entry(err.__traceback__)
    if loc is not None and getattr(err, "nki_location", None) is None:
        err.nki_location = loc  # type: ignore[attr-defined]
        if isinstance(err, SyntaxError):
            import linecache

            err.filename, err.lineno = loc
            err.text = linecache.getline(loc[0], loc[1]) or None
            err.offset = None
    return trim_traceback(err.__traceback__)


class Step(NamedTuple):
    """One bytecode instruction of a kernel function, as the truth-value rules read it."""

    opname: str
    #: the next instruction's name and offset (inline caches skipped)
    next_opname: str
    next_offset: int
    #: a jump's target offset (None for other instructions)
    target: int | None
    #: the next instruction's argument (a store's variable name: where a call's result goes)
    next_argval: Any = None


#: the instructions that bind a name (``x = ...``)
STORES = frozenset({"STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"})


def assigned_name(f: types.FrameType | None) -> str | None:
    """The variable the call running in frame ``f`` assigns its result to (``big = nl.ndarray(...)``), if any."""
    if f is None:
        return None
    step = bytecode(f.f_code).get(f.f_lasti)
    if step is None or not step.opname.startswith("CALL") or step.next_opname not in STORES:
        return None
    return step.next_argval


@functools.lru_cache(maxsize=256)
def bytecode(code: types.CodeType) -> dict[int, Step]:
    """offset -> ``Step`` for the bytecode of a kernel function (what a truth test is used for: ``if``,
    ``not``, ``and``/``or``; where a call's result goes).  The offsets of an instruction's inline caches map
    to it too: during a call, Python 3.11 reports the frame's position as the call's last cache entry."""
    ins = list(dis.get_instructions(code))
    table: dict[int, Step] = {}
    for a, b in zip(ins, ins[1:] + ins[-1:]):
        step = Step(a.opname, b.opname, b.offset, a.argval if a.opcode in dis.hasjabs + dis.hasjrel else None,
                    b.argval)
        for offset in range(a.offset, max(b.offset, a.offset + 2), 2):
            table[offset] = step
    return table
