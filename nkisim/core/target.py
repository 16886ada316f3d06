"""The hardware a kernel is compiled for: one ``Target`` per NeuronCore generation, read from one file.

Everything nkisim knows about a target lives in ``nkisim/targets/<name>.toml``: the limits the
compiler checks (partitions, PSUM tile size, SBUF bytes per partition, PSUM banks) and the cost
model's parameters, each number with a comment naming its source.  Nothing else holds a hardware
number, so a course term can freeze a target file and its grades stay reproducible.

A launch resolves its target once (``nki.jit(platform_target=)``, else the environment, else
``DEFAULT``) and carries the ``Target`` in its context; grading names its target explicitly and
never reads the environment.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from nkisim.core.dtypes import _FP8

TARGETS_DIR = Path(__file__).resolve().parent.parent / "targets"
#: What a launch runs on when nothing names a target (the course target too).
DEFAULT = "trn2"
#: the 8-bit float dtypes' names (the Tensor Engine's fp8 rate)
_FP8_NAMES = frozenset(str(d) for d in _FP8)


class TargetFileError(ValueError):
    """A target file with a key misspelt, missing or of the wrong type: an error when it loads, naming the file, its
    table and the key (a cost function never meets a missing number mid-estimate)."""


# One frozen record per table of a target file: its fields are the table's keys (the file's comments give each
# number's source).  A field with a default is one only some generations have (None where the hardware lacks it).

@dataclass(frozen=True, slots=True)
class Limits:
    """``[limits]``: what the compiler checks."""

    nc_version: int
    partitions: int
    psum_free_max: int
    gemm_stationary_free_max: int
    gemm_moving_free_max: int
    spmd_cores: int
    bn_stats_free_max: int
    psum_min_align: int
    sbuf_min_align: int
    quadrant_partitions: int
    gpsimd_core_partitions: int
    dve_transpose_max: int
    max8_min_elems: int
    max8_max_elems: int
    topk_min_elements: int
    topk_max_elements: int
    topk_max_k: int
    dma_compute_max_sources: int
    rng_state_words_gpsimd: int
    rng_state_words_vector: int
    #: the hardware DGE's transposes (NeuronCore-v3 on)
    hwdge_transpose_rows: int | None = None
    hwdge_transpose_row_multiple: int | None = None
    hwdge_transpose_itemsize: int | None = None
    #: MX scaling groups (NeuronCore-v4)
    mx_group_partitions: int | None = None
    mx_scale_offsets: int | None = None


@dataclass(frozen=True, slots=True)
class EngineOps:
    """``[engine_ops]``: the operators (``"op0+op1"`` or ``"op0"``; ``"*"`` for every one) an engine asked for by name
    computes."""

    tensor_scalar_gpsimd: tuple[str, ...]
    tensor_scalar_scalar: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Clocks:
    """``[clock_ghz]``: each compute engine's clock."""

    pe: float
    act: float
    dve: float
    pool: float

    def of(self, engine: str) -> float:
        """The clock (GHz) of the compute engine called ``engine`` (``"pe"``, ``"act"``, ``"dve"``, ``"pool"``)."""
        return float(getattr(self, engine))


@dataclass(frozen=True, slots=True)
class Engine:
    """``[engine]``: the compute engines' per-instruction costs and performance modes."""

    min_ii_cycles: int
    instruction_overhead_cycles: int
    stride_free_bytes: int
    stride_penalty: float
    dep_latency_cycles: int
    sem_ns: float
    dve_pool_shared_port: bool
    dve_act_shared_psum: bool
    dve_perf_mode: bool
    dve_perf_copy_speedup: float
    dve_perf_psum_speedup: float
    dve_perf_tensor_tensor_speedup: float
    act_perf_copy_speedup: float
    gpsimd_fixed_cycles: int
    reciprocal_cycles_per_element: float
    gpsimd_rsqrt_cycles_per_element: float
    topk_cycles_per_element: float
    bn_aggr_cycles_per_element: float
    half_zero_memset_speedup: float
    half_reduce_speedup: float
    #: quantize_mx's rate (NeuronCore-v4)
    quantize_mx_elements_per_cycle: float | None = None


@dataclass(frozen=True, slots=True)
class Pe:
    """``[pe]``: the Tensor Engine's matmul costs."""

    fp32_factor: float
    moving_floor_cycles: int
    matmul_overhead_cycles: int
    #: a TensorE transpose (a matmul with an identity) of fp32 data costs this many times a 2-byte one
    fp32_transpose_factor: float = 1.0
    #: nc_matmul_mx's rate (NeuronCore-v4)
    mx_elements_per_cycle: float | None = None


