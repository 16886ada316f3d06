"""Tensors and accesses: the simulator's model of HBM tensors and SBUF/PSUM tiles.

``Tensor`` owns storage (a NumPy array in the tensor's dtype) plus the facts the compiler checks:
memory space, partition axis (``nl.par_dim``), allocation loop nesting and whether it is an immutable
kernel parameter.  ``tensor[idx]`` returns an ``Access``: the index is normalised once (ints, slices,
``nl.ds``, arange/mgrid expressions, loop variables, indirect index tiles) and resolved lazily into a
NumPy view (basic indexing) or gather/scatter arrays (advanced indexing).  Bounds, mixing rules and
the affine_range output-dependency rule are all checked here, so every API gets them the same way.
"""

from __future__ import annotations

import dis
import functools
import importlib
import itertools
import sys
import types
from typing import Any, NoReturn

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core import physical
from nkisim.core.buffers import Buffer
from nkisim.core.context import active
from nkisim.core.errors import nki_error
from nkisim.core.indexing import Affine, DynSlice, Loop
from nkisim.core.location import user_variable

_ids = itertools.count(1)


_VALUE_TRUTH_OPS = frozenset({"UNARY_NOT", "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"})


@functools.lru_cache(maxsize=256)
def _next_ops(code: types.CodeType) -> dict[int, tuple[str, str]]:
    """offset -> (opname, next opname) for the bytecode of a kernel function."""
    ins = list(dis.get_instructions(code))
    return {a.offset: (a.opname, b.opname) for a, b in zip(ins, ins[1:] + ins[-1:])}


def _truth_value_error(t: Tensor) -> Exception:
    """The compiler's error for Python truth-testing a tensor.

    ``not t``, ``t and x``, ``t or x`` and truth-testing a kernel parameter are
    err_ambiguous_tensor_truth_value; branching on a computed tile (``if t:``, ``while t:``) is
    err_dynamic_control_flow_not_supported.  Which one applies is read from the student's bytecode.
    """
    from nkisim.core.location import user_frame

    f = user_frame()
    op = None
    if f is not None:
        op, nxt = _next_ops(f.f_code).get(f.f_lasti, (None, None))
        op = nxt if op == "TO_BOOL" else op  # Python 3.13 splits the truth test from its use
    if op in _VALUE_TRUTH_OPS or t.root.param:
        return nki_error("err_ambiguous_tensor_truth_value",
                         "Cannot evaluate truth value of a multi-element tensor/array. Use the elementwise "
                         "operators ~, &, | on tiles, and `x is None` to test an optional argument.")
    return nki_error("err_dynamic_control_flow_not_supported",
                     "dynamic control-flow depending on tensor value is not supported.")


def compact(a: np.ndarray) -> np.ndarray:
    """A broadcast view without its repeated (zero-stride) axes: same all/any answers, far fewer elements.

    Masks like ``i * 128 + ix < n`` are (P, 1) broadcast to (P, F); testing them element by element
    would cost a pass over P * F booleans per instruction.
    """
    if a.ndim and 0 in a.strides:
        return a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
    return a


def all_true(a: np.ndarray) -> bool:
    """``bool(np.all(a))`` computed on the compact form of a broadcast mask."""
    return bool(np.all(compact(a))) if isinstance(a, np.ndarray) else bool(np.all(a))


def arange_slices(idx: tuple, data_shape: tuple[int, ...]) -> tuple | None:
    """The basic slices equivalent to an advanced index made of per-axis aranges, else None.

    Tutorial code indexes with ``i * 128 + nl.arange(128)[:, None]`` and ``nl.arange(F)[None, :]``:
    NumPy then gathers element by element, while the same elements as slices are one strided copy.
    Only exact equivalents qualify: one integer array per data axis, varying along its own axis only,
    an increasing arithmetic progression, inside the axis (negative or out-of-range values keep
    NumPy's gather and its errors).
    """
    nd = len(data_shape)
    if len(idx) != nd:
        return None
    out = []
    for axis, a in enumerate(idx):
        if not isinstance(a, np.ndarray) or a.ndim != nd or a.dtype.kind not in "iu":
            return None
        n = a.shape[axis]
        if n == 0 or a.size != n:
            return None
        flat = a.reshape(n)
        start = int(flat[0])
        step = int(flat[1]) - start if n > 1 else 1
        last = start + step * (n - 1)
        if step < 1 or start < 0 or last >= data_shape[axis]:
            return None
        if n > 2 and not np.array_equal(flat, np.arange(start, last + 1, step)):
            return None
        out.append(slice(start, last + 1, step))
    return tuple(out)


#: nkisim.ops modules by name, imported on first use (they import this module); a dict lookup is
#: much cheaper than a function-level ``from nkisim.ops import ...`` on every operator call.
_OPS: dict[str, types.ModuleType] = {}


def _ops(name: str) -> types.ModuleType:
    mod = _OPS.get(name)
    if mod is None:
        mod = _OPS[name] = importlib.import_module(f"nkisim.ops.{name}")
    return mod


def shape_str(name: str, shape: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(str(s) for s in shape)}]"


