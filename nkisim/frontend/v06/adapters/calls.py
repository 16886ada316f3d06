"""How an NKI 0.6 adapter calls the op registry (``call``: recorded, and noted so an edge can still order it) and
reads a dtype argument: below ``tensor`` and ``binding``, so both can use them.
"""

from __future__ import annotations

from typing import Any

from nkisim.core import dtypes as dt
from nkisim.core.context import active
from nkisim.core.errors import nki_error
from nkisim.core.recording import HOOK
from nkisim.core.tensor import Tensor
from nkisim.frontend.v06.adapters import known_issues
from nkisim.frontend.v06.adapters.errors import error
from nkisim.frontend.v06.adapters.order import scheduling
from nkisim.ops.registry import OPS
from nkisim.runtime.order import recording_body


def call(entry: str, /, *args: Any, **kwargs: Any) -> Any:
    """Call registry entry ``entry`` (recorded into the program like any NKI call), noted as the instruction just
    issued so a ``name=``, an edge or an ``nl.no_reorder()`` block can still order it (``order.Scheduling``)."""
    ctx = active()
    if ctx is None:  # (the entry raises the compiler's error for an API outside a kernel)
        return OPS[entry].function(*args, **kwargs)
    if not HOOK.depth:
        known_issues.check(ctx, entry, args, kwargs)
    trace_from = len(ctx.trace)
    body = recording_body()
    body_from = len(body) if body is not None else -1
    result = OPS[entry].function(*args, **kwargs)
    (ctx.schedule or scheduling(ctx)).issue(ctx, trace_from, body, body_from)
    return result


def dtype(x: Any, api: str, pname: str = "dtype") -> Any:
    """A dtype argument (``nl.float32``...) as the ops take it; None stays None."""
    if x is None:
        return None
    try:
        d = dt.normalize(x)
    except TypeError:
        # rule: python.argument_type
        raise nki_error("err_unsupported_dtype_value", f"'{pname}' of '{api}' is not an NKI dtype: {x!r}") from None
    if d not in dt.SUPPORTED:
        # rule: python.argument_type
        raise nki_error("err_unsupported_dtype_value", f"'{pname}' of '{api}' is not an NKI dtype: {x!r}")
    return d


def reinterpret(base: Tensor, offset: int, dtype_: Any) -> tuple[Tensor, int]:
    """``base``'s whole storage read as ``dtype_`` and the element ``offset`` in the new unit."""
    d = dtype(dtype_, "view")
    old, new = base.itemsize, dt.storage_dtype(d).itemsize
    if (offset * old) % new:
        # rule: view.reinterpret
        raise error("err_invalid_view", f"offset {offset} of '{base.root.name}' is not a whole number of "
                                            f"{new}-byte elements")
    if d == base.dtype:
        return base, offset
    return base.view(d), offset * old // new
