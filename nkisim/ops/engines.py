"""Which operators each compute engine computes, where AWS documents that an engine asked for by name cannot
compute them all (the compiler refuses the rest; the simulator must too, or a kernel runs here and not on a device).
"""

from __future__ import annotations

from typing import Any

from nkisim.core.errors import nki_error


def tensor_scalar_supports(ctx: Any, eng: str, n0: str, n1: str | None) -> None:
    """An engine asked for by name computes only the operators AWS documents for it (the target file's
    ``[engine_ops]``): the GpSimd engine only rsqrt, the Scalar engine on trn2 only multiply-then-add, multiply or add
    and on trn1 nothing; the Vector engine (and the compiler's own choice) all of them. The compiler refuses the
    rest, so a kernel that puts a saturation on GpSimd must not run here either."""
    key = {"pool": "tensor_scalar_gpsimd", "act": "tensor_scalar_scalar"}.get(eng)
    if key is None:
        return
    allowed = ctx.target.engine_ops(key)
    if allowed is None or (f"{n0}+{n1}" if n1 else str(n0)) in allowed:
        return
    ops = f"{n0}" + (f" then {n1}" if n1 else "")
    if eng == "pool":
        raise nki_error("err_instruction_unsupported_op",
                        f"'tensor_scalar' on the GpSimd engine computes {_spell(allowed)} only, not {ops}: run it on "
                        f"the Vector engine (the default)")
    raise nki_error("err_instruction_unsupported_op",
                    f"'tensor_scalar' on the Scalar engine of {ctx.target} computes {_spell(allowed) or 'no operator'}"
                    f", not {ops}: run it on the Vector engine (the default)")


def _spell(allowed: frozenset[str]) -> str:
    """``{"multiply+add", "multiply", "add"}`` -> "multiply then add, multiply, or add" (longest first)."""
    names = [o.replace("+", " then ") for o in sorted(allowed, key=lambda o: (-o.count("+"), o != "multiply", o))]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + ", or " + names[-1] if names else ""
