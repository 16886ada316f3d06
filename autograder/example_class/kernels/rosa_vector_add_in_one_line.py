# rosa, stage 1 Q1: her own simple kernel, the reference's algorithm in her own words (load both, add, store).
# Honest work: the same instruction program as the reference (and as sam's), full marks, and not flagged as
# similar -- everything she shares with sam is what every right answer to this question does.
import nki
import nki.language as nl


@nki.jit
def vector_add_naive(a, b):
    result = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(result, value=nl.add(nl.load(a), nl.load(b)))
    return result
