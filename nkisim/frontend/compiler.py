"""``neuronxcc.nki.compiler`` (``ncc``): allocation control and compiler directives.

Directives that only steer the real compiler's passes are accepted and have no effect on results;
``mod_alloc`` records the direct allocation so the cost model can rotate physical buffers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from nkisim.core.buffers import Buffer, ModAlloc, PlacementFunction
from nkisim.core.buffers import psum as _psum
from nkisim.core.buffers import sbuf as _sbuf


def skip_middle_end_transformations(func: Callable) -> Callable:
    """Results are unchanged; the cost model keeps NKI loops rolled for such kernels (their DMAs
    then need runtime descriptor generation on trn2)."""
    for obj in (func, getattr(func, "func", None)):
        if obj is not None:
            obj.__nki_skip_middle_end__ = True
    return func


def enable_stack_allocator(func: Callable | None = None, **_: Any) -> Any:
    """Mark a kernel (above or below ``@nki.jit``) for the stack allocator: the simulator then raises
    the compiler's stack overflow errors when the tensors live in a scope exceed SBUF or PSUM."""

    def mark(f: Any) -> Any:
        for obj in (f, getattr(f, "func", None)):
            if obj is not None:
                obj.__nki_stack_allocator__ = True
        return f

    return mark(func) if func is not None else mark


def force_auto_alloc(func: Callable | None = None, **_: Any) -> Any:
    return func if func is not None else (lambda f: f)


def multi_buffer(factor: int = 2) -> contextlib.AbstractContextManager:
    return contextlib.nullcontext()


def no_reorder() -> contextlib.AbstractContextManager:
    return contextlib.nullcontext()


def allocation_scope() -> contextlib.AbstractContextManager:
    return contextlib.nullcontext()


class _SbufAlloc:
    @staticmethod
    def auto_alloc() -> Buffer:
        return _sbuf

    @staticmethod
    def alloc(func: Callable) -> Buffer:
        """``ncc.sbuf.alloc(func)``: each logical block at ``func(idx, pdim_size, fdim_size) ->
        (start_partition, byte_addr)``.  The allocation call resolves it against the tensor's shape into the
        equivalent modulo allocation (core.physical.fit), which nkisim places like ``mod_alloc``."""
        return Buffer("sbuf", PlacementFunction("sbuf", func))

    @staticmethod
    def mod_alloc(base_addr: int = 0, *, base_partition: int = 0, num_par_tiles: tuple = (),
                  num_free_tiles: tuple = ()) -> Buffer:
        """``ncc.sbuf.mod_alloc``: block ``i`` of each block dimension in physical tile ``i % num_free_tiles``,
        the tiles ``fdim_size`` bytes apart from ``base_addr`` (core.physical, after AWS's reference function)."""
        return Buffer("sbuf", ModAlloc("sbuf", base_addr, base_partition, num_par_tiles, num_free_tiles))


class _PsumAlloc:
    @staticmethod
    def auto_alloc() -> Buffer:
        return _psum

    @staticmethod
    def alloc(func: Callable) -> Buffer:
        """``ncc.psum.alloc(func)``: each logical block at ``func(idx, pdim_size, fdim_size) ->
        (bank_id, start_partition, byte_addr)``, resolved like ``ncc.sbuf.alloc``."""
        return Buffer("psum", PlacementFunction("psum", func))

    @staticmethod
    def mod_alloc(base_bank: int = 0, *, base_addr: int = 0, base_partition: int = 0, num_bank_tiles: tuple = (),
                  num_par_tiles: tuple = (), num_free_tiles: tuple = ()) -> Buffer:
        """``ncc.psum.mod_alloc``: block ``i`` of each block dimension in bank ``base_bank + i % num_bank_tiles``
        (one PSUM tile per bank: a tile never spans banks, and PSUM is allocated by bank)."""
        for pname, tiles in (("num_par_tiles", num_par_tiles), ("num_free_tiles", num_free_tiles)):
            if any(int(v) != 1 for v in tiles):
                raise ValueError(f"ncc.psum.mod_alloc({pname}={tuple(tiles)}): nkisim places PSUM tiles one per bank "
                                 f"(num_bank_tiles); several tiles within a bank are not supported")
        return Buffer("psum", ModAlloc("psum", base_addr, base_partition, (), num_bank_tiles, base_bank))


sbuf = _SbufAlloc()
psum = _PsumAlloc()
