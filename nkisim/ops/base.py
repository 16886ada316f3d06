"""Helpers every op uses: operand checks from the op table, result tiles, and trace emission."""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.access import Access, MaskedAccess, whole_parts
from nkisim.core.arrays import all_true, index_box
from nkisim.core.buffers import PMAX, Buffer, sbuf
from nkisim.core.context import KernelContext, active
from nkisim.core.errors import NKIError, nki_error, shape_str
from nkisim.core.indexing import check_mask
from nkisim.core.location import REPLAYED, assigned_name, user_frame, user_location
from nkisim.core.storage import owned, read, storage, write
from nkisim.core.tensor import Tensor, as_access
from nkisim.core.whole import whole_parts_of_shape
from nkisim.cost.instructions import DMA_TRANSPOSE, LOAD_TRANSPOSE2D, NC_MATMUL, InstructionKind
from nkisim.cost.runs import dma_runs
from nkisim.cost.trace import Extra, Instruction, Region, buffer_info
from nkisim.ops.registry import ON_CHIP_SPACES
from nkisim.ops.registry import SPACES as _SPACES  # (registry.spaces_of, read inline: once per operand check)

#: "psum|sbuf" -> ["psum", "sbuf"], split once per spelling.
_ALLOWED: dict[str, list[str]] = {}


#: the APIs that take an operand-masked tile (``core.access.MaskedAccess``): AWS's matmult APIs (``nl.matmul`` and
#: ``nisa.nc_matmul`` trace under these names), v2.26.0 nki.api.shared.rst:246-262
OPERAND_MASK_APIS = frozenset({"matmul", "nc_matmul"})


def _split_spaces(spaces: str) -> list[str]:
    allowed = _ALLOWED.get(spaces)
    if allowed is None:
        allowed = _ALLOWED[spaces] = spaces.split("|")
    return allowed


def operand(name: str, pname: str, value: Any, allowed: list[str], ctx: KernelContext | None = None) -> Access | Tensor:
    """One tile operand of API ``name``, checked for address space, partition axis and scope.

    A Tensor is returned as it is and stands for its whole access (it has the same ``shape``,
    ``dtype``, ``read()`` and trace record, see ``emit``): ops take whole tiles far more often than
    indexed ones, and building an Access per operand was a noticeable share of every instruction.
    ``ctx`` is the active context when the caller has it (saves looking it up again).
    """
    cls = value.__class__  # the exact classes first: isinstance is only needed for subclasses
    if cls is Tensor:
        t = value
    elif cls is Access or isinstance(value, Access):
        t = value.tensor
        if cls is MaskedAccess and name not in OPERAND_MASK_APIS:
            raise nki_error("err_unsupported_expression_in_mask",
                            f"'{pname}' of '{name}' is an operand-masked tile ('tile[...][mask]'): AWS's NKI API "
                            f"Masking docs allow operand masking for the matmult APIs only (nl.matmul, "
                            f"nisa.nc_matmul); pass the mask as '{name}(..., mask=...)'")
    elif isinstance(value, Tensor):
        t = value
    else:
        if getattr(type(value), "__nki_view__", False):  # an NKI 0.6 tensor handed to a legacy neuronxcc.nki call
            raise legacy_call_in_06_kernel(f"'{pname}' of '{name}'")
        raise TypeError(f"'{pname}' of '{name}' must be an NKI tile, got {type(value).__name__}")
    acc = value
    space = t.buffer.family
    if space not in allowed:
        raise nki_error("err_unsupported_memory",
                        f"Expected operand '{pname}' of '{name}' to be in address space "
                        f"'{'|'.join(allowed)}', but got a tile in '{acc.space}' instead.")
    if acc.par_axis != 0 and space != "hbm":
        raise nki_error("err_failed_to_infer_tile_from_local_tensor",
                        f"Failed to infer tile from tensor '{acc.label()}', : the first dimension of the tile "
                        f"is not the partition dimension of the tensor.")
    loops = t.loops  # in scope while the innermost loop it was created in runs (the common case)
    if loops and (ctx is None or loops[-1] not in ctx.loops):
        check_tensor_scope(t, ctx)
    return acc


