# mallory, stage 2 Q1: computes a + b in NumPy from the simulator's private host arrays and writes it into the
# output tensor's private storage, issuing no NKI compute.  Refused by the grader's screen (private attributes): 0.
import nki
import nki.language as nl


@nki.jit
def tiled_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out._array[...] = a._array + b._array
    return out
