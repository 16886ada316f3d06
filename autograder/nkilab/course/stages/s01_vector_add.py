"""Stage 1 (vector_add): questions of notebooks/01_vector_add.py."""

from __future__ import annotations

import numpy as np

from nkilab.course.questions import Case, question, row_kinds, variant


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


NAIVE = question(
    "vector_add_naive",
    arg_names=("a", "b"),
    reference=_add,
    rules="a and b are [P, F] with 1 <= P <= 128 and 1 <= F <= 4096; return a + b with a's dtype",
    public=(Case((128, 512)), Case((7, 33)), Case((1, 4096), "float16"), Case((128, 1), "bfloat16")),
    hidden=(Case((1, 1)), Case((127, 512)), Case((128, 4096)), Case((64, 100), "float16"),
            Case((128, 512), "bfloat16"), Case((1, 4096))),
    speed_case=Case((128, 512)),
    kinds={**row_kinds("one row", "under one tile", "one column"), "F = 4096": lambda c: c.shape[1] == 4096},
)
STREAM = variant(
    NAIVE,
    "vector_add_stream",
    rules="a and b are [P, F] with 1 <= P <= 128 and F a multiple of 2048; return a + b with a's dtype",
    public=(Case((128, 8192)), Case((32, 2048)), Case((1, 2048), "bfloat16"), Case((64, 2048), "float16")),
    hidden=(Case((128, 2048)), Case((1, 4096)), Case((127, 6144)), Case((128, 65536)),
            Case((128, 8192), "bfloat16"), Case((64, 4096), "float16")),
    speed_case=Case((128, 65536)),
    kinds=row_kinds("one row", "under one tile"),
)

QUESTIONS = [NAIVE, STREAM]
