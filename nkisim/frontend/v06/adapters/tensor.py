"""``nl.NkiTensor``: NKI 0.6's tensor, a view of a core tensor's storage.

A view is the storage it reads (a core ``Tensor``, the ``base``), an element offset into that storage read as
one flat array, and one ``[stride, count]`` pair per dimension, exactly the ``.ap()`` form AWS documents
(nki/deep-dives/nki-aps.rst): element ``v[i0, i1, ...]`` is ``flat[offset + i0*s0 + i1*s1 + ...]``.  Indexing,
``permute``, ``broadcast``, ``reshape`` and the other view methods only compute a new offset and pattern, as on
the device, where they cost nothing.  When an instruction takes a view as an operand, ``lower`` turns it into
what the ops take: the base itself, an index of basic slices (the common case), or per-axis coordinate
arrays for patterns no slice expresses (a transposed or broadcast view, a pooling window).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core.access import Access
from nkisim.core.buffers import Buffer
from nkisim.core.errors import nki_error
from nkisim.core.grids import DynSlice
from nkisim.core.indexing import Affine
from nkisim.core.tensor import Tensor
from nkisim.frontend.v06.adapters import indirect
from nkisim.frontend.v06.adapters.calls import call, reinterpret
from nkisim.frontend.v06.adapters.errors import error
from nkisim.frontend.v06.adapters.layout import Pattern, contiguous, lower, plain_index, restride
from nkisim.frontend.v06.adapters.registers import register_value


def _view_error(message: str) -> Exception:
    return error("err_invalid_view", message)


def _as_int(x: Any, what: str) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        # rule: python.argument_type
        raise TypeError(f"{what} must be an integer, got {type(x).__name__}")
    return int(x)


class NkiTensor:
    """A tensor in HBM, SBUF or PSUM, or a view of one (``nl.ndarray``, a kernel argument, ``t[...]``, ``t.ap()``).

    Shape, strides and offset are in elements of ``dtype``; every view method returns a new ``NkiTensor`` over
    the same storage.  On-chip tensors keep their partition dimension first."""

    __slots__ = ("_base", "_offset", "_pattern", "_dyn", "_ind", "_lowered", "__weakref__")
    #: error messages name a tensor by the kernel's variable holding a view of it (``core.location.user_variable``)
    __nki_view__ = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # rule: limit.no_storage
        raise TypeError("create tensors with nl.ndarray (or nl.zeros, nl.load, ...); NkiTensor(...) cannot bind "
                        "storage on the simulator")

    @classmethod
    def over(cls, base: Tensor, offset: int = 0, pattern: Pattern | None = None, dyn: tuple = (),
             ind: indirect.Indirect | None = None) -> NkiTensor:
        """A view of ``base``'s storage (the whole tensor when no pattern is given).  ``dyn``: (loop index, stride)
        terms added to the offset, from a dynamic loop's register (``.ap(scalar_offset=i)``, ``.select(d, i)``);
        ``ind``: the per-partition index of dimension 0 (``vector_select``, ``.ap(vector_offset=)``)."""
        t = object.__new__(cls)
        t._base = base
        t._offset = int(offset)
        t._pattern = contiguous(base.shape) if pattern is None else tuple((int(s), int(c)) for s, c in pattern)
        t._dyn = dyn
        t._ind = ind
        t._lowered = None
        return t

    def view_base(self) -> Tensor:
        """The core tensor whose storage this view reads."""
        return self._base

    # --- attributes --------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(c for _, c in self._pattern)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(s for s, _ in self._pattern)

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def name(self) -> str:
        return self._base.root.name

    @property
    def dtype(self) -> Any:
        return self._base.dtype

    @property
    def buffer(self) -> Any:
        """The memory the tensor lives in (``nl.sbuf``, ...), also for one placed with ``address=``: nki-library's
        TensorView tests ``t.buffer == nl.sbuf`` on its directly allocated tiles."""
        buf = self._base.root.buffer
        return buf if buf.alloc is None else Buffer(buf.space)

    @property
    def ndim(self) -> int:
        return len(self._pattern)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def on_chip(self) -> bool:
        return self._base.buffer.family != "hbm"

    def __repr__(self) -> str:
        return f"NkiTensor({self.name}, shape={self.shape}, dtype={self.dtype}, buffer={self.buffer})"

    def __iter__(self) -> Any:
        # rule: python.tensor_value
        raise TypeError("an NkiTensor cannot be iterated: loop over indices and index it")

    def __bool__(self) -> bool:
        """A tensor is a reference (nki/get-started/about/index.rst:413 "Tensors (references to on-device memory)"),
        so its truth value while tracing is the reference's, as for any Python object: true.  nki-library
        2.29_release, validated on the compiler, tests an optional tensor so (selective_expert_impl.py via
        mlp_tkg_constants.py:172 ``if params.expert_params and params.expert_params.expert_index:``); the
        values themselves are never consulted."""
        return True

    # --- queries -------------------------------------------------------------------------------------
    def is_contiguous(self) -> bool:
        """Row-major over the view's dimensions; on chip, over the free dimensions only."""
        pat = self._pattern[1:] if self.on_chip else self._pattern
        expected = 1
        for s, c in reversed(pat):
            if c != 1 and s != expected:
                return False
            expected *= c
        return True

    def get_pattern(self) -> list[list[int]]:
        return [[s, c] for s, c in self._pattern]

    def is_indirect(self) -> bool:
        return bool(self._dyn) or self._ind is not None

    def dynamic_addressing(self) -> str | None:
        """How the view's address is found when the kernel runs: ``"vector"`` for a per-partition index
        (``vector_select``, ``.ap(vector_offset=)``: a gather or scatter), ``"scalar"`` for one dynamic start
        (a register or a (1, 1) tile as the offset), None for a static address. AWS's ``dma_copy``: only the
        software DGE gathers and scatters; either DGE takes a dynamic start; without a DGE the descriptors are made
        before the kernel runs, so nothing may be dynamic."""
        if self._ind is not None:
            return "scalar" if self._ind.scalar else "vector"
        return "scalar" if self._dyn else None

    # --- indexing -------------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> NkiTensor:
        if not isinstance(key, tuple):
            key = (key,)
        if self._ind is None:
            plain = plain_index(self._pattern, self._offset, self._base.buffer.family != "hbm", key)
            if plain is not None:  # (the common key: integers and slices in bounds, a pattern of ints already)
                t = object.__new__(NkiTensor)
                t._base, t._offset, t._pattern, t._dyn, t._ind, t._lowered = self._base, *plain, self._dyn, None, None
                return t
        if any(k is Ellipsis for k in key):
            i = next(j for j, k in enumerate(key) if k is Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - len(key) + 1) + key[i + 1:]
        if self._ind is not None and key and not (isinstance(key[0], slice) and key[0] == slice(None)):
            # rule: view.indirect_final
            raise _view_error(f"dimension 0 of '{self.name}' is selected indirectly (vector_select, vector_offset or a tile as scalar_offset): "
                              f"it cannot be further sliced or selected")
        if len(key) > self.ndim:
            # rule: python.index
            raise IndexError(f"too many indices for tensor '{self.name}' of shape {list(self.shape)}: {len(key)}")
        offset = self._offset
        kept: list[tuple[int, int] | None] = []  # None: a dimension an integer removed
        dropped: list[tuple[int, int]] = []  # (position, stride) of each removed dimension
        for axis, (k, (s, c)) in enumerate(zip(key + (slice(None),) * (self.ndim - len(key)), self._pattern)):
            if isinstance(k, DynSlice):
                k = slice(_as_int(k.start, "nl.ds start"), _as_int(k.start, "nl.ds start") + int(k.size))
            if isinstance(k, slice):
                start, stop, step = self._slice_bounds(axis, c, k)
                offset += start * s
                kept.append((s * step, len(range(start, stop, step))))
            elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
                i = int(k) + c if int(k) < 0 else int(k)
                if not 0 <= i < c:
                    # rule: view.bounds
                    raise error("err_view_out_of_bounds",
                                    f"index {int(k)} is out of bounds for dimension {axis} of '{self.name}' with size "
                                    f"{c}")
                offset += i * s
                if self.on_chip and axis == 0:
                    kept.append((s, 1))  # on chip, an integer keeps the partition dimension (size 1)
                else:
                    kept.append(None)
                    dropped.append((axis, s))
            else:
                # rule: python.argument_type
                raise TypeError(f"unsupported index {k!r} for tensor '{self.name}': NKI 0.6 indexes with integers, "
                                f"slices and nl.ds (index tensors go through .ap(), .select() or .vector_select())")
        floor = 2 if self.on_chip else 1
        while sum(1 for d in kept if d is not None) < floor and dropped:
            axis, s = dropped.pop()  # the last integer-indexed dimension stays, with size 1
            kept[axis] = (s, 1)
        return NkiTensor.over(self._base, offset, tuple(d for d in kept if d is not None), self._dyn, self._ind)

    def _slice_bounds(self, axis: int, size: int, k: slice) -> tuple[int, int, int]:
        step = 1 if k.step is None else _as_int(k.step, "slice step")
        if step < 1:
            # rule: limit.slice_step
            raise _view_error(f"slice step {step} on dimension {axis} of '{self.name}': the simulator's views step "
                              f"forward only (>= 1)")
        start = 0 if k.start is None else _as_int(k.start, "slice start")
        stop = size if k.stop is None else _as_int(k.stop, "slice stop")
        start = start + size if start < 0 else start
        stop = stop + size if stop < 0 else stop
        # an empty slice (start == stop) is a view of nothing: nki-library's kernels take x[:, 0:0] views
        if not 0 <= start <= stop <= size:
            # rule: view.bounds
            raise error("err_view_out_of_bounds",
                            f"slice {start}:{stop} is out of bounds for dimension {axis} of '{self.name}' with size "
                            f"{size} (a slice must satisfy 0 <= start <= stop <= size)")
        return start, stop, step

    def __setitem__(self, key: Any, value: Any) -> None:
        assign(self[key], value)

    # --- view methods ---------------------------------------------------------------------------------
    def _dim(self, dim: Any, what: str, allow_partition: bool = False, extra: int = 0) -> int:
        d = _as_int(dim, "dim")
        n = self.ndim + extra
        d = d + n if d < 0 else d
        if not 0 <= d < n:
            # rule: python.index
            raise _view_error(f"{what}: dimension {dim} is out of range for a tensor of {self.ndim} dimensions")
        if d == 0 and self.on_chip and not allow_partition:
            # rule: view.partition_dim
            raise _view_error(f"{what}: dimension 0 of on-chip tensor '{self.name}' is its partition dimension, "
                              f"which a view cannot change")
        return d

    def _with(self, pattern: Pattern, offset: int | None = None, dyn: tuple | None = None) -> NkiTensor:
        if self._ind is not None and (not pattern or pattern[0] != self._pattern[0]):
            # rule: view.indirect_final
            raise _view_error(f"dimension 0 of '{self.name}' is selected indirectly (vector_select, vector_offset or a tile as scalar_offset): "
                              f"a view cannot move, reshape or remove it")
        return NkiTensor.over(self._base, self._offset if offset is None else offset, pattern,
                              self._dyn if dyn is None else dyn, self._ind)



    def permute(self, dims: Any) -> NkiTensor:
        dims = tuple(_as_int(d, "permute dims") for d in dims)
        if sorted(dims) != list(range(self.ndim)):
            # rule: view.method_arguments
            raise _view_error(f"permute: {dims} is not a permutation of the {self.ndim} dimensions of '{self.name}'")
        if self.on_chip and dims[0] != 0:
            # rule: view.partition_dim
            raise _view_error(f"permute: dims[0] must be 0 for on-chip tensor '{self.name}' (the partition dimension "
                              f"stays first), got {dims}")
        return self._with(tuple(self._pattern[d] for d in dims))

    def broadcast(self, dim: Any, size: Any) -> NkiTensor:
        d = self._dim(dim, "broadcast")
        if self._pattern[d][1] != 1:
            # rule: view.method_arguments
            raise _view_error(f"broadcast: dimension {d} of '{self.name}' has size {self._pattern[d][1]}, not 1")
        pat = list(self._pattern)
        pat[d] = (0, _as_int(size, "broadcast size"))
        return self._with(tuple(pat))

    def expand_dim(self, dim: Any) -> NkiTensor:
        d = self._dim(dim, "expand_dim", extra=1)
        pat = list(self._pattern)
        pat.insert(d, (pat[d][0] * pat[d][1] if d < len(pat) else 1, 1))
        return self._with(tuple(pat))

    def squeeze_dim(self, dim: Any) -> NkiTensor:
        d = self._dim(dim, "squeeze_dim")
        if self._pattern[d][1] != 1:
            # rule: view.method_arguments
            raise _view_error(f"squeeze_dim: dimension {d} of '{self.name}' has size {self._pattern[d][1]}, not 1")
        return self._with(self._pattern[:d] + self._pattern[d + 1:])

    def reshape_dim(self, dim: Any, shape: Any) -> NkiTensor:
        shape = tuple(_as_int(s, "reshape_dim shape") for s in shape)
        s, c = self._pattern[self._dim(dim, "reshape_dim", allow_partition=True)]
        d = self._dim(dim, "reshape_dim", allow_partition=True)
        if d == 0 and self.on_chip and len(shape) != 1:
            # rule: view.partition_dim
            raise _view_error(f"reshape_dim: dimension 0 of on-chip tensor '{self.name}' is its partition dimension")
        shape = _infer(shape, c, "reshape_dim")
        split = []
        stride = s
        for n in reversed(shape):
            split.append((stride, n))
            stride *= n
        return self._with(self._pattern[:d] + tuple(reversed(split)) + self._pattern[d + 1:])

    def flatten_dims(self, start_dim: Any, end_dim: Any) -> NkiTensor:
        a = self._dim(start_dim, "flatten_dims")
        b = self._dim(end_dim, "flatten_dims")
        if b < a:
            # rule: view.method_arguments
            raise _view_error(f"flatten_dims: end_dim {b} comes before start_dim {a}")
        group = self._pattern[a:b + 1]
        for (s0, _), (s1, c1) in zip(group, group[1:]):
            if s0 != s1 * c1:
                # rule: view.contiguity
                raise _view_error(f"flatten_dims: dimensions {a}..{b} of '{self.name}' are not contiguous in memory "
                                  f"(strides {[s for s, _ in group]})")
        merged = (group[-1][0], math.prod(c for _, c in group))
        return self._with(self._pattern[:a] + (merged,) + self._pattern[b + 1:])

    def reshape(self, shape: Any) -> NkiTensor:
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        shape = _infer(tuple(_as_int(s, "reshape shape") for s in shape), self.size, "reshape")
        if self.on_chip and shape[0] != self.shape[0]:
            # rule: view.partition_dim
            raise _view_error(f"reshape: on-chip tensor '{self.name}' keeps its partition dimension {self.shape[0]}, "
                              f"got shape {list(shape)}")
        if self.on_chip:
            free = restride(self._pattern[1:], shape[1:])
            pattern = None if free is None else (self._pattern[0],) + free
        else:
            pattern = restride(self._pattern, shape)
        if pattern is None:
            # rule: view.contiguity
            raise _view_error(f"reshape: the layout of '{self.name}' (pattern {self.get_pattern()}) cannot be viewed "
                              f"as shape {list(shape)} without a copy")
        return self._with(pattern)

    def rearrange(self, src_pattern: Any, dst_pattern: Any, fixed_sizes: dict | None = None) -> NkiTensor:
        """einops-style: split the grouped source dimensions, reorder, merge the grouped destination ones."""
        sizes = dict(fixed_sizes or {})
        if len(src_pattern) != self.ndim:
            # rule: view.method_arguments
            raise _view_error(f"rearrange: source pattern {src_pattern} names {len(src_pattern)} dimensions, "
                              f"'{self.name}' has {self.ndim}")
        names: list[str] = []
        view = self
        pos = 0
        for entry, (_, count) in zip(src_pattern, self._pattern):
            group = (entry,) if isinstance(entry, str) else tuple(entry)
            if len(group) > 1:
                known = [sizes.get(n, -1) for n in group]
                view = view.reshape_dim(pos, tuple(known))
                for n, c in zip(group, view.shape[pos:pos + len(group)]):
                    sizes[n] = c
            else:
                sizes[group[0]] = count
            names += list(group)
            pos += len(group)
        flat_dst = [n for e in dst_pattern for n in ((e,) if isinstance(e, str) else tuple(e))]
        if sorted(flat_dst) != sorted(names):
            # rule: view.method_arguments
            raise _view_error(f"rearrange: {dst_pattern} does not name the same dimensions as {src_pattern}")
        view = view.permute(tuple(names.index(n) for n in flat_dst))
        pos = 0
        for entry in dst_pattern:
            group = (entry,) if isinstance(entry, str) else tuple(entry)
            if len(group) > 1:
                view = view.flatten_dims(pos, pos + len(group) - 1)
            pos += 1
        return view

    def slice(self, dim: Any, start: Any, end: Any, step: Any = 1) -> NkiTensor:
        d = self._dim(dim, "slice", allow_partition=True)
        key = [slice(None)] * self.ndim
        key[d] = slice(_as_int(start, "start"), _as_int(end, "end"), _as_int(step, "step"))
        return self[tuple(key)]

    def select(self, dim: Any, index: Any) -> NkiTensor:
        d = self._dim(dim, "select")
        if d == 0 and self._ind is not None:
            # rule: view.indirect_final
            raise _view_error(f"select: dimension 0 of '{self.name}' is selected indirectly (vector_select / "
                              f"vector_offset): it cannot be further selected")
        if not isinstance(index, (int, np.integer)) or isinstance(index, (bool, np.bool_)):
            if getattr(type(index), "__name__", "") != "VirtualRegister":
                # AWS's select docs: "Dynamic select (HBM tensor, index resolved at runtime): hbm_t.select(0, idx)"
                # with idx a (1, 1) SBUF tensor: the same view as .ap(scalar_offset=idx, indirect_dim=dim)
                if self.is_indirect():
                    # rule: view.one_dynamic_select
                    raise _view_error(f"select: '{self.name}' already has a dynamic offset (one dynamic select per "
                                      f"tensor)")
                indirect.check_index("select", self._base.label(), self.on_chip, False, index, scalar=True)
                stride, count = self._pattern[d]
                return NkiTensor.over(self._base, self._offset, self._pattern[:d] + self._pattern[d + 1:], (),
                                      indirect.Indirect(index, stride, count, scalar=True))
            if self.is_indirect():
                # rule: view.one_dynamic_select
                raise _view_error(f"select: '{self.name}' already has a dynamic offset (one dynamic select per "
                                  f"tensor)")
            offset, dyn = _plus(self._offset, self._dyn, index, self._pattern[d][0])
            return self._with(self._pattern[:d] + self._pattern[d + 1:], offset, dyn)
        c = self._pattern[d][1]
        i = int(index) + c if int(index) < 0 else int(index)
        if not 0 <= i < c:
            # rule: view.bounds
            raise error("err_view_out_of_bounds",
                            f"select: index {int(index)} is out of bounds for dimension {d} of '{self.name}' with "
                            f"size {c}")
        return self._with(self._pattern[:d] + self._pattern[d + 1:], self._offset + i * self._pattern[d][0])

    def vector_select(self, dim: Any, vector_offset: Any) -> NkiTensor:
        """Partition p reads row ``vector_offset[p]`` of dimension 0 (an HBM gather/scatter view for DMA)."""
        if _as_int(dim, "dim") != 0:
            # rule: view.vector_select_hbm
            raise _view_error(f"vector_select: dim must be 0, got {dim}")
        indirect.check_index("vector_select", self._base.label(), self.on_chip, self.is_indirect(), vector_offset)
        pattern = ((self._pattern[0][0], vector_offset.shape[0]),) + self._pattern[1:]
        return NkiTensor.over(self._base, self._offset, pattern, (),
                              indirect.Indirect(vector_offset, *self._pattern[0]))

    def ap(self, pattern: Any, offset: Any = None, scalar_offset: Any = None, vector_offset: Any = None,
           indirect_dim: Any = 0, dtype: Any = None) -> NkiTensor:
        """A view by explicit ``[[stride, count], ...]`` pairs over the raw storage (its shape, strides and
        offset of this view are disregarded, except the offset when ``offset`` is None)."""
        if vector_offset is not None and scalar_offset is not None:
            # rule: view.one_dynamic_select
            raise _view_error(".ap(): scalar_offset and vector_offset cannot be combined (one dynamic offset per "
                              "view)")
        if vector_offset is not None and _as_int(indirect_dim, "indirect_dim") != 0:
            # rule: view.ap_pattern
            raise _view_error(f".ap(): vector_offset needs indirect_dim=0, got indirect_dim={indirect_dim}")
        pairs = tuple((_as_int(p[0], "ap stride"), _as_int(p[1], "ap count")) for p in pattern)
        base = self._base
        start = self._offset
        if dtype is not None:
                base, start = reinterpret(base, start, dtype)
        if offset is not None:
            start += _as_int(offset, "ap offset")
        if base.buffer.family != "hbm" and pairs and pairs[0][1] > 1 and pairs[0][0] != math.prod(base.shape[1:]):
            row = math.prod(base.shape[1:])
            if 0 < pairs[0][0] < row:
                # The first pair of an on-chip pattern counts partitions, a step of one partition each.  AWS's docs
                # state no rule for its stride; nki-library (2.29_release, validated) re-patterns a view of part of
                # a row with the view's own free size as that stride (TensorView.get_view over mlp_tkg's
                # gate_up_sbuf_fp32 slice: stride I over rows of 2I) and reads the slice's rows.
                pairs = ((row, pairs[0][1]),) + pairs[1:]
            else:
                # rule: limit.partition_step
                raise _view_error(f".ap(): the first pair of a pattern over on-chip tensor '{self.name}' counts its "
                                  f"partitions; a stride of {pairs[0][0]} (a partition step other than one partition "
                                  f"of {row} elements) is not simulated")
        if vector_offset is not None:
            indirect.check_index(".ap(vector_offset=)", self._base.label(), base.buffer.family != "hbm", False, vector_offset)
            if not pairs or pairs[0][1] != vector_offset.shape[0]:
                # rule: view.ap_pattern
                raise _view_error(f".ap(): the first pair of the pattern {[list(p) for p in pairs]} must count the "
                                  f"{vector_offset.shape[0]} partitions of vector_offset '{vector_offset.name}'")
            # the row stride of this view's dimension 0 ("dimension in self.shape whose stride scales the indirect
            # scalar/vector offset", language ap): the pattern's leading stride is ignored
            row = self._dim_stride(0, base)
            return NkiTensor.over(base, start, ((row, pairs[0][1]),) + pairs[1:], (),
                                  indirect.Indirect(vector_offset, row, base.shape[0]))
        dyn: tuple = ()
        if scalar_offset is not None:
            d = _as_int(indirect_dim, "indirect_dim")
            if not 0 <= d < max(base.ndim, self.ndim):
                # rule: view.ap_pattern
                raise _view_error(f".ap(): indirect_dim {d} is out of range for '{self.name}' of rank {self.ndim}")
            step = self._dim_stride(d, base)
            if getattr(type(scalar_offset), "__name__", "") != "VirtualRegister":  # a (1, 1) tile: read when it runs
                indirect.check_index(".ap(scalar_offset=)", self._base.label(), base.buffer.family != "hbm", False,
                                     scalar_offset, scalar=True)
                return NkiTensor.over(base, start, pairs, (), indirect.Indirect(
                    scalar_offset, step, base.shape[d] if d < base.ndim else self.shape[d], scalar=True))
            start, dyn = _plus(start, (), scalar_offset, step)
        view = NkiTensor.over(base, start, pairs, dyn)
        if not dyn:
            view.check_in_storage()
        return view

    def _dim_stride(self, d: int, base: Any) -> int:
        """The storage stride of this view's dimension ``d``, which scales an ``.ap()`` indirect offset (language
        ``ap``: "indirect_dim: dimension in ``self.shape`` whose stride scales the indirect scalar/vector offset"):
        a reshape's own row, not its storage's (nki-library's moe_cte indexes ``token_position_to_id.reshape((N,
        B))`` by block, bwmm_shard_on_I.py:1240).  A view of another dtype than the storage (``dtype=``) or without
        dimension ``d`` keeps the storage's."""
        if d < len(self._pattern) and base is self._base:
            return self._pattern[d][0]
        return math.prod(base.shape[d + 1:])

    def view(self, dtype: Any) -> NkiTensor:
        """The same bytes read as ``dtype``: the last dimension scales by the ratio of the element sizes."""
        if not self._pattern or self._pattern[-1][0] != 1:
            # rule: view.reinterpret
            raise _view_error(f"view: the last dimension of '{self.name}' must be contiguous (stride 1)")
        if self.is_indirect():
            # rule: view.reinterpret
            raise _view_error(f"view: '{self.name}' has a dynamic or indirect offset; reinterpret the tensor first")
        base, start = reinterpret(self._base, self._offset, dtype)
        ratio_num, ratio_den = self._base.itemsize, base.itemsize  # old elements -> new elements
        pattern = []
        for i, (s, c) in enumerate(self._pattern):
            last = i == len(self._pattern) - 1
            if (s * ratio_num) % ratio_den or (last and (c * ratio_num) % ratio_den):
                # rule: view.reinterpret
                raise _view_error(f"view: '{self.name}' cannot be read as {dtype}: its layout does not divide into "
                                  f"{base.itemsize}-byte elements")
            pattern.append((s * ratio_num // ratio_den if not last else 1, c * ratio_num // ratio_den if last else c))
        return NkiTensor.over(base, start, tuple(pattern))

    reinterpret_cast = view

    def indirect(self, index: Any, num_elem: Any = None) -> NkiTensor:
        # rule: limit.tensor_indirection
        raise NotImplementedError("tensor indirection (.indirect, NeuronCore-v4) is not supported by the simulator "
                                  "yet")

    indirect.__nki06_refused__ = "tensor indirection of NeuronCore-v4"  # type: ignore[attr-defined]

    # --- lowering ------------------------------------------------------------------------------------
    def check_in_storage(self) -> None:
        """Every element the view addresses lies inside its storage."""
        lo = hi = self._offset
        for s, c in self._pattern:
            if c <= 0:
                return
            lo += min(0, s * (c - 1))
            hi += max(0, s * (c - 1))
        size = math.prod(self._base.shape)
        if lo < 0 or hi >= size:
            # rule: view.bounds
            raise error("err_view_out_of_bounds",
                            f"access pattern {self.get_pattern()} at offset {self._offset} addresses elements "
                            f"[{lo}, {hi}] of '{self.name}', whose storage holds {size}")

    def lower(self) -> Tensor | Access:
        """What the ops take for this view: the base itself when the view is all of it, else an ``Access``."""
        low = self._lowered
        if self._ind is not None:  # a fresh access each time: it reads the index tile's values when it runs
            return indirect.lower(self._base, self._offset, self._pattern, self._ind)
        if low is None:
            low = self._lowered = lower(self._base, self._offset, self._pattern, self._dyn)
        return low


def _plus(offset: int, dyn: tuple, value: Any, stride: int) -> tuple[int, tuple]:
    """(static offset, dynamic terms) after adding ``value * stride`` elements: ``value`` a register (holding an
    int, or a dynamic loop's index) or an int."""
    v = register_value(value, "scalar offset", "offset")
    if isinstance(v, Affine):
        return offset, dyn + ((v, int(stride)),)
    return offset + int(v) * int(stride), dyn


def _infer(shape: tuple[int, ...], total: int, what: str) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        # rule: view.method_arguments
        raise _view_error(f"{what}: at most one dimension may be -1, got {list(shape)}")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or total % known:
            # rule: view.method_arguments
            raise _view_error(f"{what}: cannot infer -1 in {list(shape)} for {total} elements")
        shape = tuple(total // known if s == -1 else s for s in shape)
    if math.prod(shape) != total:
        # rule: reshape.element_count
        raise nki_error("err_param_shape_mismatch",
                        f"{what}: shape {list(shape)} has {math.prod(shape)} elements, the tensor has {total} "
                        f"(a reshape keeps the element count)")
    return shape


def assign(view: NkiTensor, value: Any) -> None:
    """``t[idx] = value``: a copy into the view (DMA when either side is in HBM), or a fill with a number."""
    if value.__class__ is NkiTensor:
        if view.on_chip and value.on_chip:
            call("nisa.tensor_copy", value.lower(), dst=view.lower())
        else:
            call("nisa.dma_copy", dst=view.lower(), src=value.lower())
        return
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        call("nisa.memset", None, value, None, dst=view.lower())
        return
    # rule: python.argument_type
    raise TypeError(f"cannot assign {type(value).__name__} to an NkiTensor: assign a tensor or a number")
