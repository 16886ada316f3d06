# dev, stage 1 Q1: NKI's do-while pattern, but the loop never updates its condition: an endless loop.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_naive(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    waiting = True
    while waiting:
        pass  # meant to wait for something, and never sets waiting = False
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out
