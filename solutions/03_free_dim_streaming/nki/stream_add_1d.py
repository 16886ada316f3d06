# Reference solution, generated from notebooks/03_free_dim_streaming.py by `make release`. Do not edit.
import nki
import nki.language as nl


@nki.jit
def stream_add_1d(a, b):
    """a + b for 1-D a, b whose length is a multiple of 128000, streamed as (tiles, 128, FREE_DIM)."""
    FREE_DIM = 1000
    P = nl.tile_size.pmax
    n_tiles = a.shape[0] // (P * FREE_DIM)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    a_tiles = a.reshape((n_tiles, P, FREE_DIM))
    b_tiles = b.reshape((n_tiles, P, FREE_DIM))
    out_tiles = out.reshape((n_tiles, P, FREE_DIM))
    for t in range(n_tiles):
        a_tile = nl.load(a_tiles[t])
        b_tile = nl.load(b_tiles[t])
        sum_tile = nl.add(a_tile, b_tile)
        nl.store(out_tiles[t], value=sum_tile)
    return out