@dataclass(frozen=True, slots=True)
class Dma:
    """``[dma]``: the DMA queues, descriptors and the hardware DGE."""

    queues: int
    partitions_per_queue: int
    bytes_per_ns: float
    fixed_latency_ns: float
    issue_ns: float
    descriptor_bytes: int
    dge_ns: float
    dge_descriptor_ns: float
    dge_instances: int
    #: GpSimd time to make an indirect DMA's descriptors at run time (software DGE; costs.swdge_ns)
    swdge_ns: float
    strided_efficiency: float
    full_rate_run_bytes: int
    transpose_efficiency: float
    #: a DMA transpose from SBUF, and one whose output is not whole [128, 16] blocks (costs.transpose_efficiency)
    sbuf_transpose_efficiency: float
    unaligned_transpose_efficiency: float
    #: the innermost free size a DMA transpose's output is whole blocks of (its partitions: whole 128s)
    transpose_block_free: int
    hbm_gbps: float
    rmw_throughput: float
    rmw_sbuf_throughput: float
    #: a one-partition tile's DMA goes in pieces of this many bytes (0: whole); costs.descriptors says why
    trivial_dim_piece_bytes: int


@dataclass(frozen=True, slots=True)
class Loops:
    """``[loops]``: what the compiler's middle end unrolls."""

    unroll_max_instructions: int


@dataclass(frozen=True, slots=True)
class Buffers:
    """``[buffers]``: on-chip memory and the allocator's rotating buffers."""

    sbuf_rotation: int
    renamed_rotation: int
    psum_rotation: int
    psum_banks: int
    psum_bank_bytes: int
    sbuf_partition_bytes: int


@dataclass(frozen=True, slots=True)
class Kernel:
    """``[kernel]``: the fixed cost of a launch."""

    fixed_us: float


@dataclass(frozen=True, slots=True)
class Peak:
    """``[peak]``: peak rates, for reports and the cost model's floors (not the scheduler)."""

    pe_tflops_bf16: float
    pe_tflops_fp32: float
    pe_tflops_fp8: float
    dma_gbps: float
    pe_moving_per_cycle: float
    pe_moving_per_cycle_fp8: float
    dve_per_cycle: float
    dve_per_cycle_half: float
    act_per_cycle: float
    pool_per_cycle: float
    #: nc_matmul_mx and quantize_mx (NeuronCore-v4)
    pe_tflops_mx: float | None = None
    quantize_mx_per_cycle: float | None = None

    def pe_tflops(self, dtype: str) -> float:
        """The Tensor Engine's peak (TFLOPS, one NeuronCore) for matmul inputs of ``dtype`` (its name): float32 at the
        fp32 rate, an 8-bit float at the fp8 rate, any other input (bfloat16, float16) at the bf16 rate.  The one
        home of this choice: ``nkisim.api.pe_peak_tflops`` and the profile's utilisation (``cost.report``) ask it."""
        name = str(dtype)
        return self.pe_tflops_fp32 if name == "float32" else self.pe_tflops_fp8 if name in _FP8_NAMES \
            else self.pe_tflops_bf16


@dataclass(frozen=True, slots=True)
class Params:
    """A target file's tables, one record each: what the cost model prices with and the compiler's checks read."""

    version: str
    limits: Limits
    engine_ops: EngineOps
    clock_ghz: Clocks
    engine: Engine
    pe: Pe
    dma: Dma
    loops: Loops
    buffers: Buffers
    kernel: Kernel
    peak: Peak

    def replace(self, table: str, key: str, value: Any) -> Params:
        """These parameters with ``[table] key`` set to ``value`` (bench/calibrate.py --fit scans candidate values;
        tests ask what one number changes); an unknown table or key is an error."""
        section = getattr(self, table)
        if not dataclasses.is_dataclass(section) or key not in _field_types(type(section)):
            raise KeyError(f"[{table}] {key}: no such target parameter")
        return dataclasses.replace(self, **{table: dataclasses.replace(section, **{key: value})})


#: a target file's tables -> their records (the file's other keys: ``version``, ``calibrated``)
TABLES: dict[str, type] = {name: record for name, record in typing.get_type_hints(Params).items() if name != "version"}


@functools.cache
def _field_types(record: type) -> dict[str, Any]:
    return typing.get_type_hints(record)


def _value(path: Path, table: str, key: str, value: Any, kind: Any) -> Any:
    """``value`` as the field's type, or a TargetFileError naming the file, table and key."""
    want = next(k for k in typing.get_args(kind) if k is not type(None)) if isinstance(kind, types.UnionType) else kind
    if typing.get_origin(want) is tuple:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    elif want is bool:
        if isinstance(value, bool):
            return value
    elif want is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif want is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    raise TargetFileError(f"{path}: [{table}] {key} = {value!r} is not a {getattr(want, '__name__', want)}")