def legacy_call_in_06_kernel(what: str) -> NKIError:
    """The error for an NKI 0.6 tensor handed to a legacy ``neuronxcc.nki`` call (``what`` names the operand)."""
    return nki_error("err_unsupported_kernel_argument",
                     f"{what} is an NKI 0.6 tensor: neuronxcc.nki APIs cannot be used inside an NKI 0.6 kernel (a "
                     f"compile error since NKI 0.4); call nki.language / nki.isa instead")


def one_operand(name: str, pname: str, value: Any, ctx: KernelContext | None = None,
                spaces: str | None = None) -> Access | Tensor:
    """``operands(name, spaces, pname=value)[pname]`` for the common one-tile case, without the dicts
    (and, like ``operand``, without an Access for a whole tensor)."""
    allowed = _split_spaces(spaces) if spaces else (_SPACES.get(name) or ON_CHIP_SPACES)
    acc = operand(name, pname, value, allowed, ctx)
    s = acc.shape
    if s and s[0] > PMAX:
        check_partitions(name, {pname: acc})
    return acc


def two_operands(name: str, xname: str, x: Any, yname: str, y: Any,
                 ctx: KernelContext | None = None) -> tuple[Access | Tensor, Access | Tensor]:
    """``operands(name, xname=x, yname=y)`` for the common two-tile case, without the dicts
    (and, like ``operand``, without an Access for a whole tensor)."""
    allowed = _SPACES.get(name) or ON_CHIP_SPACES
    xa = operand(name, xname, x, allowed, ctx)
    ya = operand(name, yname, y, allowed, ctx)
    xs, ys = xa.shape, ya.shape
    if (xs and xs[0] > PMAX) or (ys and ys[0] > PMAX):
        check_partitions(name, {xname: xa, yname: ya})
    return xa, ya


def operands(name: str, spaces: str | None = None, **named: Any) -> dict[str, Access]:
    """Resolve tile operands of API ``name`` and check address spaces and partition limits.

    ``named`` maps parameter names to values; None values are skipped.  Returns Accesses (each
    operand checked by ``operand``; a whole tensor becomes its whole access).
    """
    allowed = _split_spaces(spaces) if spaces else (_SPACES.get(name) or ON_CHIP_SPACES)
    out: dict[str, Access] = {}
    for pname, value in named.items():
        if value is None:
            continue
        acc = operand(name, pname, value, allowed)
        out[pname] = acc if isinstance(acc, Access) else Access.whole(acc)
    check_partitions(name, out)
    return out


def check_tensor_scope(t: Tensor, ctx: KernelContext | None = None) -> None:
    """err_local_variable_used_out_of_scope: a tensor created inside a loop body that has ended.

    Loops nest like a stack, so the tensor is in scope exactly when the innermost loop it was
    created in is still running.  ``ctx``: the active context if the caller has it at hand.
    """
    loops = t.loops
    if loops:
        if ctx is None:
            ctx = active()
        if ctx is not None and loops[-1] not in ctx.loops:
            name = t.label()
            made = t.producer
            if made is not None and made.kind is NC_MATMUL and made.loc[1]:
                raise _rebound_accumulator(name, t, made.loc)
            raise nki_error("err_local_variable_used_out_of_scope",
                            f"Local variable '{name}' ({shape_str(dt.name(t.dtype), t.shape)}) is referenced "
                            f"outside of its parent scope: it was created inside a loop that has ended. Allocate "
                            f"it before the loop and update it in place with '{name}[...] = ...'")


def _rebound_accumulator(name: str, t: Tensor, made: tuple[str, int]) -> NKIError:
    """err_local_variable_used_out_of_scope for ``acc = nl.matmul(...)`` in a loop where ``acc += ...`` was
    meant: the mistake is the assignment, so the error points there (the use after the loop is only where the
    compiler notices) and says what to write instead."""
    import linecache

    used = user_location()
    err = nki_error("err_local_variable_used_out_of_scope",
                    f"Local variable '{name}' ({shape_str(dt.name(t.dtype), t.shape)}) is referenced outside of its "
                    f"parent scope: line {made[1]} assigns '{name}' a new PSUM tile in every iteration of the "
                    f"loop, so after the loop (line {used[1]}) it names only the last iteration's product. To sum the "
                    f"products over the loop, allocate the accumulator before the loop "
                    f"(`{name} = nl.zeros(({', '.join(map(str, t.shape))}), nl.float32, buffer=nl.psum)`) and "
                    f"accumulate into it: `{name} += nl.matmul(...)`")
    err.nki_location = made
    if isinstance(err, SyntaxError):
        err.filename, err.lineno, err.text = made[0], made[1], linecache.getline(*made) or None
    return err


