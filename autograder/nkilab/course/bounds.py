"""How close a reference kernel comes to what the hardware allows, by the cost model's own numbers.

Every question's speed tiers compare a student's kernel with the reference solution, so the reference should be
near the hardware's limit at the graded shape (``Question.speed_case``). The limit here is a lower bound on any
kernel's latency on the target, from the target file's peak rates (``nkisim.api.target``):

* **launch**: the fixed cost of starting a kernel (``[kernel] fixed_us``), and two DMA latencies (``[dma]
  fixed_latency_ns``): every output depends on an input, so some load must land before the first store starts, and
  that store takes a latency of its own;
* **DMA**: the least HBM traffic -- every input read once, the output written once -- at the peak DMA rate;
* **PE**: the computation's matmul flops at the Tensor Engine's peak for its input dtype;
* **engines**: the elementwise passes the computation cannot do without, at the cost model's cycles per element on
  each engine (``pass_cycles``: a one-input pass 1 cycle, a two-input pass 2, fewer in VectorE's bf16 performance
  mode when the question's tolerance admits bf16 intermediates), shared out over the Scalar, Vector and GpSimd
  engines in the best way there is: the least time T in which the engines, each at its clock, can finish every
  pass, a fraction of a pass on any engine that runs it (a linear programme; ``engines_us`` solves its dual). A
  two-input pass and a min/max pass (a saturation: the Scalar engine has no min or max on trn2) run on Vector and
  GpSimd only.

bound = launch + 2 DMA latencies + max(DMA, PE, engines). ``bench/course_speed.py`` prints each reference's estimate against it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from nkilab.course.questions import Case, Question, Work, io_bytes


@dataclass(frozen=True)
class Bound:
    """The lower bound on ``question``'s graded shape, and its parts (all µs, cost-model figures for ``target``)."""

    qid: str
    target: str
    launch_us: float
    latency_us: float
    dma_us: float
    pe_us: float
    engines_us: float
    hbm_bytes: float
    pe_flops: float
    pe_tflops: float
    dma_gbps: float

    @property
    def total_us(self) -> float:
        return self.launch_us + self.latency_us + max(self.dma_us, self.pe_us, self.engines_us)

    @property
    def limit(self) -> str:
        """What bounds it: "DMA", "PE" or "engines"."""
        parts = {"DMA": self.dma_us, "PE": self.pe_us, "engines": self.engines_us}
        return max(parts, key=lambda k: parts[k])

    def share(self, estimate_us: float) -> float:
        """bound / estimate: 1.0 is a kernel at the limit."""
        return self.total_us / estimate_us

    def mfu(self, estimate_us: float) -> float | None:
        """The computation's flops over the estimate at the PE peak (None without matmuls)."""
        return self.pe_flops / (estimate_us * 1e-6 * self.pe_tflops * 1e12) if self.pe_flops else None

    def bandwidth_share(self, estimate_us: float) -> float:
        """The least HBM traffic over the estimate, as a share of the peak DMA rate."""
        return self.hbm_bytes / (estimate_us * 1e-6 * self.dma_gbps * 1e9)


def work_of(q: Question, case: Case) -> Work:
    """``q``'s work on ``case``: its own declaration, else an elementwise kernel's (the output is the first
    argument's shape; no matmuls, no engine passes counted)."""
    if q.work is not None:
        return q.work(case)
    return Work(io_bytes(case, len(q.arg_names), case.shapes(len(q.arg_names))[0]))


def bound(q: Question, target: str, case: Case | None = None) -> Bound:
    """The lower bound of ``q`` on ``case`` (default: its speed case) on ``target``."""
    from nkisim import api

    case = case or q.speed_case
    w = work_of(q, case)
    p = api.target(target).params
    cores = launch_cores(q)
    clocks = dataclasses.asdict(p.clock_ghz)  # engine -> GHz
    pe_tflops = api.pe_peak_tflops(target, w.pe_dtype or "bfloat16") * cores  # the model's dtype-to-rate map
    dma_gbps = float(p.peak.dma_gbps) * cores
    per_partition = w.elements / (api.target(target).partitions * cores)
    passes = {"one": w.one_input_passes, "two": w.two_input_passes, "broadcast": w.broadcast_passes,
              "minmax": w.minmax_passes}
    return Bound(q.qid, target, float(p.kernel.fixed_us), 2 * float(p.dma.fixed_latency_ns) / 1e3,
                 w.hbm_bytes / (dma_gbps * 1e3),
                 w.pe_flops / (pe_tflops * 1e6) if w.pe_flops else 0.0,
                 engines_us(passes, per_partition, pass_cycles(target, w.half), clocks), w.hbm_bytes, w.pe_flops,
                 pe_tflops, dma_gbps)


