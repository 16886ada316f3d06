# ben, stage 3: correct, but FREE_DIM = 25: forty times as many small DMA transfers as needed (slow).
import nki
import nki.language as nl


@nki.jit
def stream_add_1d(a, b):
    free_dim = 25
    p = nl.tile_size.pmax
    n_tiles = a.shape[0] // (p * free_dim)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    a_tiles = a.reshape((n_tiles, p, free_dim))
    b_tiles = b.reshape((n_tiles, p, free_dim))
    out_tiles = out.reshape((n_tiles, p, free_dim))
    for t in range(n_tiles):
        nl.store(out_tiles[t], value=nl.add(nl.load(a_tiles[t]), nl.load(b_tiles[t])))
    return out
