"""Hardware facts a lesson quotes, rendered from the simulator's target files when the lesson is released.

A lesson's markdown writes ``{{trn2:sbuf_partition_kib}}`` where it states a number about the hardware (or
``{{float8_e4m3:max}}`` about a number format, from ``ml_dtypes.finfo``); ``make
release`` (``nkilab.authoring.release.load_source``) replaces it with the value read through ``nkisim.api.target`` from
``nkisim/targets/trn2.toml``, the one file that holds it (each number there cites its source).  So two lessons
cannot disagree about SBUF, and a corrected target file corrects every lesson at the next release.  Code cells
read the same numbers at run time (``peak(target)``), never as literals.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nkisim.api import Target

#: ``{{target:fact}}`` in a lesson's markdown
PLACEHOLDER = re.compile(r"\{\{(\w+):(\w+)\}\}")
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def _target(name: str) -> Target:
    from nkisim import api

    return api.target(name)


def _num(x: float) -> str:
    return f"{x:g}"


def _engines(name: str) -> int:
    from nkisim import api

    return len({e for e in api.ENGINE_NAMES.values() if e != "DMA"})


FACTS: dict[str, Callable[[str], str]] = {
    "partitions": lambda t: str(_target(t).partitions),
    # usable SBUF per partition (what the compiler lets a kernel allocate) and in all
    "sbuf_partition_kib": lambda t: str(round(_target(t).sbuf_partition_bytes / 1024)),
    "sbuf_usable_mib": lambda t: f"{_target(t).sbuf_partition_bytes * _target(t).partitions / 2**20:.0f}",
    "psum_partition_kib": lambda t: _num(_target(t).psum_partition_bytes // 1024),
    "psum_banks": lambda t: str(_target(t).psum_banks),
    "psum_bank_kib": lambda t: _num(_target(t).psum_bank_bytes // 1024),
    "gemm_moving_fmax": lambda t: str(_target(t).gemm_moving_free_max),
    "gemm_stationary_fmax": lambda t: str(_target(t).gemm_stationary_free_max),
    "pe_tflops_bf16": lambda t: _num(_target(t).params.peak.pe_tflops_bf16),
    "pe_tflops_fp32": lambda t: _num(_target(t).params.peak.pe_tflops_fp32),
    "pe_tflops_fp8": lambda t: _num(_target(t).params.peak.pe_tflops_fp8),
    "dma_gbps": lambda t: _num(_target(t).params.peak.dma_gbps),
    "dma_queues": lambda t: str(_target(t).params.dma.queues),
    "dma_bytes_per_ns": lambda t: _num(_target(t).params.dma.bytes_per_ns),
    "launch_us": lambda t: _num(_target(t).params.kernel.fixed_us),
    # the cost model's price of one matmul: max(floor, moving columns) x fp32 factor + overhead PE cycles
    "pe_clock_ghz": lambda t: _num(_target(t).params.clock_ghz.pe),
    "pe_moving_floor_cycles": lambda t: str(_target(t).params.pe.moving_floor_cycles),
    "pe_matmul_overhead_cycles": lambda t: str(_target(t).params.pe.matmul_overhead_cycles),
    "pe_fp32_factor": lambda t: _num(_target(t).params.pe.fp32_factor),
    "compute_engines": lambda t: _WORDS[_engines(t)],
}


def _finfo(dtype: str) -> Any:  # ml_dtypes' finfo (or NumPy's)
    import ml_dtypes
    import numpy as np

    return ml_dtypes.finfo(np.dtype(dtype))


def _pow2(x: float) -> str:
    import math

    return f"2^{int(math.log2(x))}"


#: facts of a number format (``{{float8_e4m3:max}}``), from ``ml_dtypes.finfo``: the same dtypes NKI names
DTYPE_FACTS: dict[str, Callable[[str], str]] = {
    "max": lambda d: _num(float(_finfo(d).max)),
    "mantissa_bits": lambda d: str(_finfo(d).nmant),
    "exponent_bits": lambda d: str(_finfo(d).nexp),
    "eps": lambda d: _num(float(_finfo(d).eps)),
    "eps_pow2": lambda d: _pow2(float(_finfo(d).eps)),
    "smallest_normal_pow2": lambda d: _pow2(float(_finfo(d).smallest_normal)),
    "smallest_subnormal_pow2": lambda d: _pow2(float(_finfo(d).smallest_subnormal)),
}
DTYPES = ("float8_e4m3", "float8_e5m2", "bfloat16", "float16", "float32")


class FactError(KeyError):
    pass


def fact(target: str, name: str) -> str:
    """The fact ``name`` of ``target`` (a target file, or a number format such as ``float8_e4m3``) as a lesson
    prints it."""
    table = DTYPE_FACTS if target in DTYPES else FACTS
    if name not in table:
        raise FactError(f"no lesson fact {name!r} of {target}; known: {', '.join(sorted(table))}")
    return table[name](target)


def render(text: str) -> str:
    """``text`` with every ``{{target:fact}}`` replaced by its value (an unknown one is an error)."""
    return PLACEHOLDER.sub(lambda m: fact(m.group(1), m.group(2)), text)


@dataclass(frozen=True)
class Peak:
    """A target's peak rates, for a lesson's bounds and utilisation (read from the target file at run time)."""

    target: str
    pe_tflops: dict[str, float]  # by matmul input dtype
    dma_gbps: float
    launch_us: float

    def pe_tflops_for(self, dtype: str) -> float:
        """The PE array's peak for inputs of ``dtype``, as the cost model maps a dtype to a rate
        (``nkisim.api.pe_peak_tflops``: float16 runs at bfloat16's rate, fp8 at its own)."""
        from nkisim import api

        return api.pe_peak_tflops(self.target, dtype)


def peak(target: str) -> Peak:
    """``target``'s peak TensorE rates, DMA bandwidth and fixed launch cost (cost-model parameters)."""
    p = _target(target).params
    pe = {"bfloat16": float(p.peak.pe_tflops_bf16), "float32": float(p.peak.pe_tflops_fp32),
          "fp8": float(p.peak.pe_tflops_fp8)}
    return Peak(target, pe, float(p.peak.dma_gbps), float(p.kernel.fixed_us))
