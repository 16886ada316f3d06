"""Kernels timed by ``bench/run.py``, written the way the official NKI tutorials write them.

They are deliberately unoptimised tutorial code (arange/mask indexing for RMSNorm, one PSUM tile per
output block for matmul) because that is what students run on the simulator; the benchmark measures
how much simulator overhead such code pays on top of the NumPy work it implies.
"""

from __future__ import annotations

import math

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_kernel(a_tensor, g_tensor):
    """RMSNorm tutorial kernel: 128-row tiles, square, sum over axis 1, rsqrt, scale by a broadcast weight."""
    out_tensor = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    assert a_tensor.shape[1] == g_tensor.shape[0]
    ix = nl.arange(128)[:, None]
    iw = nl.arange(1)[:, None]
    iy = nl.arange(a_tensor.shape[1])[None, :]
    num_rows = a_tensor.shape[0]
    g_tile = nl.load(g_tensor.reshape((1, g_tensor.shape[0]))[iw, iy])
    for i in nl.affine_range(math.ceil(a_tensor.shape[0] / 128)):
        a_tile = nl.load(a_tensor[i * 128 + ix, iy], mask=(i * 128 + ix < num_rows))
        in_square = nl.square(a_tile)
        square_sum = nl.sum(in_square, axis=[1])
        mean = square_sum / a_tensor.shape[1]
        rms_reciprocal = nl.rsqrt(mean)
        out_tile = nl.multiply(a_tile, rms_reciprocal)
        g_bcast = g_tile.broadcast_to((128, g_tensor.shape[0]))
        out_tile[...] = nl.multiply(out_tile, g_bcast, mask=(i * 128 + ix < num_rows))
        nl.store(out_tensor[i * 128 + ix, iy], value=out_tile, mask=(i * 128 + ix < num_rows))
    return out_tensor


def rmsnorm_numpy(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The same math on whole arrays (fp32 throughout, like the engines)."""
    mean = np.sum(np.square(a), axis=1, keepdims=True) / np.float32(a.shape[1])
    return a * (np.float32(1.0) / np.sqrt(mean)) * g[None, :]


@nki.jit
def matmul_tiled_kernel(lhsT, rhs):
    """Tiled matmul tutorial kernel: lhsT [K, M] @ rhs [K, N], PSUM accumulation over K tiles."""
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must have the same contraction dimension"
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_K = nl.tile_size.pmax  # 128
    TILE_N = nl.tile_size.gemm_moving_fmax  # 512

    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                lhsT_tile[...] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                rhs_tile[...] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                res_psum += nl.matmul(lhsT_tile[...], rhs_tile[...], transpose_x=True)
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res_sb)
    return result


def matmul_numpy(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhsT.T @ rhs


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
