"""Stage 5 (multi-core SPMD): questions of notebooks/05_multicore_spmd.py, graded on trn2 with a launch grid."""

from __future__ import annotations

import numpy as np

from nkilab.course.questions import Case, question, row_kinds, split_kinds
from nkilab.course.stages.s04_masked_rmsnorm import rmsnorm_reference


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


def _rms(rows: int, cols: int, dtype: str = "float32") -> Case:
    return Case((rows, cols), dtype, arg_shapes=((rows, cols), (cols,)))


VECTOR_ADD_SPMD = question(
    "vector_add_spmd",
    arg_names=("a", "b"),
    reference=_add,
    rules=("launched as vector_add_spmd[4](a, b); a and b are [R, F] with R a multiple of 512 (= 4 x 128) "
           "and 1 <= F <= 2048; instance i computes rows [i*R/4, (i+1)*R/4) of a + b"),
    public=(Case((512, 256)), Case((1024, 100)), Case((512, 1), "float16"), Case((512, 64), "bfloat16")),
    hidden=(Case((512, 1)), Case((2048, 512)), Case((1536, 2048)), Case((512, 700), "bfloat16"),
            Case((1024, 64), "float16")),
    speed_case=Case((4096, 1024)),
    kinds=row_kinds("several row tiles", "one column"),
    grid=(4,),
    target="trn2",
)
RMSNORM_2CORE = question(
    "rmsnorm_2core",
    arg_names=("a", "g"),
    reference=rmsnorm_reference,
    rules=("launched as rmsnorm_2core[nl.nc(2)](a, g) on trn2; a is [R, C] with R >= 1 and 1 <= C <= 4096, "
           "g is [C], float32 or bfloat16; return RMSNorm(a) * g (eps 1e-6) with a's shape and dtype"),
    public=(_rms(256, 512), _rms(129, 300), _rms(1000, 768, "bfloat16"), _rms(1, 64), _rms(300, 64)),
    hidden=(_rms(1, 64), _rms(127, 1024), _rms(200, 2048), _rms(1000, 512), _rms(384, 4096),
            _rms(129, 1000, "bfloat16"), _rms(1, 256, "bfloat16")),
    speed_case=_rms(8192, 2048),
    kinds={**row_kinds(), **split_kinds(2)},
    grid=({"nc": 2},),
    target="trn2",
)

QUESTIONS = [VECTOR_ADD_SPMD, RMSNORM_2CORE]
