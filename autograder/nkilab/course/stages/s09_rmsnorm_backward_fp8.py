"""Stage 9 (RMSNorm backward and FP8): questions of notebooks/09_rmsnorm_backward_fp8.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from nkilab.course.questions import Case, Work, hardware, io_bytes, question, row_kinds
from nkilab.course.stages.s04_masked_rmsnorm import EPS

# --------------------------------------------------------------------------- Q1: the backward pass


def rmsnorm_backward_reference(x: np.ndarray, w: np.ndarray, dy: np.ndarray, rstd: np.ndarray) -> np.ndarray:
    """The gradients of y = x * rstd * w (rstd = 1 / sqrt(mean(x^2) + eps) per row, saved by the forward pass),
    packed as one [R + 1, C] array: rows 0 .. R-1 hold dx, row R holds dw.

    dx = rstd * (g - xhat * mean(g * xhat)) with xhat = x * rstd and g = dy * w;  dw = sum over rows of dy * xhat.
    (tests/test_course_stage9.py checks both against torch autograd.)"""
    xhat = x * rstd
    g = dy * w[None, :]
    dx = rstd * (g - xhat * np.mean(g * xhat, axis=1, keepdims=True))
    dw = np.sum(dy * xhat, axis=0)
    return np.concatenate([dx, dw[None, :]], axis=0)


def _backward_inputs(draws: list[np.ndarray], case: Case) -> list[np.ndarray]:
    """x, w, dy in the case's dtype; rstd as the forward pass saves it: float32, from x as the kernel sees it."""
    x, w, dy = (d.astype(np.dtype(case.dtype)) for d in draws[:3])
    rstd = 1.0 / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1, keepdims=True) + EPS)
    return [x, w, dy, rstd.astype(np.float32)]


def _bw(rows: int, cols: int, dtype: str = "float32") -> Case:
    return Case((rows, cols), dtype, arg_shapes=((rows, cols), (cols,), (rows, cols), (rows, 1)),
                arg_dtypes=(dtype, dtype, dtype, "float32"))


# --------------------------------------------------------------------------- Q2: the FP8 forward pass

FP8 = np.dtype(ml_dtypes.float8_e4m3)  # NKI's float8_e4m3 (1 sign, 4 exponent, 3 mantissa bits; max 240)
FP8_INFO = ml_dtypes.finfo(FP8)
FP8_MAX = float(FP8_INFO.max)
GROUP = 16  # one input scale per 1 x 16 group of a row
#: the output's per-tensor scale comes from an earlier step's amax (delayed scaling); this step's amax is twice
#: that, so the largest values of every case must saturate at +-FP8_MAX
AMAX_GROWTH = 2.0


def dequantize(x_q: np.ndarray, x_scale: np.ndarray) -> np.ndarray:
    """x = x_q * its group's scale: x_scale[r, g] scales x_q[r, GROUP*g : GROUP*(g+1)]."""
    return x_q * np.repeat(x_scale, GROUP, axis=1)


def rmsnorm_fp8_reference(x_q: np.ndarray, x_scale: np.ndarray, w: np.ndarray, out_scale: np.ndarray) -> np.ndarray:
    """FP8 RMSNorm: dequantise x (per-group scales), y = x / sqrt(mean(x^2) + eps) * w, then y / out_scale saturated
    to +-FP8_MAX (the grader rounds this to float8_e4m3 once, to nearest even, as a cast does)."""
    x = dequantize(x_q, x_scale)
    y = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS) * w[None, :]
    return np.clip(y / out_scale.reshape(()), -FP8_MAX, FP8_MAX)


