# Stage 1 Q2, breaks "return a + b with a's dtype": the output is always float32 (wrong for float16 and bfloat16).
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    chunk = 2048
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    for j in nl.affine_range(a.shape[1] // chunk):
        a_tile = nl.load(a[:, j * chunk:(j + 1) * chunk])
        b_tile = nl.load(b[:, j * chunk:(j + 1) * chunk])
        nl.store(out[:, j * chunk:(j + 1) * chunk], value=nl.add(a_tile, b_tile))
    return out
