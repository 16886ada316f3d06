"""Stage 6 (the Tensor Engine): questions of notebooks/06_tensor_engine_matmul.py."""

from __future__ import annotations

import numpy as np

from nkilab.course.questions import Case, Work, hardware, io_bytes, odd_tiles, question, variant


def matmul_reference(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:  # noqa: N803  (NKI tutorial names)
    """result[m, n] = sum_k lhsT[k, m] * rhs[k, n]: the contraction runs over the partition axis of both."""
    return lhsT.T @ rhs


def _case(k: int, m: int, n: int, dtype: str = "float32") -> Case:
    return Case((k, m), dtype, arg_shapes=((k, m), (k, n)))


#: fp32 sums of up to 2048 products of O(1) normals, accumulated tile by tile in PSUM, differ from the
#: float64 reference by up to ~5e-5 (measured); bfloat16 results are rounded once, as usual
TOLERANCES = {"float32": (1e-4, 1e-4)}
def _work(c: Case) -> Work:
    (k, m), (_, n) = c.shapes(2)
    return Work(io_bytes(c, 2, (m, n)), pe_flops=2.0 * k * m * n, pe_dtype=c.dtype)


#: K, M and N: the contraction (the partitions, a tile), the output's rows (the stationary operand's free size, 128)
#: and columns (the moving operand's, 512: a PSUM bank of fp32), all read from the course's target
KINDS = {"several K tiles": lambda c: c.shapes(2)[0][0] > hardware().partitions,
         "K = 2048": lambda c: c.shapes(2)[0][0] == 2048,
         "odd number of K tiles": odd_tiles(lambda c: c.shapes(2)[0][0], lambda: hardware().partitions),
         "odd number of M tiles": odd_tiles(lambda c: c.shapes(2)[0][1], lambda: hardware().gemm_stationary_free_max),
         "odd number of N tiles": odd_tiles(lambda c: c.shapes(2)[1][1], lambda: hardware().gemm_moving_free_max)}

MATMUL_TILED = question(
    "matmul_tiled",
    arg_names=("lhsT", "rhs"),
    reference=matmul_reference,
    rules=("lhsT is [K, M] and rhs is [K, N], K and M multiples of 128 (up to 2048), N a multiple of 512 (up to "
           "2048), both float32 or bfloat16; return lhsT.T @ rhs, shape [M, N], with lhsT's dtype"),
    public=(_case(128, 128, 512), _case(256, 384, 1024, "bfloat16"), _case(2048, 128, 512, "bfloat16")),
    hidden=(_case(128, 128, 512, "bfloat16"), _case(1024, 128, 512), _case(128, 1024, 512),
            _case(384, 256, 1536), _case(2048, 128, 512), _case(512, 512, 2048, "bfloat16"),
            _case(1024, 1024, 1024, "bfloat16")),
    speed_case=_case(2048, 128, 512, "bfloat16"),  # one output tile: loaded once, whatever the loop order
    tolerances=TOLERANCES,
    kinds=KINDS,
    work=_work,
)
MATMUL_FAST = variant(
    MATMUL_TILED,
    "matmul_fast",
    rules=("lhsT is [K, M] and rhs is [K, N], K a multiple of 128, M a multiple of 256 and N a multiple of "
           "1024 (each up to 2048), both float32 or bfloat16; return lhsT.T @ rhs with lhsT's dtype"),
    public=(_case(128, 256, 1024), _case(512, 512, 2048, "bfloat16"), _case(2048, 256, 1024, "bfloat16")),
    hidden=(_case(128, 256, 1024, "bfloat16"), _case(2048, 256, 1024), _case(256, 1024, 1024),
            _case(384, 768, 2048), _case(1024, 2048, 1024, "bfloat16"), _case(2048, 512, 2048, "bfloat16")),
    speed_case=_case(2048, 2048, 2048, "bfloat16"),
)

QUESTIONS = [MATMUL_TILED, MATMUL_FAST]
