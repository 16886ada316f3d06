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


class Trace(list):
    """The instruction list of one launch plus the kernel-level facts the cost model needs.

    ``skip_middle_end``: the kernel is decorated with ``skip_middle_end_transformations``, so NKI
    loops stay rolled and a DMA inside one has loop-dependent addresses (runtime descriptors).
    """

    skip_middle_end = False


class Instr:
    """One instruction as issued to an engine."""

    __slots__ = ("op", "engine", "p", "n", "dtypes", "nbytes", "reads", "writes", "loc", "acc",
                 "extra", "instance", "loops", "bufs", "core", "run")

    def __init__(self, op: str, engine: str, p: int, n: int, dtypes: tuple, nbytes: int,
                 reads: tuple, writes: tuple, loc: tuple[str, int], acc: bool = False,
                 extra: dict | None = None, instance: int = 0, loops: tuple = (), bufs: tuple = (),
                 core: int = 0, run: int = 0) -> None:
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
        self.bufs = bufs  # buffer_info() of each on-chip root tensor touched (for buffer rotation)
        self.core = core  # NeuronCore the SPMD instance runs on
        self.run = run  # DMA: contiguous HBM bytes per descriptor (0 = unknown)

    def __repr__(self) -> str:
        return (f"Instr({self.op} on {self.engine}, p={self.p}, n={self.n}, bytes={self.nbytes}, "
                f"line={self.loc[1]})")

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


def buffer_info(acc: Any) -> tuple:
    """Facts about an access's on-chip root tensor that the scheduler needs to map it to physical
    buffers: (root uid, space, allocation site or None, mod_alloc tile count or 0, allocated inside a
    loop, partition axis, bytes per partition).  Kept as plain values so traces hold no tensors."""
    root = acc.tensor.root
    hit = root.__dict__.get("_buffer_info")  # static facts of the root: computed once per tensor
    if hit is not None:
        return hit
    alloc = getattr(root.buffer, "alloc", None)
    k = 0
    if alloc is not None and getattr(alloc, "num_free_tiles", ()):
        k = 1
        for v in alloc.num_free_tiles:
            k *= int(v)
    per_part = root.itemsize
    for i, d in enumerate(root.shape):
        if i != root.par_axis:
            per_part *= int(d)
    info = (root.uid, root.space, root.site, k, bool(root.loops), root.par_axis, per_part)
    root.__dict__["_buffer_info"] = info
    return info


def contiguous_bytes(acc: Any, box: tuple) -> int:
    """Bytes of the longest contiguous run of an HBM access (trailing fully-covered dims merge).
    DMA efficiency depends on it: short strided runs cannot stream at the full engine rate."""
    shape = acc.tensor.shape
    if len(box) != len(shape):
        return 0
    run = acc.tensor.itemsize
    for (lo, hi), dim in zip(reversed(box), reversed(shape)):
        run *= max(hi - lo, 1)
        if hi - lo != dim:
            break
    return run


def dma_run(reads: Any, rregs: Any, writes: Any, wregs: Any) -> int:
    """Contiguous HBM run of a DMA: the shorter of its HBM sides (0 when no side is in HBM)."""
    runs = [contiguous_bytes(a, r[2]) for a, r in zip((*reads, *writes), (*rregs, *wregs)) if a.space == "hbm"]
    return min(runs) if runs else 0
