"""``neuronxcc.nki.compiler`` (``ncc``): allocation control and compiler directives.

Directives that only steer the real compiler's passes are accepted and have no effect on results;
``mod_alloc`` records the direct allocation so the cost model can rotate physical buffers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from nkisim.core.buffers import Buffer, ModAlloc
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
    def alloc(func: Callable | None = None) -> Buffer:
        """``ncc.sbuf.alloc(func)``: allocation by a user function of (index, pdim, fdim).

        Results do not depend on where a tile lives, so the tensor is placed like an auto-allocated
        one (the cost model then sees no buffer rotation for it).
        """
        return _sbuf

    @staticmethod
    def mod_alloc(base_addr: int = 0, *, base_partition: int = 0, num_par_tiles: tuple = (),
                  num_free_tiles: tuple = ()) -> Buffer:
        return Buffer("sbuf", ModAlloc("sbuf", base_addr, base_partition, num_par_tiles, num_free_tiles))


class _PsumAlloc:
    @staticmethod
    def auto_alloc() -> Buffer:
        return _psum

    @staticmethod
    def alloc(func: Callable | None = None) -> Buffer:
        """``ncc.psum.alloc(func)``: allocation by a user function returning (bank, partition, address);
        placed like an auto-allocated PSUM tensor (see ``_SbufAlloc.alloc``)."""
        return _psum

    @staticmethod
    def mod_alloc(base_bank: int = 0, *, base_addr: int = 0, base_partition: int = 0, num_bank_tiles: tuple = (),
                  **_: Any) -> Buffer:
        return Buffer("psum", ModAlloc("psum", base_addr, base_partition, (), num_bank_tiles, base_bank))


sbuf = _SbufAlloc()
psum = _PsumAlloc()
