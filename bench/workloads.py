"""Workloads timed by ``bench/run.py``: the tutorial kernels of ``tests/kernels/`` plus NumPy references.

They are deliberately unoptimised tutorial code (arange/mask indexing for RMSNorm, one PSUM tile per
output block for matmul) because that is what students run on the simulator; the benchmark measures
how much simulator overhead such code pays on top of the NumPy work it implies.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
from kernels.matmul import nki_matmul_tiled_ as matmul_tiled_kernel  # noqa: F401  (tests/kernels/)
from kernels.rmsnorm import nki_rmsnorm_kernel as rmsnorm_kernel  # noqa: F401


def rmsnorm_numpy(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The same math on whole arrays (fp32 throughout, like the engines)."""
    mean = np.sum(np.square(a), axis=1, keepdims=True) / np.float32(a.shape[1])
    return a * (np.float32(1.0) / np.sqrt(mean)) * g[None, :]


def matmul_numpy(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhsT.T @ rhs


def matmul_tiles_numpy(lhsT: np.ndarray, rhs: np.ndarray, tile_m: int = 128, tile_k: int = 128,
                       tile_n: int = 512) -> np.ndarray:
    """Only the tile products ``matmul_tiled_kernel`` asks for, in plain NumPy (fp32 accumulation
    over K tiles): what any simulator that multiplies tile by tile must spend at least."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = np.empty((M, N), dtype=np.float32)
    for m in range(0, M, tile_m):
        for n in range(0, N, tile_n):
            acc = np.zeros((tile_m, tile_n), dtype=np.float32)
            for k in range(0, K, tile_k):
                acc += lhsT[k:k + tile_k, m:m + tile_m].T @ rhs[k:k + tile_k, n:n + tile_n]
            out[m:m + tile_m, n:n + tile_n] = acc
    return out


#: Iterations of the tiny-tile loop; each issues ``TINY_OPS_PER_ITER`` traced instructions.
TINY_ITERS = 200
TINY_OPS_PER_ITER = 10


@nki.jit
def tiny_ops_kernel(a, b):
    """Many instructions on (128, 4) tiles: the cost is pure per-instruction bookkeeping."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    acc = nl.zeros((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    for _ in nl.sequential_range(TINY_ITERS):
        s = nl.add(x, y)
        d = nl.subtract(s, y)
        p = nl.multiply(d, 0.5)
        e = nl.exp(p)
        r = nl.maximum(e, x)
        t = r * y
        m = nl.max(t, axis=[1], keepdims=True)
        q = nl.subtract(t, m)
        c = nl.copy(q)
        acc[...] = nl.add(acc, c)
    nl.store(out, value=acc)
    return out


#: Outer and inner trip counts of ``nested_ops_kernel``: an inner loop of few iterations, entered again and again.
NESTED_OUTER, NESTED_INNER = 256, 2


@nki.jit
def nested_ops_kernel(a):
    """Small tiles in a nested loop whose inner loop runs twice per entry: each entry of a loop binds the index
    expressions of its body's accesses anew, which is bookkeeping per entry rather than per instruction."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(NESTED_OUTER):
        for j in nl.affine_range(NESTED_INNER):
            x = nl.load(a[i * 128:(i + 1) * 128, j * 4:(j + 1) * 4])
            y = nl.exp(x)
            nl.store(out[i * 128:(i + 1) * 128, j * 4:(j + 1) * 4], value=nl.add(y, x))
    return out


def conv2d_maxpool_06() -> Any:
    """The course's NKI 0.6 reference kernel for stage 8 (solutions/), whose Python loops unroll: one NKI call per
    instruction, as students' kernels issue them."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "solutions",
                        "08_conv2d_maxpool", "nki", "conv2d_maxpool.py")
    spec = importlib.util.spec_from_file_location("bench_conv2d_maxpool_06", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.conv2d_maxpool


def conv2d_maxpool_numpy(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """max_pool2d(conv2d(x, w) + bias, 2), unpadded stride-1 convolution, in NumPy (float64 sums)."""
    k = w.shape[2]
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))
    conv = np.einsum("bcyxij,ocij->boyx", windows, w, optimize=True) + bias[None, :, None, None]
    b, o, ho, wo = conv.shape
    return conv[:, :, :ho // 2 * 2, :wo // 2 * 2].reshape(b, o, ho // 2, 2, wo // 2, 2).max(axis=(3, 5))
