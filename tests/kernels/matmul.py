"""Tiled matmul in the style of the NKI matmul tutorial: lhsT [K, M], rhs [K, N], result [M, N].

PSUM accumulates fp32 partial products over K tiles (``res_psum += nl.matmul(..., transpose_x=True)``),
then nl.copy evicts PSUM to SBUF with a cast to the output dtype.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def nki_matmul_basic_(lhsT, rhs):
    """One [64, 128] x [128, 512] tile (the tutorial's first kernel)."""
    result = nl.ndarray((64, 512), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    i_lhsT_p, i_lhsT_f = nl.mgrid[0:128, 0:64]
    i_rhs_p, i_rhs_f = nl.mgrid[0:128, 0:512]
    i_out_p, i_out_f = nl.mgrid[0:64, 0:512]
    lhs_tile = nl.load(lhsT[i_lhsT_p, i_lhsT_f])
    rhs_tile = nl.load(rhs[i_rhs_p, i_rhs_f])
    result_psum = nl.matmul(lhs_tile, rhs_tile, transpose_x=True)
    result_sbuf = nl.copy(result_psum, dtype=result.dtype)
    nl.store(result[i_out_p, i_out_f], value=result_sbuf)
    return result


@nki.jit
def nki_matmul_tiled_(lhsT, rhs):
    """M, N, K multiples of 128, 512, 128: loop over output tiles, accumulate over K in PSUM."""
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must have the same contraction dimension"
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
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


@nki.jit
def nki_matmul_hoist_load_(lhsT, rhs):
    """Block tiles with nl.par_dim: load a column of lhsT tiles once per m, reuse it for every n."""
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    i_lhsT = nl.mgrid[0:TILE_K, 0:TILE_M]
    i_rhs = nl.mgrid[0:TILE_K, 0:TILE_N]
    i_res = nl.mgrid[0:TILE_M, 0:TILE_N]
    for m in nl.affine_range(M // TILE_M):
        lhsT_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TILE_K):
            lhsT_tiles[k, i_lhsT.p, i_lhsT.x] = nl.load(lhsT[k * TILE_K + i_lhsT.p, m * TILE_M + i_lhsT.x])
        for n in nl.affine_range(N // TILE_N):
            rhs_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // TILE_K):
                rhs_tiles[k, i_rhs.p, i_rhs.x] = nl.load(rhs[k * TILE_K + i_rhs.p, n * TILE_N + i_rhs.x])
            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                res_psum[...] += nisa.nc_matmul(lhsT_tiles[k, i_lhsT.p, i_lhsT.x], rhs_tiles[k, i_rhs.p, i_rhs.x])
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * TILE_M + i_res.p, n * TILE_N + i_res.x], value=res_sb)
    return result