class Tensor:
    """An HBM tensor or an on-chip (SBUF/PSUM) tile."""

    # Slots: one tensor is created per simulated instruction, and slot attributes are set and read
    # faster than instance-dict ones.  ``__dict__`` stays for the rare per-tensor memo (buffer_info).
    __slots__ = ("shape", "dtype", "buffer", "_data", "uid", "_name", "par_axis", "loops", "base", "site",
                 "param", "valid", "written", "producer", "_trace_facts", "unfilled", "viewed", "_whole_parts",
                 "_record",
                 "__dict__",
                 "__weakref__")
    __nki_tile__ = True
    __array_priority__ = 1000

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, buffer: Buffer, data: np.ndarray | None,
                 name: str = "", par_axis: int = 0, loops: tuple[Loop, ...] = (), base: Tensor | None = None,
                 site: tuple[str, int] | None = None) -> None:
        self.shape = tuple(map(int, shape))
        self.dtype = dtype
        self.buffer = buffer
        self._data = data
        self.uid = next(_ids)
        self._name = name
        self.par_axis = par_axis
        self.loops = loops
        self.base = base
        self.site = site
        self.param = False  # immutable kernel parameter
        self.valid: np.ndarray | None = None  # elements an op actually produced (masked ops)
        self.written = False
        self.producer: Any = None  # trace record of the instruction that produced this tile
        #: (dtype name, root tensor uid, buffer_info of the root or None in HBM): static facts the trace
        #: records for every access, computed on first use by ops.base.emit (None: not yet).  Plain
        #: values only: a reference back to a tensor would make a cycle that keeps its data alive.
        self._trace_facts: tuple | None = None
        #: storage not yet filled with the uninitialised pattern (see ``fill_pending``)
        self.unfilled = False
        #: another Tensor shares this storage (reshape/view), so it can never be swapped out
        self.viewed = False
        self._whole_parts: tuple | None = None  # see whole_parts()
        #: (shape, trace facts, uid, box): the trace record of the whole tensor as an operand, the
        #: same for every instruction that reads or writes it whole (built by ops.base.emit)
        self._record: tuple | None = None

    @classmethod
    def result(cls, shape: tuple[int, ...], dtype: np.dtype, buffer: Buffer, data: np.ndarray | None,
               loops: tuple[Loop, ...], facts: tuple) -> Tensor:
        """A new op-result tile (what ``ops.base.new_tile`` makes once per instruction): the same
        object as ``Tensor(shape, dtype, buffer, data, "", 0, loops)`` without re-normalising a shape
        the op already computed.  ``facts`` = (dtype name, space, bytes per partition, shape, whole-access
        parts), static per (shape, dtype, space) and memoised by the caller.  The trace record is
        built here too: the op emits the tile as its output next."""
        t = cls.__new__(cls)
        t.shape = shape
        t.dtype = dtype
        t.buffer = buffer
        t._data = data
        t.uid = uid = next(_ids)
        t._name = ""
        t.par_axis = 0
        t.loops = loops
        t.base = None
        t.site = None
        t.param = False
        t.valid = None
        t.written = True
        t.producer = None
        t._trace_facts = trace_facts = (facts[0], uid, (uid, facts[1], None, 0, bool(loops), 0, facts[2]))
        t.unfilled = False
        t.viewed = False
        t._whole_parts = parts = facts[4]
        t._record = (parts[1], trace_facts, uid, parts[4])  # every result is written whole by its op
        return t

    @property
    def name(self) -> str:
        return self._name or f"t{self.uid}"

    def label(self) -> str:
        """The tensor's name for an error message: its own name, else the student's variable bound to it
        (what the compiler reports), else the simulator's ``t<uid>``."""
        return self._name or user_variable(self) or self.name

    @property
    def data(self) -> NoReturn:
        """Real NKI tensors have no host-side values inside a kernel, so neither do these: a kernel that
        computed its result with NumPy and poked it into an output would pass on the simulator only."""
        raise AttributeError(f"NKI tensor '{self.label()}' has no attribute 'data': inside a kernel, values move "
                             "only through NKI operations (nl.load from HBM into a tile, nl.store back)")

    def own_storage(self) -> np.ndarray:
        """The tensor's array, made private first if it is a read-only view of a kernel input (what
        ``nl.load`` from an immutable parameter gives: no copy until the tile is written)."""
        data = self._data
        if not data.flags.writeable:
            data = self._data = data.copy()
        return data

    def fill_pending(self) -> None:
        """Write the uninitialised pattern (NaN / 4) now: the allocation deferred it in case the first
        write covered the whole tensor, which then never needs it."""
        if self.unfilled:
            self.unfilled = False
            self._data.fill(dt.fill_value(self.dtype))

    # --- properties of the NKI tensor API -----------------------------------------------------
    @property
    def space(self) -> str:
        return self.buffer.family

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return dt.storage_dtype(self.dtype).itemsize

    @property
    def root(self) -> Tensor:
        t = self
        while t.base is not None:
            t = t.base
        return t

    def __repr__(self) -> str:
        return f"<{self.buffer.space} tensor {shape_str(self.name, self.shape)} {dt.name(self.dtype)}>"

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        raise _truth_value_error(self)

    def __iter__(self):
        raise TypeError("NKI tensors cannot be iterated; index them with loops over nl.affine_range")

    def full(self) -> Access:
        acc = Access.__new__(Access)  # Access.whole(self), one call less: every op result is accessed whole
        acc._fill_whole(self)
        return acc

    def _read(self) -> np.ndarray | None:
        """Values of the whole tensor, like ``self.full()._read()``.

        Ops take whole tiles as operands far more often than indexed ones, so they pass the tensor
        itself instead of building an Access; on small tiles, the NumPy view a whole-slice index makes
        would cost more than the op's arithmetic, so the storage array is returned as it is (the
        same elements, shape and writeability as that view).  A rotating direct allocation maps
        the whole index to other physical blocks and reads through its Access.
        """
        data = self._data
        if data is None:
            return None
        if self.buffer.alloc is not None or not self.shape:  # (shape, not data.ndim: a slot is cheaper)
            return self.full()._read()
        if self.unfilled:
            self.fill_pending()
        return data

    def __getitem__(self, key: Any) -> Access:
        return Access(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, Access) and value.done:
            return
        # ``t[...] = nl.load(...)``: a result nothing else refers to may hand over its storage
        temporary = sys.getrefcount(value) <= _TEMPORARY_REFS  # (own statement: the probe measures this)
        _ops("memory").assign(self.full() if key is Ellipsis else Access(self, key), value, temporary)

    # --- views --------------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape)) != int(np.prod(self.shape)):
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str(self.name, self.shape)}) cannot be reshaped to "
                            f"{list(shape)}: element counts differ (has mismatched shapes)")
        self.fill_pending()  # the view shares the storage: it must hold the pattern from now on
        self.viewed = True
        data = None if self._data is None else (self.own_storage() if not self.param else self._data).reshape(shape)
        view = Tensor(shape, self.dtype, self.buffer, data, self.name, 0, self.loops, base=self, site=self.site)
        view.param = self.param
        return view

    def view(self, dtype: Any) -> Tensor:
        d = dt.normalize(dtype)
        self.fill_pending()
        self.viewed = True
        data = None if self._data is None else \
            (self.own_storage() if not self.param else self._data).view(dt.storage_dtype(d))
        shape = self.shape[:-1] + (self.shape[-1] * self.itemsize // dt.storage_dtype(d).itemsize,)
        v = Tensor(shape, d, self.buffer, data, self.name, self.par_axis, self.loops, base=self, site=self.site)
        v.param = self.param
        return v

    def astype(self, dtype: Any) -> Tensor:
        from nkisim.ops import memory

        return memory.copy(self, dtype=dtype)

    def broadcast_to(self, shape: Any) -> Tensor:
        from nkisim.ops import memory

        return memory.broadcast_to(self, shape=shape)

    def expand_dims(self, axis: int) -> Tensor:
        from nkisim.ops import memory

        return memory.expand_dims(self, axis)

    def assert_shape(self, shape: Any) -> Tensor:
        if tuple(shape) != self.shape:
            raise nki_error("err_annotation_shape_mismatch",
                            f"shape of `{shape_str(self.name, self.shape)}` does not match the expected shape "
                            f"of {list(shape)}")
        return self

    @property
    def T(self) -> Tensor:
        from nkisim.ops import matmul

        return matmul.transpose(self)

    # --- operators: the same ops as nl.add & co, but no partition broadcast -------------------
    def _binop(self, other: Any, op: str, reverse: bool = False) -> Any:
        return _ops("elementwise").operator(self, other, op, reverse)

    def __add__(self, o: Any) -> Any:
        return self._binop(o, "add")

    def __radd__(self, o: Any) -> Any:
        return self._binop(o, "add", True)

    def __sub__(self, o: Any) -> Any:
        return self._binop(o, "subtract")

    def __rsub__(self, o: Any) -> Any:
        return self._binop(o, "subtract", True)

    def __mul__(self, o: Any) -> Any:
        return self._binop(o, "multiply")

    def __rmul__(self, o: Any) -> Any:
        return self._binop(o, "multiply", True)

    def __truediv__(self, o: Any) -> Any:
        return self._binop(o, "divide")

    def __rtruediv__(self, o: Any) -> Any:
        return self._binop(o, "divide", True)

    def __pow__(self, o: Any) -> Any:
        return self._binop(o, "power")

    def __rpow__(self, o: Any) -> Any:
        return self._binop(o, "power", True)

    def __mod__(self, o: Any) -> Any:
        return self._binop(o, "mod")

    def __and__(self, o: Any) -> Any:
        return self._binop(o, "bitwise_and")

    def __or__(self, o: Any) -> Any:
        return self._binop(o, "bitwise_or")

    def __xor__(self, o: Any) -> Any:
        return self._binop(o, "bitwise_xor")

    def __lshift__(self, o: Any) -> Any:
        return self._binop(o, "left_shift")

    def __rshift__(self, o: Any) -> Any:
        return self._binop(o, "right_shift")

    def __lt__(self, o: Any) -> Any:
        return self._binop(o, "less")

    def __le__(self, o: Any) -> Any:
        return self._binop(o, "less_equal")

    def __gt__(self, o: Any) -> Any:
        return self._binop(o, "greater")

    def __ge__(self, o: Any) -> Any:
        return self._binop(o, "greater_equal")

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return self._binop(o, "equal")

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return self._binop(o, "not_equal")

    __hash__ = object.__hash__

    def __neg__(self) -> Any:
        from nkisim.ops import elementwise

        return elementwise.unary_op("negative", self)

    def __abs__(self) -> Any:
        from nkisim.ops import elementwise

        return elementwise.unary_op("abs", self)

    def __invert__(self) -> Any:
        from nkisim.ops import elementwise

        return elementwise.unary_op("invert", self)

    def _inplace(self, other: Any, op: str) -> Tensor:
        _ops("memory").accumulate(self.full(), other, op)
        return self

    def __iadd__(self, o: Any) -> Tensor:
        return self._inplace(o, "add")

    def __isub__(self, o: Any) -> Tensor:
        return self._inplace(o, "subtract")

    def __imul__(self, o: Any) -> Tensor:
        return self._inplace(o, "multiply")

    def __itruediv__(self, o: Any) -> Tensor:
        return self._inplace(o, "divide")


class _RefProbe:
    """Measures, once, how many references a temporary has inside ``__setitem__`` on this Python."""

    seen: list[int] = []

    def __setitem__(self, key: Any, value: Any) -> None:
        refs = sys.getrefcount(value)
        self.seen.append(refs)


_RefProbe()[...] = object()
#: sys.getrefcount of a value inside Tensor.__setitem__ when the statement's right-hand side is a
#: temporary (``t[...] = nl.load(x)``); a value also bound to a name has more.
_TEMPORARY_REFS = _RefProbe.seen[0]


# ----------------------------------------------------------------------------------------------
# Access: a normalised index into a tensor
# ----------------------------------------------------------------------------------------------
_BASIC, _ADV = 0, 1
#: (shape, par_axis) -> normalised whole-tensor access parts, see Access.whole.
_WHOLE: dict[tuple, tuple] = {}


class Access:
    """``tensor[index]``: where an API reads or writes, resolved against the tensor's shape.

    ``comps`` holds one entry per tensor dimension:
      ('int', Affine)                 a single position, dimension dropped
      ('slice', start, stop, step)    Affine/int bounds, dimension kept
      ('adv', Affine)                 arange/mgrid expression (advanced indexing)
      ('ind', Access)                 indirect index read from an SBUF tile at run time
    """

    __slots__ = ("tensor", "comps", "shape", "advanced", "loops", "done", "par_axis", "_np", "_box", "_whole")
    __nki_tile__ = True
    __array_priority__ = 1000

    def __init__(self, tensor: Tensor, key: Any) -> None:
        if key is Ellipsis:  # ``tile[...]`` is the whole tensor: reuse the shared normalisation
            self._fill_whole(tensor)
            return
        self.tensor = tensor
        self.done = False
        self._np: tuple | None = None
        self._box: tuple | None = None  # region box for the trace, see ops.base.region
        self._whole = False  # built by _fill_whole: every dimension is a full slice
        if key.__class__ is not tuple and not isinstance(key, tuple):
            key = (key,)
        # expand Ellipsis (a plain loop: no generator per index, and ``in`` would call a tile's __eq__)
        for i, k in enumerate(key):
            if k is Ellipsis:
                fill = tensor.ndim - (len(key) - 1)
                key = key[:i] + (slice(None),) * fill + key[i + 1:]
                break
        if len(key) > tensor.ndim:
            raise nki_error("err_tensor_access_out_of_bound",
                            f"Out-of-bound access for tensor `{tensor.label()}`: {len(key)} indices given for a "
                            f"tensor with {tensor.ndim} dimensions")
        comps: list[tuple] = []
        #: (lo, hi) of each slice component at this iteration when known without evaluating it again
        spans: list[tuple[int, int] | None] = []
        loops: set = set()
        has_slice = has_adv = False
        shape = tensor.shape
        for axis, k in enumerate(key):
            size = shape[axis]
            if k is None:
                raise TypeError("NKI does not support adding axes with None inside a tensor index")
            if k.__class__ is slice:
                has_slice = True
                step = k.step
                if step is not None:
                    step = _slice_step(step)
                else:
                    step = 1
                start, lo = _slice_bound(k.start, 0, size, loops)
                stop, hi = _slice_bound(k.stop, size, size, loops)
                comps.append(("slice", start, stop, step))
                spans.append((lo, hi))
                continue
            spans.append(None)
            if isinstance(k, DynSlice):
                has_slice = True
                start = Affine.lift(k.start)
                if start is None:
                    raise TypeError(f"nl.ds start must be an integer or loop index, got {type(k.start).__name__}")
                loops |= start.loops
                comps.append(("slice", start, start + k.size, 1))
            elif isinstance(k, Affine):
                loops |= k.loops
                if k.grid is None:
                    comps.append(("int", k))
                else:
                    if k.grid.ndim == 1 and k.grid.size > 1:
                        raise nki_error("err_1d_arange_not_supported",
                                        f"indexing tensor `{tensor.label()}` with 1d arange is not supported,"
                                        " use nl.arange(n)[:, None] or nl.arange(n)[None, :]")
                    has_adv = True
                    comps.append(("adv", k))
            elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
                v = int(k)
                comps.append(("int", Affine(v + size if v < 0 else v)))
            elif isinstance(k, (Access, Tensor)):
                idx = k if isinstance(k, Access) else k.full()
                if idx.tensor.space != "sbuf":
                    raise nki_error("err_indirect_indices_sbuf", "Indirect indices tile must be on SBUF.")
                if axis != 0 and axis != tensor.par_axis:
                    raise nki_error("err_indirect_indices_free_dim",
                                    "Indirect indexing on free dimension not supported, must be partition "
                                    "dimension or block dimension.")
                has_adv = True
                comps.append(("ind", idx))
            else:
                raise TypeError(f"unsupported index {k!r} of type {type(k).__name__} for tensor `{tensor.label()}`")
        if has_slice and has_adv:
            raise nki_error("err_unsupported_mixing_basic_advanced_tensor_indexing",
                            "Mixing basic tensor indexing and advanced tensor indexing is not supported.")
        for axis in range(len(key), len(shape)):
            comps.append(("slice", Affine(0), Affine(shape[axis]), 1))
            spans.append((0, shape[axis]))
        self.comps = comps
        self.loops = frozenset(loops)
        self.advanced = has_adv
        if has_adv:
            shapes = []
            for c in comps:
                if c[0] == "adv":
                    shapes.append(c[1].grid.shape)
                elif c[0] == "ind":
                    shapes.append(c[1].shape)
            try:
                self.shape = tuple(np.broadcast_shapes(*shapes))
            except ValueError:
                raise nki_error("err_param_shape_incompatible_with_numpy",
                                f"Parameter shapes ({', '.join(str(list(s)) for s in shapes)}) of index "
                                f"expressions could not be broadcast together") from None
            self.par_axis = 0
        else:
            self._fill_basic(tensor, comps, spans)

    def _fill_basic(self, tensor: Tensor, comps: list[tuple], spans: list[tuple[int, int] | None]) -> None:
        """Shape and partition axis of a basic access.  Without a direct allocation (no rotation,
        see ``np_index``) the NumPy index and the trace box come from the same bound values, so
        they are kept too: every access is read or written and traced right after it is made.
        ``spans``: the current (lo, hi) of each slice component, None where not yet evaluated."""
        shape = []
        par = None
        tpar = tensor.par_axis
        if tensor.buffer.alloc is None:
            idx = []
            box = []
            for axis, c in enumerate(comps):
                if c[0] == "slice":
                    if axis == tpar:
                        par = len(shape)
                    span = spans[axis]
                    lo, hi = span if span is not None else (int(c[1].value()), int(c[2].value()))
                    step = c[3]
                    shape.append(len(range(lo, hi, step)) if step != 1 else (hi - lo if hi > lo else 0))
                    idx.append(slice(lo, hi, step))
                    box.append((lo, hi))
                else:
                    v = int(c[1].value())
                    idx.append(v)
                    box.append((v, v + 1))
            self._np = tuple(idx)
            self._box = tuple(box)
        else:
            for axis, c in enumerate(comps):
                if c[0] == "slice":
                    if axis == tpar:
                        par = len(shape)
                    shape.append(len(range(c[1].value(), c[2].value(), c[3])))
        self.shape = tuple(shape)
        self.par_axis = 0 if par is None else par

    @classmethod
    def whole(cls, tensor: Tensor) -> Access:
        """``Access(tensor, ())`` without re-normalising: every op result is accessed whole, so the
        (immutable) components, shape and NumPy index depend only on shape and partition axis and
        are built once per such pair and shared."""
        acc = cls.__new__(cls)
        acc._fill_whole(tensor)
        return acc

    def _fill_whole(self, tensor: Tensor) -> None:
        parts = tensor._whole_parts
        if parts is None:
            parts = tensor._whole_parts = whole_parts(tensor)
        self.tensor = tensor
        self.done = False
        self.comps = parts[0]  # shared: components are only ever read
        self.loops = _NO_LOOPS
        self.advanced = False
        self.shape = parts[1]
        self.par_axis = parts[2]
        self._np = parts[3]
        self._box = parts[4]
        self._whole = True

    # --- description ---------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self.tensor.dtype

    @property
    def space(self) -> str:
        return self.tensor.space

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def name(self) -> str:
        return self.tensor.name

    def label(self) -> str:
        return self.tensor.label()

    def __repr__(self) -> str:
        return f"<access {shape_str(self.tensor.name, self.shape)} of {self.tensor!r}>"

    def __bool__(self) -> bool:
        raise _truth_value_error(self.tensor)

    # --- numpy resolution --------------------------------------------------------------------
    def np_index(self) -> tuple:
        """Index usable on the tensor's storage (basic slices, or broadcastable int arrays)."""
        if self._np is not None:
            return self._np
        if not self.advanced:  # a plain loop: a generator here costs more than the work it does
            parts = []
            for c in self.comps:
                if c[0] == "int":
                    parts.append(int(c[1].value()))
                else:
                    parts.append(slice(int(c[1].value()), int(c[2].value()), c[3]))
            idx = tuple(parts)
        else:
            idx = tuple(self._comp_array(c) for c in self.comps)
        rot = physical.rotation(self.tensor)
        if rot is not None:
            idx = tuple(_rotate(v, rot[i]) if i < len(rot) else v for i, v in enumerate(idx))
        self._np = idx
        return idx

    def free_stride_bytes(self) -> int:
        """Bytes between neighbouring elements along the innermost free dimension this access walks.

        The compute engines read SBUF/PSUM at half bandwidth when that stride exceeds 16 B (spec
        §4.3), which the cost model charges; a whole tile, or any unit-step slice, is contiguous."""
        t = self.tensor
        item = t.itemsize
        if self._whole:
            return item
        shape = t.shape
        strides = [1] * len(shape)  # element strides of the tensor's C-ordered storage
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        idx = self.np_index()
        if not self.advanced:
            for d in range(len(idx) - 1, t.par_axis, -1):  # free dimensions, innermost first
                c = idx[d]
                if c.__class__ is slice and len(range(c.start, c.stop, c.step or 1)) > 1:
                    return (c.step or 1) * strides[d] * item
            return item
        arrays = np.broadcast_arrays(*(np.asarray(a) for a in idx))
        offsets = sum(a * s for a, s in zip(arrays, strides))
        if offsets.ndim < 2 or offsets.shape[-1] < 2:
            return item
        first = (0,) * (offsets.ndim - 1)
        return int(abs(offsets[first + (1,)] - offsets[first + (0,)])) * item

    def _comp_array(self, c: tuple) -> Any:
        if c[0] == "int":
            return int(c[1].value())
        if c[0] == "adv":
            return c[1].value()
        if c[0] == "ind":
            vals = c[1]._read()
            if vals is None:
                return np.zeros(c[1].shape, dtype=np.int64)
            return vals.astype(np.int64)
        raise AssertionError(c)

    def grid_arrays(self) -> list[Any]:
        """Per-dimension index arrays broadcastable to ``self.shape`` (used with masks)."""
        if self.advanced:
            return [np.asarray(a) for a in self.np_index()]
        out = []
        axis = 0
        nd = len(self.shape)
        for c in self.comps:
            if c[0] == "int":
                out.append(np.asarray(int(c[1].value())))
            else:
                vals = np.arange(int(c[1].value()), int(c[2].value()), c[3], dtype=np.int64)
                shp = [1] * nd
                shp[axis] = vals.size
                out.append(vals.reshape(shp))
                axis += 1
        rot = physical.rotation(self.tensor)
        if rot is not None:
            out = [a % rot[i] if i < len(rot) else a for i, a in enumerate(out)]
        return out

    # --- checks ------------------------------------------------------------------------------
    def check_bounds(self, valid: np.ndarray | None = None) -> None:
        """The compiler's static out-of-bound check (whole loop range unless a mask applies)."""
        if valid is None and self._whole:
            return  # full slices [0, size) of every dimension are always in bounds
        t = self.tensor
        for dim, c in enumerate(self.comps):
            size = t.shape[dim]
            if c[0] == "ind":
                continue  # checked at run time by the gather (IndexError like the compiler's simulator)
            if valid is None:  # (an expression's bounds are memoised once known: read them without a call)
                if c[0] == "slice":
                    lo = (c[1]._bounds or c[1].scalar_bounds())[0]
                    hi = (c[2]._bounds or c[2].scalar_bounds())[1] - 1
                else:
                    lo, hi = c[1]._bounds or c[1].scalar_bounds()
                if lo < 0 or hi >= size:
                    raise nki_error("err_tensor_access_out_of_bound",
                                    f"Out-of-bound access for tensor `{t.label()}` on dimension {dim}: index range "
                                    f"[{lo}, {hi}] exceed dimension size of {size}")
        if valid is not None:
            arrays = self.grid_arrays()
            vm = np.broadcast_to(valid, self.shape) if valid.ndim else valid
            # nothing masked off: every index counts, and broadcasting does not change min/max
            everything = all(self.shape) and all_true(vm)
            for dim, (c, a) in enumerate(zip(self.comps, arrays)):
                if c[0] == "ind":
                    continue
                if everything:
                    a = np.asarray(a)
                    lo, hi = int(a.min()), int(a.max())
                    if lo < 0 or hi >= t.shape[dim]:
                        raise nki_error("err_tensor_access_out_of_bound",
                                        f"Out-of-bound access for tensor `{t.label()}` on dimension {dim}: index "
                                        f"range [{lo}, {hi}] exceed dimension size of {t.shape[dim]}")
                    continue
                a = np.broadcast_to(a, self.shape)
                sel = a[vm] if vm.ndim else (a if bool(vm) else a[:0])
                if sel.size and (sel.min() < 0 or sel.max() >= t.shape[dim]):
                    raise nki_error("err_tensor_access_out_of_bound",
                                    f"Out-of-bound access for tensor `{t.label()}` on dimension {dim}: index range "
                                    f"[{int(sel.min())}, {int(sel.max())}] exceed dimension size of "
                                    f"{t.shape[dim]}")

    def check_write(self, accumulate: bool = False) -> None:
        """Immutable parameters and the affine_range 'unexpected output dependencies' rule."""
        t = self.tensor.root
        if t.param:
            raise nki_error("err_cannot_update_immutable_parameter",
                            f"Cannot update immutable parameter `{t.label()}`: kernel inputs are read-only; "
                            f"create an output with nl.ndarray(..., buffer=nl.shared_hbm) and return it")
        ctx = active()
        if ctx is None or accumulate:
            return
        if t.loops is ctx.loop_tuple:  # allocated in the running loop nest (tiles in a loop body): every
            return  # loop is one of the tensor's own, so no iteration writes another's elements
        for loop in ctx.loops:
            if loop.kind == "affine" and loop.trip > 1 and loop not in t.loops and loop not in self.loops:
                raise nki_error("err_unexpected_output_dependencies",
                                f"Unexpected output dependencies: every iteration of an nl.affine_range loop "
                                f"writes the same elements of `{t.label()}` (missing indices on the loop "
                                f"variable); use nl.sequential_range for a loop-carried dependency")

    # --- data movement ---------------------------------------------------------------------
    def _read(self) -> np.ndarray | None:
        """Values at this access, in storage dtype (a view for basic indexing)."""
        t = self.tensor
        data = t._data
        if data is None:
            return None
        if t.unfilled:
            t.fill_pending()
        idx = self.np_index()
        if self.advanced:
            sl = arange_slices(idx, data.shape)
            if sl is not None:  # same elements as the gather, as a strided copy (a fresh array, like a gather)
                return data[sl].copy()
        try:
            return data[idx]
        except IndexError as e:  # indirect index out of range: same wording as NumPy / the simulator
            if not any(c[0] == "ind" for c in self.comps):
                # a static index past the tile is legal where the op's mask cuts it off (ragged tiles)
                ctx = active()
                valid = ctx.op_mask if ctx is not None else None
                if valid is not None and valid.ndim:
                    try:
                        vm = np.broadcast_to(valid, self.shape)
                    except ValueError:
                        vm = None
                    if vm is not None:
                        self.check_bounds(vm)
                        return self._read_masked(vm)
                self.check_bounds()
            raise IndexError(str(e)) from None

    def _read_masked(self, valid: np.ndarray) -> np.ndarray | None:
        """Gather with masked-off positions clamped (they may lie out of bounds), shape ``self.shape``."""
        data = self.tensor._data
        if data is None:
            return None
        self.tensor.fill_pending()
        arrays = self.grid_arrays()
        vm = np.broadcast_to(valid, self.shape)
        if all_true(vm):  # nothing masked off: no clamping needed, and aranges can be sliced
            full = tuple(arrays)
            sl = arange_slices(full, data.shape)
            return data[sl].copy() if sl is not None else data[full]
        idx = tuple(np.where(vm, a, 0) if np.ndim(a) else a for a in arrays)
        return data[idx]

    def _write(self, values: np.ndarray | None, valid: np.ndarray | None = None) -> None:
        """Store ``values`` (already ``self.shape``, any dtype) into the tensor, cast once."""
        t = self.tensor
        t.root.written = True
        if t._data is None or values is None:
            return
        values = dt.cast(np.asarray(values), t.dtype)
        if valid is None or (valid.ndim == 0 and bool(valid)) or all_true(valid):
            if t.unfilled:  # a first write of every element needs no uninitialised pattern underneath
                if self._whole:
                    t.unfilled = False
                else:
                    t.fill_pending()
            idx = self.np_index()
            data = t.own_storage()
            if self.advanced:  # a scatter through per-axis aranges is a strided assignment
                idx = arange_slices(idx, data.shape) or idx
            data[idx] = np.broadcast_to(values, self.shape) if values.shape != self.shape else values
            return
        if valid.ndim == 0:
            return
        t.fill_pending()
        vm = np.broadcast_to(valid, self.shape)
        arrays = [np.broadcast_to(a, self.shape) for a in self.grid_arrays()]
        t.own_storage()[tuple(a[vm] for a in arrays)] = np.broadcast_to(values, self.shape)[vm]

    # --- in-place operators: t[idx] += x ----------------------------------------------------
    def _inplace(self, other: Any, op: str) -> Access:
        _ops("memory").accumulate(self, other, op)
        self.done = True
        return self

    def __iadd__(self, o: Any) -> Access:
        return self._inplace(o, "add")

    def __isub__(self, o: Any) -> Access:
        return self._inplace(o, "subtract")

    def __imul__(self, o: Any) -> Access:
        return self._inplace(o, "multiply")

    def __itruediv__(self, o: Any) -> Access:
        return self._inplace(o, "divide")

    def __getitem__(self, key: Any) -> Access:
        """Index an access again (e.g. a block of a block tensor, then a slice of it)."""
        from nkisim.ops import memory

        return memory.subaccess(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, Access) and value.done:
            return
        from nkisim.ops import memory

        memory.assign(memory.subaccess(self, key), value)

    # tile conveniences shared with Tensor
    _binop = Tensor._binop
    __add__, __radd__, __sub__, __rsub__ = Tensor.__add__, Tensor.__radd__, Tensor.__sub__, Tensor.__rsub__
    __mul__, __rmul__, __truediv__, __rtruediv__ = Tensor.__mul__, Tensor.__rmul__, Tensor.__truediv__, \
        Tensor.__rtruediv__
    __pow__, __rpow__, __mod__ = Tensor.__pow__, Tensor.__rpow__, Tensor.__mod__
    __and__, __or__, __xor__ = Tensor.__and__, Tensor.__or__, Tensor.__xor__
    __lshift__, __rshift__ = Tensor.__lshift__, Tensor.__rshift__
    __lt__, __le__, __gt__, __ge__ = Tensor.__lt__, Tensor.__le__, Tensor.__gt__, Tensor.__ge__
    __eq__, __ne__ = Tensor.__eq__, Tensor.__ne__  # type: ignore[assignment]
    __hash__ = object.__hash__
    __neg__, __abs__, __invert__ = Tensor.__neg__, Tensor.__abs__, Tensor.__invert__
    astype, broadcast_to, expand_dims = Tensor.astype, Tensor.broadcast_to, Tensor.expand_dims
    T = Tensor.T

    @property
    def itemsize(self) -> int:
        return self.tensor.itemsize

    def reshape(self, *shape: Any) -> Tensor:
        from nkisim.ops import memory

        return memory.reshape_access(self, shape)


_NO_LOOPS: frozenset = frozenset()


def _whole_of_shape(shape: tuple[int, ...], par_axis: int) -> tuple:
    """(comps, shape, par_axis, NumPy index, box) of ``tensor[...]`` for a plainly laid out tensor."""
    comps = tuple(("slice", Affine(0), Affine(n), 1) for n in shape)
    return (comps, shape, par_axis, tuple(slice(0, n, 1) for n in shape), tuple((0, n) for n in shape))


def whole_parts_of_shape(shape: tuple[int, ...], par_axis: int) -> tuple:
    """The shared parts of ``t[...]`` for any plainly laid out tensor of this shape (memoised)."""
    key = (shape, par_axis)
    parts = _WHOLE.get(key)
    if parts is None:
        if len(_WHOLE) > 4096:  # bound the memo for programs with unusually many shapes
            _WHOLE.clear()
        parts = _WHOLE[key] = _whole_of_shape(shape, par_axis)
    return parts


def index_box(np_idx: tuple) -> tuple:
    """The (lo, hi) bounds per dimension of a basic NumPy index (ints and slices): the region an
    access covers, as the trace records it."""
    return tuple((c.start, c.stop) if c.__class__ is slice else (c, c + 1) for c in np_idx)


def whole_parts(tensor: Tensor) -> tuple:
    """The normalised parts of ``tensor[...]``.  Every op result is accessed whole, so they are
    built once per (shape, partition axis) and shared (they are only ever read); a rotating direct
    allocation maps the same index to other physical blocks, so it gets its own."""
    if getattr(tensor.buffer, "alloc", None) is not None and physical.rotation(tensor) is not None:
        proto = Access(tensor, ())
        np_idx = proto.np_index()
        return (tuple(proto.comps), proto.shape, proto.par_axis, np_idx, index_box(np_idx))
    return whole_parts_of_shape(tensor.shape, tensor.par_axis)


def _rotate(v: Any, k: int) -> Any:
    """Logical block index -> physical block of a rotating direct allocation."""
    if isinstance(v, slice):
        if v.stop - v.start <= 0 or v.start // k == (v.stop - 1) // k:
            return slice(v.start % k, (v.start % k) + (v.stop - v.start), v.step)
        return np.arange(v.start, v.stop, v.step or 1) % k
    return v % k


def _slice_bound(v: Any, default: int, size: int, loops: set) -> tuple[Affine, int]:
    """A slice bound as an index expression, and its value at this iteration (what the access's
    shape and NumPy index are made of: computed here once instead of evaluated again)."""
    if v is None:
        return Affine.constant(default), default
    if v.__class__ is int:  # plain integers: the common case needs no lifting
        if v < 0:
            v += size
        return Affine.constant(v), v
    if v.__class__ is Affine and v.grid is None and v.affine and (v.terms or v.const >= 0):
        if v.loops:  # a loop index expression (``k * 128``), the other common case: used as it is
            loops.update(v.loops)
        return v, int(v.value())
    a = Affine.lift(v)
    if a is None:
        raise TypeError(f"slice bounds must be integers or loop indices, got {type(v).__name__}")
    if a.grid is not None:
        raise TypeError("slice bounds cannot be nl.arange expressions")
    if not a.terms and a.affine and a.const < 0:
        a = Affine(a.const + size)
    if a.loops:
        loops.update(a.loops)
    return a, int(a.value())


def _slice_step(step: Any) -> int:
    step = int(step)
    if step <= 0:
        raise TypeError("NKI slices must have a positive step")
    return step


def as_access(x: Any) -> Access:
    """Tensor or Access -> Access (full index for a tensor)."""
    if isinstance(x, Access):
        return x
    if isinstance(x, Tensor):
        return x.full()
    raise TypeError(f"expected an NKI tensor or tile, got {type(x).__name__}")


def is_tile(x: Any) -> bool:
    return isinstance(x, (Tensor, Access))
