"""CS149 (Fall 2024) part-1 vector-add kernels, written in that assignment's style for calibration.

``tiled(R)`` loads (R, 1) tiles from 1-D vectors; ``stream(F)`` reshapes to (tiles, 128, F);
``direct(F, K)`` places the tiles in K physical buffers with ``ncc.sbuf.mod_alloc``.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def tiled(row_chunk: int, **jit):
    @nki.jit(**jit)
    def vector_add_tiled(a_vec, b_vec):
        out = nl.ndarray(shape=a_vec.shape, dtype=a_vec.dtype, buffer=nl.hbm)
        M = a_vec.shape[0]
        for m in nl.affine_range(M // row_chunk):
            a_tile = nl.ndarray((row_chunk, 1), dtype=a_vec.dtype, buffer=nl.sbuf)
            b_tile = nl.ndarray((row_chunk, 1), dtype=b_vec.dtype, buffer=nl.sbuf)
            a_tile[...] = nl.load(a_vec[m * row_chunk:(m + 1) * row_chunk])
            b_tile[...] = nl.load(b_vec[m * row_chunk:(m + 1) * row_chunk])
            res = nl.add(a_tile, b_tile)
            nl.store(out[m * row_chunk:(m + 1) * row_chunk], value=res)
        return out
    return vector_add_tiled


def stream(free_dim: int, **jit):
    @nki.jit(**jit)
    def vector_add_stream(a_vec, b_vec):
        M = a_vec.shape[0]
        tile_m = 128 * free_dim
        a_re = a_vec.reshape((M // tile_m, 128, free_dim))
        b_re = b_vec.reshape((M // tile_m, 128, free_dim))
        out = nl.ndarray(shape=a_re.shape, dtype=a_re.dtype, buffer=nl.hbm)
        for m in nl.affine_range(M // tile_m):
            a_tile = nl.ndarray((128, free_dim), dtype=a_vec.dtype, buffer=nl.sbuf)
            b_tile = nl.ndarray((128, free_dim), dtype=a_vec.dtype, buffer=nl.sbuf)
            a_tile[...] = nl.load(a_re[m])
            b_tile[...] = nl.load(b_re[m])
            res = nl.add(a_tile, b_tile)
            nl.store(out[m], value=res)
        return out
    return vector_add_stream


def direct(free_dim: int, tiles: int, **jit):
    @nki.jit(**jit)
    def vector_add_direct_allocation(a_vec, b_vec):
        M = a_vec.shape[0]
        n_tiles = M // (128 * free_dim)
        a_re = a_vec.reshape((n_tiles, 128, free_dim))
        b_re = b_vec.reshape((n_tiles, 128, free_dim))
        out = nl.ndarray(a_re.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
        off = 0
        a_t = nl.ndarray((n_tiles, nl.par_dim(128), free_dim), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=off, num_free_tiles=(tiles,)))
        off += tiles * free_dim * 4
        b_t = nl.ndarray((n_tiles, nl.par_dim(128), free_dim), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=off, num_free_tiles=(tiles,)))
        off += tiles * free_dim * 4
        r_t = nl.ndarray((n_tiles, nl.par_dim(128), free_dim), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=off, num_free_tiles=(tiles,)))
        for m in nl.affine_range(n_tiles):
            a_t[m] = nl.load(a_re[m])
            b_t[m] = nl.load(b_re[m])
            r_t[m] = nisa.tensor_tensor(a_t[m], b_t[m], op=nl.add)
            nl.store(out[m], value=r_t[m])
        return out
    return vector_add_direct_allocation
