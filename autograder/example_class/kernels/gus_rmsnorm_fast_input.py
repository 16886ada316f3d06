# gus, stage 4 Q2: returns its input unchanged.
import neuronxcc.nki as nki


@nki.jit
def rmsnorm_fast(a, g):
    return a