def partitions(acc: Access | Tensor) -> int:
    shape = acc.shape
    return shape[0] if shape else 1


def check_partitions(name: str, accs: dict[str, Any], shapes: dict[str, tuple] | None = None) -> None:
    """err_num_partition_exceed_arch_limit naming every operand, as the compiler does."""
    if not shapes:
        for v in accs.values():  # fast pass: tile_shape keeps the first dimension, so test it directly
            s = v.shape
            if s and s[0] > PMAX:
                break
        else:
            return
    shapes = shapes or {k: tile_shape(v) for k, v in accs.items()}
    if any(s and s[0] > PMAX for s in shapes.values()):
        listed = ", ".join(shape_str(k, s) for k, s in shapes.items())
        raise nki_error("err_num_partition_exceed_arch_limit",
                        f"number of partitions in {listed} of '{name}' exceed architecture limitation of {PMAX}.")


def tile_shape(acc: Access | Tensor) -> tuple[int, ...]:
    """On-chip shape of an operand; a 1-D HBM access is seen as (N, 1) like the compiler does."""
    s = acc.shape
    return (s[0], 1) if len(s) == 1 else s


def mask_array(mask: Any, shape: tuple[int, ...], name: str, ctx: KernelContext | None = None) -> np.ndarray | None:
    """Validate ``mask=`` and broadcast it to the instruction's shape (None = everything).
    ``ctx``: the active context when the caller has it at hand (most ops pass no mask)."""
    if ctx is None:
        ctx = active()
    if mask is None:
        if ctx is not None:
            ctx.op_mask = None
        return None
    m = check_mask(mask, name)
    if ctx is not None:
        ctx.op_mask = m  # lets operand reads gather past a tile's end where masked off (cleared by emit)
    if m is None:
        return None
    if m.ndim == 0:
        return m
    try:
        return np.broadcast_to(m, shape) if m.shape != shape else m
    except ValueError:
        if len(shape) < m.ndim:  # e.g. mask over (P, 1) grid applied to a (P,) reduction result
            squeezed = m.reshape(m.shape[: len(shape)]) if all(d == 1 for d in m.shape[len(shape):]) else None
            if squeezed is not None:
                return np.broadcast_to(squeezed, shape)
        raise nki_error("err_param_shape_incompatible_with_numpy",
                        f"Parameter shapes (mask{list(m.shape)}, {name}{list(shape)}) could not be broadcast "
                        f"together with shapes {list(m.shape)} and {list(shape)}") from None


#: (shape, dtype, space) -> (dtype name, space, bytes per partition, shape as ints, whole-access parts):
#: the static facts of an op-result tile, the same for every instruction of that shape (Tensor.result).
_RESULT_FACTS: dict[tuple, tuple] = {}


def _result_facts(shape: tuple[int, ...], dtype: np.dtype, buffer: Buffer) -> tuple:
    """The static facts of a result tile (see ``Tensor.result``), memoised by shape, the dtype's identity and
    space: hashing a NumPy dtype builds a tuple of its fields every time, which cost more than the rest of the
    lookup; each entry holds its dtype (last), so no other dtype can take its id while the entry lives."""
    key = (shape, id(dtype), buffer.space)
    facts = _RESULT_FACTS.get(key)
    if facts is None:
        shape = tuple(map(int, shape))
        per_part = dt.storage_dtype(dtype).itemsize * math.prod(shape[1:])
        facts = (dt.name(dtype), buffer.family, per_part, shape, whole_parts_of_shape(shape, 0), dtype)
        if len(_RESULT_FACTS) > 4096:  # bound the memo for programs with unusually many shapes
            _RESULT_FACTS.clear()
        _RESULT_FACTS[key] = facts
    return facts


def tensor_label(name: str) -> str:
    """What an allocation error calls the tensor being created: the student's variable the allocating
    call's result is assigned to (the compiler names tensors by their variable), else the ``name=``
    given, else 'tensor'.  Error path only: it reads the caller's bytecode."""
    return assigned_name(user_frame()) or name or "tensor"


