# Reference solution, generated from notebooks/02_partition_tiling.py by `make release`. Do not edit.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tiled_add_relu(a, b):
    """max(a + b, 0) for a, b of shape [N, F], any N >= 1: 128-row tiles, the last one masked."""
    N, F = a.shape
    P = nl.tile_size.pmax
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(F)[None, :]
    for t in nl.affine_range((N + P - 1) // P):
        rows = t * P + i_p
        a_tile = nl.load(a[rows, i_f], mask=(rows < N))
        b_tile = nl.load(b[rows, i_f], mask=(rows < N))
        sum_tile = nl.add(a_tile, b_tile, mask=(rows < N))
        relu_tile = nl.maximum(sum_tile, 0.0, mask=(rows < N))
        nl.store(out[rows, i_f], value=relu_tile, mask=(rows < N))
    return out
