"""``tensor[index]``: an index normalised once and resolved against the tensor's storage.

An ``Access`` holds one component per tensor dimension (ints, slices, ``nl.ds``, arange/mgrid
expressions, loop variables, indirect index tiles), resolves lazily into a NumPy view (basic
indexing) or gather/scatter arrays (advanced indexing), and checks bounds, mixing rules and the
affine_range output-dependency rule, so every API gets them the same way.  It needs no import of
``Tensor``: a tile is anything whose class says ``__nki_tile__``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core import physical
from nkisim.core.arrays import all_true, arange_slices, index_box, rotate_index, shape_argument
from nkisim.core.context import active
from nkisim.core.dynamic import DynamicIndex, IndirectRows
from nkisim.core.errors import nki_error, shape_str
from nkisim.core.grids import DynSlice, slice_bound, slice_step
from nkisim.core.indexing import Affine, MaskExpr
from nkisim.core.storage import owned, storage
from nkisim.core.syntax import METHODS, TileSyntax
from nkisim.core.whole import whole_parts_of_shape


class Access(TileSyntax):
    """``tensor[index]``: where an API reads or writes, resolved against the tensor's shape.

    ``comps`` holds one entry per tensor dimension:
      ('int', Affine)                 a single position, dimension dropped
      ('slice', start, stop, step)    Affine/int bounds, dimension kept
      ('adv', Affine)                 arange/mgrid expression (advanced indexing)
      ('ind', Access, shift, bound, scale)  indirect index read from an SBUF tile at run time, times ``scale``,
                                      plus ``shift`` (an Affine or None) rows; ``bound``: the index's own
                                      limit (``IndirectRows``)
      ('dyn', DynamicIndex)           a free-axis position read from one tile element at run time
    """

    __slots__ = ("tensor", "comps", "shape", "advanced", "loops", "done", "par_axis", "_np", "box", "is_whole")

    def __init__(self, tensor: Any, key: Any) -> None:
        if key is Ellipsis:  # ``tile[...]`` is the whole tensor: reuse the shared normalisation
            self._fill_whole(tensor)
            return
        self.tensor = tensor
        self.done = False
        self._np: tuple | None = None
        self.box: tuple | None = None  # region box for the trace, see ops.base.region
        self.is_whole = False  # built by _fill_whole: every dimension is a full slice
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
                    step = slice_step(step)
                else:
                    step = 1
                start, lo = slice_bound(k.start, 0, size, loops)
                stop, hi = slice_bound(k.stop, size, size, loops)
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
            elif k.__class__ is DynamicIndex or (not _leading(axis, tensor, comps) and
                                                 getattr(k.__class__, "__nki_tile__", False) and
                                                 int(np.prod(k.shape)) == 1):
                # a position read from a tile when the instruction runs: offsets[0, i] (+ iy), on a free axis
                if k.__class__ is not DynamicIndex:
                    k = DynamicIndex(k, Affine.constant(0))
                loops |= k.loops
                has_adv = True
                comps.append(("dyn", k))
            elif k.__class__ is IndirectRows or getattr(k.__class__, "__nki_tile__", False):
                # a tile (Tensor or Access) of indices, or one with a row shift (NKI 0.6's indirect views)
                rows = k if k.__class__ is IndirectRows else None
                if rows is not None:
                    k = rows.index
                    if rows.shift is not None:
                        loops |= rows.shift.loops
                idx = k if isinstance(k, Access) else k.full()
                if idx.tensor.space != "sbuf":
                    raise nki_error("err_indirect_indices_sbuf", "Indirect indices tile must be on SBUF.")
                if not _leading(axis, tensor, comps):
                    raise nki_error("err_indirect_indices_free_dim",
                                    "Indirect indexing on free dimension not supported, must be partition "
                                    "dimension or block dimension.")
                has_adv = True
                comps.append(("ind", idx, None, None, 1) if rows is None
                             else ("ind", idx, rows.shift, rows.bound, rows.scale))
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
                elif c[0] in ("ind", "dyn"):
                    shapes.append(c[1].shape)
                    if c[0] == "ind" and c[2] is not None and c[2].grid is not None:
                        shapes.append(c[2].grid.shape)
            try:
                self.shape = tuple(np.broadcast_shapes(*shapes))
            except ValueError:
                raise nki_error("err_param_shape_incompatible_with_numpy",
                                f"Parameter shapes ({', '.join(str(list(s)) for s in shapes)}) of index "
                                f"expressions could not be broadcast together") from None
            self.par_axis = 0
        else:
            self._fill_basic(tensor, comps, spans)

    def _fill_basic(self, tensor: Any, comps: list[tuple], spans: list[tuple[int, int] | None]) -> None:
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
            self.box = tuple(box)
        else:
            for axis, c in enumerate(comps):
                if c[0] == "slice":
                    if axis == tpar:
                        par = len(shape)
                    shape.append(len(range(c[1].value(), c[2].value(), c[3])))
        self.shape = tuple(shape)
        self.par_axis = 0 if par is None else par

    @staticmethod
    def components(key: tuple) -> tuple[list[tuple], frozenset] | None:
        """The components and loops ``__init__`` makes of ``key`` on a tensor of ``len(key)`` dimensions, when each
        entry is a slice of positive step whose bounds are scalar index expressions ``slice_bound`` takes as they
        are, or a scalar index expression; None for any other key.  Both depend on the key's objects alone, so an
        executor's plan, which binds a key's index expressions once per entry of their loops and makes the access
        again every iteration, makes them once (``sliced``)."""
        comps: list[tuple] = []
        loops: set = set()
        for k in key:
            if k.__class__ is slice:
                start, stop, step = k.start, k.stop, k.step
                if start.__class__ is not Affine or stop.__class__ is not Affine or step.__class__ is not int \
                        or step <= 0:
                    return None
                for v in (start, stop):
                    if v.grid is not None or (not v.terms and v.affine and v.const < 0):  # (wrapped by the size)
                        return None
                    loops |= v.loops
                comps.append(("slice", start, stop, step))
            elif k.__class__ is Affine and k.grid is None:
                loops |= k.loops
                comps.append(("int", k))
            else:
                return None
        return comps, frozenset(loops)

    @staticmethod
    def sliced(tensor: Any, comps: list[tuple], loops: frozenset) -> Access:
        """``Access(tensor, key)`` from the ``components(key)`` of a key with one entry per dimension of ``tensor``:
        the same access, its bounds evaluated at this iteration, without normalising the key again.  The
        components are shared by the accesses made of them (they are only ever read, as ``whole``'s are)."""
        acc: Access = Access.__new__(Access)
        acc.tensor = tensor
        acc.done = False
        acc._np = None
        acc.box = None
        acc.is_whole = False
        acc.comps = comps
        acc.loops = loops
        acc.advanced = False
        acc._fill_basic(tensor, comps, [(int(c[1].value()), int(c[2].value())) if c[0] == "slice" else None
                                        for c in comps])
        return acc

    def constant_parts(self) -> tuple | None:
        """What ``again`` needs to make this access anew on another tensor of the same shape and partition axis, when
        that depends on the key alone: a basic access of constant bounds (no loop index) on a tensor without a
        direct allocation (whose NumPy index and trace box ``__init__`` computed); None otherwise."""
        if self.advanced or self.loops or self._np is None or self.is_whole or self.__class__ is not Access:
            return None
        return (self.comps, self.loops, self.shape, self.par_axis, self._np, self.box)

    @staticmethod
    def again(tensor: Any, parts: tuple) -> Access:
        """``Access(tensor, key)`` from the ``constant_parts()`` of an access made of the same key on a tensor of the
        same shape and partition axis, without a direct allocation: the same access without normalising the key
        again (a kernel whose Python loops unroll lowers the same views once per instruction).  The parts are
        shared, as ``whole``'s are: they are only ever read."""
        acc: Access = Access.__new__(Access)
        acc.tensor = tensor
        acc.done = False
        acc.is_whole = False
        acc.advanced = False
        acc.comps, acc.loops, acc.shape, acc.par_axis, acc._np, acc.box = parts
        return acc

    @staticmethod
    def whole(tensor: Any) -> Access:
        """``Access(tensor, ())`` without re-normalising: every op result is accessed whole, so the
        (immutable) components, shape and NumPy index depend only on shape and partition axis and
        are built once per such pair and shared.  A plain function, so ``Tensor.full`` is this one
        (no call in between)."""
        acc: Access = Access.__new__(Access)
        acc._fill_whole(tensor)
        return acc

    def _fill_whole(self, tensor: Any) -> None:
        parts = tensor.whole_parts
        if parts is None:
            parts = tensor.whole_parts = whole_parts(tensor)
        self.tensor = tensor
        self.done = False
        self.comps = parts[0]  # shared: components are only ever read
        self.loops = _NO_LOOPS
        self.advanced = False
        self.shape = parts[1]
        self.par_axis = parts[2]
        self._np = parts[3]
        self.box = parts[4]
        self.is_whole = True

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

    # --- numpy resolution --------------------------------------------------------------------
    def np_index(self) -> tuple:
        """Index usable on the tensor's storage (basic slices, or broadcastable int arrays)."""
        if self._np is not None:
            return self._np
        idx = self._logical()
        rot = physical.rotation(self.tensor)
        if rot is not None:
            idx = tuple(rotate_index(v, rot[i]) if i < len(rot) else v for i, v in enumerate(idx))
        self._np = idx
        return idx

    def logical_index(self) -> tuple:
        """The index in the tensor's own (logical) coordinates: ``np_index`` before a direct allocation maps
        block indices to the physical tiles they share (what a PSUM accumulation group and the cost model's
        placement are about)."""
        if physical.rotation(self.tensor) is None:
            return self.np_index()
        return self._logical()

    def _logical(self) -> tuple:
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
        return idx

    def free_stride_bytes(self) -> int:
        """Bytes between neighbouring elements along the innermost free dimension this access walks.

        The compute engines read SBUF/PSUM at half bandwidth when that stride exceeds 16 B (spec
        §4.3), which the cost model charges; a whole tile, or any unit-step slice, is contiguous."""
        t = self.tensor
        item = t.itemsize
        if self.is_whole:
            return item
        shape = t.shape
        idx = self.np_index()
        if not self.advanced:
            hit = _FREE_STRIDES.get(id(idx))
            if hit is not None and hit[0] is idx and hit[1] == shape and hit[2] == t.par_axis:
                return hit[3] * item
            elements = 1
            for d in range(len(idx) - 1, t.par_axis, -1):  # free dimensions, innermost first
                c = idx[d]
                if c.__class__ is slice and len(range(c.start, c.stop, c.step or 1)) > 1:
                    elements = (c.step or 1) * math.prod(shape[d + 1:])  # (dimension d's element stride)
                    break
            if len(_FREE_STRIDES) > 4096:
                _FREE_STRIDES.clear()
            _FREE_STRIDES[id(idx)] = (idx, shape, t.par_axis, elements)
            return elements * item
        strides = [1] * len(shape)  # element strides of the tensor's C-ordered storage
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        # the offsets of the access's first two elements along its innermost dimension, read from the index arrays
        # where they broadcast (building every offset cost a pass over the whole access, per instruction)
        arrays = [np.asarray(a) for a in idx]
        shape_b = np.broadcast_shapes(*(a.shape for a in arrays))
        if len(shape_b) < 2 or shape_b[-1] < 2:
            return item

        def offset(pos: tuple[int, ...]) -> int:
            total = 0
            for a, s in zip(arrays, strides):
                at = tuple(0 if n == 1 else i for i, n in zip(pos[len(pos) - a.ndim:], a.shape))
                total += int(a[at]) * s
            return total

        first = (0,) * (len(shape_b) - 1)
        return abs(offset(first + (1,)) - offset(first + (0,))) * item

    def _comp_array(self, c: tuple) -> Any:
        if c[0] == "int":
            return int(c[1].value())
        if c[0] == "adv":
            return c[1].value()
        if c[0] == "ind":
            indices: Access = c[1]
            vals = indices._read()
            rows = np.zeros(indices.shape, dtype=np.int64) if vals is None else vals.astype(np.int64)
            if c[4] != 1:
                rows = rows * c[4]
            return rows if c[2] is None else rows + c[2].value()
        if c[0] == "dyn":
            return np.asarray(c[1].value(), dtype=np.int64)
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
        if valid is None and self.is_whole:
            return  # full slices [0, size) of every dimension are always in bounds
        t = self.tensor
        for dim, c in enumerate(self.comps):
            size = t.shape[dim]
            if c[0] in ("ind", "dyn"):
                continue  # checked at run time by the gather (IndexError like the compiler's simulator)
            if valid is None:  # (an expression's bounds are memoised once known: scalar_bounds returns them)
                if c[0] == "slice":
                    lo = c[1].scalar_bounds()[0]
                    hi = c[2].scalar_bounds()[1] - 1
                else:
                    lo, hi = c[1].scalar_bounds()
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
                if c[0] in ("ind", "dyn"):
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
        data = storage(t)
        if data is None:
            return None
        if t.unfilled:
            t.fill_pending()
        idx = self.np_index()
        if self.advanced:
            self._check_rows()
            sl = arange_slices(idx, data.shape)
            if sl is not None:  # same elements as the gather, as a strided copy (a fresh array, like a gather)
                return data[sl].copy()
        try:
            return data[idx]
        except IndexError as e:  # indirect index out of range: same wording as NumPy / the simulator
            if not any(c[0] in ("ind", "dyn") for c in self.comps):
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

    def bounded_indices(self) -> list[tuple[np.ndarray, int]]:
        """(index values, bound) of each indirect index that carries its own bound (``IndirectRows``): AWS checks a
        0.6 view's index against the dimension it selects among (oob_mode: 'the index array contains values that
        exceed the dimensions of the target array'), even where the row it names exists in the storage."""
        out = []
        for c in self.comps:
            if c[0] == "ind" and c[3] is not None:
                indices: Access = c[1]
                vals = indices._read()
                if vals is not None:
                    out.append((np.asarray(vals, dtype=np.int64), int(c[3])))
        return out

    def _check_rows(self) -> None:
        """An unmasked transfer: every bounded index must be in range (a masked or skipping transfer leaves the
        elements of one that is not out before this)."""
        for raw, bound in self.bounded_indices():
            bad = ((raw < 0) | (raw >= bound)).reshape(-1)
            if bad.any():
                raise IndexError(f"index {int(raw.reshape(-1)[int(np.argmax(bad))])} is out of bounds for axis 0 "
                                 f"with size {bound}")

    def _read_masked(self, valid: np.ndarray) -> np.ndarray | None:
        """Gather with masked-off positions clamped (they may lie out of bounds), shape ``self.shape``."""
        data = storage(self.tensor)
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
        if values is None or storage(t) is None:
            return
        values = dt.cast(np.asarray(values), t.dtype)
        if valid is None or (valid.ndim == 0 and bool(valid)) or all_true(valid):
            if t.unfilled:  # a first write of every element needs no uninitialised pattern underneath
                if self.is_whole:
                    t.unfilled = False
                else:
                    t.fill_pending()
            idx = self.np_index()
            data = owned(t)
            if self.advanced:  # a scatter through per-axis aranges is a strided assignment
                self._check_rows()
                idx = arange_slices(idx, data.shape) or idx
            data[idx] = np.broadcast_to(values, self.shape) if values.shape != self.shape else values
            return
        if valid.ndim == 0:
            return
        t.fill_pending()
        vm = np.broadcast_to(valid, self.shape)
        arrays = [np.broadcast_to(a, self.shape) for a in self.grid_arrays()]
        owned(t)[tuple(a[vm] for a in arrays)] = np.broadcast_to(values, self.shape)[vm]

    # --- in-place operators: t[idx] += x ----------------------------------------------------
    def _inplace(self, other: Any, op: str) -> Access:
        METHODS.accumulate(self, other, op)
        self.done = True
        return self

    def __getitem__(self, key: Any) -> Access:
        """Index an access again (e.g. a block of a block tensor, then a slice of it), or mask it as a matmul
        operand (``acc[mask]``, ``MaskedAccess``)."""
        if key.__class__ is MaskExpr:
            return MaskedAccess.of(self, key)
        return METHODS.subaccess(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, Access) and value.done:
            return
        METHODS.assign(METHODS.subaccess(self, key), value)

    @property
    def itemsize(self) -> int:
        return self.tensor.itemsize

    def reshape(self, *shape: Any, **kw: Any) -> Any:
        return METHODS.reshape_access(self, shape_argument("reshape", shape, kw))



#: AWS's docs on operand masking (v2.26.0 general/nki/api/nki.api.shared.rst:246-262): "we introduce "operand
#: masking" syntax for matmult APIs ... (currently only matmult APIs support operand masking ...)"
OPERAND_MASK_SOURCE = "nki.api.shared.rst, NKI API Masking: operand masking is for matmult APIs only"


class MaskedAccess(Access):
    """``tile[i_p, i_f][mask]``: an access with AWS's operand mask, the predicate that limits which elements of one
    matmul operand the instruction uses (the stationary's or moving's free axis, or the contraction rows), where a
    ``mask=`` over the output could not tell the two free axes apart.  Every other API refuses it
    (``ops.base.operand``), as AWS's docs say only matmult APIs support operand masking."""

    __slots__ = ("operand_mask",)

    @classmethod
    def of(cls, acc: Access, mask: Any) -> MaskedAccess:
        """``acc`` with the operand mask ``mask`` (a ``MaskExpr``); a second mask joins the first with ``&``."""
        if not isinstance(acc, Access):  # a whole tile (a program's ``W`` operand decodes to the tensor)
            acc = acc.full()
        m = object.__new__(cls)
        for name in Access.__slots__:
            try:
                setattr(m, name, getattr(acc, name))
            except AttributeError:
                pass
        old = getattr(acc, "operand_mask", None)
        m.operand_mask = mask if old is None else old & mask
        return m

    def __getitem__(self, key: Any) -> Access:
        if key.__class__ is MaskExpr:
            return MaskedAccess.of(self, key)
        raise TypeError("an operand-masked access cannot be indexed again; index the tile before masking it")

def _leading(axis: int, tensor: Any, comps: list[tuple]) -> bool:
    """``axis`` is the access's partition (or block) axis: the tensor's, or the first one an integer index
    does not drop (``data[b, indices, f]`` gathers rows of ``data[b]``)."""
    return axis == 0 or axis == tensor.par_axis or all(c[0] == "int" for c in comps)


_NO_LOOPS: frozenset = frozenset()

#: id of a basic access's NumPy index -> (that index, the tensor's shape and partition axis, the element stride
#: ``free_stride_bytes`` found): the accesses made of one key share their index (``again``, ``whole``), and every
#: instruction asks for its operands' (the index is held, so its id is unique)
_FREE_STRIDES: dict[int, tuple[tuple, tuple, int, int]] = {}


def whole_parts(tensor: Any) -> tuple:
    """The normalised parts of ``tensor[...]``.  Every op result is accessed whole, so they are
    built once per (shape, partition axis) and shared (they are only ever read); a rotating direct
    allocation maps the same index to other physical blocks, so it gets its own."""
    if getattr(tensor.buffer, "alloc", None) is not None and physical.rotation(tensor) is not None:
        proto = Access(tensor, ())
        np_idx = proto.np_index()
        return (tuple(proto.comps), proto.shape, proto.par_axis, np_idx, index_box(proto.logical_index()))
    return whole_parts_of_shape(tensor.shape, tensor.par_axis)
