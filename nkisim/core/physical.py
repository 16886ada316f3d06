"""Physical on-chip memory for directly allocated tensors (``ncc.sbuf/psum.mod_alloc``, ``ncc.sbuf/psum.alloc``).

Auto-allocated tiles get their own storage.  A directly allocated tensor has a ``Placement``: where each of its
logical blocks (the dimensions before ``nl.par_dim``) lives in the physical SBUF or PSUM, following AWS's
definition of modulo allocation (the reference function in the SDK's ``test_sbuf_modulo_alloc.py`` /
``test_psum_modulo_alloc.py``, which ``mod_alloc``'s docstring says it is "equivalent to"):

- along each block dimension ``d``, block ``i`` uses physical tile ``i % num_free_tiles[d]`` (SBUF) or bank
  ``base_bank + i % num_bank_tiles[d]`` (PSUM), the tile indices linearised in C order over the tile counts;
  an empty tuple means one tile, and dimensions past the tuple's length all share it;
- SBUF tiles lie ``fdim_size`` bytes apart (the tile's bytes per partition); PSUM tiles one bank (2 KiB) apart,
  since a PSUM tile never spans banks.

Storage is a NumPy view into one byte array per memory (partitions x bytes per partition), so two allocations
whose bytes overlap really alias each other (CS149's "direct allocation bad" kernel computes wrong values for
that reason) and a block tensor keeps only its physical tiles.  ``ncc.*.alloc(func)`` names the location of every
block with a function; ``fit`` turns a function that places blocks the way a modulo allocation does (AWS's
examples, nki-samples' pipelined attention) into that modulo allocation, so a program can hold it.

The cost model reads the same ``Placement`` (``cost.scheduler``): an access is a box of partitions and bytes of
the physical memory, so tensors placed on the same bytes depend on each other as on hardware, and a tensor
occupies the bytes its tiles span, not its logical size.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.buffers import PSUM_BANK_BYTES, Buffer, ModAlloc, PlacementFunction
from nkisim.core.context import active
from nkisim.core.errors import nki_error, shape_str

#: most logical blocks whose placement ``fit`` checks one by one (beyond it, a deterministic sample)
_FIT_CHECKS = 65536


class Placement(NamedTuple):
    """Where a directly allocated tensor's tiles are (plain values: traces hold it)."""

    space: str  # 'sbuf' or 'psum'
    partition: int  # first partition of logical block 0
    base: int  # byte offset, within a partition, of logical block 0 (PSUM: bank * bank bytes + address)
    parts: int  # partitions of one tile
    tile_bytes: int  # bytes per partition of one tile
    free: tuple[int, ...]  # a tile's free dimensions (C order within the tile's bytes)
    blocks: tuple[int, ...]  # physical tiles kept along each block dimension
    strides: tuple[int, ...]  # bytes between neighbouring tiles along each block dimension
    part_strides: tuple[int, ...]  # partitions between neighbouring tiles along each block dimension

    def extent(self) -> tuple[int, int]:
        """(one past the last partition, one past the last byte) any tile uses."""
        last = tuple(b - 1 for b in self.blocks)
        return (self.partition + sum(j * q for j, q in zip(last, self.part_strides)) + self.parts,
                self.base + sum(j * s for j, s in zip(last, self.strides)) + self.tile_bytes)

    def tiles(self) -> int:
        """Physical tiles the tensor keeps."""
        return math.prod(self.blocks)

    def span(self, box: tuple) -> tuple[tuple[int, int], tuple[int, int]]:
        """The (partitions, bytes) a region of the tensor touches, ``box`` being per-dimension (lo, hi) ranges of
        the logical tensor: conservative (the box around every tile the region touches)."""
        nb = len(self.blocks)
        jlo, jhi = [], []
        for (lo, hi), k in zip(box[:nb], self.blocks):
            if hi - lo >= k or lo // k != (hi - 1) // k:  # covers (or wraps through) every physical tile
                jlo.append(0)
                jhi.append(k - 1)
            else:
                jlo.append(lo % k)
                jhi.append((hi - 1) % k)
        p0 = self.partition + sum(j * q for j, q in zip(jlo, self.part_strides))
        p1 = self.partition + sum(j * q for j, q in zip(jhi, self.part_strides))
        b0 = self.base + sum(j * s for j, s in zip(jlo, self.strides))
        b1 = self.base + sum(j * s for j, s in zip(jhi, self.strides))
        rest = box[nb:]
        plo, phi = rest[0] if rest else (0, self.parts)
        flo, fhi = self.free_bytes(rest[1:])
        return (p0 + plo, p1 + phi), (b0 + flo, b1 + fhi)

    def free_bytes(self, free_box: tuple) -> tuple[int, int]:
        """Byte range within one tile's partition of a box over its free dimensions (C order; conservative)."""
        if not free_box or len(free_box) != len(self.free) or not self.free:
            return 0, self.tile_bytes
        item = self.tile_bytes // max(1, math.prod(self.free))
        lo = hi = 0
        for (a, b), n in zip(free_box, self.free):
            lo = lo * n + a
            hi = hi * n + max(a, b - 1)
        return lo * item, (hi + 1) * item


