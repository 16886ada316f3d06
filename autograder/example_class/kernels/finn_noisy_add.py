# finn, stage 1 Q1: correct, and chatty: warnings (on stderr) and debug prints (nbgrader alone would give 0).
import warnings

import nki
import nki.language as nl

print("finn: loading my kernel")
warnings.warn("finn: this kernel is experimental", stacklevel=1)


@nki.jit
def vector_add_naive(a, b):
    print("finn: tracing vector_add_naive", a.shape)
    warnings.warn("finn: one tile only", stacklevel=1)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out
