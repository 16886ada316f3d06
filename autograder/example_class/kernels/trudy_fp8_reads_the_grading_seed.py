# trudy, stage 9 Q2: reads the grading seed from the environment to redraw the grader's inputs and compute the
# answer in NumPy. The screen refuses the file (`import os`); the sandbox's environment holds no seed, and the kernel
# never sees an input value anyway (it is traced from shapes and dtypes): 0.
import os

import nki
import numpy as np

SEED = int(os.environ.get("NKILAB_SEED", "0"))


@nki.jit
def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
    rng = np.random.default_rng(SEED)
    return rng.standard_normal(x_q.shape)
