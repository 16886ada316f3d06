# cleo, stage 1 Q1: right for float32, but the output is always float32 -- wrong for float16/bfloat16 inputs.
import nki
import nki.language as nl


@nki.jit
def vector_add_naive(a, b):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out
