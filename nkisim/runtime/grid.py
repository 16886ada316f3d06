"""SPMD launch grids: ``kernel[4, 2]``, ``nl.nc(2)``, ``nl.spmd_dim(nl.nc(2), 2)``.

Instances run one after another on the CPU (the legacy compiler also runs them serially on one
NeuronCore).  Each instance records which physical core it would run on, so the cost model can
spread ``nl.nc(k)`` grids over cores on trn2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core.errors import nki_error
from nkisim.core.target import Target


class NC:
    """``nl.nc(k)``: a grid dimension spread over k NeuronCores (trn2 logical cores)."""

    def __init__(self, k: int) -> None:
        self.k = int(k)

    def __mul__(self, other: Any) -> SpmdDim:
        return SpmdDim(self, other)

    def __rmul__(self, other: Any) -> SpmdDim:
        return SpmdDim(other, self)

    def __repr__(self) -> str:
        return f"nc({self.k})"


class SpmdDim:
    """``nl.spmd_dim(a, b)``: one grid dimension of size a*b, with a core split given by the order."""

    def __init__(self, *dims: Any) -> None:
        self.dims = dims

    @property
    def size(self) -> int:
        return int(np.prod([d.k if isinstance(d, NC) else int(d) for d in self.dims]))

    def core_of(self, i: int) -> int:
        # mixed-radix decomposition, the first dim outermost; the NC dim's digit is the core
        digits = []
        sizes = [d.k if isinstance(d, NC) else int(d) for d in self.dims]
        for s in reversed(sizes):
            digits.append(i % s)
            i //= s
        digits.reverse()
        for d, digit in zip(self.dims, digits):
            if isinstance(d, NC):
                return digit
        return 0

    def __repr__(self) -> str:
        return f"spmd_dim{self.dims!r}"


def parse_grid(grid: Any, target: Target) -> tuple[tuple[int, ...], list[Any]]:
    """Grid spec -> (sizes, per-dimension spec objects).  Multi-core dims need a target with several
    cores per launch (trn2)."""
    if not isinstance(grid, tuple):
        grid = (grid,)
    sizes, specs = [], []
    for g in grid:
        if isinstance(g, NC):
            sizes.append(g.k)
        elif isinstance(g, SpmdDim):
            sizes.append(g.size)
        else:
            sizes.append(int(g))
        specs.append(g)
        if isinstance(g, (NC, SpmdDim)) and target.spmd_cores < 2:
            raise nki_error("err_spmd_multi_core_not_supported",
                            f"SPMD grid with multi neuron cores is not supported on {target} (each {target} NeuronCore "
                            f"runs its own kernel); use an integer grid, or target trn2")
    return tuple(sizes), specs


def check_nonempty(grid: Any) -> None:
    """Refuse a launch grid with an empty dimension when it is given: ``kernel[0](...)`` would otherwise
    run no instance at all and return nothing, which looks like a kernel that silently produced no output."""
    dims = grid if isinstance(grid, tuple) else (grid,)
    for d in dims:
        size = d.k if isinstance(d, NC) else d.size if isinstance(d, SpmdDim) else d
        if isinstance(size, (int, np.integer)) and int(size) < 1:
            raise ValueError(f"SPMD launch grid {list(dims)} has a dimension of size {int(size)}: every grid "
                             f"dimension must be at least 1 (kernel[n] launches n instances)")


def core_of(index: tuple[int, ...], specs: list[Any]) -> int:
    """Physical core of an instance (0 unless a dimension is spread with nl.nc)."""
    for i, g in zip(index, specs):
        if isinstance(g, NC):
            return i
        if isinstance(g, SpmdDim):
            return g.core_of(i)
    return 0


def cores(specs: list[Any]) -> int:
    n = 1
    for g in specs:
        if isinstance(g, NC):
            n = max(n, g.k)
        elif isinstance(g, SpmdDim):
            n = max(n, max((d.k for d in g.dims if isinstance(d, NC)), default=1))
    return n


#: the logical-core degrees an NKI 0.6 launch may ask for (``kernel[2]``)
LNC_DEGREES = (1, 2)


def parse_lnc(grid: Any, target: Target) -> tuple[tuple[int, ...], list[Any]]:
    """NKI 0.6's ``kernel[n]``: ``n`` is the logical NeuronCore degree (1 or 2), not a grid of instances.  LNC2
    runs the kernel on two physical cores (program ids 0 and 1), which needs a target with two cores per
    launch (trn2 and later)."""
    dims = grid if isinstance(grid, tuple) else (grid,)
    if len(dims) != 1 or isinstance(dims[0], bool) or not isinstance(dims[0], (int, np.integer)) \
            or int(dims[0]) not in LNC_DEGREES:
        raise nki_error("err_spmd_multi_core_not_supported",
                        f"kernel[{', '.join(map(str, dims))}]: NKI 0.6 launches take one number in brackets, the "
                        f"logical NeuronCore degree, which is 1 or 2")
    n = int(dims[0])
    if n == 1:
        return (1,), [1]
    if target.spmd_cores < n:
        raise nki_error("err_spmd_multi_core_not_supported",
                        f"kernel[{n}]: logical NeuronCore degree {n} is not supported on {target} (a {target} logical "
                        f"core is one physical NeuronCore); launch without brackets, or target trn2")
    return parse_grid(NC(n), target)