def quantize_groups(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x [R, C] -> (x_q float8_e4m3, x_scale float32 [R, C/GROUP]): each group scaled so its amax maps to FP8_MAX."""
    r, c = x.shape
    amax = np.abs(x).reshape(r, c // GROUP, GROUP).max(axis=2)
    scale = np.where(amax > 0, amax / FP8_MAX, 1.0).astype(np.float32)
    return (x / np.repeat(scale.astype(np.float64), GROUP, axis=1)).astype(FP8), scale


def _fp8_inputs(draws: list[np.ndarray], case: Case) -> list[np.ndarray]:
    """Activations whose 1 x 16 groups span magnitudes 2^-6 .. 2^6, group-quantised; the weight in its dtype; the
    output scale of the previous step (half this step's amax / FP8_MAX)."""
    x, exps, w, _ = draws
    x = x * 2.0 ** np.repeat(np.clip(np.round(3 * exps), -6, 6), GROUP, axis=1)
    x_q, x_scale = quantize_groups(x)
    w = w.astype(np.dtype(case.dtypes(4)[2]))
    y = rmsnorm_fp8_reference(x_q.astype(np.float64), x_scale.astype(np.float64), w.astype(np.float64),
                              np.ones((1, 1)))
    out_scale = np.array([[np.abs(y).max() / FP8_MAX / AMAX_GROWTH]], dtype=np.float32)
    return [x_q, x_scale, w, out_scale]


def _fp8(rows: int, cols: int, w_dtype: str = "float32") -> Case:
    return Case((rows, cols), "float8_e4m3", arg_shapes=((rows, cols), (rows, cols // GROUP), (cols,), (1, 1)),
                arg_dtypes=("float8_e4m3", "float32", w_dtype, "float32"))


#: one unit in the last place of float8_e4m3 (eps = 2^-3 relative: 3 mantissa bits), and one subnormal step near 0:
#: a kernel that computes in float32 and rounds once can differ from the float64 reference only where the two land
#: on opposite sides of a rounding boundary, i.e. by one unit
FP8_TOLERANCE = (float(FP8_INFO.eps), float(FP8_INFO.smallest_subnormal))

def _backward_work(c: Case) -> Work:
    """dx: four products per element (dy*x, *w for the row sums, dy*w, the final combination: two-input passes) and a
    row sum (one-input); dw: a [1, rows] x [rows, C] contraction per row tile on the PE array (float32)."""
    r, cc = c.shape
    return Work(io_bytes(c, 4, (r + 1, cc)), pe_flops=2.0 * r * cc, pe_dtype="float32", elements=float(r * cc),
                one_input_passes=1, two_input_passes=3)


def _fp8_work(c: Case) -> Work:
    """Dequantise (x_q times its group's scale: a two-input pass whose scale repeats along the group, so not
    contiguous), the sum of squares (a one-input pass), the weight (times w: a two-input pass), the row's rstd / out_scale
    (a one-input pass: rstd is known only after the whole row is summed, and the only instruction that folds it into
    the weight, scalar_tensor_tensor, costs a full two-input pass more) and the saturation (a min and a max, which only
    the Vector and GpSimd engines apply: trn2's Scalar engine has neither). The output is FP8, so bf16 intermediates
    pass the tolerance: the bound prices every pass at the engines' bf16 rates."""
    r, cc = c.shape
    return Work(io_bytes(c, 4, (r, cc)), elements=float(r * cc), one_input_passes=2, two_input_passes=1,
                broadcast_passes=1, minmax_passes=1, half=True)


BACKWARD = question(
    "rmsnorm_backward",
    arg_names=("x", "w", "dy", "rstd"),
    reference=rmsnorm_backward_reference,
    rules=("x and dy are [R, C], w is [C], all float32 or bfloat16, rstd is [R, 1] float32 (1/sqrt(mean(x^2) + "
           "1e-6), saved by the forward pass); R >= 1, 1 <= C <= 2048; return one [R + 1, C] array with x's "
           "dtype: dx in rows 0 .. R-1, dw in row R"),
    public=(_bw(128, 256), _bw(200, 300, "bfloat16"), _bw(1, 600), _bw(300, 1, "bfloat16")),
    hidden=(_bw(1, 64), _bw(127, 512), _bw(129, 2048, "bfloat16"), _bw(1000, 100), _bw(640, 1000, "bfloat16"),
            _bw(300, 1), _bw(384, 2048)),
    speed_case=_bw(4096, 2048),
    prepare=_backward_inputs,
    work=_backward_work,
    tolerances={"float32": (1e-4, 1e-4)},  # dw: sums over up to 4096 rows (as stage 6's long fp32 sums)
    kinds={**row_kinds(),
           "C > 512": lambda c: c.shape[1] > hardware().psum_free_max},  # more than one PSUM tile of dw
)
FP8_FORWARD = question(
    "rmsnorm_fp8_forward",
    arg_names=("x_q", "x_scale", "w", "out_scale"),
    reference=rmsnorm_fp8_reference,
    rules=("x_q is [R, C] float8_e4m3 with one float32 scale per 1 x 16 group in x_scale [R, C/16] (x = x_q * "
           "scale), w is [C] float32 or bfloat16, out_scale is [1, 1] float32; R >= 1, C a multiple of 16 up to "
           "2048; return [R, C] float8_e4m3: rmsnorm(x) * w / out_scale (eps 1e-6), saturated to +-240"),
    public=(_fp8(128, 256), _fp8(200, 320, "bfloat16"), _fp8(1, 16)),
    hidden=(_fp8(1, 64), _fp8(127, 512), _fp8(129, 2048, "bfloat16"), _fp8(300, 1024), _fp8(1000, 16),
            _fp8(256, 2048), _fp8(640, 1008, "bfloat16")),
    speed_case=_fp8(2048, 2048),
    prepare=_fp8_inputs,
    work=_fp8_work,
    tolerances={"float8_e4m3": FP8_TOLERANCE},
    kinds={**row_kinds(), "one group": lambda c: c.shape[1] == GROUP,
           "bfloat16 weight": lambda c: c.arg_dtypes is not None and c.arg_dtypes[2] == "bfloat16"},
)

QUESTIONS = [BACKWARD, FP8_FORWARD]
