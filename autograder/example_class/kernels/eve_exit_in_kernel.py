# eve, stage 1 Q2: the kernel process exits in the middle of the first case (a crash).  `raise SystemExit`
# gets past the grader's screen (it is plain Python) and takes the whole child process down.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    raise SystemExit(3)
    return out
