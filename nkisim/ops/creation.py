"""Tensor creation: nl.ndarray/zeros/ones/full/*_like/rand and their allocation rules, and the instructions that
fill a tile from nothing (``nisa.memset``, ``nisa.iota``).

Rules checked at creation, as the compiler does: partition dim <= 128, on-chip tiles of rank >= 2,
per-partition SBUF budget, PSUM tiles within a 2 KiB bank per partition, no init value for HBM,
``shared_hbm`` only at the kernel's top level.  Fresh tiles are filled with NaN (floats) so reads
of memory nobody wrote show up in results.  ``shared_hbm`` tensors are created once per allocation
site for the whole SPMD grid.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core import physical
from nkisim.core.buffers import PMAX, Buffer, ModAlloc, PlacementFunction, sbuf
from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.indexing import Affine
from nkisim.core.location import user_location, warn
from nkisim.core.storage import read, storage
from nkisim.core.tensor import Access, Tensor, as_access, is_tile, shape_str
from nkisim.cost.instructions import IOTA, MEMSET
from nkisim.ops.base import (
    check_partitions,
    emit,
    mask_array,
    new_tile,
    operand,
    operands,
    sbuf_too_wide,
    stack_bind,
    stack_push,
    tensor_label,
    write_dst,
)
from nkisim.ops.mx import check_packed_fill
from nkisim.ops.registry import op, spaces_of


class par_dim(int):
    """Marks the partition dimension in a shape: ``(4, nl.par_dim(128), 512)``."""

    def __repr__(self) -> str:
        return f"par_dim({int(self)})"


def plain_shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _partition_axis(shape: Any) -> int:
    if isinstance(shape, (int, np.integer)):
        return 0
    for i, s in enumerate(shape):
        if s.__class__ is not int and isinstance(s, par_dim):  # (plain ints, the common case: one test)
            return i
    return 0


def _as_buffer(buffer: Any) -> Buffer:
    if buffer is None:
        return sbuf
    if isinstance(buffer, Buffer):
        return buffer
    if isinstance(buffer, ModAlloc):
        return Buffer(buffer.space, buffer)
    raise TypeError(f"buffer must be nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm or a mod_alloc, got {buffer!r}")


def allocate(shape: Any, dtype: Any, buffer: Any = None, name: str = "", fill: Any = None,
             init_value: bool = False) -> Tensor:
    """Create a tensor after the compiler's allocation checks (``fill`` None = uninitialised)."""
    ctx = current()
    buf = physical.resolve(_as_buffer(buffer), shape, dtype, ctx.target.psum_bank_bytes)  # ncc.*.alloc(func)
    if buf.alloc is not None:  # a direct-allocation kernel (restricts PE transposes, see ops.matmul)
        ctx.direct_allocation = True
    par = _partition_axis(shape)
    key = _checked_key(shape, dtype, buf, par, ctx)
    hit = None
    if key is not None:
        try:
            hit = _CHECKED.get(key)
        except TypeError:  # an unhashable dtype or shape entry: checked every time
            key = None
    if hit is not None and hit[0] is dtype:  # this allocation passed every check below before
        shp, d, per_partition = hit[1], hit[2], hit[3]
        if ctx.stack_allocator:
            stack_push(ctx, buf.family, per_partition, tensor_label(name))
            t = _new_tensor(ctx, shp, d, buf, par, name, fill)
            stack_bind(ctx, t)
            return t
        return _new_tensor(ctx, shp, d, buf, par, name, fill)
    shp = plain_shape(shape)
    d = supported_dtype(dtype, name)
    if buf.family == "hbm":
        if init_value:
            raise nki_error("err_hbm_tensor_with_init_value_not_supported",
                            "Creating HBM tensor with init value is not supported.")
        if buf.space == "shared_hbm":
            if ctx.loops or ctx.depth > 0:
                raise nki_error("err_shared_hbm_must_in_kernel_level",
                                "shared_hbm buffer can only be created top level kernel scope; create kernel outputs "
                                "before any loop and outside helper functions")
            # one tensor per allocation site *and* occurrence within an instance: instance k's n-th
            # allocation at a site is instance 0's n-th one (a Python loop may allocate several)
            counts = ctx.shared_counts
            ckey = (ctx.instance, user_location(), name)
            counts[ckey] = occurrence = counts.get(ckey, 0) + 1
            site = (user_location(), name, occurrence)
            hit = ctx.shared.get(site)
            if hit is not None:
                return hit
    else:
        if len(shp) < 2:
            raise nki_error("err_insufficient_rank",
                            f"Insufficient rank: on-chip tensor {shape_str(name or 'tensor', shp)} needs at least 2 "
                            f"dimensions (partition and free), e.g. ({shp[0] if shp else 1}, 1)")
        if shp[par] > PMAX:
            raise nki_error("err_num_partition_exceed_arch_limit",
                            f"number of partitions {shp[par]} exceed architecture limitation of {PMAX}.")
        if par > 0:
            warn("Block dimension is deprecated: dimensions before nl.par_dim will become an error; "
                 "allocate one tile per block instead", DeprecationWarning)
        free_elems = math.prod(shp) // shp[par]
        per_partition = free_elems * dt.storage_dtype(d).itemsize
        if buf.family == "psum" and d not in (dt.float32, dt.int32, dt.bfloat16, dt.float16, dt.uint32):
            raise nki_error("err_psum_dtype",
                            f"PSUM tensor for writes must be either 4-byte (FP32/int32) or BF16, got {dt.name(d)}")
        if buf.alloc is not None:
            # a direct allocation holds its physical tiles, wherever the kernel placed them: those must fit (a
            # block tensor's logical size does not matter, nki-samples' pipelined attention needs 64 KiB per
            # partition for 4 MiB of logical blocks)
            place = physical.placement(buf.alloc, shp, par, d, ctx.target.psum_bank_bytes)
            physical.check(place, ctx.target, tensor_label(name), shp)
            per_partition = place.tiles() * place.tile_bytes
        elif buf.family == "sbuf":
            limit = ctx.target.sbuf_partition_bytes
            if per_partition > limit:
                raise sbuf_too_wide(ctx, per_partition, shp, name)
        else:
            per_block = math.prod(shp[par + 1:]) * dt.storage_dtype(d).itemsize
            if _dialect(ctx) == "0.6":
                # NKI 0.6 places a PSUM tensor across banks (nl.tile_size.psum_num_banks; a NeuronCore-v4 matmul's
                # dst spans 'the size of 8x PSUM banks (the entire PSUM)', isa nc_matmul_mx): nki-library's
                # rotational top-k allocates [128, 1024] fp32 and fills it 512 columns a matmul.  The whole PSUM
                # per partition is the limit; each matmul's own output is still held to one bank (ops.matmul)
                if per_block > ctx.target.psum_partition_bytes:
                    raise nki_error("err_psum_tile_exceed_bank_size",
                                    f"PSUM tensor {shape_str(tensor_label(name), shp)} needs {per_block} bytes per "
                                    f"partition, more than the PSUM's {ctx.target.psum_partition_bytes} "
                                    f"({ctx.target.psum_banks} banks of {ctx.target.psum_bank_bytes} bytes)")
            elif per_block > ctx.target.psum_bank_bytes:
                raise nki_error("err_psum_tile_exceed_bank_size",
                                f"PSUM tile {shape_str(tensor_label(name), shp)} needs {per_block} bytes per partition, "
                                f"more than one 2 KiB PSUM bank (at most 512 fp32 elements in the free dimension)")
        if key is not None:
            if len(_CHECKED) > 4096:  # bound the memo for programs with unusually many shapes
                _CHECKED.clear()
            _CHECKED[key] = (dtype, shp, d, per_partition)
        if ctx.stack_allocator:
            stack_push(ctx, buf.family, per_partition, tensor_label(name))
    t = _new_tensor(ctx, shp, d, buf, par, name, fill)
    if ctx.stack_allocator and buf.family != "hbm":
        stack_bind(ctx, t)
    if buf.space == "shared_hbm":
        ctx.shared[site] = t
    return t


