"""Stage 7 (fusion): questions of notebooks/07_fused_rmsnorm_linear.py."""

from __future__ import annotations

import numpy as np

from nkilab.course.questions import Case, Work, io_bytes, question, row_kinds, variant
from nkilab.course.stages.s04_masked_rmsnorm import rmsnorm_reference
from nkilab.course.stages.s06_tensor_engine import TOLERANCES as MATMUL_TOLERANCES


def rmsnorm_linear_reference(x: np.ndarray, g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """rmsnorm(x, g) @ w, with stage 4's RMSNorm (eps = 1e-6)."""
    return rmsnorm_reference(x, g) @ w


def _case(r: int, c: int, n: int, dtype: str = "float32") -> Case:
    return Case((r, c), dtype, arg_shapes=((r, c), (c,), (c, n)))


#: fp32: sums of up to 2048 products accumulated in PSUM (as stage 6).  bfloat16: the outputs are sums of C
#: products of size ~sqrt(C) (11 to 45 here) and the normalised activations are rounded to bfloat16 before the
#: matmul, which leaves errors up to ~0.7 at C = 2048 (measured over seeds: at most 0.71 of this tolerance)
TOLERANCES = {**MATMUL_TOLERANCES, "bfloat16": (2e-2, 0.5)}
RULES = ("x is [R, C], g is [C], w is [C, N]; R and C multiples of 128, N a multiple of 512 (R up to 4096, C and N up "
         "to 2048); all "
         "float32 or bfloat16; return rmsnorm(x, g) @ w (eps 1e-6), shape [R, N], with x's dtype")
def _work(c: Case) -> Work:
    (r, cc), _, (_, n) = c.shapes(3)
    return Work(io_bytes(c, 3, (r, n)), pe_flops=2.0 * r * cc * n, pe_dtype=c.dtype)


KINDS = {**row_kinds("several row tiles", "odd number of row tiles"), "C = 2048": lambda c: c.arg_shapes[0][1] == 2048}
PUBLIC = (_case(128, 128, 512), _case(256, 384, 1024, "bfloat16"), _case(128, 2048, 512, "bfloat16"))
HIDDEN = (_case(128, 128, 512, "bfloat16"), _case(128, 2048, 512), _case(1024, 256, 512), _case(256, 512, 2048),
          _case(384, 1024, 1024, "bfloat16"), _case(128, 2048, 1024, "bfloat16"))

RMSNORM_LINEAR = question(
    "rmsnorm_linear",
    arg_names=("x", "g", "w"),
    reference=rmsnorm_linear_reference,
    rules=RULES,
    public=PUBLIC,
    hidden=HIDDEN,
    speed_case=_case(1024, 1024, 1024, "bfloat16"),
    tolerances=TOLERANCES,
    kinds=KINDS,
    work=_work,
)
RMSNORM_LINEAR_FAST = variant(
    RMSNORM_LINEAR,
    "rmsnorm_linear_fast",
    speed_case=_case(4096, 2048, 2048, "bfloat16"),
)

QUESTIONS = [RMSNORM_LINEAR, RMSNORM_LINEAR_FAST]