def sbuf_too_wide(ctx: KernelContext, per_partition: int, shape: tuple[int, ...], name: str) -> NKIError:
    """The compiler's error for one SBUF tile wider than a partition, whether ``nl.ndarray`` allocates it or an
    op's result is (the compiler allocates a result like any tile)."""
    return nki_error("err_sbuf_free_dim_exceed_partition_size",
                     f"Size of free dimensions {per_partition / 1024:g} KB per partition on SBUF buffer exceeds the "
                     f"{ctx.target.sbuf_partition_bytes} bytes available per partition on {ctx.target} (tensor "
                     f"{shape_str(tensor_label(name), shape)})")


def stack_push(ctx: KernelContext, family: str, nbytes: int, label: str, result: int = 0,
               tensor: Tensor | None = None) -> None:
    """``ncc.enable_stack_allocator``: a tensor lives until the loop iteration (scope) that created it ends, so
    the live tensors must fit SBUF (bytes per partition) and PSUM (its banks) together.

    An op's result tile (``result``: its uid) counts like an allocated one, unless it lands straight in another
    tile (``t[...] = nl.load(...)``, ``psum += nc_matmul(...)``: ``stack_forget``), which the statement shows
    only after the op returns; so a result is checked when the next tensor is created, at its own line.

    A tensor the kernel can no longer reach is gone too (``tensor``, held weakly; ``stack_bind`` for one allocated
    after its check): AWS's RMSNorm-Quant reference (nki-samples 1ee7f1d, rmsnorm_quant.py:474-490) allocates
    about 90 KiB per partition in each iteration of a Python ``range`` loop, which AWS's docs say the compiler runs
    as a ``sequential_range`` (v2.26.0 nki/language/__init__.py:1416), and its design doc publishes trn2 latencies
    for 16 such iterations, so the compiler frees an iteration's tiles once the next rebinds them; tiles a list
    still holds stay.  While a program runs its tensors have no Python owners, so a tensor made again at a live
    one's line ends that one (and what was made after it), which can only drop tensors: the recording launch
    already checked the kernel."""
    frame = tuple((lp, lp.current) for lp in ctx.loops)
    live = [e for e in ctx.stack if e[0] == ctx.instance
            and all(lp in ctx.loops and lp.current == cur for lp, cur in e[1])
            and (e[7] is None or e[7]() is not None)]
    line = None if user_frame() is not None else user_location()
    if line is not None:
        for j, e in enumerate(live):
            if e[8] == line:
                del live[j:]
                break
    for i, e in enumerate(live):  # results made earlier that did not land in another tile exist: check them
        if e[6]:
            live[i] = e[:6] + (0,) + e[7:]
            _stack_check(ctx, live[: i + 1])
    holder = None if tensor is None else weakref.ref(tensor)
    live.append((ctx.instance, frame, family, nbytes, label, user_location(3), result, holder, line))
    ctx.stack = live
    if not result:
        _stack_check(ctx, live)


def stack_bind(ctx: KernelContext, tensor: Tensor) -> None:
    """The tensor the last ``stack_push`` counted, once it exists (``nl.ndarray`` checks before it allocates)."""
    e = ctx.stack[-1]
    ctx.stack[-1] = e[:7] + (weakref.ref(tensor),) + e[8:]


def stack_forget(ctx: KernelContext, result: Tensor) -> None:
    """An op's result landed in another tile (see ``stack_push``): it never occupied memory of its own."""
    ctx.stack = [e for e in ctx.stack if e[6] != result.uid]


