# eve, stage 2 Q1: kills the process that started it -- in nbgrader, the notebook's Jupyter kernel, which
# made nbgrader discard the whole submission ("Kernel died").  Now the grader's screen refuses `os` before the
# kernel runs (0), and in the sandbox its parent is outside its PID namespace: nothing of the grader's dies.
import os
import signal

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tiled_add(a, b):
    os.kill(os.getppid(), signal.SIGKILL)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    return out
