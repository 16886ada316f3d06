"""Which operators each compute engine computes, where AWS documents that an engine asked for by name cannot
compute them all (the compiler refuses the rest; the simulator must too, or a kernel runs here and not on a device).
"""

from __future__ import annotations

from typing import Any

from nkisim.core.errors import nki_error

#: the operator pairs (op0, op1) the Scalar engine computes in ``tensor_scalar`` on NeuronCore-v3 (trn2), from AWS's
#: nki.isa.tensor_scalar docstring; NeuronCore-v2 has none (add and multiply on ScalarE arrive with v3)
_SCALAR_ENGINE_PAIRS = {("multiply", "add"), ("multiply", None), ("add", None)}


def tensor_scalar_supports(ctx: Any, eng: str, n0: str, n1: str | None) -> None:
    """An engine asked for by name computes only the operators AWS documents for it: the GpSimd engine only rsqrt,
    the Scalar engine on trn2 only multiply-then-add; the Vector engine (and the compiler's own choice) all of them.
    The compiler refuses the rest, so a kernel that puts a saturation on GpSimd must not run here either."""
    if eng == "pool" and any(n not in (None, "rsqrt") for n in (n0, n1)):
        raise nki_error("err_instruction_unsupported_op",
                        f"'tensor_scalar' on the GpSimd engine computes rsqrt only, not {n0}"
                        + (f" then {n1}" if n1 else "") + ": run it on the Vector engine (the default)")
    if eng == "act" and ctx.nc_version <= 3 and (n0, n1) not in (_SCALAR_ENGINE_PAIRS if ctx.nc_version == 3 else ()):
        allowed = "multiply then add, multiply, or add" if ctx.nc_version == 3 else "no operator"
        raise nki_error("err_instruction_unsupported_op",
                        f"'tensor_scalar' on the Scalar engine of {ctx.target} computes {allowed}, not {n0}"
                        + (f" then {n1}" if n1 else "") + ": run it on the Vector engine (the default)")
