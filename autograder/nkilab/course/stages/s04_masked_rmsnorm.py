"""Stage 4 (masked RMSNorm): questions of notebooks/04_masked_rmsnorm.py."""

from __future__ import annotations

import numpy as np

from nkilab.course.questions import Case, question, row_kinds, variant

EPS = 1e-6  # as torch.nn.functional.rms_norm(a, (C,), weight=g, eps=1e-6)


def rmsnorm_reference(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """out[r, c] = a[r, c] / sqrt(mean_c(a[r, :]^2) + eps) * g[c]."""
    return a / np.sqrt(np.mean(a * a, axis=1, keepdims=True) + EPS) * g[None, :]


def _case(rows: int, cols: int, dtype: str = "float32") -> Case:
    return Case((rows, cols), dtype, arg_shapes=((rows, cols), (cols,)))


RULES = ("a is [R, C] with R >= 1 (any number of rows) and 1 <= C <= 4096, g is [C], both float32 or bfloat16; "
         "return a / sqrt(mean(a^2 over each row) + 1e-6) * g with a's shape and dtype")
PUBLIC = (_case(256, 512), _case(129, 300), _case(1000, 768, "bfloat16"), _case(1, 64), _case(300, 1))
HIDDEN = (_case(1, 64), _case(127, 1024), _case(129, 2048), _case(1000, 512), _case(128, 4096),
          _case(1, 4096, "bfloat16"), _case(127, 256, "bfloat16"), _case(129, 1000, "bfloat16"),
          _case(1000, 2048, "bfloat16"), _case(640, 1))
SPEED = _case(4096, 2048)
KINDS = row_kinds()

RMSNORM = question(
    "rmsnorm",
    arg_names=("a", "g"),
    reference=rmsnorm_reference,
    rules=RULES,
    public=PUBLIC,
    hidden=HIDDEN,
    speed_case=SPEED,
    kinds=KINDS,
)
RMSNORM_FAST = variant(RMSNORM, "rmsnorm_fast")  # the same kernel, made fast: only the manifest's facts differ

QUESTIONS = [RMSNORM, RMSNORM_FAST]
