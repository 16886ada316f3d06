"""Stage 2 (partition tiling): questions of notebooks/02_partition_tiling.py."""

from __future__ import annotations

import numpy as np

from nkilab.course.questions import Case, question, row_kinds, variant


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


def _add_relu(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(a + b, 0.0)


TILED_ADD = question(
    "tiled_add",
    arg_names=("a", "b"),
    reference=_add,
    rules=("a and b are [N, F] with N a multiple of 128 (128 <= N <= 8192) and 1 <= F <= 2048; "
           "return a + b with a's dtype"),
    public=(Case((256, 512)), Case((128, 7)), Case((384, 1), "float16"), Case((128, 64), "bfloat16")),
    hidden=(Case((128, 1)), Case((384, 100)), Case((1024, 2048)), Case((8192, 64)),
            Case((640, 512), "float16"), Case((256, 1024), "bfloat16")),
    speed_case=Case((2048, 1024)),
    kinds=row_kinds("several row tiles", "odd number of row tiles", "one column"),
)
TILED_ADD_RELU = variant(
    TILED_ADD,
    "tiled_add_relu",
    reference=_add_relu,
    rules=("a and b are [N, F] with any 1 <= N <= 8192 and 1 <= F <= 2048; "
           "return max(a + b, 0) with a's dtype"),
    public=(Case((129, 64)), Case((1000, 33)), Case((1, 33), "float16"), Case((257, 1), "bfloat16")),
    hidden=(Case((1, 1)), Case((127, 512)), Case((128, 2048)), Case((257, 100)), Case((4000, 64)),
            Case((1, 2048)), Case((300, 256), "float16"), Case((200, 128), "bfloat16")),
    speed_case=Case((1000, 1024)),
    kinds=row_kinds(),
)

QUESTIONS = [TILED_ADD, TILED_ADD_RELU]
