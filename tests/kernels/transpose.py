"""Transposes by index arithmetic (NKI transpose2d tutorial and a DMA-scatter store)."""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tensor_transpose2D_kernel_(in_tensor, shape2D):
    """Within each partition, view the free dim as [f1, f2] and write it back as [f2, f1]."""
    out_tensor = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    sz_p, sz_f = in_tensor.shape
    sz_f1, sz_f2 = shape2D
    assert sz_f == sz_f1 * sz_f2
    i_p0 = nl.arange(sz_p)[:, None, None]
    i_f1 = nl.arange(sz_f1)[None, :, None]
    i_f2 = nl.arange(sz_f2)[None, None, :]
    in_tile = nl.ndarray((sz_p, sz_f1, sz_f2), dtype=in_tensor.dtype)
    in_tile[i_p0, i_f1, i_f2] = nl.load(in_tensor[i_p0, i_f1 * sz_f2 + i_f2])
    out_tile = nl.ndarray((sz_p, sz_f2 * sz_f1), dtype=out_tensor.dtype)
    out_tile[i_p0, i_f2 * sz_f1 + i_f1] = nl.copy(in_tile[i_p0, i_f1, i_f2])
    nl.store(out_tensor, value=out_tile)
    return out_tensor


@nki.jit
def transpose_by_store(in_tensor):
    """Matrix transpose of [M, N] (tiles of 128 rows): load [i_p, i_f], store to out[i_f, i_p]."""
    M, N = in_tensor.shape
    out_tensor = nl.ndarray((N, M), dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(N)[None, :]
    for i in nl.affine_range((M + 127) // 128):
        i_p = i * 128 + nl.arange(128)[:, None]
        tile = nl.load(in_tensor[i_p, i_f], mask=(i_p < M))
        nl.store(out_tensor[i_f, i_p], value=tile, mask=(i_p < M))
    return out_tensor
