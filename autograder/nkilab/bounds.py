"""How close a reference kernel comes to what the hardware allows, by the cost model's own numbers.

Every question's speed tiers compare a student's kernel with the reference solution, so the reference should be
near the hardware's limit at the graded shape (``Question.speed_case``). The limit here is a lower bound on any
kernel's latency on the target, from the target file's peak rates (``nkisim.api.target``):

* **launch**: the fixed cost of starting a kernel (``[kernel] fixed_us``), and two DMA latencies (``[dma]
  fixed_latency_ns``): every output depends on an input, so some load must land before the first store starts, and
  that store takes a latency of its own;
* **DMA**: the least HBM traffic -- every input read once, the output written once -- at the peak DMA rate;
* **PE**: the computation's matmul flops at the Tensor Engine's peak for its input dtype;
* **engines**: the elementwise passes the computation cannot do without, at the cost model's cycles per element (a
  one-input pass 1 cycle, a two-input pass 2) spread perfectly over the Scalar, Vector and GpSimd engines at their
  clocks; a two-input pass and a min/max pass (a saturation: the Scalar engine has no min or max on trn2) on Vector
  and GpSimd only.

bound = launch + 2 DMA latencies + max(DMA, PE, engines). ``bench/course_speed.py`` prints each reference's estimate against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from nkilab.questions import Case, Question, Work, io_bytes


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
    cores = _cores(q)
    clocks = p["clock_ghz"]
    pe_key = {"float32": "pe_tflops_fp32", "float8_e4m3": "pe_tflops_fp8"}.get(w.pe_dtype, "pe_tflops_bf16")
    pe_tflops = float(p["peak"][pe_key]) * cores
    dma_gbps = float(p["peak"]["dma_gbps"]) * cores
    per_partition = w.elements / (128 * cores)
    two = (2 * w.two_input_passes + w.minmax_passes) * per_partition / ((clocks["dve"] + clocks["pool"]) * 1e3)
    every = (w.one_input_passes + w.minmax_passes + 2 * w.two_input_passes) * per_partition / (
        (clocks["act"] + clocks["dve"] + clocks["pool"]) * 1e3)
    return Bound(q.qid, target, float(p["kernel"]["fixed_us"]), 2 * float(p["dma"]["fixed_latency_ns"]) / 1e3,
                 w.hbm_bytes / (dma_gbps * 1e3),
                 w.pe_flops / (pe_tflops * 1e6) if w.pe_flops else 0.0, max(two, every), w.hbm_bytes, w.pe_flops,
                 pe_tflops, dma_gbps)


def _cores(q: Question) -> int:
    """NeuronCores a launch spans: a grid dimension ``{"nc": k}`` shards it over k cores."""
    return max([int(d["nc"]) for d in (q.grid or ()) if isinstance(d, dict)] or [1])
