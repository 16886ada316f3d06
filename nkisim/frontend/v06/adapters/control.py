"""NKI 0.6's dynamic control flow: sequencer registers and the loops that run on the device.

A ``VirtualRegister`` holds one 32-bit integer the hardware knows only while the kernel runs.  Here its value is
one of: an ``int`` (set by ``register_alloc(x)`` / ``register_move``, or read by ``register_load`` from a tensor
while the kernel runs on values), a loop index (``Affine``) of a dynamic loop whose bounds are known when the
kernel is compiled, or None (read from a tensor while tracing without values).  Python cannot branch on it
(``if reg:``, ``int(reg)``, ``range(reg)`` are ``TypeError``s, as in NKI's tracer), so control flow that depends
on it goes through ``nl.fori_loop``, ``nl.while_loop`` or the deprecated ``nl.dynamic_range``:

- bounds known when the kernel is compiled: the loop is one of the core's sequential loops, so its body is
  traced once and its index stays symbolic in the program (``.ap(scalar_offset=i)`` addresses move with it);
- bounds read from tensors (``register_load``): the loop runs on the value the tensor holds when the kernel
  runs; the recorded program repeats that trip count (it is a trace of this run's control flow).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from nkisim.core.context import active, current
from nkisim.core.loops import LoopRange
from nkisim.core.recording import HOOK
from nkisim.frontend.v06.adapters import binding as _b
from nkisim.frontend.v06.adapters.errors import error
from nkisim.frontend.v06.adapters.order import NO_REORDER, scheduling
from nkisim.frontend.v06.adapters.registers import (  # noqa: F401  (dynamic_scope, VirtualRegister: for control's users)
    _DYNAMIC,
    _RANGES,
    VirtualRegister,
    _dynamic_loop,
    dynamic_scope,
    register_value,
)

#: how deep the kernel is inside ``with nl.no_reorder():`` blocks (dynamic loops are refused there)
_NO_REORDER = NO_REORDER
#: a ``while_loop`` that has not stopped after this many iterations is taken for a runaway condition
MAX_WHILE_ITERATIONS = 1 << 20
def _loop_carried(reg: VirtualRegister, api: str) -> None:
    """E22: the Neuron compiler fails with "Could not find register" on nested ``nl.dynamic_range`` loops with
    loop-carried values (a known issue AWS lists since NKI 0.4).

    A loop-carried value, concretely: a register written inside a dynamic loop's body (``register_move``,
    ``register_load``) that was allocated outside that body, so its value outlives the iteration that wrote it
    (the next iteration, or the code after the loop, reads it).  A register allocated inside the body is the
    iteration's own temporary, and an induction register is read-only, so neither is carried.  Refused when the
    innermost loop and one enclosing it are both ``nl.dynamic_range`` loops."""
    scope = tuple(_DYNAMIC)
    if len(scope) < 2 or scope[-1] not in _RANGES or not any(lp in _RANGES for lp in scope[:-1]):
        return
    if reg.home[:len(scope)] == scope:  # allocated in this very body: a temporary of the iteration
        return
    # rule: control.nested_loop_register
    raise error("err_nested_dynamic_loop_register",
                f"Could not find register: {api} writes a register allocated outside the inner nl.dynamic_range "
                f"loop, a value carried across that loop's iterations, and the Neuron compiler cannot allocate "
                f"registers for loop-carried values in nested nl.dynamic_range loops (a known issue of NKI 0.4+). "
                f"Allocate the register inside the inner loop's body, avoid nesting the dynamic loops, or use a "
                f"Python range / nl.affine_range for the outer loop when its trip count is known at compile time")


# --- nisa.register_* ----------------------------------------------------------------------------------------
def register_alloc(x: Any = None) -> VirtualRegister:
    """A new register, holding ``x`` (an int) if given, else 0."""
    if x is not None and (isinstance(x, bool) or not isinstance(x, int)):
        # rule: python.argument_type
        raise TypeError(f"register_alloc takes an int initial value, got {type(x).__name__}")
    return VirtualRegister(0 if x is None else int(x))


def register_move(dst: Any, src: Any) -> None:
    """``dst <- src``: an int constant or another register's value."""
    _register(dst, "register_move")
    _loop_carried(dst, "nisa.register_move")
    dst.set_value(register_value(src, "register_move", "src"), isinstance(src, VirtualRegister) and src.loaded,
             "register_move")


def register_load(dst: Any, src: Any) -> None:
    """``dst <- src``: the value of a one-element int32/uint32 tensor (SBUF or HBM) when the instruction runs."""
    _register(dst, "register_load")
    _loop_carried(dst, "nisa.register_load")
    value = _b.call("nisa.register_load", _b.tensor(src, "register_load", "src"))
    dst.set_value(value, True, "register_load")
    ctx = current()
    rec = HOOK.recorder
    if ctx.loops and rec is not None and not HOOK.depth:
        rec.concrete(frozenset(ctx.loops))  # the body reads a value when it runs: it cannot be traced once


