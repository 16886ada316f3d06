# gus, stage 2 Q2: adds and sizes the ragged last tile right, but forgets the ReLU (negative sums stay negative).
import nki
import nki.language as nl


@nki.jit
def tiled_add_relu(a, b):
    n_rows, n_cols = a.shape
    p = nl.tile_size.pmax
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in range((n_rows + p - 1) // p):
        lo, hi = t * p, min((t + 1) * p, n_rows)
        total = nl.add(nl.load(a[lo:hi, :]), nl.load(b[lo:hi, :]))
        nl.store(out[lo:hi, :], value=total)
    return out
