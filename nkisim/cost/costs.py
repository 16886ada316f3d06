"""Per-instruction engine occupancy (ns) from the ISA cost formulas (spec §2.9, §4.2, §4.3).

Engines are busy for ``max(MIN_II, formula) + static overhead`` cycles at their own clock. Lanes
are free: 128 partitions cost the same as one, so only N (elements per partition) matters.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from nkisim.cost.trace import Instr

_HALF = ("bfloat16", "float16")


def _half(ins: Instr) -> bool:
    return bool(ins.dtypes) and all(d in _HALF for d in ins.dtypes)


def _one_input(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    """The one-input rule: N cycles, one element per partition per cycle (spec §4.3)."""
    return max(ins.n, 1)


def _two_inputs(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    return 2 * max(ins.n, 1)


def _gpsimd_fixed(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    """GpSimd instructions that generate or select by index pay a fixed start-up on top of N."""
    return 150 + max(ins.n, 1)


def _matmul(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    pe = prm["pe"]
    stat, mov = ins.extra.get("m", 128), ins.extra.get("n", max(ins.n, 1))
    c = max(min(pe["moving_floor_cycles"], stat), mov)
    if ins.extra.get("in_dtype") == "float32":
        c *= pe["fp32_factor"]
    return c + pe["matmul_overhead_cycles"]


def _broadcast(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    return broadcast_pe_cycles(ins, prm) if partition_broadcast(ins) else max(ins.n, 1)


def _transpose(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    if ins.engine == "pe":
        return max(ins.p, min(64, max(ins.n, 1))) + prm["pe"]["matmul_overhead_cycles"]
    return max(ins.n, 1)  # a 32x32-block transpose on VectorE: the one-input rule


def _tensor_tensor(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    n, half = max(ins.n, 1), _half(ins)
    one_pass = (spaces.count("psum") == 1) or (half and str(ins.extra.get("alu")) in ("add", "subtract", "multiply"))
    c = n if one_pass else 2 * n
    if prm["engine"]["dve_perf_mode"] and half:
        c /= 2
    return c


def _streaming(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    """tensor_scalar / copies: VectorE's perf mode streams 2- or 4-byte halves at 2x/4x (spec §4.3)."""
    n = max(ins.n, 1)
    if prm["engine"]["dve_perf_mode"] and _half(ins) and ins.engine == "dve":
        return n / (4 if "psum" not in spaces else 2)
    return n


