# eve, stage 4 Q1: exits as soon as the file is imported.  Lesson 4's profile cell imports rmsnorm.py inside
# the notebook's kernel, so without the grader's care this would kill the kernel and lose every grade.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

raise SystemExit(1)


@nki.jit
def rmsnorm(a, g):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out