def pass_cycles(target: str, half: bool) -> dict[str, dict[str, float]]:
    """Cycles per element (per partition) of each kind of pass on each engine that can run it, asked of the cost model
    itself (``nkisim.api.cycles_per_element``: the instruction kinds' own formulas and the target's parameters), for
    operands in bf16 when ``half`` (the question's tolerance admits bf16 intermediates), else float32. A pass is the
    instruction that does it: a two-input pass a multiply (``tensor_tensor``; ``broadcast``: its second input
    repeated along the free axis), a one-input pass a ``tensor_scalar``, a min/max a ``tensor_scalar`` on the Vector
    engine and a ``tensor_tensor`` against a constant on GpSimd (whose tensor_scalar computes rsqrt only); the Scalar
    engine runs one-input passes only, and no min or max on trn2."""
    from nkisim import api

    dtype = "bfloat16" if half else "float32"

    def c(instruction: str, engine: str, alu: str, broadcast: bool = False) -> float:
        return api.cycles_per_element(target, instruction, engine, dtype, alu, broadcast)

    return {"two": {e: c("tensor_tensor", e, "multiply") for e in ("dve", "pool")},
            "broadcast": {e: c("tensor_tensor", e, "multiply", True) for e in ("dve", "pool")},
            "one": {e: c("tensor_scalar", e, "multiply") for e in ("act", "dve", "pool")},
            "minmax": {"dve": c("tensor_scalar", "dve", "minimum"), "pool": c("tensor_tensor", "pool", "minimum")}}


#: grid steps per unit of the engine weights ``engines_us`` searches (a finer grid only raises the bound toward the
#: programme's optimum; every point of it is a valid lower bound)
_WEIGHT_STEPS = 960


def engines_us(passes: dict[str, float], per_partition: float, cycles: dict[str, dict[str, float]],
               clocks: dict) -> float:
    """The least time (µs) in which the engines finish ``passes`` (kind -> how many) over ``per_partition``
    elements, each pass split in any fractions over the engines that run it.

    That is a linear programme: minimise T with every engine's share of the work at most T. Its dual is the
    maximum, over weights y >= 0 on the engines summing to 1, of the sum over passes of the cheapest y_e * t_e (t_e:
    the whole pass on engine e, µs). Every weight vector gives a lower bound (weak duality), so searching a grid of
    them gives a valid bound that approaches the optimum from below."""
    kinds = [k for k, n in passes.items() if n]
    if not kinds:
        return 0.0
    engines = sorted({e for k in kinds for e in cycles[k]})
    times = np.full((len(kinds), len(engines)), np.inf)  # µs of each pass kind, all of it, on each engine
    for i, k in enumerate(kinds):
        for j, e in enumerate(engines):
            if e in cycles[k]:
                times[i, j] = passes[k] * cycles[k][e] * per_partition / (float(clocks[e]) * 1e3)
    steps = _WEIGHT_STEPS
    axes = np.meshgrid(*[np.arange(steps + 1, dtype=float)] * (len(engines) - 1), indexing="ij")
    grid = np.stack([a.ravel() for a in axes], axis=1) if axes else np.zeros((1, 0))
    grid = grid[grid.sum(axis=1) <= steps]
    y = np.concatenate([grid, steps - grid.sum(axis=1, keepdims=True)], axis=1) / steps
    can = np.isfinite(times)[None, :, :]  # an engine that cannot run a pass takes none of it, whatever its weight
    weighted = np.where(can, y[:, None, :] * np.where(can, times[None, :, :], 0.0), np.inf)
    return float(np.max(weighted.min(axis=2).sum(axis=1)))


def launch_cores(q: Question) -> int:
    """NeuronCores a launch spans: a grid dimension ``{"nc": k}`` shards it over k cores."""
    return max([int(d["nc"]) for d in (q.grid or ()) if isinstance(d, dict)] or [1])
