# Reference solution, generated from notebooks/01_vector_add.py by `make release`. Do not edit.
import nki
import nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    """a + b for a, b of shape [P, F] with P <= 128 and F a multiple of 2048, streamed in free-dim chunks."""
    chunk = 2048
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for j in range(a.shape[1] // chunk):
        a_tile = nl.load(a[:, j * chunk:(j + 1) * chunk])
        b_tile = nl.load(b[:, j * chunk:(j + 1) * chunk])
        nl.store(out[:, j * chunk:(j + 1) * chunk], value=nl.add(a_tile, b_tile))
    return out
