"""How fast could an executor run the 2048^3 tiled matmul at all?  ``python bench/matmul_floor.py``

Row (b*) of ``bench/run.py`` asks for the executed program within 2x of NumPy's whole-array matmul on every
core.  Results must stay bit-identical to the eager launch, so an executor must compute the same 1,024 tile
products (128x128 by 128x512, fp32) and add them into each PSUM tile in the same order.  This times, in plain
NumPy with no simulator at all, the ways of doing exactly that work, and checks each against the first bit for
bit: so it says which goal is reachable on this machine before any bookkeeping.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

S, TM, TK, TN = 2048, 128, 128, 512
REPEATS = int(os.environ.get("NKISIM_BENCH_REPEATS", "5"))


def _tile(lhs_t: np.ndarray, rhs: np.ndarray, out: np.ndarray, m: int, n: int) -> None:
    """One output tile as the kernel computes it: a loaded copy of each operand tile, their product, summed
    over K in order (the first product starts the accumulation)."""
    acc = None
    for k in range(S // TK):
        a = lhs_t[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM].copy()
        b = rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN].copy()
        p = np.matmul(a.T, b)
        if acc is None:
            acc = p
        else:
            acc += p
    out[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN] = acc


def one_by_one(lhs_t: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    out = np.empty((S, S), np.float32)
    for m in range(S // TM):
        for n in range(S // TN):
            _tile(lhs_t, rhs, out, m, n)
    return out


def batched(lhs_t: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The K products of an output tile as one stacked np.matmul (BLAS still runs one product at a time)."""
    out = np.empty((S, S), np.float32)
    ks = range(S // TK)
    for m in range(S // TM):
        a = np.stack([lhs_t[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM] for k in ks]).transpose(0, 2, 1)
        for n in range(S // TN):
            p = np.matmul(a, np.stack([rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN] for k in ks]))
            acc = p[0].copy()
            for k in ks[1:]:
                acc += p[k]
            out[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN] = acc
    return out


def two_threads(lhs_t: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Independent output tiles on two Python threads (NumPy releases the GIL inside BLAS)."""
    out = np.empty((S, S), np.float32)
    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(_tile, lhs_t, rhs, out, m, n) for m in range(S // TM) for n in range(S // TN)]:
            f.result()
    return out


def best_and_median(fn: Callable[[], np.ndarray]) -> tuple[float, float, np.ndarray]:
    out = fn()
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), out


def main() -> None:
    rng = np.random.default_rng(0)
    lhs_t = rng.standard_normal((S, S), dtype=np.float32)
    rhs = rng.standard_normal((S, S), dtype=np.float32)
    whole, whole_med, _ = best_and_median(lambda: lhs_t.T @ rhs)
    print(f"load average {os.getloadavg()[0]:.2f}; NumPy whole-array matmul on every core: best {whole * 1e3:.0f} ms, "
          f"median {whole_med * 1e3:.0f} ms (row (b*)'s goal: 2x that)")
    ref = None
    for blas, name, fn in [(1, "tile products one by one (what the executor does)", one_by_one),
                           (1, "K products of a tile as one batched np.matmul", batched),
                           (1, "output tiles on two Python threads", two_threads),
                           (2, "tile products one by one, two BLAS threads", one_by_one)]:
        with threadpool_limits(blas, user_api="blas"):
            t, med, out = best_and_median(lambda fn=fn: fn(lhs_t, rhs))
        ref = out if ref is None else ref
        print(f"  {name:52s} best {t * 1e3:5.0f} ms ({t / whole:.2f}x), median {med * 1e3:5.0f} ms, "
              f"bit-identical: {np.array_equal(out, ref)}")


if __name__ == "__main__":
    main()
