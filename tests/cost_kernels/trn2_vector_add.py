"""CS149 (Fall 2025, trn2) part-1 kernels, written in that assignment's style for calibration.

Every kernel is decorated with ``skip_middle_end_transformations`` as in the assignment.
``tiled(R)`` copies 1-D HBM slices into (R, 1) tiles with ``nisa.dma_copy`` and adds them with
``nisa.tensor_scalar``; ``stream(F)`` reshapes the vectors to (128, M // 128) and copies
(128, F) column blocks (strided in HBM) and adds them with ``nisa.tensor_tensor``;
``transpose()`` transposes a matrix tile by tile with ``nisa.nc_transpose`` on the PE array.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def tiled(row_chunk: int, **jit):
    @nki.compiler.skip_middle_end_transformations
    @nki.jit(**jit)
    def vector_add_tiled(a_vec, b_vec):
        out = nl.ndarray(shape=a_vec.shape, dtype=a_vec.dtype, buffer=nl.hbm)
        M = a_vec.shape[0]
        for m in nl.affine_range(M // row_chunk):
            a_tile = nl.ndarray((row_chunk, 1), dtype=a_vec.dtype, buffer=nl.sbuf)
            b_tile = nl.ndarray((row_chunk, 1), dtype=b_vec.dtype, buffer=nl.sbuf)
            nisa.dma_copy(src=a_vec[m * row_chunk:(m + 1) * row_chunk], dst=a_tile)
            nisa.dma_copy(src=b_vec[m * row_chunk:(m + 1) * row_chunk], dst=b_tile)
            res = nisa.tensor_scalar(a_tile, nl.add, b_tile)
            nisa.dma_copy(src=res, dst=out[m * row_chunk:(m + 1) * row_chunk])
        return out
    return vector_add_tiled


def stream(free_dim: int, **jit):
    @nki.compiler.skip_middle_end_transformations
    @nki.jit(**jit)
    def vector_add_stream(a_vec, b_vec):
        M = a_vec.shape[0]
        P = 128
        a_re = a_vec.reshape((P, M // P))
        b_re = b_vec.reshape((P, M // P))
        out = nl.ndarray(shape=a_re.shape, dtype=a_re.dtype, buffer=nl.hbm)
        for m in nl.affine_range(M // (P * free_dim)):
            a_tile = nl.ndarray((P, free_dim), dtype=a_vec.dtype, buffer=nl.sbuf)
            b_tile = nl.ndarray((P, free_dim), dtype=b_vec.dtype, buffer=nl.sbuf)
            nisa.dma_copy(src=a_re[:, m * free_dim:(m + 1) * free_dim], dst=a_tile)
            nisa.dma_copy(src=b_re[:, m * free_dim:(m + 1) * free_dim], dst=b_tile)
            res = nisa.tensor_tensor(a_tile, b_tile, op=nl.add)
            nisa.dma_copy(src=res, dst=out[:, m * free_dim:(m + 1) * free_dim])
        return out.reshape(a_vec.shape)
    return vector_add_stream


def transpose(loop=nl.affine_range, **jit):
    """``loop=nl.static_range`` unrolls the tile loops at trace time (static DMA descriptors)."""
    @nki.compiler.skip_middle_end_transformations
    @nki.jit(**jit)
    def matrix_transpose(a_tensor):
        M, N = a_tensor.shape
        out = nl.ndarray((N, M), dtype=a_tensor.dtype, buffer=nl.hbm)
        T = nl.tile_size.pmax
        for i in loop(M // T):
            for j in loop(N // T):
                tile = nl.ndarray((T, T), dtype=a_tensor.dtype, buffer=nl.sbuf)
                nisa.dma_copy(src=a_tensor[i * T:(i + 1) * T, j * T:(j + 1) * T], dst=tile)
                res_psum = nisa.nc_transpose(tile)
                res_sb = nisa.tensor_copy(res_psum)
                nisa.dma_copy(src=res_sb, dst=out[j * T:(j + 1) * T, i * T:(i + 1) * T])
        return out
    return matrix_transpose