def _stack_check(ctx: KernelContext, live: list[tuple]) -> None:
    """The stack overflow error if the live tensors up to the last of ``live`` overflow, at that one's line."""
    last = live[-1]
    family, label, loc = last[2], last[4], last[5]
    tgt = ctx.target
    if family == "sbuf":
        need, avail = sum(e[3] for e in live if e[2] == "sbuf"), tgt.sbuf_partition_bytes
        if need <= avail:
            return
        err = nki_error("err_stack_overflow_sbuf",
                        f"stack overflow: required sbuf size {need} exceeds available sbuf size {avail} "
                        f"(allocating '{label}', {last[3]} bytes per partition)")
    else:
        bank = tgt.psum_bank_bytes
        need = sum(-(-e[3] // bank) for e in live if e[2] == "psum")
        if need <= tgt.psum_banks:
            return
        err = nki_error("err_stack_overflow_psum",
                        f"stack overflow: required psum banks {need} exceeds available psum banks {tgt.psum_banks} "
                        f"(allocating '{label}')")
    err.nki_location = loc
    raise err


def new_tile(ctx: KernelContext, shape: tuple[int, ...], dtype: np.dtype, values: np.ndarray | None,
             valid: np.ndarray | None = None, buffer: Buffer = sbuf, name: str = "", fresh: bool = True) -> Tensor:
    """The tile an op returns; masked-off elements hold the uninitialised pattern.

    ``fresh`` says ``values`` is a new array the tile may own; otherwise it may be a view of another
    tensor's storage and is copied (a view is recognised by its ``base`` either way).
    """
    data = None
    if values is not None and ctx.numerics:
        if values.__class__ is not np.ndarray:
            values = np.asarray(values)
        # already in the tile's dtype (the common case): no call to dt.cast, which would return it as is
        data = values if values.dtype is dtype and dtype is not dt.tfloat32 else dt.cast(values, dtype)
        if data.shape != shape:
            data = np.broadcast_to(data, shape).copy()
        elif data is values and (not fresh or data.base is not None):  # a view: never share storage
            data = data.copy()
        if valid is not None:
            if valid.ndim and not all_true(valid):
                data = np.where(valid, data, np.asarray(dt.fill_value(dtype)).astype(data.dtype))
            elif valid.ndim == 0 and not bool(valid):
                data = np.full(shape, dt.fill_value(dtype), dtype=dt.storage_dtype(dtype))
    if buffer.alloc is None:
        facts = _RESULT_FACTS.get((shape, id(dtype), buffer.space)) or _result_facts(shape, dtype, buffer)
        if facts[2] > ctx.target.sbuf_partition_bytes and facts[1] == "sbuf":
            raise sbuf_too_wide(ctx, facts[2], facts[3], name)
        t = Tensor.result(facts[3], dtype, buffer, data, ctx.loop_tuple, facts, name)
        if ctx.stack_allocator:
            stack_push(ctx, facts[1], facts[2], tensor_label(name), t.uid, t)
    else:
        t = Tensor(shape, dtype, buffer, data, name, 0, ctx.loop_tuple)
        t.written = True
    if valid is not None:
        # a mask that keeps every element still made the tile under a mask: the assignment of it checks its
        # destination's bounds under the mask, iteration by iteration, not over the whole loop range (memory.assign)
        t.valid = valid if valid.ndim == 0 or not all_true(valid) else _EVERY
    return t


#: ``Tensor.valid`` of a tile an op made under a mask that kept every element
_EVERY = np.asarray(True)


def write_dst(ctx: KernelContext, api: str, dst: Any, shape: tuple[int, ...], vals: Any,
              valid: np.ndarray | None = None, spaces: str | None = None, add: bool = False) -> Access:
    """Write an instruction's result into ``dst``, the canonical output path of an op.

    NKI 0.6 hands every ``nisa`` instruction the tile it writes (``dst``); legacy calls pass ``dst=None`` and get a
    new tile instead (``new_tile``).  ``dst`` must live where the instruction may write and hold the result:
    the same partitions and elements per partition as ``shape`` (any free layout).  ``vals`` are the values the
    engine computed (fp32, or int64 for integer math), cast once to ``dst``'s dtype as they are written, which
    is also what the hardware does.  ``add``: ``vals`` are added onto ``dst``'s values in fp32 (a PSUM accumulation
    whose every element has started), in place where ``dst`` holds fp32.  Returns the access written, for the
    instruction's trace record."""
    d = as_access(one_operand(api, "dst", dst, ctx, spaces))
    ds = d.shape
    if (ds[0] if ds else 1) != (shape[0] if shape else 1) or math.prod(ds) != math.prod(shape):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('dst', ds)}, {shape_str('result', tuple(shape))}) of '{api}' "
                        f"has mismatched shapes: dst needs the result's partitions and elements per partition")
    d.check_write()
    if vals is not None and np.shape(vals) != ds:
        vals = np.reshape(vals, ds) if np.size(vals) == math.prod(ds) else np.broadcast_to(vals, shape).reshape(ds)
    if valid is not None and valid.ndim and valid.shape != ds:
        valid = np.broadcast_to(valid, shape).reshape(ds)
    if add and vals is not None:
        t = d.tensor
        data = storage(t)
        if valid is None and data is not None and data.dtype == np.float32 and not d.advanced and not t.unfilled:
            t.root.written = True
            data = owned(t)
            idx = d.np_index()
            np.add(data[idx], vals, out=data[idx])  # the same fp32 sums as below, without copies
            return d
        old = read(d)
        vals = vals + (old if old is None or old.dtype == np.float32 else old.astype(np.float32))
    write(d, vals, valid)
    return d


