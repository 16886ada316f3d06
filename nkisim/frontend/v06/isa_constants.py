"""``nki.isa``'s enums (also importable as ``nki.isa.constants``), as NKI 0.6 defines them.

They are plain ``Enum`` classes, not ``IntEnum``: NKI 0.6 refuses integers where these are expected, and
compares members structurally.  ``canonical`` maps a member to the number the op registry uses for it (the
legacy front end's numbering, which ``dge_mode`` changed in 0.6).
"""

from __future__ import annotations

import enum as _enum

from nkisim.frontend import isa as _legacy


class engine(_enum.Enum):  # noqa: N801 - NKI's name
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


class reduce_cmd(_enum.Enum):  # noqa: N801
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(_enum.Enum):  # noqa: N801
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(_enum.Enum):  # noqa: N801
    error = 0
    skip = 1


class matmul_perf_mode(_enum.Enum):  # noqa: N801
    none = 0
    double_row = 1


class nc_version(_enum.Enum):  # noqa: N801
    """NeuronCore generations, ordered: AWS's language guide allows only == / != on enum values
    (nki-language-guide.rst, "No other binary operators on enum values are supported"), but nki-library's kernels,
    validated on the compiler, write ``nisa.get_nc_version() >= nisa.nc_version.gen3`` and ``<= gen2`` (rule
    ``enum.nc_version_order``): generations compare by number."""

    gen2 = 2
    gen3 = 3
    gen4 = 4

    # rule: enum.nc_version_order
    def __lt__(self, other: object) -> bool:
        return self.value < other.value if isinstance(other, nc_version) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.value <= other.value if isinstance(other, nc_version) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.value > other.value if isinstance(other, nc_version) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.value >= other.value if isinstance(other, nc_version) else NotImplemented


class dma_engine(_enum.Enum):  # noqa: N801
    dma = 1
    gpsimd_dma = 2


#: deprecated aliases NKI 0.6 still names
tensor_engine, vector_engine, scalar_engine = engine.tensor, engine.vector, engine.scalar
gpsimd_engine, unknown_engine = engine.gpsimd, engine.unknown

#: 0.6 enum -> the registry's enum of the same meaning (its numbers are what the ops compare against)
_REGISTRY_ENUMS: dict[type[_enum.Enum], type[_enum.IntEnum]] = {
    reduce_cmd: _legacy.reduce_cmd, dge_mode: _legacy.dge_mode, oob_mode: _legacy.oob_mode,
}


def canonical(member: _enum.Enum) -> int:
    """The number the op registry uses for ``member`` (``dge_mode.hwdge`` is 2 in 0.6 but 3 in the registry)."""
    legacy = _REGISTRY_ENUMS.get(type(member))
    return int(legacy[member.name]) if legacy is not None else int(member.value)
