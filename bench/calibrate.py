"""Cost model vs published trn1 latencies (published-latencies.csv): prints model, published, ratio.

Run: ``.venv/bin/python bench/calibrate.py [--quick]`` (--quick skips the 8192-sized matmul ladder).
All kernels run in cost-only mode through nki.benchmark with nt.tensor placeholders.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import neuronxcc.nki as nki  # noqa: E402
import neuronxcc.nki.language as nl  # noqa: E402
import neuronxcc.nki.typing as nt  # noqa: E402

from tests.cost_kernels import matmul, vector_add  # noqa: E402


def latency_us(kernel, *args, target: str = "trn1") -> float:
    """Modelled p99 latency of ``kernel(*args)`` (µs), silencing the benchmark banner."""
    b = nki.benchmark(warmup=1, iters=1, platform_target=target)(kernel)
    with contextlib.redirect_stdout(io.StringIO()):
        b(*args)
    return b.benchmark_result.nc_latency.get_latency_percentile(99)


def vec(n: int):
    return nt.tensor[[n], nl.float32]


def cases(quick: bool = False) -> list[tuple[str, object, tuple, float]]:
    """(name, kernel, args, published µs) of the trn1 calibration ladders."""
    out = [
        ("vector_add_tiled R=1 n=25600", vector_add.tiled(1), (vec(25600), vec(25600)), 27404),
        ("vector_add_tiled R=128 n=25600", vector_add.tiled(128), (vec(25600), vec(25600)), 206),
        ("vector_add_stream F=2 n=25600", vector_add.stream(2), (vec(25600), vec(25600)), 53),
        ("vector_add_stream F=200 n=25600", vector_add.stream(200), (vec(25600), vec(25600)), 19),
        ("vector_add_stream F=2000 n=256000", vector_add.stream(2000), (vec(256000), vec(256000)), 34),
        ("vector_add_stream F=1000 n=256000", vector_add.stream(1000), (vec(256000), vec(256000)), 29),
        ("vector_add_direct F=1000 K=4 n=256000", vector_add.direct(1000, 4), (vec(256000), vec(256000)), 29),
    ]
    if not quick:
        a, b = nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16]
        out += [
            ("matmul tiled", matmul.tiled(), (a, b), 51800),
            ("matmul hoist_load", matmul.hoist_load(), (a, b), 42960),
            ("matmul block_free_dimension", matmul.block_free_dimension(), (a, b), 22070),
            ("matmul fully_optimized", matmul.fully_optimized(), (a, b), 6970),
        ]
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    print(f"{'kernel':40s} {'model us':>10s} {'published':>10s} {'ratio':>6s} {'wall s':>7s}")
    for name, kern, args, pub in cases(quick):
        t0 = time.perf_counter()
        model = latency_us(kern, *args)
        print(f"{name:40s} {model:10.1f} {pub:10.1f} {model / pub:6.2f} {time.perf_counter() - t0:7.1f}")


if __name__ == "__main__":
    main()
