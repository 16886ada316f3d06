"""Sequencer registers (NKI 0.6): ``nisa.register_load`` and ``nisa.register_store``.

A register holds one 32-bit integer an engine's sequencer uses for control flow and addresses (a dynamic loop's
bound, a ``scalar_offset``).  Loading one reads a one-element tensor when the instruction runs; storing one
writes its value into a one-element tensor.  The register itself is the front end's (``frontend.v06``); these
are the two instructions that move a value between it and memory, so the value read is the tensor's at that
point of the kernel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.indexing import Affine
from nkisim.core.storage import read, write
from nkisim.core.tensor import as_access, shape_str
from nkisim.cost.instructions import REGISTER_LOAD, REGISTER_STORE
from nkisim.ops.base import emit, operand
from nkisim.ops.registry import op, spaces_of

_INT32 = (dt.int32, dt.uint32)


def _element(api: str, pname: str, x: Any) -> Any:
    a = as_access(operand(api, pname, x, spaces_of(api)))
    if math.prod(a.shape) != 1 or a.dtype not in _INT32:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str(pname, a.shape)} {dt.name(a.dtype)}) of '{api}' has "
                        f"mismatched shapes: a register moves one 32-bit integer element (int32 or uint32)")
    return a


@op("nisa.register_load", emits=(REGISTER_LOAD,), spaces="hbm|sbuf")
def register_load(src: Any, name: str = "") -> int | None:
    """``nisa.register_load``: the value of a one-element int32/uint32 tensor, read into a register (None while
    tracing without values)."""
    ctx = current()
    a = _element("register_load", "src", src)
    value = None
    if ctx.numerics:
        value = int(np.asarray(read(a)).reshape(-1)[0])
    emit(ctx, REGISTER_LOAD, reads=[a])
    return value


@op("nisa.register_store", emits=(REGISTER_STORE,), spaces="hbm|sbuf")
def register_store(dst: Any, value: Any, name: str = "") -> None:
    """``nisa.register_store``: a register's value (an integer, or a loop's index) written into a one-element
    int32/uint32 tensor."""
    ctx = current()
    d = _element("register_store", "dst", dst)
    d.check_write()
    v = value.value() if isinstance(value, Affine) else value
    write(d, None if not ctx.numerics else np.full(d.shape, int(v), dtype=np.int64))
    emit(ctx, REGISTER_STORE, writes=[d])