def _memset(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    n = max(ins.n, 1)
    return n / 2 if (_half(ins) and ins.extra.get("zero")) else n


def _reduce(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    n = max(ins.n, 1)
    return n / 2 if _half(ins) and str(ins.extra.get("alu", "")) in ("add", "max") else n


Formula = Callable[[Instr, tuple[str, ...], dict[str, Any]], float]

#: instruction kind -> engine cycles before MIN_II and the access overhead: one entry per kind an op emits
#: (``tests/test_cost_model.py`` holds the ops and this table to each other), no fallback for a new kind.
FORMULAS: dict[str, Formula] = {
    "nc_matmul": _matmul, "nc_transpose": _transpose, "broadcast_to": _broadcast,
    "activation": _one_input, "tensor_tensor": _tensor_tensor,
    "tensor_scalar": _streaming, "tensor_copy": _streaming, "copy": _streaming,
    "memset": _memset, "tensor_reduce": _reduce,
    "scalar_tensor_tensor": _two_inputs, "where": _two_inputs, "tensor_tensor_scan": _two_inputs,
    "reciprocal": lambda ins, spaces, prm: 8 * max(ins.n, 1),
    "bn_aggr": lambda ins, spaces, prm: 13 * max(ins.n, 1) / 3,
    "iota": _gpsimd_fixed, "affine_select": _gpsimd_fixed, "tensor_partition_reduce": _gpsimd_fixed,
    **dict.fromkeys(("bn_stats", "dropout", "max8", "nc_find_index8", "nc_match_replace8", "nc_stream_shuffle",
                     "range_select", "select_reduce", "tensor_copy_dynamic_dst", "tensor_copy_dynamic_src",
                     "tensor_copy_predicated", "tensor_scalar_cumulative", "tensor_scalar_reduce",
                     "gather_flattened", "local_gather", "sequence_bounds"), _one_input),
}
#: kinds the DMA queues carry (``dma_queue_ns``), not a compute engine
DMA_KINDS = frozenset({"load", "store", "dma_copy", "load_transpose2d", "dma_transpose"})


def _cycles(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any]) -> float:
    """Engine cycles of one compute instruction (before MIN_II and overhead)."""
    formula = FORMULAS.get(ins.op)
    if formula is None:
        raise KeyError(f"the cost model has no formula for instruction {ins.op!r} (add it to cost.costs.FORMULAS)")
    return formula(ins, spaces, prm)


def partition_broadcast(ins: Instr) -> bool:
    """A ``broadcast_to`` that copies its source to more partitions (``[1, F] -> [P, F]``), which the
    compiler does on TensorE (spec §2.3/§2.10: a matmul with a ones vector); a free-axis broadcast
    (``[P, 1] -> [P, F]``) is an ordinary copy."""
    if ins.op != "broadcast_to" or not ins.reads or not ins.reads[0].box:
        return False
    lo, hi = ins.reads[0].box[0]
    return hi - lo < ins.p


def broadcast_pe_cycles(ins: Instr, prm: dict[str, Any]) -> float:
    """TensorE cycles of a partition broadcast: ``ones[K, P].T @ src[K, F]`` as matmuls whose output fits
    one PSUM bank (at most ``psum_free_max`` columns each, spec §1.3), each ``max(min(64, P), F_chunk)``
    cycles (spec §4.2); an fp32 source costs the fp32 factor, halved because the stationary ones
    matrix is one-zero (spec §2.9 ``is_stationary_onezero``)."""
    pe = prm["pe"]
    chunk = int(prm["limits"]["psum_free_max"])
    n = max(ins.n, 1)
    factor = pe["fp32_factor"] / 2 if ins.dtypes and ins.dtypes[0] == "float32" else 1
    cycles = 0.0
    for lo in range(0, n, chunk):
        cycles += max(min(pe["moving_floor_cycles"], ins.p), min(chunk, n - lo)) * factor + pe["matmul_overhead_cycles"]
    return cycles


def evict_ns(ins: Instr, engine: str, prm: dict[str, Any]) -> float:
    """The copy of a partition broadcast's PSUM result into its SBUF tile on ``engine`` (ScalarE or
    VectorE: TensorE only writes PSUM, spec §1.1), ``max(MIN_II, N)`` plus the access overhead."""
    eng = prm["engine"]
    return (max(eng["min_ii_cycles"], max(ins.n, 1)) + eng["instr_overhead_cycles"]) / prm["clock_ghz"][engine]


def engine_of(ins: Instr) -> str:
    """The engine an instruction runs on: its own, except that a free-axis ``broadcast_to`` is a copy on
    VectorE (only a partition broadcast needs TensorE)."""
    if ins.op == "broadcast_to" and not partition_broadcast(ins):
        return "dve"
    return ins.engine


def compute_ns(ins: Instr, spaces: tuple[str, ...], prm: dict[str, Any], engine: str = "") -> float:
    """Occupancy of a compute engine (pe/act/dve/pool; ``engine``, default the instruction's) in ns."""
    eng = prm["engine"]
    engine = engine or ins.engine
    c = _cycles(ins, spaces, prm)
    if engine != "pe":
        if ins.extra.get("stride_bytes", 0) > eng["stride_free_bytes"]:
            c *= eng["stride_penalty"]  # spec §4.3: strided SBUF/PSUM access runs at half bandwidth
        c = max(eng["min_ii_cycles"], c) + eng["instr_overhead_cycles"]
        if ins.extra.get("reduce") and ins.op in ("activation", "tensor_scalar"):
            c += eng["min_ii_cycles"]  # spec §4.3: accumulator read-out, max(64, N) + 64
    return c / prm["clock_ghz"][engine]


def dma_queues(ins: Instr, prm: dict[str, Any]) -> int:
    """DMA engines a transfer is spread over: one per 8 partitions, at most 16 (spec §4.4)."""
    d = prm["dma"]
    return max(1, min(d["queues"], math.ceil(max(ins.p, 1) / d["partitions_per_queue"])))


def dma_queue_ns(ins: Instr, nq: int, prm: dict[str, Any]) -> float:
    """Time one of the ``nq`` DMA queues is busy with its share of the transfer."""
    d = prm["dma"]
    eff = 1.0
    if ins.run:
        eff = min(1.0, max(d["strided_efficiency"], ins.run / d["full_rate_run_bytes"]))
    if ins.op == "load_transpose2d":
        eff *= d["transpose_efficiency"]
    return d["issue_ns"] + d.get("descriptor_ns", 0.0) * descriptors(ins) / nq + \
        (ins.nbytes / nq) / (d["bytes_per_ns"] * eff)


def descriptors(ins: Instr) -> int:
    """DMA descriptors of a transfer: one per contiguous piece, and a piece never spans partitions
    (the on-chip side is partition-strided), so it is at most one partition's bytes (spec §4.4:
    "128x512 fp32 is 16 transfers x 8 DMA buffers").  A 1-D HBM slice copied into an (R, 1) tile
    is R descriptors of one element each."""
    if ins.nbytes <= 0:
        return 1
    piece = ins.nbytes / max(ins.p, 1)
    if ins.run:
        piece = min(piece, ins.run)
    return max(1, math.ceil(ins.nbytes / max(piece, 1)))