def f32(acc: Access | Tensor | None, ctx: KernelContext) -> np.ndarray | None:
    """Operand values widened for computation (fp32 for floats, int64 for integers)."""
    if acc is None or not ctx.numerics:
        return None
    a = read(acc)  # an Access, or a Tensor read whole
    if a is None:
        return None
    if a.dtype == np.float32:
        return a
    if dt.is_float(acc.dtype):
        return a.astype(np.float32)
    if dt.is_packed(acc.dtype):
        raise packed_operand(acc)
    return a.astype(np.int64)


#: id of a tuple of allowed dtypes ``dtype_in`` was passed -> (that tuple, kept so the id stays its own; their NKI names)
_DTYPE_NAMES: dict[int, tuple[tuple, tuple[str, ...]]] = {}


def dtype_in(api: str, pname: str, acc: Access, allowed: tuple[str | np.dtype, ...]) -> None:
    """The compiler's error for an operand whose dtype is not one of ``allowed`` (dtypes or their NKI names)."""
    hit = _DTYPE_NAMES.get(id(allowed))
    if hit is not None and hit[0] is allowed:  # (each op passes one constant tuple: named once)
        names = hit[1]
    else:
        names = tuple(a if isinstance(a, str) else dt.name(a) for a in allowed)
        if len(_DTYPE_NAMES) < 1024:
            _DTYPE_NAMES[id(allowed)] = (allowed, names)
    if dt.name(acc.dtype) not in names:
        raise nki_error("err_supported_operand_dtype",
                        f"'{pname}' of '{api}' has dtype {dt.name(acc.dtype)}, expected one of the following dtypes: "
                        f"{', '.join(names)}")


def packed_operand(acc: Access | Tensor) -> Exception:
    """The error for an x4 packed MX tile handed to an instruction that computes on element values."""
    return nki_error("err_supported_operand_dtype",
                     f"'{acc.label()}' has the x4 packed MX dtype {dt.name(acc.dtype)}: only nisa.nc_matmul_mx reads "
                     f"MX values (quantize with nisa.quantize_mx; copies and DMAs move the containers as they are)")


def region(acc: Access) -> Region:
    """(root id, tensor id, box) of an access, for the scheduler's dependency tracking."""
    t = acc.tensor
    box = acc.box
    if box is not None:  # basic accesses: fixed once np_index() is (whole-tile boxes are shared per shape)
        return Region(t.root.uid, t.uid, box)
    if not acc.advanced:  # the basic index holds exactly these bounds, computed once per access (in the
        # tensor's own coordinates: a direct allocation's blocks are mapped to its tiles by the cost model)
        box = acc.box = index_box(acc.logical_index())
        return Region(t.root.uid, t.uid, box)
    box = []
    for c, dim in zip(acc.comps, t.shape):
        if c[0] == "adv":
            v = c[1].value()
            if v.__class__ is np.ndarray:  # (its own methods: the same reductions without np.min's Python layer)
                box.append((int(v.min()), int(v.max()) + 1))
            else:
                box.append((int(np.min(v)), int(np.max(v)) + 1))
        elif c[0] == "int":
            v = int(c[1].value())
            box.append((v, v + 1))
        else:
            box.append((0, dim))
    return Region(t.root.uid, t.uid, tuple(box))


def _access_facts(a: Access) -> tuple:
    """(dtype name, root uid, buffer_info or None) of an access's tensor, memoised on the tensor."""
    t = a.tensor
    facts = t.trace_facts = (dt.name(t.dtype), t.root.uid, buffer_info(a) if t.space != "hbm" else None)
    return facts


def _tensor_record(t: Tensor) -> tuple:
    """The trace record of a whole tensor, memoised on it: shape and box of its whole access
    (shared per shape), static facts and uid never change for a tensor."""
    parts = t.whole_parts
    if parts is None:
        parts = t.whole_parts = whole_parts(t)
    rec = t.trace_record = (parts[1], t.trace_facts or _access_facts(t.full()), t.uid, parts[4])
    return rec


