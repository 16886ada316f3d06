"""Memory operations: load/store (DMA), tile assignment and copies, in-place accumulation."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core import syntax
from nkisim.core.access import Access
from nkisim.core.arrays import compact
from nkisim.core.buffers import PMAX
from nkisim.core.context import active, current
from nkisim.core.errors import NKIValueError, nki_error, shape_str
from nkisim.core.grids import DynSlice
from nkisim.core.indexing import Affine
from nkisim.core.location import STORES, bytecode, user_frame
from nkisim.core.storage import owned, read, read_masked, set_storage, storage, write
from nkisim.core.tensor import Tensor, as_access, is_tile
from nkisim.cost.instructions import (
    BROADCAST_TO,
    COPY,
    LOAD,
    MEMSET,
    STORE,
    TENSOR_COPY,
    TENSOR_SCALAR,
    TENSOR_TENSOR,
)
from nkisim.cost.trace import Instruction, buffer_info
from nkisim.ops.base import (
    _access_facts,
    check_partitions,
    check_tensor_scope,
    emit,
    f32,
    mask_array,
    new_tile,
    one_operand,
    operands,
    out_dtype,
    region,
    stack_forget,
    tile_shape,
)
from nkisim.ops.elementwise import binary_op, column_shape
from nkisim.ops.optable import ALU, op_name
from nkisim.ops.registry import op

Name = str | Callable[[], str]


def _named(name: Name) -> str:
    return name() if callable(name) else name


def fit_shape(src: tuple[int, ...], dst: tuple[int, ...], dst_name: Name = "a", src_name: str = "b",
              expr: Name = "a = b") -> tuple[int, ...] | None:
    """How ``src``-shaped values land in a ``dst``-shaped place: None if equal, else the shape to
    reshape to before broadcasting.  Raises the compiler's shape errors otherwise.  ``dst_name`` and ``expr``
    may be callables, asked only for an error (the student's variable is looked up in their frame then)."""
    if src == dst:
        return None
    if [s for s in src if s != 1] == [d for d in dst if d != 1] and math.prod(src) == math.prod(dst):
        return dst  # (N, 1) tile <-> (N,) HBM vector, (P,) reduction <-> (P, 1)
    if len(src) == 1 and len(dst) >= 2 and src[0] == dst[0]:
        return (src[0],) + (1,) * (len(dst) - 1)  # (P,) reduction result broadcast along free dims
    try:
        if np.broadcast_shapes(src, dst) == tuple(dst):
            return src
    except ValueError:
        pass
    if math.prod(dst) < math.prod(src) or len(dst) < len(src):
        raise nki_error("err_store_dst_shape_smaller_than_other_shape",
                        f"Illegal assignment destination shape in '{_named(expr)}': shape {list(dst)} of parameter "
                        f"'{_named(dst_name)}' is smaller than other parameter shapes {shape_str(src_name, src)}.")
    raise nki_error("err_param_shape_incompatible_with_numpy",
                    f"Parameter shapes ({shape_str(_named(dst_name), dst)}, {shape_str(src_name, src)}) could not be "
                    f"broadcast together with shapes {list(dst)} and {list(src)}")


def values_for(dst_shape: tuple[int, ...], src_shape: tuple[int, ...], values: np.ndarray | None,
                **names: Any) -> np.ndarray | None:
    """``src_shape``-shaped ``values`` (None while tracing) as a ``dst_shape`` view, placed by ``fit_shape``
    (whose compiler errors it raises; ``names`` are its parameter names for them)."""
    shape = fit_shape(src_shape, dst_shape, **names)
    if values is None or shape is None:
        return values
    return np.broadcast_to(values.reshape(shape), dst_shape)


def _valid_for(dst_shape: tuple[int, ...], src_shape: tuple[int, ...], valid: np.ndarray | None) -> Any:
    if valid is None or valid.ndim == 0:
        return valid
    shape = fit_shape(src_shape, dst_shape)
    if shape is None:
        return valid
    return np.broadcast_to(valid.reshape(shape), dst_shape)


def _combine(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return np.logical_and(a, b)


def _nbytes(acc: Access, valid: np.ndarray | None) -> int:
    if valid is None:
        count = math.prod(acc.shape)
    else:  # count on the compact mask and scale by how often it repeats (same number, no full pass)
        vm = np.broadcast_to(valid, acc.shape)
        small = compact(vm)
        count = int(np.count_nonzero(small)) * (math.prod(acc.shape) // max(small.size, 1))
    return count * acc.itemsize


def read_indices(instruction: Instruction, accesses: tuple) -> Instruction:
    """Record on a DMA the index tiles its indirect operands among ``accesses`` read (``Instruction.read_also``): a
    gather or scatter reads its index tile to address its rows, so it waits for whatever writes that tile."""
    recs: tuple = ()
    for a in accesses:
        if getattr(a, "advanced", False):
            for c in a.comps:
                if c[0] == "ind":
                    i = c[1]
                    recs += (i.shape, i.tensor.trace_facts or _access_facts(i), i.tensor.uid, region(i)[2])
    if recs:
        instruction.read_also(recs)
        instruction.extra = dict(instruction.extra or {}, indirect=True)
    return instruction


@op("nl.load", emits=(LOAD,), spaces="hbm")
def load(src: Any, *, mask: Any = None, dtype: Any = None, name: str = "") -> Tensor:
    """``nl.load``: HBM -> new SBUF tile (a 1-D HBM slice arrives as an (N, 1) tile)."""
    ctx = current()
    acc = one_operand("load", "src", src, ctx)  # (the checks of operands(), without its dicts)
    if acc.__class__ is not Access:
        acc = as_access(acc)
    valid = mask_array(mask, acc.shape, "load", ctx)
    acc.check_bounds(valid)
    values = None
    if ctx.numerics:
        values = read(acc) if valid is None else read_masked(acc, valid)
    shape = acc.shape
    if len(shape) <= 1:  # a 1-D HBM slice arrives as an (N, 1) tile, a single element as a (1, 1) one
        shape = tile_shape(acc) if shape else (1, 1)
        values = None if values is None else np.asarray(values).reshape(shape)
        valid = None if valid is None or valid.ndim == 0 else valid.reshape(shape)
    src_dt = acc.tensor.dtype
    out_dt = src_dt if dtype is None else dt.normalize(dtype)
    if values is not None and valid is None and acc.tensor.root.param and out_dt == src_dt and not acc.advanced:
        # kernel inputs never change during a launch: the tile may read them in place until it is
        # written (core.storage.owned copies then), which saves a copy per load.  A basic index
        # already gave a view of its own (base set); only that view is made read-only.
        if values.base is None:
            values = values.view()
        values.flags.writeable = False
        tile = new_tile(ctx, shape, out_dt, None, None)
        set_storage(tile, values)
    else:
        tile = new_tile(ctx, shape, out_dt, values, valid, fresh=acc.advanced)
    tile.producer = read_indices(emit(ctx, LOAD, reads=(acc,), writes=(tile,), nbytes=_nbytes(acc, valid)), (acc,))
    return tile


@op("nl.store", emits=(STORE,), spaces="hbm")
def store(dst: Any, value: Any, *, mask: Any = None, name: str = "") -> None:
    """``nl.store``: SBUF/PSUM tile (or scalar) -> HBM, cast to the destination dtype."""
    ctx = current()
    d = as_access(one_operand("store", "dst", dst, ctx, "hbm"))  # (operands() without its dicts)
    valid = mask_array(mask, d.shape, "store")  # before reading value: the mask may cut off its ragged end
    if is_tile(value):
        v = as_access(one_operand("store", "value", value, ctx, "sbuf|psum"))
        ds, vs = d.shape, v.shape
        if (ds and ds[0] > PMAX) or (vs and vs[0] > PMAX):  # (a tile shape keeps the first dimension: test it first)
            check_partitions("store", {"dst": d, "value": v})
        src_shape, values = v.shape, f32(v, ctx)
        v_valid = v.tensor.valid if isinstance(value, Tensor) else None
    else:
        v, src_shape = None, ()
        values = None if not ctx.numerics else np.asarray(value, dtype=np.float32)
        v_valid = None
    d.check_bounds(valid)
    d.check_write()
    values = values_for(d.shape, src_shape, values, dst_name="dst", src_name="value", expr="store")
    valid = _combine(valid, _valid_for(d.shape, src_shape, v_valid))
    write(d, values, valid)
    read_indices(emit(ctx, STORE, reads=[v] if v is not None else [], writes=[d], nbytes=_nbytes(d, valid)), (d,))


def _hand_over(dst: Access, value: Tensor) -> bool:
    """Give ``value``'s storage to the tensor ``dst`` covers, instead of copying it, when that is
    unobservable: ``value`` is a temporary op result that owns its array outright, every element of
    ``dst`` is replaced with the same dtype, and no other tensor or physical buffer shares either
    array.  ``t[...] = nl.load(...)`` then costs one copy of the tile instead of two."""
    t = dst.tensor
    data, new = storage(t), storage(value)
    if data is None or new is None or not dst.is_whole or t.base is not None or t.viewed or value.base is not None \
            or value.viewed or value.valid is not None or t.buffer.alloc is not None \
            or value.buffer.alloc is not None or value.param or new.dtype != data.dtype or value.dtype != t.dtype \
            or new.shape != data.shape:
        return False
    set_storage(t, new)
    t.unfilled = False
    t.written = True
    set_storage(value, None)  # the temporary is gone after this statement; make any late use obvious
    return True


@op("nl.loop_reduce", emits=(COPY,))
def loop_reduce(x: Any, op: Any, loop_indices: Any = (), *, dtype: Any = None, mask: Any = None,
                name: str = "") -> Tensor:
    """``dst[...] = nl.loop_reduce(x, op, loop_indices=(k,))``: ``dst = op(dst, x)`` on every iteration (the
    destination is also an input of ``op``).  The tile returned carries the operator; the assignment that
    consumes it (``assign``) does the combining.  Rebinding a name (``b = nl.loop_reduce(...)``) cannot
    reach a destination, so it is refused rather than keeping only the last iteration."""
    name = op_name(op)
    if name not in ALU or not ALU[name].reducible:
        raise nki_error("err_instruction_unsupported_op", f"{name} is not supported in 'loop_reduce'")
    f = user_frame()
    step = bytecode(f.f_code).get(f.f_lasti) if f is not None else None
    if step is not None and step.next_opname in STORES:
        raise NotImplementedError("nl.loop_reduce must be assigned into its destination tile, "
                                  "dst[...] = nl.loop_reduce(x, op, loop_indices=...), which it combines with; "
                                  "binding its result to a name keeps only the last iteration")
    tile = copy(x, dtype=dtype, mask=mask)
    tile.__dict__["reduce_into"] = name
    return tile


def assign(dst: Access, value: Any, temporary: bool = False) -> None:
    """``tile[idx] = value``: an op result lands in place; a tile or scalar becomes a copy/memset.

    ``temporary``: nothing but this statement refers to ``value`` (see Tensor.__setitem__)."""
    reducing = False
    if value.__class__ is Tensor and value.__dict__:
        op = value.__dict__.pop("reduce_into", None)
        if op is not None:  # nl.loop_reduce: the destination is combined with the value
            value, temporary, reducing = binary_op(op, dst, value, dtype=dst.dtype), True, True
    ctx = current()
    dst_tensor = dst.tensor
    if dst_tensor.buffer.family == "hbm":  # (dst.space, without two property calls)
        raise nki_error("err_unsupported_memory",
                        "Expected operand 'dst' of 'assign' to be in address space 'psum|sbuf', but got a tile "
                        "in 'hbm' instead. Use nl.store to write to HBM.")
    if dst.par_axis != 0:
        raise nki_error("err_failed_to_infer_tile_from_local_tensor",
                        f"Failed to infer tile from tensor '{dst.label()}', : the first dimension of the tile is "
                        f"not the partition dimension of the tensor.")
    if isinstance(value, Affine):
        raise nki_error("err_cannot_assign_to_index", "'index' tensor does not support item assignment; "
                        "materialise index values with nisa.iota")
    if not dst.is_whole:  # (a whole access is always in bounds: no call)
        # an op's result made under a mask lands only where the mask holds (the instruction shrinks, nki-spec.md
        # §2.7), so a masked-off part of the destination may lie past the tile, as for nl.store(..., mask=)
        made = value.valid if value.__class__ is Tensor else None
        dst.check_bounds(None if made is None else _valid_for(dst.shape, value.shape, made))
    loops = dst_tensor.loops  # in scope while the innermost loop it was created in runs (the common case)
    if loops and loops[-1] not in ctx.loops:
        check_tensor_scope(dst_tensor, ctx)
    dst.check_write(accumulate=reducing)  # a loop reduction writes the same elements every iteration
    if isinstance(value, Tensor):  # a whole tile (the common case: an op result) stands for its access
        src, src_tensor = value, value
    elif isinstance(value, Access):
        src, src_tensor = value, value.tensor
    else:
        src = src_tensor = None
    if src is not None:
        if src_tensor.buffer.family == "hbm":
            raise nki_error("err_unsupported_memory",
                            "Expected operand 'value' of 'assign' to be in address space 'psum|sbuf', but got a "
                            "tile in 'hbm' instead. Use nl.load to read from HBM.")
        if src is not src_tensor and src.advanced and any(c[0] in ("ind", "dyn") for c in src.comps):
            raise nki_error("err_copy_dynamic_indirect_indices_not_natively_supported",
                            f"cannot copy a tensor with indirect memory reference access to `{dst.label()}`; gather "
                            f"with nl.load / nisa.dma_copy from HBM instead")
        loops = src_tensor.loops
        if loops and loops[-1] not in ctx.loops:
            check_tensor_scope(src_tensor, ctx)
        ds, ss = dst.shape, src.shape
        if (ds and ds[0] > PMAX) or (ss and ss[0] > PMAX):
            check_partitions("assign", {"dst": dst, "value": src})
        if not (temporary and ctx.numerics and value.__class__ is Tensor and src.shape == dst.shape
                and _hand_over(dst, value)):
            values = values_for(dst.shape, src.shape, read(src) if ctx.numerics else None,
                                 dst_name=dst.tensor.label, src_name="value",
                                 expr=lambda: f"{dst.tensor.label()}[...] = value")
            valid = _valid_for(dst.shape, src.shape, src_tensor.valid if src is src_tensor else None)
            write(dst, values, valid)
        producer = value.producer if src is src_tensor else None
        if producer is not None and ctx.trace and ctx.trace[-1] is producer:
            # the producing instruction writes straight into the destination
            producer.retarget((region(dst),), buffer_info(dst))
            if ctx.stack_allocator:
                stack_forget(ctx, value)
        else:
            emit(ctx, TENSOR_COPY, reads=(src,), writes=(dst,), extra={"any_engine": True})
    else:
        values = None if not ctx.numerics else np.asarray(value, dtype=np.float32)
        write(dst, values)
        emit(ctx, MEMSET, writes=[dst])


_INPLACE = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}


def accumulate(dst: Access, value: Any, op: str) -> None:
    """``dst += value`` (and -=, *=, /=): PSUM accumulation of matmul results, or an ALU update."""
    ctx = current()
    if dst.space == "hbm":
        raise nki_error("err_unsupported_memory",
                        f"Expected operand 'dst' of '{op}' to be in address space 'psum|sbuf', but got a tile in "
                        f"'hbm' instead.")
    dst.check_bounds()
    dst.check_write(accumulate=True)
    if is_tile(value):
        src = as_access(value)
        check_partitions(op, {"dst": dst, "value": src})
        src_vals = f32(src, ctx)
        src_shape = src.shape
    else:
        src, src_shape = None, ()
        src_vals = None if not ctx.numerics else np.float32(value)
    producer = value.producer if isinstance(value, Tensor) else None
    if ctx.numerics:
        rhs = values_for(dst.shape, src_shape, None if src_vals is None else np.asarray(src_vals),
                          dst_name=dst.tensor.label, src_name="value", expr=lambda: f"{dst.tensor.label()} {op}= value")
        dst.tensor.root.written = True
        dst.tensor.fill_pending()
        data = storage(dst.tensor)
        if data is not None:
            data = owned(dst.tensor)
        started = None
        if op == "add" and producer is not None and producer.engine == "pe" and dst.space == "psum":
            # the first matmul into each PSUM element since its allocation starts the accumulation group:
            # it overwrites whatever the bank held (NaN fill, an earlier kernel's values), later ones add
            # (per logical element: a block of a direct allocation that shares its PSUM bank with an earlier
            # block is a new accumulation group, AWS's attention tutorial v9/v10)
            started = dst.tensor.matmul_accumulated(dst.logical_index())
        if started is not None and data is not None and not started.all():
            idx = dst.np_index()
            write(dst, np.where(started, data[idx].astype(np.float32), np.float32(0)) + rhs)
        elif data is not None and data.dtype == np.float32 and not dst.advanced and op in _INPLACE:
            _INPLACE[op](data[dst.np_index()], rhs, out=data[dst.np_index()])  # fp32 PSUM: accumulate in place
        else:
            write(dst, ALU[op].fn(f32(dst, ctx), rhs))
    else:
        fit_shape(src_shape, dst.shape, dst.tensor.label, "value", lambda: f"{dst.tensor.label()} {op}= value")
    if producer is not None and producer.engine == "pe" and ctx.trace and ctx.trace[-1] is producer and op == "add":
        producer.retarget((region(dst),), buffer_info(dst))  # (records stay unexpanded until costed)
        producer.acc = True
        if ctx.stack_allocator:
            stack_forget(ctx, value)
    else:
        emit(ctx, TENSOR_TENSOR, reads=[dst] + ([src] if src is not None else []), writes=[dst])


@op("nl.copy", emits=(COPY,))
def copy(src: Any, *, mask: Any = None, dtype: Any = None, name: str = "") -> Tensor:
    """``nl.copy``: a new SBUF tile (PSUM eviction with a cast is the common use)."""
    ctx = current()
    a = one_operand("copy", "src", src, ctx)
    valid = mask_array(mask, a.shape, "copy", ctx)
    tile = new_tile(ctx, a.shape, out_dtype(dtype, a.dtype), read(a) if ctx.numerics else None, valid, fresh=False)
    tile.producer = emit(ctx, COPY, reads=(a,), writes=(tile,))
    return tile


@op("nl.static_cast", emits=(COPY,))
def static_cast(input_data: Any, dtype: Any, name: str = "") -> Any:
    """``nl.static_cast``: a copy of the tile converted to ``dtype``.

    Outside a kernel it converts a host array (test harnesses prepare bfloat16 / float8 inputs this
    way): the result is a NumPy array of ``dtype``, rounded as the device would store it.
    """
    if not is_tile(input_data) and active() is None:
        return dt.cast(np.asarray(input_data), dt.normalize(dtype))
    return copy(input_data, dtype=dtype)


@op("nl.broadcast_to", emits=(BROADCAST_TO,))
def broadcast_to(src: Any, *, shape: Any, name: str = "") -> Tensor:
    """``nl.broadcast_to``: broadcast (mostly along partitions: [1, F] -> [P, F]) into a new tile."""
    ctx = current()
    a = operands("broadcast_to", src=src)["src"]
    shape = tuple(int(s) for s in shape)
    check_partitions("broadcast_to", {"src": a, "shape": shape}, {"src": a.shape, "shape": shape})
    # a [P] tile is a column (one value per partition, like a reduction's result): [P] -> [P, F] repeats
    # each partition's value along the free axis (NumPy would line [P] up with the last axis instead)
    src_shape = column_shape(a.shape, len(shape))
    try:
        np.broadcast_shapes(src_shape, shape)
    except ValueError:
        raise nki_error("err_param_shape_incompatible_with_numpy",
                        f"Parameter shapes ({shape_str('src', a.shape)}) could not be broadcast together with "
                        f"shapes {list(a.shape)} and {list(shape)}") from None
    values = None if not ctx.numerics else np.broadcast_to(read(a).reshape(src_shape), shape)
    tile = new_tile(ctx, shape, a.dtype, values, fresh=False)
    tile.producer = emit(ctx, BROADCAST_TO, reads=[a], writes=[tile.full()])
    return tile


@op("nl.expand_dims")
def expand_dims(data: Any, axis: int, name: str = "") -> Tensor:
    """``nl.expand_dims``: add a size-1 axis after the last one (a view, no instruction)."""
    a = as_access(data)
    nd = len(a.shape)
    if (axis + nd + 1 if axis < 0 else axis) != nd:
        raise NKIValueError(f"expand_dims only supports adding an axis after the last one (axis={nd} or -1 for a "
                            f"{nd}-dimensional tile), got axis={axis}")
    if isinstance(data, Tensor) and storage(data) is not None:
        t = data.reshape(data.shape + (1,))
        t.valid = None if data.valid is None or data.valid.ndim == 0 else data.valid.reshape(t.shape)
        t.producer = data.producer
        return t
    ctx = current()
    return new_tile(ctx, a.shape + (1,), a.dtype, None if not ctx.numerics else read(a)[..., None], fresh=False)


def subaccess(acc: Access, key: Any) -> Access:
    """Index an access again, e.g. ``block_tile[k][i_p, i_f]``, by composing onto the tensor."""
    if acc.advanced:
        raise TypeError("an advanced-indexed access cannot be indexed again; index the tensor directly")
    if not isinstance(key, tuple):
        key = (key,)
    kept = [i for i, c in enumerate(acc.comps) if c[0] == "slice"]
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(kept) - len(key) + 1) + key[i + 1:]
    # an integer-indexed axis is still there for a second index, with size 1: ``l = buf[:, i]`` then
    # ``l[:, 0]`` (AWS's flash attention passes such columns to helpers that index them so)
    every_axis = len(key) > len(kept) and len(key) == len(acc.comps)
    if len(key) > len(kept) and not every_axis:
        raise nki_error("err_tensor_access_out_of_bound",
                        f"Out-of-bound access for tensor `{acc.label()}`: {len(key)} indices for a tile of rank "
                        f"{len(kept)}")
    full: list[Any] = []
    pos = 0
    for c in acc.comps:
        if c[0] == "int":
            if every_axis:
                k = key[pos]
                pos += 1
                if not (_is_zero(k) or (isinstance(k, slice) and k.step in (None, 1)
                                        and _is_zero(k.start) and k.stop in (None, 1))):
                    raise nki_error("err_tensor_access_out_of_bound",
                                    f"Out-of-bound access for tensor `{acc.label()}`: index {k!r} on an axis of "
                                    f"size 1 (it was indexed with an integer)")
            full.append(c[1])
            continue
        start, stop = c[1], c[2]
        k = key[pos] if pos < len(key) else slice(None)
        pos += 1
        if isinstance(k, slice):
            a = start + (0 if k.start is None else k.start)
            b = stop if k.stop is None else start + k.stop
            full.append(slice(a, b, k.step))
        elif isinstance(k, Access | Tensor):
            full.append(k)
        elif isinstance(k, DynSlice):  # v[b, h][nl.ds(j * 128, 128), :]: the window moves with the view
            if c[3] != 1:
                raise TypeError("nl.ds on a strided view is not supported; index the tensor itself")
            full.append(DynSlice(start + k.start, k.size))
        else:
            full.append(start + k)
    return Access(acc.tensor, tuple(full))


def _is_zero(k: Any) -> bool:
    return k is None or (isinstance(k, int | np.integer) and not isinstance(k, bool) and int(k) == 0)


def reshape_access(acc: Access, shape: tuple) -> Tensor:
    """``t[...].reshape(shape)``: a view of the whole tensor (an indexed part cannot be reshaped)."""
    if not acc.advanced and all(c[0] == "slice" and c[1].value() == 0 and c[2].value() == d
                                for c, d in zip(acc.comps, acc.tensor.shape)):
        return acc.tensor.reshape(shape)
    raise TypeError("only whole tensors can be reshaped; reshape the HBM tensor before indexing it")


def _astype(tile: Any, dtype: Any) -> Tensor:
    """``t.astype(dtype)``: a copy of the tile converted to ``dtype`` (one copy instruction)."""
    return copy(tile, dtype=dtype)


def _broadcast(tile: Any, shape: Any) -> Tensor:
    """``t.broadcast_to(shape)``: ``nl.broadcast_to(t, shape=shape)``."""
    return broadcast_to(tile, shape=shape)


syntax.provide(
    # t[i] = v: a result lands in place; a copy, a fill, or the combine of dst[...] = nl.loop_reduce(...)
    assign=op("tile.assign", emits=(TENSOR_COPY, MEMSET, TENSOR_TENSOR, TENSOR_SCALAR))(assign),
    accumulate=op("tile.accumulate", emits=(TENSOR_TENSOR,))(accumulate),  # t[i] += v (PSUM: the matmul adds)
    astype=op("tile.astype", emits=(COPY,))(_astype),
    broadcast_to=op("tile.broadcast_to", emits=(BROADCAST_TO,))(_broadcast),
    expand_dims=op("tile.expand_dims")(expand_dims),  # views: no instruction
    subaccess=op("tile.subaccess")(subaccess),
    reshape_access=op("tile.reshape_access")(reshape_access),
)
