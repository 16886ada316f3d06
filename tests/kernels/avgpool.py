"""2-D average pooling (NKI average-pool tutorial): 5-D nl.mgrid view, nl.sum over axes [2, 4]."""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tensor_avgpool_kernel(in_tensor, pool_size):
    """in [C, H, W] (C on partitions) -> out [C, H // pool, W // pool]."""
    sz_cin, sz_hin, sz_win = in_tensor.shape
    sz_hout = sz_hin // pool_size
    sz_wout = sz_win // pool_size
    out_tensor = nl.ndarray((sz_cin, sz_hout, sz_wout), dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    sz_p = sz_cin
    sz_pool = pool_size
    i0, i1, i2, i3, i4 = nl.mgrid[0:sz_p, 0:sz_hin // sz_pool, 0:sz_pool, 0:sz_win // sz_pool, 0:sz_pool]
    in_tile = nl.load(in_tensor)
    out_tile = nl.sum(in_tile[i0, sz_pool * i1 + i2, sz_pool * i3 + i4], axis=[2, 4]) / (pool_size * pool_size)
    nl.store(out_tensor, value=out_tile)
    return out_tensor
