"""Calls the simulator runs but the Neuron compiler rejects today (E33, AWS's known issues of ``nki.language``).

AWS's release notes (NKI 0.3 onwards) list ``nl`` wrappers that do not compile for Trainium although they work in
simulation: ``nl.divide``, ``nl.mod`` and ``nl.fmod`` (no hardware instruction), ``nl.power`` with a scalar
exponent, ``nl.matmul`` without ``transpose_x=True``, and binary ops whose operands differ in shape (no
broadcasting).  The simulator keeps running them -- a student's numbers are still useful -- but says, once per
call site and launch, that the kernel will not compile as written, and what to write instead.  ``binding.call``
asks ``check`` before every registry call of a 0.6 kernel, with the operands as the registry gets them.
"""

from __future__ import annotations

from typing import Any

from nkisim.core.context import KernelContext
from nkisim.core.location import user_location, warn
from nkisim.core.tensor import Tensor


class HardwareCompileWarning(UserWarning):
    """The call runs in the simulator but the Neuron compiler rejects it today (a known issue AWS lists)."""


class DocumentedRuleWarning(UserWarning):
    """AWS's docs state a rule that code AWS validates on its compiler breaks (nki-library's release branches): the
    simulator runs the code, and quotes the doc so the kernel's author can decide (``nkisim/frontend/v06/rules.py``
    lists each such rule with the doc line and the validated code)."""


#: the ``nl`` binary ops (registry entries) whose operands must have the same shape on the hardware
_BINARY = frozenset(f"nl.{n}" for n in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
    "right_shift", "logical_and", "logical_or", "logical_xor", "mod", "fmod", "abs_max", "abs_min"))

#: entries the compiler refuses whatever their operands, and what to write instead
_ALWAYS = {
    "nl.divide": "division is not a hardware instruction: multiply by the reciprocal, "
                 "nl.multiply(x, nl.reciprocal(y))",
    "nl.mod": "modulo is not a hardware instruction",
    "nl.fmod": "modulo is not a hardware instruction",
}


def _shape(x: Any) -> tuple[int, ...] | None:
    t = x if isinstance(x, Tensor) else getattr(x, "tensor", None)
    if not isinstance(t, Tensor):
        return None
    return tuple(int(s) for s in getattr(x, "shape", t.shape))


def problem(entry: str, args: tuple, kwargs: dict) -> str | None:
    """Why the compiler rejects this call today, or None."""
    if entry in _ALWAYS:
        return _ALWAYS[entry]
    if entry == "nl.matmul" and not kwargs.get("transpose_x", False):
        return ("nl.matmul needs transpose_x=True on the hardware: pass x already transposed (K on the partitions) "
                "and call nl.matmul(x, y, transpose_x=True)")
    if entry in _BINARY and len(args) >= 2:
        a, b = _shape(args[0]), _shape(args[1])
        if entry == "nl.power" and (a is None or b is None):
            return "nl.power takes no scalar exponent on the hardware: use nl.power(tile, tile) with both tiles"
        if a is not None and b is not None and a != b:
            return (f"binary ops do not broadcast on the hardware: the operands are {list(a)} and {list(b)}; "
                    f"broadcast the smaller one first (nl.broadcast_to) or use nisa.tensor_scalar for a column")
    return None


def first_time(ctx: KernelContext | None, site: tuple) -> bool:
    """True the first time the launch ``ctx`` meets ``site`` (remembered from then on), so a warning is given once
    per line of the kernel however often the line runs; True every time outside a kernel (no ``ctx``)."""
    if ctx is None:
        return True
    if site in ctx.warned:
        return False
    ctx.warned.add(site)
    return True


def check(ctx: KernelContext, entry: str, args: tuple, kwargs: dict) -> None:
    """Warn at the kernel's line if the call ``entry(*args, **kwargs)`` is one the compiler rejects today."""
    why = problem(entry, args, kwargs)
    if why is None:
        return
    if not first_time(ctx, (entry, user_location())):
        return
    warn(f"{entry}: the Neuron compiler rejects this call today (a known issue in AWS's NKI release notes), so the "
         f"kernel will not compile for Trainium as written; the simulator runs it. {why[0].upper()}{why[1:]}.",
         HardwareCompileWarning)
