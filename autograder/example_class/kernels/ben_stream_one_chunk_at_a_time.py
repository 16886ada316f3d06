# ben, stage 1 Q2: correct, but one chunk at a time through one pair of SBUF tiles -- each chunk's loads
# wait for the last chunk's add and store to free the tiles, so nothing overlaps (slow).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    rows, cols = a.shape
    chunk = 2048
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray((rows, chunk), dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray((rows, chunk), dtype=a.dtype, buffer=nl.sbuf)
    for j in range(cols // chunk):
        nisa.dma_copy(dst=x, src=a[:, j * chunk:(j + 1) * chunk])
        nisa.dma_copy(dst=y, src=b[:, j * chunk:(j + 1) * chunk])
        nl.store(out[:, j * chunk:(j + 1) * chunk], value=nl.add(x, y))
    return out
