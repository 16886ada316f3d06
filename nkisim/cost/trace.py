"""The instruction trace: one record per simulated instruction, consumed by the cost model.

The functional pass appends an ``Instr`` for every NKI API call that would become hardware
instructions.  Records hold only plain numbers (never tensor data) so long traces stay small.
Regions are ``(root tensor id, tensor id, box)`` with ``box`` a tuple of per-dimension
``(lo, hi_exclusive)`` ranges in the tensor's own coordinates.
"""

from __future__ import annotations

from typing import Any

#: Engines of a NeuronCore: Tensor (PE array), Vector, Scalar (activation), GpSimd, and the DMA queues.
ENGINES = ("pe", "dve", "act", "pool", "dma")


class Instr:
    """One instruction as issued to an engine."""

    __slots__ = ("op", "engine", "p", "n", "dtypes", "nbytes", "reads", "writes", "loc", "acc",
                 "extra", "instance", "loops")

    def __init__(self, op: str, engine: str, p: int, n: int, dtypes: tuple, nbytes: int,
                 reads: tuple, writes: tuple, loc: tuple[str, int], acc: bool = False,
                 extra: dict | None = None, instance: int = 0, loops: tuple = ()) -> None:
        self.op = op
        self.engine = engine
        self.p = p  # partitions touched
        self.n = n  # elements per partition (NEP) of the largest access pattern
        self.dtypes = dtypes  # (input dtype names..., output dtype name)
        self.nbytes = nbytes  # bytes moved (DMA) or written
        self.reads = reads
        self.writes = writes
        self.loc = loc  # (filename, lineno) of the student's line
        self.acc = acc  # PSUM accumulation (+=)
        self.extra = extra or {}
        self.instance = instance  # SPMD instance number
        self.loops = loops  # ((loop uid, kind, iteration), ...) of enclosing loops

    def __repr__(self) -> str:
        return (f"Instr({self.op} on {self.engine}, p={self.p}, n={self.n}, bytes={self.nbytes}, "
                f"line={self.loc[1]})")

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}
