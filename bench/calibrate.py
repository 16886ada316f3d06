"""Cost model vs published latencies (published-latencies.csv): prints target, model, published, ratio.

Run: ``.venv/bin/python bench/calibrate.py [--quick]`` (--quick skips the 8192-sized matmul ladder and
the two 25600-iteration ROW_CHUNK=1 kernels).
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

from tests.cost_kernels import layernorm, matmul, trn2_vector_add, vector_add  # noqa: E402


def latency_us(kernel, *args, target: str = "trn1") -> float:
    """Modelled p99 latency of ``kernel(*args)`` (µs), silencing the benchmark banner."""
    b = nki.benchmark(warmup=1, iters=1, platform_target=target)(kernel)
    with contextlib.redirect_stdout(io.StringIO()):
        b(*args)
    return b.benchmark_result.nc_latency.get_latency_percentile(99)


def vec(n: int):
    return nt.tensor[[n], nl.float32]


def cases(quick: bool = False) -> list[tuple[str, str, object, tuple, float]]:
    """(target, name, kernel, args, published µs) of the calibration ladders."""
    v25, v256 = (vec(25600), vec(25600)), (vec(256000), vec(256000))
    t2 = trn2_vector_add
    out = [] if quick else [("trn1", "vector_add_tiled R=1 n=25600", vector_add.tiled(1), v25, 27404)]
    out += [
        ("trn1", "vector_add_tiled R=128 n=25600", vector_add.tiled(128), v25, 206),
        ("trn1", "vector_add_stream F=2 n=25600", vector_add.stream(2), v25, 53),
        ("trn1", "vector_add_stream F=200 n=25600", vector_add.stream(200), v25, 19),
        ("trn1", "vector_add_stream F=2000 n=256000", vector_add.stream(2000), v256, 34),
        ("trn1", "vector_add_stream F=1000 n=256000", vector_add.stream(1000), v256, 29),
        ("trn1", "vector_add_direct F=1000 K=4 n=256000", vector_add.direct(1000, 4), v256, 29),
        ("trn1", "layernorm v1 4096x8192 (p50)", layernorm.v1(), LN_ARGS, 2311),
        ("trn1", "layernorm v2 4096x8192 (p50)", layernorm.v2(), LN_ARGS, 1969),
    ]
    if not quick:
        out.append(("trn2", "vector_add_tiled R=1 n=25600", t2.tiled(1), v25, 37318))
    out += [
        ("trn2", "vector_add_tiled R=128 n=25600", t2.tiled(128), v25, 378),
        ("trn2", "vector_add_stream F=2 n=25600", t2.stream(2), v25, 186),
        ("trn2", "vector_add_stream F=200 n=25600", t2.stream(200), v25, 15),
        ("trn2", "vector_add_stream F=2000 n=256000", t2.stream(2000), v256, 28),
        ("trn2", "vector_add_stream F=1000 n=256000", t2.stream(1000), v256, 27.9),
        ("trn2", "transpose 1024 fp32 static_range", t2.transpose(nl.static_range), (mat(1024),), 46.9),
        ("trn2", "transpose 1024 fp32 affine_range (86 NCL)", t2.transpose(), (mat(1024),), 86),
    ]
    if not quick:
        a, b = nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16]
        out += [
            ("trn1", "matmul tiled", matmul.tiled(), (a, b), 51800),
            ("trn1", "matmul hoist_load", matmul.hoist_load(), (a, b), 42960),
            ("trn1", "matmul block_free_dimension", matmul.block_free_dimension(), (a, b), 22070),
            ("trn1", "matmul fully_optimized", matmul.fully_optimized(), (a, b), 6970),
        ]
    return out


def mat(n: int):
    return nt.tensor[[n, n], nl.float32]


# the tutorial script's shape; its text's (300, 1000) models ~45 us, 50x below the published numbers
LN_ARGS = (nt.tensor[[4096, 8192], nl.float32], 1e-5, vec(8192), vec(8192))


def main() -> None:
    quick = "--quick" in sys.argv
    print(f"{'target':6s} {'kernel':42s} {'model us':>10s} {'published':>10s} {'ratio':>6s} {'wall s':>7s}")
    for target, name, kern, args, pub in cases(quick):
        t0 = time.perf_counter()
        model = latency_us(kern, *args, target=target)
        print(f"{target:6s} {name:42s} {model:10.1f} {pub:10.1f} {model / pub:6.2f} {time.perf_counter() - t0:7.1f}")


if __name__ == "__main__":
    main()
