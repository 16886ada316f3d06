"""Stage 8's speed tiers beside CS149's published thresholds, at CS149's own shape (issue 31 scope 3).

    .venv/bin/python bench/stage8_tiers.py

CS149 2025 (asst4-trainium2, trn2) grades its fused conv2d + max pool on X [1, 256, 224, 224], W [256, 256, 3, 3]
with two p99 thresholds per dtype, a relaxed one (95% of the points) and an optimised one (all of them); CS149 2024
(asst4-trainium, trn1) had one per dtype.  Stage 8's Q2 grades the same way on the same engine work, but against
our reference kernels' latencies (full points within ``full_tier`` x the fast reference, half within
``partial_tier`` x Q1's reference, course.toml), estimated by the cost model, on a smaller speed case.  This script
estimates both references at CS149's shape and prints the tiers they give next to CS149's thresholds, and the one
student hand-in with a published hardware latency at that shape (bench/published_latencies.csv): the tier its
hardware latency earned at CS149, and the tier its estimate earns here (its kernel is read from the local mirror of
its repository, as bench/calibrate.py does; without it, the row says so).
Every latency of ours is a cost-model estimate for the course's target, not a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "autograder"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from nkilab.course.questions import QUESTIONS, relaxed_reference  # noqa: E402
from nkilab.judge.evaluate import grading_target  # noqa: E402
from nkilab.kernels.modules import load_kernel  # noqa: E402

#: CS149 2025's thresholds, µs: (dtype, image height) -> (relaxed, optimised) (stanford-cs149/asst4-trainium2
#: part2/test_harness.py:111-116 at 67a1f8b; the README says each is 120% of a reference kernel's latency)
CS149_2025 = {"float32": (4964.0, 4596.0), "float16": (1365.0, 1002.0)}
#: CS149 2024's one threshold per dtype on trn1 (stanford-cs149/asst4-trainium part2/test_harness.py:113-116 at
#: 859c0e3, "within 150% of the reference")
CS149_2024 = {"float32": 4300.0, "float16": 1300.0}
#: the published hardware latencies of a hand-in at this shape with max pool on trn2 (published_latencies.csv:
#: xaviergonzalez/asst4-trainium2 writeup.md:201 and :214, nki.benchmark p99 with --disable-dge)
HAND_IN = {"float32": 3830.0, "float16": 825.0}
SHAPES = ((1, 256, 224, 224), (256, 256, 3, 3), (256,))


def estimate_us(kernel, dtype: str, target: str) -> float:
    """The kernel's estimated latency at CS149's shape (traced from shapes and dtypes: no values computed)."""
    from nkisim import api

    args = [np.zeros(s, dtype=np.dtype(dtype)) for s in SHAPES]
    return api.estimate(api.trace(kernel, args, target=target), target=target).total_us


def rows() -> list[tuple[str, float, float, float, float]]:
    """Per dtype: (dtype, our half-points threshold, our full-points threshold, CS149's relaxed, CS149's optimised)."""
    fast = QUESTIONS["conv2d_maxpool_fast"]
    relaxed = relaxed_reference(fast)
    assert relaxed is not None
    target = grading_target(fast)
    out = []
    for dtype in ("float16", "float32"):
        full = estimate_us(load_kernel(fast.solution_path, fast.function), dtype, target)
        half = estimate_us(load_kernel(relaxed.solution_path, relaxed.function), dtype, target)
        out.append((dtype, fast.partial_tier * half, fast.full_tier * full, *CS149_2025[dtype]))
    return out


def main() -> None:
    fast = QUESTIONS["conv2d_maxpool_fast"]
    print(f"Stage 8 Q2's tiers at CS149's shape (X [1, 256, 224, 224] with a 3x3 filter, 2x2 max pool), "
          f"cost-model estimates for {grading_target(fast)}, against CS149 2025's thresholds (trn2, hardware p99)")
    print(f"{'dtype':8s} {'half (ours)':>12s} {'CS149 95%':>10s} {'ratio':>6s} {'full (ours)':>12s} "
          f"{'CS149 100%':>10s} {'ratio':>6s} {'hand-in':>8s}  hand-in's tier here / at CS149")
    from bench import calibrate

    bits = {"float16": "fp16", "float32": "fp32"}
    for dtype, half, full, cs_half, cs_full in rows():
        h = HAND_IN[dtype]
        theirs = "full" if h <= cs_full else "95%" if h <= cs_half else "none"
        fig = next(f for f in calibrate.FIGURES if f.name == f"conv2d+maxpool {bits[dtype]} 224x224 256ch "
                                                               "(xaviergonzalez)")
        if fig.available():
            e = fig.model()
            ours = f"{e:.1f} us estimated: " + ("full" if e <= full else "half" if e <= half else "none")
        else:
            ours = "its mirror is not here"
        print(f"{dtype:8s} {half:12.1f} {cs_half:10.1f} {half / cs_half:6.2f} {full:12.1f} {cs_full:10.1f} "
              f"{full / cs_full:6.2f} {h:8.1f}  {ours} / {theirs}")
    print("CS149 2024 (trn1, one tier): " + ", ".join(f"{d} {v:g} us" for d, v in CS149_2024.items()))


if __name__ == "__main__":
    main()
