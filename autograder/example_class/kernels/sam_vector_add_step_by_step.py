# sam, stage 1 Q1: his own simple kernel, the reference's algorithm step by step (load both, add, store).
# Honest work: the same instruction program as the reference (and as rosa's), full marks, and not flagged as
# similar -- everything he shares with rosa is what every right answer to this question does.
import nki
import nki.language as nl


@nki.jit
def vector_add_naive(a, b):
    x = nl.load(a)
    y = nl.load(b)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    s = nl.add(x, y)
    nl.store(out, value=s)
    return out
