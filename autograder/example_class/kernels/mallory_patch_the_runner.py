# mallory, stage 1 Q1: issues no NKI instruction at all.  It replaces the grading child's case runner with one
# that answers a + b from NumPy, so every case "matches" (under the old in-process grader: 3/3 for nothing).
# The grader's screen refuses the file (`import sys`, private names) before it runs: 0.
import sys

import nki

child = sys.modules.get("nkilab.isolate._child")
if child is not None:
    child.run_case = lambda fn, args, path: ({"status": "ok", "seconds": 0.0}, args[0] + args[1])


@nki.jit
def vector_add_naive(a, b):
    return a