def _record(path: Path, table: str, data: Any) -> Any:
    """The record of ``[table]``: every key a field of it, every field without a default present."""
    record = TABLES[table]
    if not isinstance(data, dict):
        raise TargetFileError(f"{path}: [{table}] is missing" if data is None else f"{path}: {table} is not a table")
    types_ = _field_types(record)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        raise TargetFileError(f"{path}: [{table}] has no key {unknown[0]!r} (its keys: {', '.join(types_)})")
    required = [f.name for f in dataclasses.fields(record)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [k for k in required if k not in data]
    if missing:
        raise TargetFileError(f"{path}: [{table}] misses the key {missing[0]!r}")
    return record(**{k: _value(path, table, k, v, types_[k]) for k, v in data.items()})


def load(path: Path, name: str) -> Target:
    """The ``Target`` a target file describes; TargetFileError naming the file and the key for a key misspelt,
    missing or of the wrong type."""
    with path.open("rb") as f:
        data = tomllib.load(f)
    unknown = sorted(set(data) - set(TABLES) - {"version", "calibrated"})
    if unknown:
        raise TargetFileError(f"{path}: no table or key {unknown[0]!r} (its tables: {', '.join(TABLES)})")
    if not isinstance(data.get("version"), str):
        raise TargetFileError(f"{path}: misses the key 'version' (a string, bumped whenever a number changes)")
    if not isinstance(data.get("calibrated", True), bool):
        raise TargetFileError(f"{path}: calibrated = {data['calibrated']!r} is not a bool")
    prm = Params(version=data["version"], **{t: _record(path, t, data.get(t)) for t in TABLES})
    lim, buf = prm.limits, prm.buffers
    return Target(name=name, version=prm.version, nc_version=lim.nc_version, partitions=lim.partitions,
                  psum_free_max=lim.psum_free_max, gemm_stationary_free_max=lim.gemm_stationary_free_max,
                  gemm_moving_free_max=lim.gemm_moving_free_max, spmd_cores=lim.spmd_cores,
                  sbuf_partition_bytes=buf.sbuf_partition_bytes, psum_bank_bytes=buf.psum_bank_bytes,
                  psum_banks=buf.psum_banks, params=prm, calibrated=data.get("calibrated", True))


@dataclass(frozen=True, slots=True, eq=False)  # one object per target (get is cached): identity
class Target:
    """One NeuronCore generation: the compiler's limits and the cost model's parameters."""

    name: str
    #: the file's ``version``: bumped whenever a number changes (reports name it)
    version: str
    #: NeuronCore generation (``nisa.nc_version``): 2 = trn1, 3 = trn2, 4 = trn3
    nc_version: int
    partitions: int
    psum_free_max: int
    gemm_stationary_free_max: int
    gemm_moving_free_max: int
    #: NeuronCores one launch may shard its SPMD instances over (nl.nc(k) needs k <= this)
    spmd_cores: int
    sbuf_partition_bytes: int
    psum_bank_bytes: int
    psum_banks: int
    #: the cost model's parameters and the compiler's limits, one frozen record per table of the file
    params: Params
    #: the cost model has been checked against published figures for this target (the file's ``calibrated``;
    #: trn3's has none yet, so each of its estimates says "uncalibrated")
    calibrated: bool = True

    @property
    def label(self) -> str:
        """How estimates name the target: ``trn2``, or ``trn3 (uncalibrated)`` for a target no published figure
        has checked."""
        return self.name if self.calibrated else f"{self.name} (uncalibrated)"

    def __str__(self) -> str:
        return self.name

    @property
    def limits(self) -> Limits:
        """The file's ``[limits]``: the compiler's checks read every hardware number from here."""
        return self.params.limits

    def engine_ops(self, engine_op: str) -> frozenset[str] | None:
        """The operators (``"op0+op1"`` or ``"op0"``) the target file's ``[engine_ops]`` table lets an engine asked
        for by name compute (``tensor_scalar_gpsimd``...); None when it computes every one (``"*"``)."""
        ops = getattr(self.params.engine_ops, engine_op)
        return None if "*" in ops else frozenset(ops)

    @property
    def psum_partition_bytes(self) -> int:
        """PSUM bytes per partition: every bank."""
        return self.psum_bank_bytes * self.psum_banks


def names() -> tuple[str, ...]:
    """Every target nkisim models (one file each)."""
    return tuple(sorted(p.stem for p in TARGETS_DIR.glob("*.toml")))


@functools.cache
def get(name: str) -> Target:
    """The target called ``name`` (``"trn1"``, ``"trn2"``, ``"trn3"``); ValueError naming the known ones otherwise."""
    key = str(name).lower()
    path = TARGETS_DIR / f"{key}.toml"
    if not key.isidentifier() or not path.is_file():
        raise ValueError(f"unknown platform target {name!r}: the simulator models {', '.join(names())}")
    return load(path, key)


def resolve(target: Target | str) -> Target:
    """A ``Target`` for a name or a ``Target`` (what public functions accept)."""
    return target if isinstance(target, Target) else get(target)
