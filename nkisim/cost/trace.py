"""The instruction trace: one record per simulated instruction, consumed by the cost model.

The functional pass appends an ``Instruction`` for every NKI API call that would become hardware
instructions.  Records hold only plain numbers (never tensor data) so long traces stay small.
Operands are ``Region`` records (root tensor id, tensor id, box), on-chip roots are described by
``BufferInfo`` records (core.buffers).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, TypedDict

from nkisim.core import dtypes as dt
from nkisim.core import physical
from nkisim.core.buffers import BufferInfo


class Region(NamedTuple):
    """Where an instruction reads or writes: ``box`` holds per-dimension ``(lo, hi_exclusive)`` ranges in
    ``tensor``'s own coordinates; ``root`` is the tensor whose storage it is (a view's base)."""

    root: int
    tensor: int
    box: tuple


class Trace(list):
    """The instruction list of one launch plus the kernel-level facts the cost model needs.

    ``skip_middle_end``: the kernel is decorated with ``skip_middle_end_transformations``, so NKI
    loops stay rolled and a DMA inside one has loop-dependent addresses (runtime descriptors).
    """

    skip_middle_end = False
    #: the NKI dialect the kernel is written in ("legacy" or "0.6"): the compilers allocate differently (rename.py)
    dialect = "legacy"
    #: the hardware DGE makes a rolled loop's DMA descriptors at run time; False when the kernel is compiled with
    #: ``--disable-dge`` ("these optimizations can be disabled using the --disable-dge compiler command line option or
    #: the framework-level option additional_compile_opt=" --disable-dge"", aws-neuron-sdk v2.26.0
    #: release-notes/compiler/neuronx-cc/index.rst:62), as CS149's harness does when it profiles
    dge = True


class Extra(TypedDict, total=False):
    """An instruction's facts beyond its operands: what one op knows that the cost model prices (``Instruction.extra``).

    Every key an op writes or the cost model reads is declared here, with who writes and who reads it
    (``tests/test_trace_extra.py`` scans the source for any other).  A plain dict at run time: the trace is the
    executor's hot path, and a dict literal costs no more than it did untyped.  One dict is often shared by many
    instructions (``ops.elementwise``, ``ops.registry``): a key is set only on a dict the op has just made.
    """

    #: the ALU operator(s): a name (tensor_tensor, tensor_reduce, reductions) or ``(op0, op1)`` (tensor_scalar, scans).
    #: Written by ops.alu, ops.elementwise, ops.reduce, ops.scan; read by cost.instructions (VectorE's bf16 fast
    #: path for add/subtract/multiply, the half-rate reduce for add/max, GpSimd's rsqrt rate)
    alu: Any
    #: one input repeated along a free axis (a zero-stride read, not contiguous).  Written by ops.alu,
    #: ops.elementwise, ops.base (a stride-0 view); read by cost.instructions (no bf16 fast path then)
    broadcast: bool
    #: the widest innermost free-dim stride (bytes) of a non-contiguous on-chip operand.  Written by ops.base
    #: (``_note_strided_operands``); read by cost.costs (half bandwidth above ``[engine] stride_free_bytes``)
    stride_bytes: int
    #: the reduction an activation/tensor_scalar computes alongside its output (its ALU name, "held" when kept in
    #: the accumulator).  Written by ops.activation, ops.select; read by cost.costs (the reduce's cycles)
    reduce: str
    #: a memset of zeros.  Written by ops.creation; read by cost.instructions (bf16/fp16 zero memsets at half cost)
    #: and cost.scheduler (nl.zeros on PSUM folds into the accumulation group's first matmul: no engine runs it)
    zero: bool
    #: a copy the compiler places on whichever engine is free.  Written by ops.memory, ops.movement; read by
    #: cost.scheduler (``costs.copy_engine``)
    any_engine: bool
    #: a DMA's read-modify-write operator (``dst_rmw_op``, dma_compute's add).  Written by ops.dma; read by
    #: cost.costs (``[dma] rmw_throughput``)
    rmw: str
    #: that read-modify-write lands in SBUF.  Written by ops.dma; read by cost.costs (``[dma] rmw_sbuf_throughput``)
    rmw_sbuf: bool
    #: bytes a DMA reads and writes in HBM when both sides (or a read-modify-write) are HBM.  Written by ops.dma;
    #: read by cost.costs (bound by ``[dma] hbm_gbps``)
    hbm_bytes: int
    #: a matmul's contraction (partitions of the stationary/moving operands), or topk's K.  Written by ops.matmul,
    #: ops.mx, ops.topk; read by cost.instructions (topk's cycles) and cost.report (matmul FLOPs)
    k: int
    #: a matmul's stationary free size (output rows).  Written by ops.matmul, ops.mx; read by cost.instructions
    #: (the moving floor) and cost.report (matmul FLOPs)
    m: int
    #: a matmul's moving free size (output columns), or topk's elements per partition.  Written by ops.matmul,
    #: ops.mx, ops.topk; read by cost.instructions and cost.report
    n: int
    #: values an MX matmul packs per element.  Written by ops.mx; read by cost.instructions (nc_matmul_mx's columns)
    pack: int
    #: the dtype name of a matmul's moving input.  Written by ops.matmul, ops.mx; read by cost.instructions (fp32 at
    #: a quarter rate) and cost.report (which peak rate the utilisation is of)
    in_dtype: str
    #: the values of the call's scalar arguments.  Written by ops.registry (``_noting_scalars``); read by cost.hoist
    #: (an instruction is loop-invariant only if these are too)
    scalars: tuple
    #: the activation function's name.  Written by ops.activation, ops.elementwise; not read by the cost model (it
    #: names the function in the trace a reader inspects)
    func: str
    #: an instruction the compiler inserts (a PSUM operand copied to SBUF, nl.matmul's transpose of x).  Written by
    #: ops.matmul; read by cost.scheduler (nl.matmul's inserted transposes: the ``inserted_transpose`` Why: line) and
    #: by a reader of the trace (the student did not write it)
    implicit: bool
    #: a DMA transpose the hardware DGE cannot make (not 16 rows of a 2-byte dtype with rows a multiple of 128 long, AWS's
    #: constraints): its descriptors are made as before NeuronCore-v3, not by the DGE at run time.  Written by
    #: ops.transpose; read by cost.costs (``runtime_dge``)
    static_descriptors: bool
    #: a DMA transpose whose output is not whole ``[128, 16]`` blocks (AWS's condition for its best throughput).
    #: Written by ops.transpose; read by cost.costs (``[dma] unaligned_transpose_efficiency``)
    unaligned: bool
    #: a DMA through an index tile (a gather or scatter).  Written by ops.memory (``read_indices``); read by
    #: cost.costs (``runtime_dge``, ``swdge_ns``)
    indirect: bool
    #: a DMA transpose that reads SBUF.  Written by ops.transpose; read by cost.costs (``[dma] sbuf_transpose_efficiency``)
    from_sbuf: bool
    #: a reduction's kind ("mean", "var", or the plain ALU reduce).  Written by ops.reduce; not read by the cost model
    kind: str
    #: nc_matmul's ``perf_mode`` (``double_row_gen3``).  Written by ops.matmul; not read by the cost model (the fp8
    #: double-row rate follows the dtypes)
    perf_mode: Any


class Instruction:
    """One instruction as issued to an engine.

    The functional pass records each operand as four entries ``shape, facts, tensor uid, box``
    (``facts`` = dtype name, root uid, buffer_info or None) of one flat tuple; the shape-derived
    fields ``p``, ``n``, ``dtypes``, ``reads``, ``writes`` and ``bufs`` are built from those on first
    use.  A kernel that is only run for its values never pays for them; the cost model reads them
    once.  The records are one flat tuple of shared, immutable parts rather than a list of tuples:
    a trace stays alive after its launch, and the cycle collector traverses every container it
    holds on each full collection, but stops tracking a tuple of untracked parts at the first one.
    """

    __slots__ = ("kind", "op", "engine", "_p", "_n", "_dtypes", "nbytes", "_reads", "_writes", "loc", "acc",
                 "extra", "instance", "loops", "_bufs", "core", "run", "runs", "_recs", "_nr", "order")

    def __init__(self, *, kind: Any, engine: str, loc: tuple[str, int], p: int | None = None, n: int | None = None,
                 dtypes: tuple = (), nbytes: int = 0, reads: tuple = (), writes: tuple | None = (), acc: bool = False,
                 extra: Extra | None = None, instance: int = 0, loops: tuple = (), bufs: tuple = (),
                 core: int = 0, run: int = 0, recs: tuple | None = None, nr: int = 0) -> None:
        """Keyword arguments only (the record has 18 fields).  ``recs``/``nr``: the operand records and how many of
        them are reads, expanded on first use into ``p``, ``n``, ``dtypes``, ``reads``, ``writes`` (when None) and
        ``bufs`` (see the class docstring)."""
        self.kind = kind  # its cost.instructions.InstructionKind: the engine it defaults to, what it costs
        self.op = kind.name
        self.engine = engine
        self._p = p  # partitions touched
        self._n = n  # elements per partition (NEP) of the largest access pattern
        self._dtypes = dtypes  # (input dtype names..., output dtype name)
        self.nbytes = nbytes  # bytes moved (DMA) or written
        self._reads = reads
        self._writes = writes
        self.loc = loc  # (filename, lineno) of the student's line
        self.acc = acc  # PSUM accumulation (+=)
        self.extra: Extra = extra or {}
        self.instance = instance  # SPMD instance number
        self.loops = loops  # ((loop uid, kind, iteration), ...) of enclosing loops
        self._bufs = bufs  # buffer_info() of each on-chip root tensor touched (for buffer rotation)
        self.core = core  # NeuronCore the SPMD instance runs on
        self.run = run  # DMA: mean bytes of a contiguous run of its HBM side with the shortest ones (0 = none)
        self.runs = 0  # DMA: its descriptors, the pieces contiguous in its source and destination (cost.runs)
        self._recs = recs  # operand records not yet expanded (see the class docstring)
        self._nr = nr  # how many of them are reads
        #: its call's scheduling edges (``program.ir.Order``: a label, and the labels it waits for), or None
        self.order: Any = None

    @classmethod
    def issued(cls, kind: Any, engine: str, loc: tuple[str, int], p: int | None, n: int | None, dtypes: tuple,
               nbytes: int, acc: bool, extra: Extra | None, instance: int, loops: tuple, core: int, recs: tuple,
               nr: int) -> Instruction:
        """``Instruction(kind=kind, ..., writes=None, recs=recs, nr=nr)``: an instruction as ``ops.base.emit`` records
        one, its reads, writes and buffers left to expand from ``recs``.  Every field set straight into a bare
        instance from positional arguments: one is made per executed instruction, and CPython 3.11 packs an
        18-keyword ``__init__`` call's arguments into a dict and unpacks them again (about twice the time).
        ``tests/test_trace_extra.py`` checks that it sets every slot as ``__init__`` does."""
        self = _bare(cls)
        self.kind = kind
        self.op = kind.name
        self.engine = engine
        self._p = p
        self._n = n
        self._dtypes = dtypes
        self.nbytes = nbytes
        self._reads = ()
        self._writes = None
        self.loc = loc
        self.acc = acc
        self.extra = extra or {}
        self.instance = instance
        self.loops = loops
        self._bufs = ()
        self.core = core
        self.run = 0
        self.runs = 0
        self._recs = recs
        self._nr = nr
        self.order = None
        return self

    def _expand(self) -> None:
        recs, self._recs = self._recs, None
        if recs is None:  # (expanded already)
            return
        p_max = n_max = -1
        names = []
        regs = []
        bufs = []
        for i in range(0, len(recs), 4):
            shape, facts, uid, box = recs[i:i + 4]
            v = shape[0] if shape else 1
            if v > p_max:
                p_max = v
            v = shape[1] if len(shape) == 2 else math.prod(shape[1:])
            if v > n_max:
                n_max = v
            names.append(facts[0])
            regs.append(_new_region(Region, (facts[1], uid, box)))
            if facts[2] is not None:
                bufs.append(facts[2])
        if self._p is None:
            self._p = p_max if p_max >= 0 else 1
        if self._n is None:
            self._n = n_max if n_max >= 0 else 1
        if not self._dtypes:
            self._dtypes = tuple(names)
        nr = self._nr
        self._reads = tuple(regs[:nr])
        if self._writes is None:
            self._writes = tuple(regs[nr:])
        self._bufs = tuple(bufs) + self._bufs

    def retarget(self, writes: tuple, buf: tuple) -> None:
        """The instruction writes ``writes`` instead, in the on-chip buffer ``buf`` (its result lands
        straight in an assigned tile): the same as setting ``writes`` and appending to ``bufs``, but
        the operand records stay unexpanded (``_expand`` keeps writes already set and puts the
        records' buffers before those already listed)."""
        self._writes = writes
        self._bufs = self._bufs + (buf,)

    def read_also(self, recs: tuple) -> None:
        """The instruction also reads the operands ``recs`` (records as ``ops.base.emit`` makes them, four entries each),
        which are no side of its transfer: the index tiles an indirect DMA reads to address its rows ("Index tensor
        must be 2-D, on SBUF", aws-neuron-sdk nki/deep-dives/nki-dge.rst:99), so it waits for what writes them.
        Called before the records are expanded (right after ``emit``)."""
        assert self._recs is not None, "read_also after the operand records were expanded"
        k = self._nr * 4
        self._recs = self._recs[:k] + recs + self._recs[k:]
        self._nr += len(recs) // 4

    # The shape-derived fields, expanded from the operand records on first use.  Written out one by one: the cost
    # model reads them for every instruction, and a plain slot read here costs far less than a generic getattr.
    @property
    def p(self) -> Any:
        """Partitions touched."""
        if self._recs is not None:
            self._expand()
        return self._p

    @p.setter
    def p(self, value: Any) -> None:
        if self._recs is not None:
            self._expand()
        self._p = value

    @property
    def n(self) -> Any:
        """Elements per partition (NEP) of the largest access pattern."""
        if self._recs is not None:
            self._expand()
        return self._n

    @n.setter
    def n(self, value: Any) -> None:
        if self._recs is not None:
            self._expand()
        self._n = value

    @property
    def dtypes(self) -> Any:
        """(input dtype names..., output dtype name)."""
        if self._recs is not None:
            self._expand()
        return self._dtypes

    @dtypes.setter
    def dtypes(self, value: Any) -> None:
        if self._recs is not None:
            self._expand()
        self._dtypes = value

    @property
    def reads(self) -> Any:
        """The regions it reads (``Region``)."""
        if self._recs is not None:
            self._expand()
        return self._reads

    @reads.setter
    def reads(self, value: Any) -> None:
        if self._recs is not None:
            self._expand()
        self._reads = value

    @property
    def writes(self) -> Any:
        """The regions it writes (``Region``)."""
        if self._recs is not None:
            self._expand()
        return self._writes

    @writes.setter
    def writes(self, value: Any) -> None:
        if self._recs is not None:
            self._expand()
        self._writes = value

    @property
    def bufs(self) -> Any:
        """``buffer_info()`` of each on-chip root tensor touched (for buffer rotation)."""
        if self._recs is not None:
            self._expand()
        return self._bufs

    @bufs.setter
    def bufs(self, value: Any) -> None:
        if self._recs is not None:
            self._expand()
        self._bufs = value

    def __repr__(self) -> str:
        return (f"Instruction({self.op} on {self.engine}, p={self.p}, n={self.n}, bytes={self.nbytes}, "
                f"line={self.loc[1]})")

    def as_dict(self) -> dict[str, Any]:
        fields = ("op", "engine", "p", "n", "dtypes", "nbytes", "reads", "writes", "loc", "acc", "extra",
                  "instance", "loops", "bufs", "core", "run", "runs")
        return {k: getattr(self, k) for k in fields}


_new_region = tuple.__new__
#: a bare instance, for ``Instruction.issued`` to fill in
_bare = object.__new__


def set_order(instructions: list[Instruction], order: Any) -> None:
    """Give the instructions one call issued that call's scheduling edges (``program.ir.Order``): the eager launch
    when the kernel names or orders an instruction, and the executor for every call of a program that has them,
    so both leave the cost model the same trace."""
    for ins in instructions:
        ins.order = order


def buffer_info(acc: Any) -> BufferInfo:
    """The ``BufferInfo`` of an access's on-chip root tensor (what the scheduler needs to map it to physical
    buffers), memoised on the tensor."""
    root = acc.tensor.root
    facts = root.trace_facts  # an on-chip tensor's trace facts end with its buffer_info (ops.base.emit)
    if facts is not None and facts[2] is not None:
        return facts[2]
    hit = root.__dict__.get("_buffer_info")  # static facts of the root: computed once per tensor
    if hit is not None:
        return hit
    place = physical.of(root)
    if place is not None:  # a direct allocation occupies its physical tiles, not its logical size
        per_part = place.tiles() * place.tile_bytes
    else:
        per_part = root.itemsize
        for i, d in enumerate(root.shape):
            if i != root.par_axis:
                per_part *= int(d)
    info = BufferInfo(root.uid, root.space, root.site, place, bool(root.loops), root.par_axis, per_part)
    if facts is None and info.space != "hbm":  # what ops.base.emit would record for it: a slot, no dict
        root.trace_facts = (dt.name(root.dtype), root.uid, info)
    else:
        root.__dict__["_buffer_info"] = info
    return info
