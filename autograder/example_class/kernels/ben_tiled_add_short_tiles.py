# ben, stage 2 Q1: correct, but 32-row tiles: four times the DMA transfers of 128-row tiles (slow).
import nki
import nki.language as nl


@nki.jit
def tiled_add(a, b):
    n_rows = a.shape[0]
    h = 32
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in range(n_rows // h):
        a_tile = nl.load(a[t * h:(t + 1) * h, :])
        b_tile = nl.load(b[t * h:(t + 1) * h, :])
        nl.store(out[t * h:(t + 1) * h, :], value=nl.add(a_tile, b_tile))
    return out