#: (shape, dtype, space, target) -> (dtype as given, shape as ints, dtype, bytes per partition) of an
#: on-chip allocation that passed allocate's checks.  Tiles are allocated inside loop bodies, so the
#: same request repeats every iteration; the checks depend on nothing else, so they cannot fail later.
_CHECKED: dict[tuple, tuple] = {}


def _checked_key(shape: Any, dtype: Any, buf: Buffer, par: int, ctx: Any) -> tuple | None:
    """The _CHECKED key of an allocation, or None when it is not memoised: HBM (shared tensors are
    per site), direct allocations, a block dimension (it warns every time) and shapes that are not tuples."""
    if par or buf.alloc is not None or buf.family == "hbm" or shape.__class__ is not tuple:
        return None
    return (shape, dtype, buf.space, ctx.target, _dialect(ctx))


def _dialect(ctx: Any) -> str:
    """The NKI dialect of the kernel being traced ("legacy" or "0.6"): their PSUM allocation rules differ."""
    trace = getattr(ctx, "trace", None)
    return getattr(trace, "dialect", "legacy") if trace is not None else "legacy"


def _new_tensor(ctx: Any, shp: tuple[int, ...], d: np.dtype, buf: Buffer, par: int, name: str,
                fill: Any) -> Tensor:
    """The tensor of an allocation that passed its checks (``fill`` None = uninitialised)."""
    data = None
    if ctx.numerics and buf.alloc is not None and buf.family != "hbm":
        place = physical.placement(buf.alloc, shp, par, d, ctx.target.psum_bank_bytes)
        data = physical.view(ctx, shp, par, d, place)  # aliases whatever else lives there
        if fill is not None:
            data[...] = dt.cast(np.asarray(fill, dtype=np.float32), d)
    elif ctx.numerics and fill is not None:
        data = np.full(shp, fill, dtype=dt.storage_dtype(d))
    elif ctx.numerics:  # uninitialised: the NaN/4 pattern is written on first read or partial write
        data = np.empty(shp, dtype=dt.storage_dtype(d))
    t = Tensor(shp, d, buf, data, name, par, ctx.loop_tuple, site=user_location(3))
    t.unfilled = data is not None and fill is None and buf.alloc is None
    if fill is not None:
        t.written = True
        if buf.family != "hbm":
            t.producer = emit(ctx, MEMSET, writes=[t.full()], extra={"zero": fill == 0}, p=shp[par] if shp else 1,
                              n=max(1, math.prod(shp) // max(1, shp[par])) if shp else 1)  # N excludes the par dim
    return t


def supported_dtype(dtype: Any, name: str) -> np.dtype:
    """``dtype`` as a NumPy dtype, or the compiler's error for one outside NKI's table (float64, complex...)."""
    d = dt.normalize(dtype)
    if d not in dt.SUPPORTED:
        raise nki_error("err_unsupported_dtype_value",
                        f"Unsupported dtype '{d}' for tensor '{name or 'tensor'}', expected one of the following "
                        f"dtypes: {', '.join(dt.name(x) for x in dt.SUPPORTED)}")
    return d


def _placing(dtype_at: int, like: bool = False) -> Any:
    """An allocation call's ``prepare`` step (ops.registry): a ``buffer=ncc.sbuf.alloc(func)`` (or psum) is
    resolved against the requested shape into the modulo allocation it equals (core.physical.fit) before the
    call is recorded, so a program holds data, never the kernel's function.  ``dtype_at``: the dtype's
    position among the positional arguments; ``like``: the shape (and default dtype) come from a tensor."""

    def prepare(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        buf = kwargs.get("buffer")
        if not isinstance(getattr(buf, "alloc", None), PlacementFunction):
            return args, kwargs
        first = args[0] if args else kwargs.get("a" if like else "shape")
        dtype = kwargs.get("dtype", args[dtype_at] if len(args) > dtype_at else None)
        shape = first.shape if like else first
        if dtype is None and like:
            dtype = first.dtype
        return args, {**kwargs, "buffer": physical.resolve(buf, shape, dtype, current().target.psum_bank_bytes)}

    return prepare


@op("nl.ndarray", spaces="hbm|psum|sbuf", prepare=_placing(1))
def ndarray(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> Tensor:
    """``nl.ndarray``: a new tensor of ``shape`` in ``buffer`` (SBUF by default), uninitialised (reads show NaN)."""
    return allocate(shape, dtype, buffer, name)


@op("nl.zeros", emits=(MEMSET,), prepare=_placing(1))
def zeros(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> Tensor:
    """``nl.zeros``: a new tensor filled with 0 (on chip; an HBM tensor cannot have an initial value)."""
    return allocate(shape, dtype, buffer, name, fill=0, init_value=True)


@op("nl.ones", emits=(MEMSET,), prepare=_placing(1))
def ones(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> Tensor:
    """``nl.ones``: a new tensor filled with 1 (on chip)."""
    return allocate(shape, dtype, buffer, name, fill=1, init_value=True)


@op("nl.full", emits=(MEMSET,), prepare=_placing(2))
def full(shape: Any, fill_value: Any, dtype: Any, *, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> Tensor:
    """``nl.full``: a new tensor filled with ``fill_value`` (on chip)."""
    return allocate(shape, dtype, buffer, name, fill=fill_value, init_value=True)


def _like(a: Any, dtype: Any) -> tuple[tuple[int, ...], Any, Buffer]:
    acc = as_access(a)
    return acc.shape, acc.dtype if dtype is None else dtype, acc.tensor.buffer


@op("nl.empty_like", spaces="hbm|psum|sbuf", prepare=_placing(1, like=True))
def empty_like(a: Any, dtype: Any = None, *, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> Tensor:
    """``nl.empty_like``: an uninitialised tensor with ``a``'s shape (and dtype and buffer unless given)."""
    shape, d, buf = _like(a, dtype)
    return allocate(shape, d, buffer or buf, name)


@op("nl.zeros_like", emits=(MEMSET,), spaces="hbm|psum|sbuf", prepare=_placing(1, like=True))
def zeros_like(a: Any, dtype: Any = None, *, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> Tensor:
    """``nl.zeros_like``: a tensor of zeros with ``a``'s shape (and dtype and buffer unless given)."""
    shape, d, buf = _like(a, dtype)
    return allocate(shape, d, buffer or buf, name, fill=0, init_value=True)


@op("nl.ones_like", emits=(MEMSET,), spaces="hbm|psum|sbuf", prepare=_placing(1, like=True))
def ones_like(a: Any, dtype: Any = None, *, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> Tensor:
    """``nl.ones_like``: a tensor of ones with ``a``'s shape (and dtype and buffer unless given)."""
    shape, d, buf = _like(a, dtype)
    return allocate(shape, d, buffer or buf, name, fill=1, init_value=True)


@op("nl.full_like", emits=(MEMSET,), spaces="hbm|psum|sbuf", prepare=_placing(2, like=True))
def full_like(a: Any, fill_value: Any, dtype: Any = None, *, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> Tensor:
    """``nl.full_like``: a tensor of ``fill_value`` with ``a``'s shape (and dtype and buffer unless given)."""
    shape, d, buf = _like(a, dtype)
    return allocate(shape, d, buffer or buf, name, fill=fill_value, init_value=True)


@op("nl.rand", emits=(MEMSET,))
def rand(shape: Any, dtype: Any = np.float32, name: str = "") -> Tensor:
    """``nl.rand``: uniform [0, 1) values from the kernel's deterministic generator."""
    ctx = current()
    rng = ctx.generator()
    t = allocate(shape, dtype, sbuf, "", fill=0)
    data = storage(t)
    if data is not None:
        data[...] = dt.cast(rng.random(t.shape, dtype=np.float32), t.dtype)
    return t


@op("nl.random_seed")
def random_seed(seed: Any, *, mask: Any = None, name: str = "") -> None:
    """``nl.random_seed``: seed the generator ``nl.rand`` draws from (an int or a 1-element tile)."""
    ctx = current()
    value = seed
    if is_tile(seed):  # a [1, 1] tile on chip (an HBM tensor is refused like any on-chip operand)
        vals = read(operands("random_seed", seed=seed)["seed"])
        value = 0 if vals is None else int(np.asarray(vals).ravel()[0])
    ctx.rng = np.random.default_rng(int(value))


@op("nl.shared_constant")
def shared_constant(constant: Any, dtype: Any = None, name: str = "") -> Tensor:
    """``nl.shared_constant``: a constant HBM tensor built from a NumPy array."""
    ctx = current()
    arr = np.asarray(constant)
    d = supported_dtype(dtype if dtype is not None else arr.dtype, "constant")
    t = Tensor(arr.shape, d, Buffer("shared_hbm"), dt.cast(arr, d).copy() if ctx.numerics else None, "constant",
               site=user_location())
    t.written = True
    return t


@op("nl.shared_identity_matrix")
def shared_identity_matrix(n: int, dtype: Any = np.uint8, name: str = "") -> Tensor:
    """``nl.shared_identity_matrix``: a constant n x n identity matrix in HBM (for transposes by matmul)."""
    return shared_constant(np.eye(int(n)), dtype)


def is_access(x: Any) -> bool:
    return isinstance(x, Access)


@op("nisa.iota", emits=(IOTA,))
def iota(expr: Any = None, dtype: Any = None, *, mask: Any = None, dst: Any = None, pattern: Any = None,
         offset: Any = 0, channel_multiplier: Any = 0, name: str = "") -> Tensor | None:
    """``nisa.iota``: an integer index pattern (computed in int32) as an SBUF tile.

    Legacy form: an index expression built from ``nl.arange`` / ``nl.mgrid``.  Pattern form (``dst`` given):
    ``dst[p, i0, i1, ...] = offset + p * channel_multiplier + sum(i_k * step_k)`` for ``pattern = [[step_k,
    count_k], ...]``, whose counts multiply to ``dst``'s elements per partition."""
    ctx = current()
    if pattern is not None:
        if dst is None:
            raise nki_error("err_operand_cannot_be_none", "'dst' cannot be None.")
        d = as_access(operand("iota", "dst", dst, spaces_of("iota"), ctx))
        steps = [(int(s), int(n)) for s, n in pattern]
        parts = d.shape[0] if d.shape else 1
        if int(np.prod([n for _, n in steps])) != int(np.prod(d.shape[1:])):
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('dst', d.shape)}, pattern {[list(p) for p in steps]}) of "
                            f"'iota' has mismatched shapes: the pattern's counts must multiply to dst's elements per "
                            f"partition")
        v = None
        if ctx.numerics:
            v = np.full((parts,) + tuple(n for _, n in steps), int(offset), dtype=np.int64)
            v += (np.arange(parts, dtype=np.int64) * int(channel_multiplier)).reshape((parts,) + (1,) * len(steps))
            for axis, (step, n) in enumerate(steps):
                shape = [1] * (len(steps) + 1)
                shape[axis + 1] = n
                v += (np.arange(n, dtype=np.int64) * step).reshape(shape)
            v = v.astype(np.int32).astype(np.int64).reshape(d.shape)
        emit(ctx, IOTA, writes=[write_dst(ctx, "iota", dst, d.shape, v)])
        return None
    if isinstance(expr, (int, np.integer)):
        expr = Affine(int(expr))
    if not isinstance(expr, Affine):
        raise TypeError("nisa.iota expects an index expression built from nl.arange / nl.mgrid")
    v = np.asarray(expr.value(), dtype=np.int64)
    if v.ndim < 2:
        v = v.reshape((1,) * (2 - v.ndim) + v.shape)
    check_partitions("iota", {"expr": v.shape}, {"expr": v.shape})
    valid = mask_array(mask, v.shape, "iota")
    if dst is not None:
        emit(ctx, IOTA, writes=[write_dst(ctx, "iota", dst, v.shape, v.astype(np.int32).astype(np.int64), valid)])
        return None
    tile = new_tile(ctx, v.shape, dt.normalize(dtype), v.astype(np.int32).astype(np.int64), valid)
    tile.producer = emit(ctx, IOTA, writes=[tile.full()])
    return tile


@op("nisa.memset", emits=(MEMSET,))
def memset(shape: Any = None, value: Any = 0, dtype: Any = None, *, mask: Any = None, engine: Any = 0,
           dst: Any = None, name: str = "") -> Tensor | None:
    """``nisa.memset``: fill ``dst`` with a constant (NKI 0.6), or a new tile of ``shape`` (legacy; its first
    dim is the partition dim)."""
    ctx = current()
    eng = {3: "pool"}.get(int(engine or 0), "dve")
    if dst is not None:
        d = as_access(operand("memset", "dst", dst, spaces_of("memset"), ctx))
        check_packed_fill("memset", d.dtype, value)
        shp = d.shape
        valid = mask_array(mask, shp, "memset")
        out = write_dst(ctx, "memset", dst, shp, np.full(shp, value, dtype=np.float64) if ctx.numerics else None,
                        valid)
        emit(ctx, MEMSET, eng, writes=[out], extra={"zero": value == 0})
        return None
    shape = plain_shape(shape)
    check_packed_fill("memset", dt.normalize(dtype), value)
    check_partitions("memset", {"shape": shape}, {"shape": shape})
    valid = mask_array(mask, shape, "memset")
    tile = new_tile(ctx, shape, dt.normalize(dtype), np.full(shape, value, dtype=np.float64)
                    if ctx.numerics else None, valid)
    tile.producer = emit(ctx, MEMSET, eng, writes=[tile.full()], extra={"zero": value == 0})
    return tile
