# Stage 1 Q1, breaks "return a + b with a's dtype": the output is always float32 (wrong for float16 and bfloat16).
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_naive(a, b):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out
