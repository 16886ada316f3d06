"""Stage 3 (free-dim streaming): questions of notebooks/03_free_dim_streaming.py."""

from __future__ import annotations

import numpy as np

from nkilab.course.questions import Case, question


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


STREAM_ADD = question(
    "stream_add_1d",
    arg_names=("a", "b"),
    reference=_add,
    rules=("a and b are 1-D of length n, a multiple of 128 * 1000 = 128000 (up to 2048000), so any FREE_DIM "
           "that divides 1000 fits; return a + b, 1-D, with a's dtype"),
    public=(Case((256000,)), Case((384000,)), Case((128000,), "float16"), Case((2048000,), "bfloat16")),
    hidden=(Case((128000,)), Case((1024000,)), Case((2048000,)), Case((256000,), "float16"),
            Case((640000,), "bfloat16"), Case((128000,), "bfloat16")),
    speed_case=Case((1024000,)),
    kinds={"one block": lambda c: c.shape[0] == 128000, "longest": lambda c: c.shape[0] == 2048000},
)

QUESTIONS = [STREAM_ADD]
