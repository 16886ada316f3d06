# cleo, stage 2 Q2: full tiles, then the ragged tail -- but the tail is only handled after a full tile,
# so fewer than 128 rows (N = 1, N = 127) are never stored.
import nki
import nki.language as nl


@nki.jit
def tiled_add_relu(a, b):
    n_rows, n_cols = a.shape
    p = nl.tile_size.pmax
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_full = n_rows // p
    for t in range(n_full):
        s = nl.add(nl.load(a[t * p:(t + 1) * p, :]), nl.load(b[t * p:(t + 1) * p, :]))
        nl.store(out[t * p:(t + 1) * p, :], value=nl.maximum(s, 0.0))
    tail = n_rows - n_full * p
    if tail and n_full > 0:
        start = n_full * p
        s = nl.add(nl.load(a[start:n_rows, :]), nl.load(b[start:n_rows, :]))
        nl.store(out[start:n_rows, :], value=nl.maximum(s, 0.0))
    return out
