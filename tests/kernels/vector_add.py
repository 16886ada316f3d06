"""Vector add, four ways (CS149 asst4 part 1 and the NKI getting-started tutorial).

Each version teaches one step: a single tile, a loop over 128-row tiles, a streamed reshape to
(tiles, 128, FREE_DIM), and direct allocation with block tiles in SBUF.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl

FREE_DIM = 512


@nki.jit
def vector_add_naive(a_vec, b_vec):
    """At most 128 elements: the whole vector is one (N, 1) tile."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.hbm)
    a = nl.load(a_vec)
    b = nl.load(b_vec)
    out_tile = nl.add(a, b)
    nl.store(out, value=out_tile)
    return out


@nki.jit
def vector_add_tiled(a_vec, b_vec):
    """Any multiple of 128: one 128-row tile per iteration of an affine_range."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.hbm)
    M = a_vec.shape[0]
    ROW_CHUNK = 128
    for m in nl.affine_range(M // ROW_CHUNK):
        a_tile = nl.ndarray((ROW_CHUNK, 1), dtype=a_vec.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((ROW_CHUNK, 1), dtype=b_vec.dtype, buffer=nl.sbuf)
        a_tile[...] = nl.load(a_vec[m * ROW_CHUNK:(m + 1) * ROW_CHUNK])
        b_tile[...] = nl.load(b_vec[m * ROW_CHUNK:(m + 1) * ROW_CHUNK])
        res = nl.add(a_tile, b_tile)
        nl.store(out[m * ROW_CHUNK:(m + 1) * ROW_CHUNK], value=res)
    return out


@nki.jit
def vector_add_stream(a_vec, b_vec):
    """Multiples of 128 * FREE_DIM: reshape to (tiles, 128, FREE_DIM) and move a full tile per DMA."""
    M = a_vec.shape[0]
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.hbm)
    P = nl.tile_size.pmax
    n_tiles = M // (P * FREE_DIM)
    a3 = a_vec.reshape((n_tiles, P, FREE_DIM))
    b3 = b_vec.reshape((n_tiles, P, FREE_DIM))
    o3 = out.reshape((n_tiles, P, FREE_DIM))
    for m in nl.affine_range(n_tiles):
        a_tile = nl.load(a3[m])
        b_tile = nl.load(b3[m])
        nl.store(o3[m], value=nl.add(a_tile, b_tile))
    return out


@nki.jit
def vector_add_direct_allocation(a_vec, b_vec):
    """CS149's direct-allocation version: block tiles at disjoint SBUF addresses, rotating 2 buffers."""
    M = a_vec.shape[0]
    P = nl.tile_size.pmax
    n_tiles = M // (P * FREE_DIM)
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.hbm)
    a3 = a_vec.reshape((n_tiles, P, FREE_DIM))
    b3 = b_vec.reshape((n_tiles, P, FREE_DIM))
    o3 = out.reshape((n_tiles, P, FREE_DIM))
    tile_bytes = FREE_DIM * 4
    a_tiles = nl.ndarray((n_tiles, nl.par_dim(P), FREE_DIM), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    b_tiles = nl.ndarray((n_tiles, nl.par_dim(P), FREE_DIM), dtype=b_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=2 * tile_bytes, num_free_tiles=(2,)))
    r_tiles = nl.ndarray((n_tiles, nl.par_dim(P), FREE_DIM), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=4 * tile_bytes, num_free_tiles=(2,)))
    for m in nl.affine_range(n_tiles):
        a_tiles[m] = nl.load(a3[m])
        b_tiles[m] = nl.load(b3[m])
        r_tiles[m] = nl.add(a_tiles[m], b_tiles[m])
        nl.store(o3[m], value=r_tiles[m])
    return out
