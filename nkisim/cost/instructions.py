"""The instruction set: every kind of instruction an op may issue, its engine and what it costs.

An op (``ops.registry``) names the instructions it emits by these records, never by a string, and the
trace keeps the record on each instruction (``cost.trace.Instruction.kind``), so the cost model prices an
instruction by asking its kind (``cycles``) instead of looking its name up: a kind without a price
cannot exist.  The engine is the one the instruction runs on unless the call names another
(``engine=nisa.gpsimd_engine``); DMA kinds are priced by the DMA queue model (``dma_queue_ns``),
not by a cycle formula.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nkisim.core.target import Params
from nkisim.cost.trace import Instruction

# ----------------------------------------------------------------------------------------------
# cycle formulas (spec §2.9, §4.2, §4.3): engine cycles before MIN_II and the access overhead
# ----------------------------------------------------------------------------------------------

_HALF = ("bfloat16", "float16")


def _half(ins: Instruction) -> bool:
    return bool(ins.dtypes) and all(d in _HALF for d in ins.dtypes)


def one_input(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """The one-input rule: N cycles, one element per partition per cycle (spec §4.3)."""
    return max(ins.n, 1)


def two_inputs(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    return 2 * max(ins.n, 1)


def gpsimd_fixed(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """GpSimd instructions that generate or select by index pay a fixed start-up on top of N."""
    return prm.engine.gpsimd_fixed_cycles + max(ins.n, 1)


def barrier_wait(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """A core_barrier's wait does no work of its own: the engine's minimum instruction (the time it holds the engine
    comes from when the other core's semaphore lands, which the scheduler waits for)."""
    return 0.0


def matmul(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    pe = prm.pe
    stat = ins.extra.get("m", prm.limits.gemm_stationary_free_max)
    mov = ins.extra.get("n", max(ins.n, 1))
    c = max(min(pe.moving_floor_cycles, stat), mov)
    if ins.extra.get("in_dtype") == "float32":
        c *= pe.fp32_factor
    return c + pe.matmul_overhead_cycles


def _v4(rate: float | None) -> float:
    """A rate only a NeuronCore-v4 target file gives (the MX instructions' ops refuse them on earlier targets)."""
    if rate is None:
        raise ValueError("an MX instruction priced on a target before NeuronCore-v4, whose file gives no MX rate")
    return rate


def mx_matmul(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """An MX matmul (NeuronCore-v4): as ``matmul``, but each moving column carries ``pack`` values per partition
    and a PE multiplies ``[pe] mx_elements_per_cycle`` pairs of them per cycle (trainium3_arch.rst: 4, so a column
    of x4 elements streams in one cycle, the "4x throughput" of MX matmul)."""
    pe = prm.pe
    cols = ins.extra["n"] * ins.extra["pack"] / _v4(pe.mx_elements_per_cycle)
    return max(min(pe.moving_floor_cycles, ins.extra["m"]), cols) + pe.matmul_overhead_cycles


def quantize_mx(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """VectorE's MX quantisation: ``[engine] quantize_mx_elements_per_cycle`` input elements per partition per
    cycle (trainium3_arch.rst: four)."""
    return max(ins.n, 1) / _v4(prm.engine.quantize_mx_elements_per_cycle)


def topk(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """GpSimd's top-k: ``[engine] topk_cycles_per_element`` cycles per element of the snake it searches, plus one
    per value it selects (AWS's estimate for ``nisa.topk``: ``4 n + K`` cycles per partition)."""
    extra = ins.extra or {}
    return prm.engine.topk_cycles_per_element * extra.get("n", max(ins.n, 1)) + extra.get("k", 1)


def broadcast(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    return broadcast_pe_cycles(ins, prm) if partition_broadcast(ins) else max(ins.n, 1)


def transpose(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """TensorE: ``max(P, min(64, F))`` (AWS's estimate for ``nc_transpose``), times the target's
    ``fp32_transpose_factor`` for fp32 data: the transpose is a matmul of the data with an identity ("this is exactly
    what nki.isa.nc_transpose() does", trainium_inferentia2_arch.rst:188-191), and an fp32 matmul costs "roughly 4x"
    (ibid. :268-269); NeuronCore-v3's transpose mode halves that ("2x speedup in FP32 transpose, vs. no transpose
    mode", trainium2_arch.rst:199-201).  VectorE's 32x32 blocks: the one-input rule."""
    if ins.engine == "pe":
        pe = prm.pe
        c = max(ins.p, min(pe.moving_floor_cycles, max(ins.n, 1)))
        if ins.dtypes and ins.dtypes[0] == "float32":
            c *= pe.fp32_transpose_factor
        return c + pe.matmul_overhead_cycles
    return max(ins.n, 1)  # a 32x32-block transpose on VectorE: the one-input rule


def tensor_tensor(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """``max(MIN_II, 2N)``; one pass (N) with one input in PSUM, or for a bf16/fp16 add, subtract or multiply
    of contiguous inputs (spec §4.3).  A column input read with a zero stride (a free-axis broadcast) is not
    contiguous, so that fast path does not apply; N is the full tile's elements either way."""
    n, half = max(ins.n, 1), _half(ins)
    contiguous = not ins.extra.get("broadcast")
    one_pass = (spaces.count("psum") == 1) or \
        (half and contiguous and str(ins.extra.get("alu")) in ("add", "subtract", "multiply"))
    c = n if one_pass else 2 * n
    if prm.engine.dve_perf_mode and half and ins.engine == "dve":  # VectorE's performance mode only
        c /= prm.engine.dve_perf_tensor_tensor_speedup
    return c


def streaming(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """tensor_scalar / copies: VectorE's perf mode streams 2- or 4-byte halves at 2x/4x (spec §4.3)."""
    n = max(ins.n, 1)
    eng = prm.engine
    if eng.dve_perf_mode and _half(ins) and ins.engine == "dve":
        return n / (eng.dve_perf_copy_speedup if "psum" not in spaces else eng.dve_perf_psum_speedup)
    if ins.engine == "act" and _half(ins) and ins.kind is not COPY:  # ScalarE's tensor_scalar/tensor_copy (NC-v4)
        return n / eng.act_perf_copy_speedup
    if ins.engine == "pool" and "rsqrt" in (ins.extra.get("alu") or ()):  # GpSimd's rsqrt: 4x below ScalarE's rate
        return n * eng.gpsimd_rsqrt_cycles_per_element
    return n


def memset(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    n = max(ins.n, 1)
    return n / prm.engine.half_zero_memset_speedup if (_half(ins) and ins.extra.get("zero")) else n


def reduce(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    n = max(ins.n, 1)
    return n / prm.engine.half_reduce_speedup if _half(ins) and str(ins.extra.get("alu", "")) in ("add", "max") \
        else n


def reciprocal(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """VectorE's reciprocal: several cycles per element (8, spec §2.9)."""
    return prm.engine.reciprocal_cycles_per_element * max(ins.n, 1)


def bn_aggr(ins: Instruction, spaces: tuple[str, ...], prm: Params) -> float:
    """bn_aggr: 13/3 cycles per element of the statistics it aggregates (spec §2.9)."""
    return prm.engine.bn_aggr_cycles_per_element * max(ins.n, 1)


def partition_broadcast(ins: Instruction) -> bool:
    """A ``broadcast_to`` that copies its source to more partitions (``[1, F] -> [P, F]``), which the
    compiler does on TensorE (spec §2.3/§2.10: a matmul with a ones vector); a free-axis broadcast
    (``[P, 1] -> [P, F]``) is an ordinary copy."""
    if ins.kind is not BROADCAST_TO or not ins.reads or not ins.reads[0].box:
        return False
    lo, hi = ins.reads[0].box[0]
    return hi - lo < ins.p


def broadcast_pe_cycles(ins: Instruction, prm: Params) -> float:
    """TensorE cycles of a partition broadcast: ``ones[K, P].T @ src[K, F]`` as matmuls whose output fits
    one PSUM bank (at most ``psum_free_max`` columns each, spec §1.3), each ``max(min(64, P), F_chunk)``
    cycles (spec §4.2); an fp32 source costs the fp32 factor, halved because the stationary ones
    matrix is one-zero (spec §2.9 ``is_stationary_onezero``)."""
    pe = prm.pe
    chunk = int(prm.limits.psum_free_max)
    n = max(ins.n, 1)
    factor = pe.fp32_factor / 2 if ins.dtypes and ins.dtypes[0] == "float32" else 1
    cycles = 0.0
    for lo in range(0, n, chunk):
        cycles += max(min(pe.moving_floor_cycles, ins.p), min(chunk, n - lo)) * factor + pe.matmul_overhead_cycles
    return cycles


Formula = Callable[[Instruction, tuple[str, ...], Params], float]



@dataclass(frozen=True, eq=False)
class InstructionKind:
    """One instruction kind: its name in traces and reports, its default engine and its cycle formula
    (``None`` exactly for DMA kinds, which the queue model prices).  Compared by identity."""

    name: str
    engine: str  # 'pe', 'act', 'dve', 'pool' or 'dma'
    cycles: Formula | None
    doc: str

    def __post_init__(self) -> None:
        if (self.cycles is None) != (self.engine == "dma"):
            raise ValueError(f"instruction {self.name!r}: a compute kind needs a cycle formula, a DMA kind none")

    def __repr__(self) -> str:
        return f"<instruction {self.name} on {self.engine}>"


# --- TensorE ----------------------------------------------------------------------------------
NC_MATMUL = InstructionKind("nc_matmul", "pe", matmul, "a matmul into PSUM: max(min(64, stationary), moving) cycles")
NC_MATMUL_MX = InstructionKind("nc_matmul_mx", "pe", mx_matmul,
                            "an MX (microscaled fp8/fp4) matmul into PSUM: four packed values per PE per cycle")
NC_TRANSPOSE = InstructionKind("nc_transpose", "pe", transpose, "a transpose (TensorE through identity, or VectorE 32x32)")
BROADCAST_TO = InstructionKind("broadcast_to", "pe", broadcast,
                           "a partition broadcast as matmuls with a ones vector (a free-axis broadcast is a VectorE copy)")
# --- ScalarE ----------------------------------------------------------------------------------
ACTIVATION = InstructionKind("activation", "act", one_input, "an activation function, N cycles")
ACTIVATE2 = InstructionKind("activate2", "act", one_input, "op((x op0 imm0) op1 imm1), optional reduce (NeuronCore-v4)")
COPY = InstructionKind("copy", "act", streaming, "a copy through the Scalar engine (nl.copy)")
# --- VectorE ----------------------------------------------------------------------------------
TENSOR_TENSOR = InstructionKind("tensor_tensor", "dve", tensor_tensor, "a binary op of two tiles, one or two passes")
TENSOR_SCALAR = InstructionKind("tensor_scalar", "dve", streaming, "one or two ALU ops with per-partition scalars")
TENSOR_COPY = InstructionKind("tensor_copy", "dve", streaming, "an engine copy (cast, PSUM eviction)")
MEMSET = InstructionKind("memset", "dve", memset, "fill a tile with a constant")
TENSOR_REDUCE = InstructionKind("tensor_reduce", "dve", reduce, "a reduction along free axes")
SCALAR_TENSOR_TENSOR = InstructionKind("scalar_tensor_tensor", "dve", two_inputs, "(a op0 scalar) op1 b")
WHERE = InstructionKind("where", "dve", two_inputs, "select between two operands by a predicate")
TENSOR_TENSOR_SCAN = InstructionKind("tensor_tensor_scan", "dve", two_inputs, "a scan along the free axis")
QUANTIZE_MX = InstructionKind("quantize_mx", "dve", quantize_mx, "bf16/fp16 to MXFP8 data and scales, 4 elements/cycle")
RNG = InstructionKind("rng", "dve", one_input, "32 random bits per element (Vector, or GpSimd from NeuronCore-v3)")
RAND2 = InstructionKind("rand2", "dve", one_input, "uniform random fp32 values in [min, max) (NeuronCore-v4)")
EXPONENTIAL = InstructionKind("exponential", "dve", one_input, "exp(x - max) with an optional running sum (NeuronCore-v4)")
RECIPROCAL = InstructionKind("reciprocal", "dve", reciprocal, "1/x on VectorE, 8 cycles per element")
BN_STATS = InstructionKind("bn_stats", "dve", one_input, "mean and variance partials")
BN_AGGR = InstructionKind("bn_aggr", "dve", bn_aggr, "aggregate bn_stats partials")
DROPOUT = InstructionKind("dropout", "dve", one_input, "zero elements with a probability")
MAX8 = InstructionKind("max8", "dve", one_input, "the 8 largest values per partition")
NC_FIND_INDEX8 = InstructionKind("nc_find_index8", "dve", one_input, "indices of 8 values per partition")
NC_MATCH_REPLACE8 = InstructionKind("nc_match_replace8", "dve", one_input, "replace 8 matched values per partition")
NC_STREAM_SHUFFLE = InstructionKind("nc_stream_shuffle", "dve", one_input, "move partitions within a quadrant")
RANGE_SELECT = InstructionKind("range_select", "dve", one_input, "keep elements within per-partition bounds")
SELECT_REDUCE = InstructionKind("select_reduce", "dve", one_input, "select by a predicate and reduce")
TENSOR_COPY_DYNAMIC_SRC = InstructionKind("tensor_copy_dynamic_src", "dve", one_input, "copy from a runtime offset")
TENSOR_COPY_DYNAMIC_DST = InstructionKind("tensor_copy_dynamic_dst", "dve", one_input, "copy to a runtime offset")
TENSOR_COPY_PREDICATED = InstructionKind("tensor_copy_predicated", "dve", one_input, "copy where a predicate holds")
TENSOR_SCALAR_CUMULATIVE = InstructionKind("tensor_scalar_cumulative", "dve", one_input, "a running tensor_scalar")
TENSOR_SCALAR_REDUCE = InstructionKind("tensor_scalar_reduce", "dve", one_input, "tensor_scalar with a reduction")
# --- GpSimd -----------------------------------------------------------------------------------
IOTA = InstructionKind("iota", "pool", gpsimd_fixed, "generate index values")
AFFINE_SELECT = InstructionKind("affine_select", "pool", gpsimd_fixed, "select by an affine predicate of the indices")
TENSOR_PARTITION_REDUCE = InstructionKind("tensor_partition_reduce", "pool", gpsimd_fixed, "a reduction across partitions")
GATHER_FLATTENED = InstructionKind("gather_flattened", "pool", one_input, "gather along the flattened free axes")
LOCAL_GATHER = InstructionKind("local_gather", "pool", one_input, "gather within GpSimd's 16-partition groups")
RNG_STATE = InstructionKind("rng_state", "pool", one_input, "seed, load or store a random generator's state")
NONZERO_WITH_COUNT = InstructionKind("nonzero_with_count", "pool", one_input, "indices of nonzero elements and their count")
TOPK = InstructionKind("topk", "pool", topk, "the K largest values of a 16-partition snake, 4n + K cycles")
SEQUENCE_BOUNDS = InstructionKind("sequence_bounds", "pool", one_input, "start and end of each segment id")
# a sequencer register read from / written to a one-element tensor (nisa.register_load / register_store, NKI 0.6);
# priced as a one-element GpSimd access: no published figure (uncalibrated)
REGISTER_LOAD = InstructionKind("register_load", "pool", one_input, "a register read from a one-element tensor")
REGISTER_STORE = InstructionKind("register_store", "pool", one_input, "a register written to a one-element tensor")
# a core_barrier's wait for the other core's semaphore, on the engine the call names (GpSimd unless told): "The barrier
# will block execution on this engine, other engines will not be blocked" (nki/api/nki/isa/__init__.py core_barrier)
CORE_BARRIER = InstructionKind("core_barrier", "pool", barrier_wait, "a core_barrier's wait, holding its engine until "
                           "both cores' semaphores have landed")
# --- DMA --------------------------------------------------------------------------------------
LOAD = InstructionKind("load", "dma", None, "HBM to SBUF")
STORE = InstructionKind("store", "dma", None, "SBUF to HBM")
DMA_COPY = InstructionKind("dma_copy", "dma", None, "a DMA between any two memories")
LOAD_TRANSPOSE2D = InstructionKind("load_transpose2d", "dma", None, "a load that transposes a 2-D block (slower DMA)")
DMA_COMPUTE = InstructionKind("dma_compute", "dma", None, "a DMA that adds its sources as it copies (the DMA's compute engine)")
DMA_TRANSPOSE = InstructionKind("dma_transpose", "dma", None, "a DMA that transposes")
SPILL = InstructionKind("spill", "dma", None, "the compiler's copy of a spilled tile out to HBM")
RELOAD = InstructionKind("reload", "dma", None, "the compiler's copy of a spilled tile back on chip")

#: every instruction kind by name (what reports and tests look up; the cost model never does)
INSTRUCTION_KINDS: dict[str, InstructionKind] = {v.name: v for v in list(globals().values()) if isinstance(v, InstructionKind)}


def element_cycles(name: str, engine: str, dtype: str, prm: Params, alu: str | None = None,
                   broadcast: bool = False, n: int = 4096) -> float:
    """Engine cycles per element (per partition) of a large instruction of kind ``name`` on ``engine``, every
    operand of ``dtype`` in SBUF (``broadcast``: one input repeated along the free axis), by the kind's own formula:
    what a lower bound on a computation's engine time may charge a pass (``nkilab.course.bounds``), with no second copy of
    the rules."""
    ins = Instruction(kind=INSTRUCTION_KINDS[name], engine=engine, loc=("", 0), p=int(prm.limits.partitions), n=n,
                dtypes=(dtype,) * 3, extra={"alu": alu, "broadcast": broadcast} if alu or broadcast else {"alu": alu})
    return INSTRUCTION_KINDS[name].cycles(ins, ("sbuf",) * 3, prm) / n  # type: ignore[misc]
