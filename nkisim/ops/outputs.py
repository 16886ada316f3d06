"""Where an instruction's results go, for the ISA ops added for third-party code (issue 12).

Legacy NKI instructions either return a new tile or write a ``dst=`` tile in place (newer spellings of
the same instruction take ``dst`` where the older returned the result); ``deliver`` does both the
same way.  Several Vector-engine instructions also keep per-partition accumulator registers across
instructions (``reduce_cmd``): ``accumulate`` holds that state on the kernel context, shared by every
instruction that uses the registers, as the ISA documents.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import KernelContext
from nkisim.core.errors import nki_error
from nkisim.core.storage import write
from nkisim.core.tensor import Access, Tensor, is_tile, shape_str
from nkisim.cost.instructions import InstructionKind
from nkisim.ops.base import emit, new_tile, operands
from nkisim.ops.elementwise import values
from nkisim.ops.optable import ALU, op_name

F32 = np.dtype(np.float32)

#: ``nisa.reduce_cmd`` values
IDLE, RESET, REDUCE, RESET_REDUCE, LOAD_REDUCE = 0, 1, 2, 3, 4

#: Value a reset accumulator starts from, per reduction operator.
_RESET_VALUE = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "max": -np.inf, "maximum": -np.inf,
                "min": np.inf, "minimum": np.inf}


def alu(op: Any, inst: str, allowed: Sequence[str] | None = None) -> str:
    """Canonical ALU operator name of ``op`` for instruction ``inst``, or the compiler's error."""
    name = op_name(op)
    if name not in ALU or (allowed is not None and name not in allowed):
        raise nki_error("err_instruction_unsupported_op", f"{name} is not supported in '{inst}'")
    return name


def per_partition(inst: str, pname: str, v: Any, parts: int, ctx: KernelContext, ndim: int = 2) -> Any:
    """A scalar or ``[P, 1]`` (or ``[P]``) operand as values that broadcast over a ``(P, ...)`` array of ``ndim``
    dimensions (None in cost-only)."""
    if not is_tile(v):
        return None if not ctx.numerics else np.asarray(v, dtype=F32)
    acc = operands(inst, **{pname: v})[pname]
    if acc.shape[0] != parts or math.prod(acc.shape[1:]) != 1:
        raise nki_error("err_num_partition_mismatch",
                        f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                        f"({shape_str(pname, acc.shape)}) of '{inst}'; '{pname}' must be a scalar or a "
                        f"[{parts}, 1] vector")
    vals = values(acc, ctx, F32)
    return None if vals is None else vals.reshape((parts,) + (1,) * (ndim - 1))


def flat(acc: Access | Tensor, ctx: KernelContext, compute: np.dtype = F32) -> np.ndarray | None:
    """Operand values as ``(partitions, elements per partition)`` in ``compute`` (None in cost-only)."""
    v = values(acc, ctx, compute)
    return None if v is None else v.reshape(acc.shape[0], -1)


def deliver(ctx: KernelContext, kind: InstructionKind, shape: tuple[int, ...], dtype: Any, vals: Any,
            dst: Any = None, reads: Sequence[Access | Tensor] = (), valid: np.ndarray | None = None,
            extra_writes: Sequence[Access] = (), extra: dict | None = None, engine: str | None = None) -> Tensor | None:
    """Write ``vals`` (any shape with ``shape``'s element count) into ``dst``, or into a new tile of
    ``shape`` / ``dtype`` (SBUF) that is returned; emit the instruction (on its own engine unless
    ``engine`` names another) with every tile it wrote."""
    inst = kind.name
    if dst is not None:
        d = operands(inst, dst=dst)["dst"]
        if int(np.prod(d.shape)) != int(np.prod(shape)) or d.shape[0] != shape[0]:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('dst', d.shape)}, {shape_str('result', shape)}) of "
                            f"'{inst}' has mismatched shapes")
        d.check_write()
        if vals is not None:
            vals = np.asarray(vals).reshape(d.shape)
        write(d, vals, None if valid is None else np.broadcast_to(valid, shape).reshape(d.shape))
        emit(ctx, kind, engine, reads=reads, writes=[d, *extra_writes], extra=extra)
        return None
    out_dt = dt.normalize(dtype)
    if vals is not None:
        vals = np.asarray(vals).reshape(shape)
    tile = new_tile(ctx, tuple(shape), out_dt, vals, None if valid is None else np.broadcast_to(valid, shape))
    tile.producer = emit(ctx, kind, engine, reads=reads, writes=[tile.full(), *extra_writes], extra=extra)
    return tile


def accumulate(ctx: KernelContext, cmd: Any, op: str, partial: np.ndarray | None, load: Any = None) -> Any:
    """Combine a per-partition ``(P,)`` partial result with the Vector engine's accumulator registers.

    ``reset_reduce`` starts from the operator's identity, ``load_reduce`` from ``load`` and ``reduce``
    from what the registers hold; ``idle``/``reset`` leave the result as it is.  Returns the new
    register value (None in cost-only runs).
    """
    if partial is None:
        return None
    cmd = int(cmd or 0)
    fn = ALU[op].fn
    if cmd == REDUCE and ctx.dve_accum is not None and ctx.dve_accum.shape == partial.shape:
        res = fn(ctx.dve_accum, partial)
    elif cmd == LOAD_REDUCE and load is not None:
        res = fn(np.broadcast_to(np.asarray(load, dtype=F32).reshape(-1), partial.shape), partial)
    else:
        res = partial
    ctx.dve_accum = np.asarray(res, dtype=F32)
    return ctx.dve_accum


def register_start(ctx: KernelContext, cmd: Any, op: str, parts: int, load: Any = None) -> np.ndarray:
    """The accumulator value a running (cumulative) instruction starts from, per partition."""
    cmd = int(cmd or 0)
    held = ctx.dve_accum
    if cmd == REDUCE and held is not None and held.shape == (parts,):
        return held
    if cmd == LOAD_REDUCE and load is not None:
        return np.broadcast_to(np.asarray(load, dtype=F32).reshape(-1), (parts,)).astype(F32)
    return np.full((parts,), _RESET_VALUE.get(op, 0.0), dtype=F32)


def write_reduce_res(inst: str, reduce_res: Any, res: np.ndarray | None) -> Access:
    """Store a per-partition reduction into the ``reduce_res`` tile (shape ``[P, 1]``)."""
    r = operands(inst, reduce_res=reduce_res)["reduce_res"]
    r.check_write()
    write(r, None if res is None else np.asarray(res).reshape(r.shape))
    return r


def free_elements(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape[1:])) if len(shape) > 1 else 1


def same_elements(api: str, a: Access, aname: str, d: Access, dname: str) -> None:
    if a.shape[0] != d.shape[0] or free_elements(a.shape) != free_elements(d.shape):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str(aname, a.shape)}, {shape_str(dname, d.shape)}) of '{api}' has "
                        f"mismatched shapes: they must have the same partitions and elements per partition")
