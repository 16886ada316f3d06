"""Why an estimate is what it is: the compiler behaviours the model applied to a kernel, as records.

The scheduler notes each one where it applies (``Notes``); ``nkisim.cost.model.Estimate.reasons`` carries them, the
profile's summary renders them as "Why:" lines (``text``) and the grader's feedback reads them (as
``nkisim.api``'s ``Estimate``), so what a student is told is what the model did.  Each mechanism's sentence quotes
the AWS source the model follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the mechanisms, each with what it did and its source (rendered by ``text``)
MECHANISMS: dict[str, str] = {
    "sequential_range": (
        "sequential_range keeps a loop's accesses to a tensor made outside it in program order: {count:,} "
        "instructions waited {us:.1f} us in all (summed, they may overlap) for an earlier iteration's access to "
        "another part of it (\"The NKI compiler does not try to re-order or parallelize the executions of loops, "
        "and runs them in sequence order\", NKI docs, Sequential loop); nl.affine_range lets independent "
        "iterations overlap"),
    "sequential_order": (
        "sequential_range runs a loop's iterations in sequence order: {count:,} instructions whose data was ready "
        "waited behind earlier instructions of their engine although it had idle time before them, which they could "
        "have filled with {us:.1f} us of their work in all (summed, they may share it) (\"The NKI compiler does not "
        "try to re-order or parallelize the executions of loops, and runs them in sequence order\"; affine loops "
        "allow \"the compiler to unroll and optimize code ordering between different iterations of the loop\", NKI "
        "docs, Scheduling options for loop); nl.affine_range lets them run in it"),
    "renamed": (
        "a tile made outside its loop and written whole {count:,} times gets a new buffer for each value (the legacy "
        "compiler allocates SBUF to data, \"to achieve instruction parallelism across different engines\", NKI "
        "direct allocation guide), so a load of the next value does not wait for the readers of this one"),
    "trivial_dim": (
        "{count:,} DMAs of a one-partition tile ([1, N]) went in 4-byte pieces, each paying a DMA buffer's fixed "
        "cost (\"the compiler performs optimizations for trivial dimensions, which can result in several small (e.g., "
        "4-byte) DMA buffer loads\", AWS's RMSNorm-Quant design doc)"),
    "unread": (
        "a tile written here that no instruction reads held no SBUF beyond its write (the compiler allocates SBUF "
        "to live data: \"When the cumulative size of live data defined by the NKI kernel overflows the capacity\", "
        "NKI docs, programming model), so it took no room from the other tiles' buffers"),
    "inserted_transpose": (
        "nl.matmul(x, y) without transpose_x=True: the compiler inserted {count:,} transposes of x on the Tensor "
        "Engine, {us:.1f} us of its time in all (\"matmul(x, y) lowers to nc_matmul(transpose(x), y). To avoid this "
        "extra transpose instruction being inserted, use x.T and transpose_x=True\", nki.language.matmul's "
        "docstring); keep x with its contraction dimension on the partitions and pass transpose_x=True"),
    "dma_transpose": (
        "{count:,} DMAs transposed as they moved, slower than plain copies of the same bytes: {us:.1f} us more DMA "
        "queue time in all, summed over the queues (NeuronCore-v3: \"DMA transpose on Trainium2 can achieve up to 90% "
        "DMA throughput utilization given hardware-friendly tensor access patterns, compared to up to 100% throughput "
        "utilization for a DMA copy\", output in whole [128, 16] blocks; \"SBUF2SBUF transpose can achieve up to 50% "
        "of DMA throughput\"; other shapes \"at the cost of DMA performance\", trainium2_arch.rst; NeuronCore-v2: a "
        "quarter of the rate, no AWS figure); the alternative is a Tensor Engine transpose (nisa.nc_transpose), "
        "\"more performant but requires ScalarE/VectorE to evict the transposed output from PSUM back to SBUF\""),
    "swdge": (
        "{count:,} gathers or scatters through an index tile had GpSimd make their DMA descriptors at run time, "
        "{us:.1f} us of its time in all (\"The GpSimd Engine generates DMA descriptors during NEFF execution. This is "
        "the only mode that supports indirect (gather/scatter) operations\"; it \"Consumes GpSimd Engine cycles for "
        "descriptor generation\", and the hardware DGE \"Does not support indirect (gather/scatter) operations\", NKI "
        "docs, DGE deep dive; the time per DMA is the compiler's PerfSim figure, not AWS's); a DMA with static "
        "addresses needs none"),
    "copy_engine": (
        "{count:,} copies left to the compiler ran on ScalarE rather than VectorE (\"compiler selects best engine "
        "based on engine workload\", nki.isa.tensor_copy's engine parameter)"),
}


@dataclass(frozen=True)
class Reason:
    """One mechanism at one source line: how many instructions (or whole writes) it concerned and the time it
    held them (µs; 0 when it holds nothing back), or for work the compiler inserted that work's engine time
    (``inserted_transpose``, ``swdge``), or for a slower form of a transfer (``dma_transpose``) the DMA queue time it
    added."""

    mechanism: str
    file: str
    line: int
    count: int
    us: float

    def text(self) -> str:
        return f"line {self.line}: " + MECHANISMS[self.mechanism].format(count=self.count, us=self.us)


class Notes:
    """The scheduler's tally: (mechanism, source location) -> [count, ns]."""

    __slots__ = ("tally",)

    def __init__(self) -> None:
        self.tally: dict[tuple[str, Any], list[float]] = {}

    def add(self, mechanism: str, loc: Any, ns: float = 0.0, count: int = 1) -> None:
        assert mechanism in MECHANISMS
        t = self.tally.setdefault((mechanism, loc), [0, 0.0])
        t[0] += count
        t[1] += ns

    def reasons(self) -> tuple[Reason, ...]:
        """Most time held first, then by mechanism and line."""
        out = [Reason(m, str(loc[0]), int(loc[1]) if isinstance(loc[1], int) else 0, int(c), ns / 1000.0)
               for (m, loc), (c, ns) in self.tally.items()]
        return tuple(sorted(out, key=lambda r: (-r.us, r.mechanism, r.file, r.line)))
