# Stage 3 Q1, breaks "return a + b, 1-D, with a's dtype": the output is always float32.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def stream_add_1d(a, b):
    free_dim = 1000
    p = nl.tile_size.pmax
    n_tiles = a.shape[0] // (p * free_dim)
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    a_tiles = a.reshape((n_tiles, p, free_dim))
    b_tiles = b.reshape((n_tiles, p, free_dim))
    out_tiles = out.reshape((n_tiles, p, free_dim))
    for t in nl.affine_range(n_tiles):
        nl.store(out_tiles[t], value=nl.add(nl.load(a_tiles[t]), nl.load(b_tiles[t])))
    return out
