"""The course's lower bound (``nkilab.course.bounds``) and the two cost rules the bf16 FP8 reference leans on.

* The engines term is a linear programme solved through its dual; here it is checked against an independent primal
  search (every split of each pass over the engines on a grid), and against hand-computed cases.
* VectorE's bf16 performance mode is the Vector engine's only: a GpSimd bf16 multiply is not sped up by it.
* A multiply whose operand repeats along the free axis (a group scale) is not contiguous, so the bf16 one-pass rule
  does not apply to it, in the legacy ``nl.multiply`` broadcast, a legacy zero-stride index and NKI 0.6's
  ``.broadcast`` view alike.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from nkilab.course.bounds import engines_us, pass_cycles
from nkisim import api

CLOCKS = {"act": 1.2, "dve": 0.96, "pool": 1.2}
TRN2 = api.target("trn2").params


def _primal(passes, per_partition, cycles, clocks, steps=24):
    """min over splits (each pass's fractions over its engines, on a grid) of the busiest engine's time: an upper
    bound on the programme's optimum that approaches it as the grid refines. Every combination of the passes'
    splits is tried (the engines' loads summed with NumPy, one pass kind at a time; the last kind's splits one by
    one, so the millions of combinations never sit in memory at once)."""
    engines = sorted(clocks)
    contributions = []  # per pass kind: each split's load on every engine (µs)
    for k in (k for k, n in passes.items() if n):
        mine = sorted(cycles[k])
        splits = np.array([c for c in itertools.product(range(steps + 1), repeat=len(mine)) if sum(c) == steps])
        load = np.zeros((len(splits), len(engines)))
        for j, e in enumerate(mine):
            load[:, engines.index(e)] = splits[:, j] / steps * passes[k] * cycles[k][e] * per_partition / (
                clocks[e] * 1e3)
        contributions.append(load)
    *first, last = contributions
    load = np.zeros((1, len(engines)))
    for c in first:
        load = (load[:, None, :] + c[None, :, :]).reshape(-1, len(engines))
    return float(min((load + split).max(axis=1).min() for split in last))


def test_one_input_passes_spread_over_three_engines():
    cycles = pass_cycles("trn2", half=False)
    # 3.36 elements per ns over the three clocks: 33600 one-input cycles of work take 10 us
    exact = 33600 / 3360
    assert exact * (1 - 5e-3) <= engines_us({"one": 1}, 33600, cycles, CLOCKS) <= exact  # from below: a valid bound


def test_a_two_input_pass_never_runs_on_the_scalar_engine():
    cycles = pass_cycles("trn2", half=False)
    assert "act" not in cycles["two"] and "act" not in cycles["minmax"] and "act" not in cycles["broadcast"]
    # two cycles per element over Vector and GpSimd only
    exact = 2 * 21600 / 2160
    assert exact * (1 - 5e-3) <= engines_us({"two": 1}, 21600, cycles, CLOCKS) <= exact


@pytest.mark.parametrize("half", [False, True])
def test_the_dual_meets_an_independent_primal_search(half):
    """The FP8 question's passes: the dual's value never exceeds the primal's (weak duality, both valid) and the
    two meet within the grids' resolution."""
    cycles = pass_cycles("trn2", half=half)
    passes = {"one": 2, "two": 1, "broadcast": 1, "minmax": 1}
    dual = engines_us(passes, 32768, cycles, CLOCKS)
    primal = _primal(passes, 32768, cycles, CLOCKS)
    assert dual <= primal + 1e-9
    assert primal - dual < 0.03 * primal, (dual, primal)


def test_bf16_rates_follow_the_target_file():
    fp32, bf16 = pass_cycles("trn2", half=False), pass_cycles("trn2", half=True)
    eng = TRN2.engine
    assert fp32["two"]["dve"] == 2 and fp32["one"]["dve"] == 1
    assert bf16["two"]["dve"] == 1 / eng.dve_perf_tensor_tensor_speedup  # one pass, then the perf mode's 2x
    assert bf16["broadcast"]["dve"] == 2 / eng.dve_perf_tensor_tensor_speedup  # not contiguous: no one-pass rule
    assert bf16["one"]["dve"] == 1 / eng.dve_perf_copy_speedup
    assert bf16["two"]["pool"] == 1 and bf16["broadcast"]["pool"] == 2  # GpSimd: no performance mode


def _busy(kernel, args, engine):
    return api.estimate(api.trace(kernel, args, target="trn2"), target="trn2").engine_busy_us[engine]


BF16 = np.dtype(ml_dtypes.bfloat16)
N = 2048


def _legacy_multiply(kind):
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl

    @nki.jit
    def k(a, s):
        out = nl.ndarray((128, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        at = nl.load(a)
        st = nl.load(s)
        if kind == "contiguous_vector":
            r = nisa.tensor_tensor(at, at, op=nl.multiply)
        elif kind == "contiguous_gpsimd":
            r = nisa.tensor_tensor(at, at, op=nl.multiply, engine=nisa.gpsimd_engine)
        elif kind == "nl_broadcast":
            r = nl.multiply(at.reshape((128, N // 16, 16)), st.reshape((128, N // 16, 1))).reshape((128, N))
        else:  # a zero-stride index: each scale read 16 times
            i_p = nl.arange(128)[:, None, None]
            i_g = nl.arange(N // 16)[None, :, None] + 0 * nl.arange(16)[None, None, :]
            r = nisa.tensor_tensor(at.reshape((128, N // 16, 16)), st[i_p, i_g], op=nl.multiply).reshape((128, N))
        nl.store(out, value=r)
        return out

    return k


def _nki06_broadcast():
    import nki
    import nki.isa as nisa
    import nki.language as nl

    @nki.jit
    def k(a, s):
        out = nl.ndarray((128, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        at = nl.load(a).reshape((128, N // 16, 16))
        st = nl.load(s).reshape((128, N // 16, 1))
        r = nl.ndarray((128, N // 16, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=r, data1=at, data2=st.broadcast(2, 16), op=nl.multiply)
        nl.store(out, value=r.reshape((128, N)))
        return out

    return k


def test_a_bf16_multiply_is_fast_only_when_contiguous_and_on_the_vector_engine():
    a, s = np.ones((128, N), BF16), np.ones((128, N // 16), BF16)
    clock_ns = {"dve": 1 / 0.96, "pool": 1 / 1.2}
    overhead = TRN2.engine.instruction_overhead_cycles

    def cycles(kind, engine):
        return _busy(_legacy_multiply(kind), [a, s], engine) * 1e3 / clock_ns[engine] - overhead

    assert cycles("contiguous_vector", "dve") == pytest.approx(N / 2)  # one pass, then the performance mode's 2x
    assert cycles("contiguous_gpsimd", "pool") == pytest.approx(N)  # one pass; GpSimd has no performance mode
    # the scale repeats along the free axis: two passes, halved by the performance mode, in every spelling
    for kind in ("nl_broadcast", "zero_stride_index"):
        assert cycles(kind, "dve") == pytest.approx(N), kind
    assert _busy(_nki06_broadcast(), [a, s], "dve") * 1e3 / clock_ns["dve"] - overhead == pytest.approx(N)
