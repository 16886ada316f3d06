"""RMSNorm (NKI tutorial): out = a / sqrt(mean(a^2, axis=1)) * g, masked for a ragged last tile."""

from __future__ import annotations

import math

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def nki_rmsnorm_kernel(a_tensor, g_tensor):
    """The tutorial kernel: 128 rows per tile, the last tile masked; g broadcast over partitions."""
    out_tensor = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    assert a_tensor.shape[1] == g_tensor.shape[0]
    ix = nl.arange(128)[:, None]
    iw = nl.arange(1)[:, None]
    iy = nl.arange(a_tensor.shape[1])[None, :]
    num_rows = a_tensor.shape[0]

    # load g once, as a (1, N) row broadcast to all partitions
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
