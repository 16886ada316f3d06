"""Memory spaces (HBM, SBUF, PSUM) and the hardware limits tied to them.

The limits are the default target's (``core.target``); they are the same on every target nkisim
models (tests/test_target.py holds every target file to that), so the hot checks read module
constants.  What differs per target (SBUF bytes per partition) is read from ``ctx.target``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple

from nkisim.core import target as _target


class Space(str, Enum):
    """A memory space, by the name NKI gives it (``Buffer.space`` holds the name; records hold the member)."""

    SBUF = "sbuf"
    PSUM = "psum"
    HBM = "hbm"
    PRIVATE_HBM = "private_hbm"
    SHARED_HBM = "shared_hbm"


HBM_SPACES = (Space.HBM.value, Space.PRIVATE_HBM.value, Space.SHARED_HBM.value)
#: every memory space a buffer names
SPACES = tuple(s.value for s in Space)
_LIMITS = _target.get(_target.DEFAULT)
PMAX = _LIMITS.partitions
PSUM_FMAX = _LIMITS.psum_free_max
PSUM_BANK_BYTES = _LIMITS.psum_bank_bytes
PSUM_BANKS = _LIMITS.psum_banks


class BufferInfo(NamedTuple):
    """What the cost model's buffer mapping needs to know about an on-chip root tensor (plain values,
    so traces hold no tensors).  Built once per tensor (``cost.trace.buffer_info``, ``Tensor.result``)."""

    root: int  # uid of the root tensor
    space: str  # 'sbuf' or 'psum'
    site: tuple[str, int] | None  # (file, line) of its nl.ndarray, None for an op's result tile
    place: Any  # core.physical.Placement of a directly allocated tensor (where its tiles are), None otherwise
    in_loop: bool  # allocated inside a loop (its buffers rotate between iterations)
    par_axis: int  # the partition axis (block dimensions come before it)
    bytes_per_partition: int


class Buffer:
    """A memory space (``nl.sbuf``, ``nl.psum``, ``nl.hbm``…), optionally with a direct allocation."""

    def __init__(self, space: str, alloc: Any = None) -> None:
        self.space = space
        self.alloc = alloc
        #: 'hbm', 'sbuf' or 'psum': read for every operand of every op, and ``space`` never changes.
        #: A plain attribute, not a cached_property: the interpreter cannot specialise reading an
        #: instance value that shadows a class-level descriptor, so that costs a full lookup each time.
        self.family = "hbm" if space in HBM_SPACES else space

    def __repr__(self) -> str:
        return f"nl.{self.space}" if self.alloc is None else f"{self.space}.mod_alloc({self.alloc})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Buffer) and (self.space, self.alloc) == (other.space, other.alloc)

    def __hash__(self) -> int:
        return hash(self.space)


sbuf = Buffer("sbuf")
psum = Buffer("psum")
hbm = Buffer("hbm")
private_hbm = Buffer("private_hbm")
shared_hbm = Buffer("shared_hbm")


class ModAlloc:
    """Direct allocation request from ``ncc.sbuf.mod_alloc`` / ``ncc.psum.mod_alloc`` (core.physical places it).

    For PSUM, ``num_free_tiles`` holds ``num_bank_tiles`` (tiles one bank apart) and ``base_bank`` the first
    bank: a PSUM tile never spans banks, and PSUM tiles are placed by bank (AWS: "partial bank allocation is
    not allowed")."""

    def __init__(self, space: str, base_addr: int = 0, base_partition: int = 0,
                 num_par_tiles: tuple = (), num_free_tiles: tuple = (), base_bank: int | None = None,
                 tile_steps: tuple = ()) -> None:
        self.space = space
        self.base_addr = base_addr
        self.base_partition = base_partition
        self.num_par_tiles = tuple(num_par_tiles)
        self.num_free_tiles = tuple(num_free_tiles)
        self.base_bank = base_bank
        #: per block dimension, how many tiles (SBUF) or banks (PSUM) apart its blocks are, where an allocation
        #: function spaced them other than mod_alloc's C order (banks 1 and 5 for two blocks); empty: C order
        self.tile_steps = tuple(tile_steps)

    def __repr__(self) -> str:
        return f"base_addr={self.base_addr}, num_free_tiles={self.num_free_tiles}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModAlloc) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((self.space, self.base_addr))


class PlacementFunction:
    """``ncc.sbuf.alloc(func)`` / ``ncc.psum.alloc(func)``: a function naming the location of every logical block.

    It needs the tensor's shape, so an allocation call resolves it into the equivalent ``ModAlloc``
    (core.physical.resolve) before the call is recorded: a program holds data, never a kernel's function."""

    def __init__(self, space: str, func: Any) -> None:
        if not callable(func):
            raise TypeError(f"ncc.{space}.alloc expects a function (idx, pdim_size, fdim_size) -> location, "
                            f"got {type(func).__name__}")
        self.space = space
        self.func = func

    def __repr__(self) -> str:
        return f"alloc({getattr(self.func, '__name__', 'func')})"