def masked_partitions(mask: np.ndarray, recs: tuple) -> int | None:
    """The partitions an instruction under ``mask`` touches: the span from the first to the last partition the
    mask leaves on (at least 1), when the mask has the instruction's partition extent along its first axis.  A
    ragged last tile masked to 104 of 128 rows is a 104-partition instruction, as the compiler emits it (and as
    NKI 0.6 writes it, a 104-row tile): its DMA spreads over the queues of 104 partitions, not 128.  None (the
    operands' extent) for a mask on the free axes only."""
    p_max = max((shape[0] if shape else 1 for shape in recs[0::4]), default=1)
    if mask.ndim == 0 or mask.shape[0] != p_max or p_max <= 1:
        return None
    on = np.flatnonzero(mask.reshape(p_max, -1).any(axis=1))
    return max(1, int(on[-1] - on[0] + 1)) if on.size else 1


#: how ``emit`` makes its record (``Instruction.issued``: positional arguments, no keyword dict)
_issued = Instruction.issued


def emit(ctx: KernelContext, kind: InstructionKind, engine: str | None = None, reads: Sequence[Access | Tensor] = (),
         writes: Sequence[Access | Tensor] = (), p: int | None = None, n: int | None = None, nbytes: int = 0,
         dtypes: tuple = (), acc: bool = False, extra: Extra | None = None) -> Instruction:
    """Append one instruction to the trace (the cost model's only input).

    Only what changes from one instruction to the next is captured here, per operand its shape,
    static facts, tensor id and box (the box of an indexed access depends on the loop iteration);
    the Instruction derives the rest when the cost model asks (see cost.trace.Instruction).  A Tensor operand
    is its whole access (what ops pass for whole tiles and for the tiles they return).
    """
    mask, ctx.op_mask = ctx.op_mask, None
    recs: tuple = ()
    indexed = False  # any Access operand (only those can be strided)
    for ops in (reads, writes):
        for a in ops:
            if a.__class__ is Tensor:  # a whole tensor: its record never changes
                recs += a.trace_record or _tensor_record(a)
            else:
                indexed = True
                t = a.tensor
                box = a.box
                recs += (a.shape, t.trace_facts or _access_facts(a), t.uid, box if box is not None else region(a)[2])
    if mask is not None and p is None:
        p = masked_partitions(mask, recs)
    state = ctx.loop_state
    # (the line of the call the executor runs, without a call to user_location, which returns it then)
    loc = REPLAYED[0] or user_location(3)
    instruction = _issued(kind, engine or kind.engine, loc, p, n, dtypes, nbytes, acc, extra, ctx.instance,
                          state if state is not None else ctx.current_loop_state(), ctx.core, recs, len(reads))
    if instruction.engine == "dma":
        instruction.runs, instruction.run = dma_runs(reads, writes, mask, kind is LOAD_TRANSPOSE2D or kind is DMA_TRANSPOSE)
    elif indexed:
        _note_strided_operands(instruction, reads, writes)
    ctx.trace.append(instruction)
    return instruction


def _note_strided_operands(instruction: Instruction, reads: Sequence[Access | Tensor], writes: Sequence[Access | Tensor]) -> None:
    """Record in ``extra["stride_bytes"]`` the widest innermost free-dim stride (bytes) of the on-chip
    operands that are not contiguous; the cost model charges engine access at half bandwidth above
    its ``stride_free_bytes``.  Whole tiles are contiguous and skipped without a call."""
    widest, zero = 0, False
    for i, a in enumerate((*reads, *writes)):
        if a.__class__ is Access and not a.is_whole and a.tensor.buffer.family != "hbm":
            stride = a.free_stride_bytes()
            if stride > a.tensor.itemsize:
                widest = max(widest, stride)
            elif stride == 0 and i < len(reads) and a.shape and math.prod(a.shape[1:]) > 1:
                zero = True  # a read that repeats one element along the free axis (a stride-0 broadcast view)
    if widest:
        instruction.extra = dict(instruction.extra or {}, stride_bytes=widest)
    if zero:  # the same fact the ops record for a NumPy-broadcast operand: the bf16 fast paths need contiguous reads
        instruction.extra = dict(instruction.extra or {}, broadcast=True)


def out_dtype(dtype: Any, default: np.dtype) -> np.dtype:
    return default if dtype is None else dt.normalize(dtype)