def register_store(dst: Any, src: Any) -> None:
    """``dst <- src``: a register's value into a one-element int32/uint32 tensor."""
    _register(src, "register_store")
    _b.call("nisa.register_store", _b.tensor(dst, "register_store", "dst"), register_value(src, "register_store", "src"))


def _register(x: Any, api: str) -> None:
    if not isinstance(x, VirtualRegister):
        # rule: python.argument_type
        raise TypeError(f"{api} expects a VirtualRegister from nisa.register_alloc(), got {type(x).__name__}")


# --- loops ----------------------------------------------------------------------------------------------------
def _step(step: Any, api: str) -> int:
    if isinstance(step, VirtualRegister) or isinstance(step, bool) or not isinstance(step, int) or step <= 0:
        # rule: control.dynamic_step
        raise AssertionError(f"{api}: step must be a positive compile-time int, got {step!r}")
    return step


def _no_reorder_check(api: str) -> None:
    if _NO_REORDER[0]:
        # rule: control.no_reorder_dynamic_loop
        raise error("err_invalid_view", f"{api} inside nl.no_reorder(): dynamic loops cannot be reordered around, so "
                                        f"NKI does not allow them in a no_reorder block")


def _iterate(lower: Any, upper: Any, step: int, api: str) -> Iterator[VirtualRegister]:
    """The induction registers of a dynamic loop (see the module docstring for the two ways it runs)."""
    _no_reorder_check(api)
    lo = register_value(lower, api, "lower", allow_affine=False)
    hi = register_value(upper, api, "upper", allow_affine=False)
    loaded = any(isinstance(x, VirtualRegister) and x.loaded for x in (lower, upper))
    if not loaded:
        for var in LoopRange("sequential", lo, hi, step):
            yield VirtualRegister(var, frozen=True)
        return
    for i in range(lo, hi, step):
        yield VirtualRegister(i, frozen=True)


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[VirtualRegister], Any], step: Any = 1) -> None:
    """``for i in range(lower, upper, step): body_fun(i)`` as a device loop; ``i`` is a read-only register."""
    if not callable(body_fun):
        # rule: python.argument_type
        raise TypeError("nl.fori_loop's body_fun must be a function of the induction register")
    with _dynamic_loop():
        for reg in _iterate(lower, upper, _step(step, "nl.fori_loop"), "nl.fori_loop"):
            body_fun(reg)


def while_loop(init: Any, body_fun: Callable[[VirtualRegister], Any]) -> None:
    """``r = init; while r != 0: r = body_fun(r)`` as a device loop (zero trips when ``init`` holds 0)."""
    _no_reorder_check("nl.while_loop")
    _register(init, "nl.while_loop")
    r = init
    with _dynamic_loop():
        for _ in range(MAX_WHILE_ITERATIONS):
            value = register_value(r, "nl.while_loop", "init", allow_affine=False)
            if value == 0:
                return
            r = body_fun(r)
            if not isinstance(r, VirtualRegister):
                # rule: python.argument_type
                raise TypeError(f"nl.while_loop's body_fun must return the register holding the next condition, "
                                f"got {type(r).__name__}")
    # rule: limit.while_iterations
    raise RuntimeError(f"nl.while_loop ran {MAX_WHILE_ITERATIONS} iterations without its condition reaching 0")


def dynamic_range(start: Any, stop: Any = None, step: Any = 1) -> Iterator[VirtualRegister]:
    """Deprecated (NKI 0.6): a device loop over ``range(start, stop, step)`` yielding read-only registers."""
    warnings.warn("nl.dynamic_range is deprecated in NKI 0.6: use nl.fori_loop", DeprecationWarning, stacklevel=2)
    lo, hi = (0, start) if stop is None else (start, stop)
    return _scoped(_iterate(lo, hi, _step(step, "nl.dynamic_range"), "nl.dynamic_range"))


def _scoped(regs: Iterator[VirtualRegister]) -> Iterator[VirtualRegister]:
    """The loop body of ``for i in nl.dynamic_range(...)`` runs between this generator's yields: inside the loop."""
    with _dynamic_loop(dynamic_range=True):
        yield from regs


@contextlib.contextmanager
def no_reorder() -> Iterator[None]:
    """Keep the block's instructions in program order: each instruction issued inside it (also by helpers it calls)
    waits for the one issued before it (``order.Scheduling``); dynamic loops inside the block are refused."""
    _NO_REORDER[0] += 1
    try:
        yield
    finally:
        _NO_REORDER[0] -= 1
        ctx = active()
        if not _NO_REORDER[0] and ctx is not None:
            scheduling(ctx).leave_no_reorder(ctx)
