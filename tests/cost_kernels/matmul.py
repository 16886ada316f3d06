"""The NKI matrix-multiplication tutorial's four kernels (trn1 ladder 51.80/42.96/22.07/6.97 ms).

Shapes as in the tutorial: lhsT [K, M], rhs [K, N], result [M, N], bf16.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

from tests.kernels.matmul import nki_matmul_tiled_ as _tiled_tutorial

TILE_M, TILE_K, TILE_N = 128, 128, 512


def _out(lhsT, rhs):
    return nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype, buffer=nl.shared_hbm)


def tiled(**jit):
    """The tutorial's basic tiled kernel (the one in tests/kernels/matmul.py), jitted with ``jit`` options."""
    return nki.jit(_tiled_tutorial.func, **jit)


def hoist_load(**jit):
    @nki.jit(**jit)
    def nki_matmul_hoist_load_(lhsT, rhs):
        result = _out(lhsT, rhs)
        K, M = lhsT.shape
        _, N = rhs.shape
        for m in nl.affine_range(M // TILE_M):
            lhsT_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tiles[k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
            for n in nl.affine_range(N // TILE_N):
                rhs_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                for k in nl.affine_range(K // TILE_K):
                    rhs_tiles[k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                for k in nl.affine_range(K // TILE_K):
                    res_psum += nl.matmul(lhsT_tiles[k], rhs_tiles[k], transpose_x=True)
                res_sb = nl.copy(res_psum, dtype=result.dtype)
                nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res_sb)
        return result
    return nki_matmul_hoist_load_


def block_free_dimension(bm_tiles: int = 2, bn_tiles: int = 2, **jit):
    @nki.jit(**jit)
    def nki_matmul_block_free_dimension_(lhsT, rhs):
        result = _out(lhsT, rhs)
        K, M = lhsT.shape
        _, N = rhs.shape
        BLOCK_M, BLOCK_N = TILE_M * bm_tiles, TILE_N * bn_tiles
        for m in nl.affine_range(M // BLOCK_M):
            lhsT_tiles = nl.ndarray((bm_tiles, K // TILE_K, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype,
                                    buffer=nl.sbuf)
            for bm in nl.affine_range(bm_tiles):
                for k in nl.affine_range(K // TILE_K):
                    lhsT_tiles[bm, k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K,
                                                     (m * bm_tiles + bm) * TILE_M:(m * bm_tiles + bm + 1) * TILE_M])
            for n in nl.affine_range(N // BLOCK_N):
                rhs_tiles = nl.ndarray((bn_tiles, K // TILE_K, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype,
                                       buffer=nl.sbuf)
                for bn in nl.affine_range(bn_tiles):
                    for k in nl.affine_range(K // TILE_K):
                        rhs_tiles[bn, k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K,
                                                       (n * bn_tiles + bn) * TILE_N:(n * bn_tiles + bn + 1) * TILE_N])
                for bm in nl.affine_range(bm_tiles):
                    for bn in nl.affine_range(bn_tiles):
                        res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(K // TILE_K):
                            res_psum += nl.matmul(lhsT_tiles[bm, k], rhs_tiles[bn, k], transpose_x=True)
                        res_sb = nl.copy(res_psum, dtype=result.dtype)
                        i0, j0 = (m * bm_tiles + bm) * TILE_M, (n * bn_tiles + bn) * TILE_N
                        nl.store(result[i0:i0 + TILE_M, j0:j0 + TILE_N], value=res_sb)
        return result
    return nki_matmul_block_free_dimension_


def fully_optimized(bm_tiles: int = 16, bn_tiles: int = 2, bk_tiles: int = 8, **jit):
    @nki.jit(**jit)
    def nki_matmul_fully_optimized_(lhsT, rhs):
        result = _out(lhsT, rhs)
        K, M = lhsT.shape
        _, N = rhs.shape
        BLOCK_M, BLOCK_N, BLOCK_K = TILE_M * bm_tiles, TILE_N * bn_tiles, TILE_K * bk_tiles
        NUM_BLOCK_M, NUM_BLOCK_N, NUM_BLOCK_K = M // BLOCK_M, N // BLOCK_N, K // BLOCK_K
        for n in nl.affine_range(NUM_BLOCK_N):
            result_tiles = nl.zeros((NUM_BLOCK_M, bm_tiles, bn_tiles, nl.par_dim(TILE_M), TILE_N),
                                    dtype=lhsT.dtype, buffer=nl.sbuf)
            for k in nl.sequential_range(NUM_BLOCK_K):
                rhs_tiles = nl.ndarray((bk_tiles, nl.par_dim(TILE_K), BLOCK_N), dtype=rhs.dtype, buffer=nl.sbuf)
                for bk_r in nl.affine_range(bk_tiles):
                    r0 = (bk_tiles * k + bk_r) * TILE_K
                    rhs_tiles[bk_r] = nl.load(rhs[r0:r0 + TILE_K, BLOCK_N * n:BLOCK_N * (n + 1)])
                for m in nl.affine_range(NUM_BLOCK_M):
                    lhsT_tiles = nl.ndarray((bk_tiles, nl.par_dim(TILE_K), BLOCK_M), dtype=lhsT.dtype,
                                            buffer=nl.sbuf)
                    for bk_l in nl.affine_range(bk_tiles):
                        r0 = (bk_tiles * k + bk_l) * TILE_K
                        lhsT_tiles[bk_l] = nl.load(lhsT[r0:r0 + TILE_K, BLOCK_M * m:BLOCK_M * (m + 1)])
                    for bn in nl.affine_range(bn_tiles):
                        for bm in nl.affine_range(bm_tiles):
                            result_tmp = nl.zeros((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                            for bk in nl.affine_range(bk_tiles):
                                result_tmp += nl.matmul(lhsT_tiles[bk, :, bm * TILE_M:(bm + 1) * TILE_M],
                                                        rhs_tiles[bk, :, bn * TILE_N:(bn + 1) * TILE_N],
                                                        transpose_x=True)
                            result_tiles[m, bm, bn, :, :] += result_tmp[...]
            for m in nl.affine_range(NUM_BLOCK_M):
                for bm in nl.affine_range(bm_tiles):
                    result_packed = nl.ndarray((TILE_K, BLOCK_N), dtype=result_tiles.dtype, buffer=nl.sbuf)
                    for bn in nl.affine_range(bn_tiles):
                        result_packed[:, bn * TILE_N:(bn + 1) * TILE_N] = nl.copy(result_tiles[m, bm, bn, :, :])
                    i0 = (bm_tiles * m + bm) * TILE_K
                    nl.store(result[i0:i0 + TILE_K, BLOCK_N * n:BLOCK_N * (n + 1)], value=result_packed)
        return result
    return nki_matmul_fully_optimized_