def _lin_strides(tiles: tuple[int, ...], nb: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(modulus, linear stride in tiles) per block dimension of one modulo component, as AWS's reference
    function computes them: an empty tuple is all ones; dimensions past the tuple's length are dropped."""
    shape = tuple(int(v) for v in tiles) if tiles else (1,) * nb
    mods, lins = [], []
    for d in range(nb):
        if d < len(shape):
            mods.append(max(1, shape[d]))
            lins.append(math.prod(shape[d + 1:]))
        else:
            mods.append(1)
            lins.append(0)
    return tuple(mods), tuple(lins)


def placement(alloc: ModAlloc, shape: tuple[int, ...], par: int, dtype: np.dtype, bank_bytes: int) -> Placement:
    """The ``Placement`` of a tensor of ``shape`` (partition axis ``par``) allocated by ``alloc``."""
    nb = par
    blocks_logical = shape[:par]
    parts = shape[par]
    tile_bytes = max(1, math.prod(shape[par + 1:])) * dt.storage_dtype(dtype).itemsize
    if alloc.space == "psum":
        comps = [(alloc.num_free_tiles, bank_bytes, "byte"), (alloc.num_par_tiles, parts, "part")]
        base = int(alloc.base_bank or 0) * bank_bytes + int(alloc.base_addr)
    else:
        comps = [(alloc.num_free_tiles, tile_bytes, "byte"), (alloc.num_par_tiles, parts, "part")]
        base = int(alloc.base_addr)
    blocks, strides, part_strides = [], [], []
    for d in range(nb):
        period, byte_step, part_step = 1, 0, 0
        for tiles, scale, unit in comps:
            mods, lins = _lin_strides(tiles, nb)
            if unit == "byte" and alloc.tile_steps:  # an allocation function's own spacing (fit)
                lins = tuple(alloc.tile_steps[e] if e < len(alloc.tile_steps) else lins[e] for e in range(nb))
            if mods[d] <= 1 or lins[d] == 0:
                continue
            if period not in (1, mods[d]):
                raise ValueError(f"direct allocation {alloc!r}: block dimension {d} rotates over {period} and "
                                 f"{mods[d]} tiles at once; nkisim needs one tile count per block dimension")
            period = mods[d]
            if unit == "byte":
                byte_step += lins[d] * scale
            else:
                part_step += lins[d] * scale
        blocks.append(min(blocks_logical[d], period))
        strides.append(byte_step)
        part_strides.append(part_step)
    return Placement(alloc.space, int(alloc.base_partition), base, parts, tile_bytes, tuple(shape[par + 1:]),
                     tuple(blocks), tuple(strides), tuple(part_strides))


def check(place: Placement, target: Any, label: str, shape: tuple[int, ...]) -> None:
    """The compiler's placement rules: every tile inside the memory (usable SBUF bytes per partition, PSUM's
    banks), a PSUM tile inside one bank, and the partition start rules of the ISA (spec §1.1)."""
    width = target.sbuf_partition_bytes if place.space == "sbuf" else target.psum_partition_bytes
    p_end, b_end = place.extent()
    where = f"'{shape_str(label, shape)}' placed at byte {place.base}, partition {place.partition}"
    if p_end > target.partitions:
        raise nki_error("err_num_partition_exceed_arch_limit",
                        f"{where}: its tiles reach partition {p_end - 1}, past the {target.partitions} partitions of "
                        f"{place.space.upper()}")
    if b_end > width:
        raise nki_error("err_sbuf_free_dim_exceed_partition_size" if place.space == "sbuf" else
                        "err_psum_tile_exceed_bank_size",
                        f"{where}: its {place.tiles()} physical tile(s) of {place.tile_bytes} bytes per partition end at "
                        f"byte {b_end}, past the {width} bytes per partition {place.space.upper()} has"
                        + (" for kernels (the compiler keeps the rest)" if place.space == "sbuf" else ""))
    if place.space == "psum":
        bank = target.psum_bank_bytes
        starts = {place.base + sum(j * s for j, s in zip(js, place.strides))
                  for js in itertools.product(*(range(b) for b in place.blocks))}
        for s in starts:
            if s % bank + place.tile_bytes > bank:
                raise nki_error("err_psum_tile_exceed_bank_size",
                                f"{where}: a PSUM tile of {place.tile_bytes} bytes per partition at byte {s} crosses "
                                f"a {bank}-byte bank boundary (a PSUM tile never spans banks)")


def _memory(ctx: Any, space: str) -> np.ndarray:
    """The bytes of ``space`` on the core the kernel runs on now: every NeuronCore has its own SBUF and PSUM, so the
    two logical cores of an LNC2 launch that place a tensor at one address hold two tensors (nki-library's mlp_tkg
    exchanges its gate/up partial sums between such buffers with ``sendrecv``)."""
    mems = ctx.physical
    key = space if not ctx.core else f"{space}@{ctx.core}"
    mem = mems.get(key)
    if mem is None:
        tgt = ctx.target
        width = tgt.sbuf_partition_bytes if space == "sbuf" else tgt.psum_partition_bytes
        mem = np.full((tgt.partitions, width), 0xFF, dtype=np.uint8)  # 0xFF.. reads back as NaN in every float dtype
        mems[key] = mem
    return mem


def view(ctx: Any, shape: tuple[int, ...], par: int, dtype: np.dtype, place: Placement) -> np.ndarray:
    """A typed view of the physical memory laid out as ``place`` says: shape ``blocks + (P,) + free``."""
    mem = _memory(ctx, place.space)
    d = dt.storage_dtype(dtype)
    free = shape[par + 1:]
    width = mem.shape[1]
    free_strides = []
    step = d.itemsize
    for s in reversed(free):
        free_strides.append(step)
        step *= s
    free_strides.reverse()
    block_strides = tuple(q * width + s for s, q in zip(place.strides, place.part_strides))
    strides = block_strides + (width,) + tuple(free_strides)
    offset = place.partition * width + place.base
    return np.ndarray(place.blocks + (shape[par],) + tuple(free), dtype=d, buffer=mem, offset=offset, strides=strides)


def of(tensor: Any) -> Placement | None:
    """The ``Placement`` of a directly allocated tensor (its root's), None for anything else; computed once."""
    root = tensor
    while root.base is not None:
        root = root.base
    alloc = getattr(root.buffer, "alloc", None)
    if alloc is None or root.buffer.family == "hbm":
        return None
    hit = root.__dict__.get("_placement")
    if hit is None:
        ctx = active()
        bank = ctx.target.psum_bank_bytes if ctx is not None else PSUM_BANK_BYTES
        hit = root.__dict__["_placement"] = placement(alloc, root.shape, root.par_axis, root.dtype, bank)
    return hit


def rotation(tensor: Any) -> tuple[int, ...] | None:
    """Physical block counts of a rotating direct allocation (None when indices map 1:1)."""
    if tensor.par_axis == 0 or tensor.base is not None or getattr(tensor.buffer, "alloc", None) is None:
        return None
    place = of(tensor)
    if place is None:
        return None
    return None if place.blocks == tensor.shape[: tensor.par_axis] else place.blocks


# --- ncc.sbuf.alloc(func) / ncc.psum.alloc(func) -------------------------------------------------------------
def resolve(buffer: Any, shape: Any, dtype: Any, bank_bytes: int) -> Any:
    """``buffer`` with a placement function (``ncc.*.alloc(func)``) turned into the modulo allocation that places
    every block of a tensor of ``shape`` where the function does; any other buffer as it is."""
    alloc = getattr(buffer, "alloc", None)
    if not isinstance(alloc, PlacementFunction):
        return buffer
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    par = next((i for i, s in enumerate(dims) if type(s).__name__ == "par_dim"), 0)
    plain = tuple(int(s) for s in dims)
    return Buffer(alloc.space, fit(alloc.func, alloc.space, plain, par, dt.normalize(dtype), bank_bytes))


def _placement_call(func: Callable[..., Any]) -> Callable[[tuple[int, ...], int, int], Any]:
    """How the compiler calls an allocation function: by the documented names ``idx``, ``pdim_size`` and
    ``fdim_size`` where the function takes them, which is what lets ``functools.partial(f, bank_map=...)`` of a
    ``f(bank_map, idx, pdim_size, fdim_size)`` work (nki-samples' allocated attention); positionally otherwise (a
    function whose parameters have other names)."""
    try:
        inspect.signature(func).bind(idx=(), pdim_size=0, fdim_size=0)
    except (TypeError, ValueError):
        return lambda idx, pdim, fdim: func(idx, pdim, fdim)
    return lambda idx, pdim, fdim: func(idx=idx, pdim_size=pdim, fdim_size=fdim)


def fit(func: Callable[..., Any], space: str, shape: tuple[int, ...], par: int, dtype: np.dtype,
        bank_bytes: int) -> ModAlloc:
    """The ``ModAlloc`` that places each block of a ``shape`` tensor where ``func(idx, pdim_size, fdim_size)``
    says (SBUF: ``(start_partition, byte_addr)``; PSUM: ``(bank_id, start_partition, byte_addr)``), or the
    error saying the function is not a modulo allocation nkisim can hold."""
    blocks = shape[:par]
    pdim = shape[par]
    fdim = max(1, math.prod(shape[par + 1:])) * dt.storage_dtype(dtype).itemsize
    width = 3 if space == "psum" else 2
    call = _placement_call(func)

    def loc(idx: tuple[int, ...]) -> tuple[int, ...]:
        got = call(tuple(idx), pdim, fdim)
        vals = tuple(int(v) for v in got) if isinstance(got, (tuple, list)) else ()
        if len(vals) != width:
            what = "(bank_id, start_partition, byte_addr)" if space == "psum" else "(start_partition, byte_addr)"
            raise ValueError(f"ncc.{space}.alloc: the allocation function returned {got!r} for block {tuple(idx)}; "
                             f"it must return {what}")
        return vals

    origin = loc((0,) * len(blocks))
    scales = (1, pdim, fdim) if space == "psum" else (pdim, fdim)
    tile_comp = 0 if space == "psum" else 1  # the component whose tiles may be spaced freely: banks, SBUF bytes
    own_steps: tuple[int, ...] = ()
    tiles: list[tuple[int, ...]] = []
    for c, scale in enumerate(scales):
        mods = []
        for d, n in enumerate(blocks):
            unit = [0] * len(blocks)
            period = n
            for k in range(1, n):
                unit[d] = k
                if loc(tuple(unit))[c] == origin[c]:
                    period = k
                    break
            mods.append(1 if n == 1 or period == 1 else period)
        steps = []
        for d in range(len(blocks)):
            unit = [0] * len(blocks)
            unit[d] = 1
            steps.append(loc(tuple(unit))[c] - origin[c] if mods[d] > 1 else 0)
        want = [math.prod(mods[d + 1:]) * scale for d in range(len(blocks))]
        if any(s != w for s, w, m in zip(steps, want, mods) if m > 1):
            # blocks evenly spaced, but not in mod_alloc's C order: held as steps of whole tiles (SBUF bytes, PSUM
            # banks) -- nki-samples' allocated attention puts two PSUM blocks in banks 1 and 5
            if c == tile_comp and any(m > 1 and s < 0 for s, m in zip(steps, mods)):
                unit = "bank" if space == "psum" else "byte"
                raise ValueError(f"ncc.{space}.alloc: the allocation function places later blocks at lower addresses "
                                 f"({unit} steps {steps} along the block dimensions); nkisim holds evenly spaced "
                                 f"blocks in increasing order only: number the blocks the other way round")
            if c != tile_comp or any(m > 1 and (s <= 0 or s % scale) for s, m in zip(steps, mods)):
                raise _not_modulo(space, c, blocks, steps)
            own_steps = tuple(s // scale if m > 1 else 0 for s, m in zip(steps, mods))
        tiles.append(tuple(mods) if any(m > 1 for m in mods) else ())

    def lin_steps(c: int) -> tuple[int, ...]:
        mods = tiles[c] or (1,) * len(blocks)
        if c == tile_comp and own_steps:
            return own_steps
        return tuple(math.prod(mods[d + 1:]) for d in range(len(blocks)))

    def modulo(idx: tuple[int, ...]) -> tuple[int, ...]:
        out = []
        for c, scale in enumerate(scales):
            mods = tiles[c] or (1,) * len(blocks)
            lin = sum((i % m) * k for i, m, k in zip(idx, mods, lin_steps(c)))
            out.append(origin[c] + lin * scale)
        return tuple(out)

    count = math.prod(blocks)
    every = itertools.product(*(range(n) for n in blocks))
    sample = every if count <= _FIT_CHECKS else itertools.islice(every, 0, None, max(1, count // _FIT_CHECKS))
    for idx in sample:
        if loc(idx) != modulo(idx):
            raise _not_modulo(space, None, blocks, loc(idx), idx)
    if space == "psum":
        bank, part, addr = origin
        if tiles[1] or tiles[2]:
            raise ValueError("ncc.psum.alloc: every block must start at the same partition and byte of its bank "
                             "(start_partition and byte_addr constant, as AWS's release requires); only the bank "
                             "may change")
        return ModAlloc("psum", addr, part, (), tiles[0], bank, own_steps)
    part, addr = origin
    return ModAlloc("sbuf", addr, part, tiles[0], tiles[1], None, own_steps)


def _not_modulo(space: str, comp: int | None, blocks: tuple[int, ...], got: Any, idx: Any = None) -> Exception:
    where = f" (block {idx} is placed at {got})" if idx is not None else ""
    return ValueError(f"ncc.{space}.alloc: nkisim holds an allocation function as a modulo allocation: along each block "
                      f"dimension the blocks must cycle through evenly spaced tiles, laid out in C order as "
                      f"ncc.{space}.mod_alloc does; this function does not place the blocks of a {list(blocks)} "
                      f"block shape that way{where}. Use ncc.{space}.mod_alloc, or a function of that form")
