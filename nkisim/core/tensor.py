"""Tensors: the simulator's model of HBM tensors and SBUF/PSUM tiles.

``Tensor`` owns storage (a NumPy array in the tensor's dtype) plus the facts the compiler checks:
memory space, partition axis (``nl.par_dim``), allocation loop nesting and whether it is an immutable
kernel parameter.  ``tensor[idx]`` is an ``Access`` (core.access); operators come from the
``TileSyntax`` mixin (core.syntax), index helpers from core.arrays.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any, NoReturn

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.access import Access, MaskedAccess
from nkisim.core.arrays import shape_argument
from nkisim.core.buffers import Buffer, BufferInfo
from nkisim.core.errors import NKIValueError, nki_error, shape_str
from nkisim.core.indexing import Loop, MaskExpr
from nkisim.core.location import user_variable
from nkisim.core.recording import recorded
from nkisim.core.storage import read
from nkisim.core.syntax import METHODS, TileSyntax

_ids = itertools.count(1)
#: BufferInfo from a tuple without the keyword-handling constructor (one is made per instruction)
_new_info = tuple.__new__


class Tensor(TileSyntax):
    """An HBM tensor or an on-chip (SBUF/PSUM) tile."""

    # Slots: one tensor is created per simulated instruction, and slot attributes are set and read
    # faster than instance-dict ones.  ``__dict__`` stays for the rare per-tensor memo (buffer_info).
    __slots__ = ("shape", "dtype", "buffer", "_data", "uid", "_name", "par_axis", "loops", "base", "site",
                 "param", "argument", "valid", "written", "producer", "trace_facts", "unfilled", "viewed",
                 "whole_parts", "trace_record", "static", "__dict__", "__weakref__")

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
        self.argument = False  # passed into the kernel (immutable or mutable)
        self.valid: np.ndarray | None = None  # elements an op actually produced (masked ops)
        self.written = False
        self.producer: Any = None  # trace record of the instruction that produced this tile
        #: (dtype name, root tensor uid, buffer_info of the root or None in HBM): static facts the trace
        #: records for every access, computed on first use by ops.base.emit (None: not yet).  Plain
        #: values only: a reference back to a tensor would make a cycle that keeps its data alive.
        self.trace_facts: tuple | None = None
        #: storage not yet filled with the uninitialised pattern (see ``fill_pending``)
        self.unfilled = False
        #: another Tensor shares this storage (reshape/view), so it can never be swapped out
        self.viewed = False
        self.whole_parts: tuple | None = None  # see core.access.whole_parts()
        #: (shape, trace facts, uid, box): the trace record of the whole tensor as an operand, the
        #: same for every instruction that reads or writes it whole (built by ops.base.emit)
        self.trace_record: tuple | None = None
        #: one object standing for the tensor's static facts (shape, dtype, space, partition axis), shared by every
        #: tensor with the same facts, so an op memoises what depends on them alone by its identity instead of
        #: hashing them per instruction (``ops.elementwise``; None: not yet looked up).  An op-result tile's is its
        #: facts tuple (``result``)
        self.static: Any = None

    @classmethod
    def result(cls, shape: tuple[int, ...], dtype: np.dtype, buffer: Buffer, data: np.ndarray | None,
               loops: tuple[Loop, ...], facts: tuple, name: str = "") -> Tensor:
        """A new op-result tile (what ``ops.base.new_tile`` makes once per instruction): the same
        object as ``Tensor(shape, dtype, buffer, data, name, 0, loops)`` without re-normalising a shape
        the op already computed.  ``facts`` = (dtype name, space, bytes per partition, shape, whole-access
        parts), static per (shape, dtype, space) and memoised by the caller.  The trace record is
        built here too: the op emits the tile as its output next.  ``name``: the tile's own name, if any."""
        t: Tensor = cls.__new__(cls)
        t.shape = shape
        t.dtype = dtype
        t.buffer = buffer
        t._data = data
        t.uid = uid = next(_ids)
        t._name = name
        t.par_axis = 0
        t.loops = loops
        t.base = None
        t.site = None
        t.param = False
        t.argument = False
        t.valid = None
        t.written = True
        t.producer = None
        t.trace_facts = trace_facts = (facts[0], uid, _new_info(BufferInfo, (uid, facts[1], None, None, bool(loops), 0,
                                                                                 facts[2])))
        t.unfilled = False
        t.viewed = False
        t.whole_parts = parts = facts[4]
        t.trace_record = (parts[1], trace_facts, uid, parts[4])  # every result is written whole by its op
        t.static = facts
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

    def _own_storage(self) -> np.ndarray:
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

    def matmul_accumulated(self, idx: tuple) -> np.ndarray:
        """Which elements at the basic index ``idx`` a matmul has accumulated into since this PSUM tensor was
        allocated (then all of them have): the first matmul into an element starts its accumulation group."""
        flags = self.__dict__.get("_matmul_flags")
        if flags is None:
            flags = self.__dict__["_matmul_flags"] = np.zeros(self.shape, dtype=bool)
        elif flags is _EVERY_STARTED:  # the K steps after the first: no per-element flags to copy and test
            return flags
        elif idx is self.__dict__.get("_matmul_started"):  # the same region again (a ragged tile's K steps)
            return _EVERY_STARTED
        seen = flags[idx].copy()
        flags[idx] = True
        if seen.all() and flags.all():  # every element has started: it stays so for the tensor's life
            self.__dict__["_matmul_flags"] = _EVERY_STARTED
        else:  # every element of this region has now (the index object is shared by the accesses made of one
            # key, ``Access.again``): the next matmul into the same region tests nothing
            self.__dict__["_matmul_started"] = idx
        return seen

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

    def __iter__(self):
        raise TypeError("NKI tensors cannot be iterated; index them with loops over nl.affine_range")

    #: ``t.full()``: the whole tensor as an Access (``Access.whole(t)`` itself: every op result is accessed whole)
    full = Access.whole

    def _read(self) -> np.ndarray | None:
        """Values of the whole tensor, like ``storage.read(self.full())``.

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
            return read(self.full())
        if self.unfilled:
            self.fill_pending()
        return data

    def __getitem__(self, key: Any) -> Access:
        if key.__class__ is MaskExpr:  # ``lhs_T[i_lhs_f <= 64]``: operand masking of the whole tile
            return MaskedAccess.of(self.full(), key)
        return Access(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, Access) and value.done:
            return
        # ``t[...] = nl.load(...)``: a result nothing else refers to may hand over its storage
        temporary = sys.getrefcount(value) <= _TEMPORARY_REFS  # (own statement: the probe measures this)
        METHODS.assign(self.full() if key is Ellipsis else Access(self, key), value, temporary)

    # --- views --------------------------------------------------------------------------------
    @recorded("tile.reshape")
    def reshape(self, *shape: Any, **kw: Any) -> Tensor:
        """``t.reshape(4, 32)``, ``t.reshape((4, 32))`` or ``t.reshape(shape=(4, 32))``: a view, no instruction."""
        shape = shape_argument("reshape", shape, kw)
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape)) != int(np.prod(self.shape)):
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str(self.name, self.shape)}) cannot be reshaped to "
                            f"{list(shape)}: element counts differ (has mismatched shapes)")
        self.fill_pending()  # the view shares the storage: it must hold the pattern from now on
        self.viewed = True
        data = None if self._data is None else (self._own_storage() if not self.param else self._data).reshape(shape)
        view = Tensor(shape, self.dtype, self.buffer, data, self.name, 0, self.loops, base=self, site=self.site)
        view.param = self.param
        return view

    @recorded("tile.view")
    def view(self, dtype: Any) -> Tensor:
        """``t.view(dtype)``: the same bytes read as ``dtype`` (the last dimension scales), no instruction."""
        d = dt.normalize(dtype)
        row_bytes, size = self.shape[-1] * self.itemsize, dt.storage_dtype(d).itemsize
        if row_bytes % size:
            raise NKIValueError(f"cannot view `{shape_str(self.name, self.shape)}` ({dt.name(self.dtype)}) as "
                                f"{dt.name(d)}: its last axis holds {row_bytes} bytes, not a multiple of {size}")
        self.fill_pending()
        self.viewed = True
        data = None if self._data is None else \
            (self._own_storage() if not self.param else self._data).view(dt.storage_dtype(d))
        shape = self.shape[:-1] + (self.shape[-1] * self.itemsize // dt.storage_dtype(d).itemsize,)
        v = Tensor(shape, d, self.buffer, data, self.name, self.par_axis, self.loops, base=self, site=self.site)
        v.param = self.param
        return v

    @recorded("tile.assert_shape")
    def assert_shape(self, shape: Any) -> Tensor:
        """``t.assert_shape(shape)``: the tensor itself, or the compiler's error when its shape differs."""
        if tuple(shape) != self.shape:
            raise nki_error("err_annotation_shape_mismatch",
                            f"shape of `{shape_str(self.name, self.shape)}` does not match the expected shape "
                            f"of {list(shape)}")
        return self

    # --- in-place operators: t += x ---------------------------------------------------------
    def _inplace(self, other: Any, op: str) -> Tensor:
        METHODS.accumulate(self.full(), other, op)
        return self


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


#: ``matmul_accumulated`` of a PSUM tensor whose every element has started accumulating (a 0-d True,
#: read-only: callers only test it)
_EVERY_STARTED = np.ones((), dtype=bool)
_EVERY_STARTED.flags.writeable = False


def as_access(x: Any) -> Access:
    """Tensor or Access -> Access (full index for a tensor)."""
    if isinstance(x, Access):
        return x
    if isinstance(x, Tensor):
        return x.full()
    raise TypeError(f"expected an NKI tensor or tile, got {type(x).__name__}")


def is_tile(x: Any) -> bool:
    return isinstance(x, (Tensor, Access))
