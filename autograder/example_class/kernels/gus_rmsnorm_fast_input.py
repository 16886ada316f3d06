# gus, stage 4 Q2: returns its input unchanged.
import nki


@nki.jit
def rmsnorm_fast(a, g):
    return a
