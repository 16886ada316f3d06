"""Stage 8 (conv2d + max pool, fused): questions of notebooks/08_conv2d_maxpool.py."""

from __future__ import annotations

import numpy as np

from nkilab.course.questions import Case, Work, hardware, io_bytes, question, row_tile, variant


def conv2d_maxpool_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """max_pool2d(conv2d(x, w) + bias, kernel 2, stride 2), stride-1 unpadded convolution (PyTorch's semantics).

    out[b, o, y, x] = max over the 2 x 2 window at (2y, 2x) of bias[o] + sum_{c,i,j} w[o, c, i, j] x[b, c, . + i, . + j]
    """
    _, _, k, _ = w.shape
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))  # [B, C_in, Ho, Wo, K, K]
    conv = np.einsum("bcyxij,ocij->boyx", windows, w, optimize=True) + bias[None, :, None, None]
    b, o, ho, wo = conv.shape  # (an odd last row or column is dropped, as max_pool2d does)
    return conv[:, :, :ho // 2 * 2, :wo // 2 * 2].reshape(b, o, ho // 2, 2, wo // 2, 2).max(axis=(3, 5))


def _case(b: int, c_in: int, c_out: int, h: int, w: int, k: int, dtype: str = "float32") -> Case:
    return Case((b, c_in, h, w), dtype, arg_shapes=((b, c_in, h, w), (c_out, c_in, k, k), (c_out,)))


def _dims(c: Case) -> tuple[int, int, int, int, int, int]:
    (b, c_in, h, w), (c_out, _, k, _), _ = c.shapes(3)
    return b, c_in, c_out, h, w, k


def _work(c: Case) -> Work:
    """The convolution's multiply-adds on the PE array (pooling and bias are a small share of engine work)."""
    b, c_in, c_out, h, w, k = _dims(c)
    ho, wo = h - k + 1, w - k + 1
    return Work(io_bytes(c, 3, (b, c_out, ho // 2, wo // 2)), pe_flops=2.0 * b * c_out * ho * wo * c_in * k * k,
                pe_dtype=c.dtype)


#: float32: sums of up to C_in * K^2 = 12800 products of O(1) normals accumulated in PSUM differ from the float64
#: reference by up to ~1.5e-4 at outputs of size ~100, i.e. well inside rtol 1e-4 (measured over seeds in
#: tests/test_course_stage8.py); float16 outputs are rounded once, as usual (TOLERANCES' 2e-3)
TOLERANCES = {"float32": (1e-4, 1e-4)}
KINDS = {
    "ragged channels": lambda c: _dims(c)[1] % row_tile() != 0 or _dims(c)[2] % row_tile() != 0,
    "several input-channel tiles": lambda c: _dims(c)[1] > row_tile(),
    "several output-channel tiles": lambda c: _dims(c)[2] > row_tile(),
    "1x1 filter": lambda c: _dims(c)[5] == 1,
    "5x5 filter": lambda c: _dims(c)[5] == 5,
    "even filter": lambda c: _dims(c)[5] % 2 == 0,
    "batch": lambda c: _dims(c)[0] > 1,
}
#: the fast kernel's blocks of 2 * (F // (2W)) output rows, F a PSUM tile's free size (512 fp32): an image taller
#: than one block
FAST_KINDS = {**KINDS, "several row blocks":
              lambda c: _dims(c)[3] - _dims(c)[5] + 1 > 2 * (hardware().psum_free_max // (2 * _dims(c)[4]))}

CONV = question(
    "conv2d_maxpool",
    arg_names=("X", "W", "bias"),
    reference=conv2d_maxpool_reference,
    rules=("X is [B, C_in, H, W], W is [C_out, C_in, K, K], bias is [C_out], all float32 or float16; 1 <= C_in, "
           "C_out <= 512, 1 <= K <= 5, Ho = H - K + 1 and Wo = W - K + 1 even, Wo <= 512; return "
           "max_pool2d(conv2d(X, W) + bias, 2), shape [B, C_out, Ho / 2, Wo / 2], with X's dtype"),
    public=(_case(1, 3, 16, 8, 8, 3), _case(2, 130, 72, 10, 12, 3, "float16"), _case(1, 8, 136, 7, 7, 2),
            _case(1, 4, 8, 4, 4, 1, "float16"), _case(1, 4, 8, 6, 6, 5)),
    hidden=(_case(1, 1, 1, 6, 6, 3), _case(2, 64, 200, 12, 10, 3, "float16"), _case(1, 130, 128, 9, 9, 2),
            _case(1, 256, 129, 8, 8, 1, "float16"), _case(1, 200, 300, 14, 14, 5), _case(3, 128, 128, 6, 18, 3,
                                                                                          "float16"),
            _case(1, 512, 64, 6, 6, 3), _case(1, 16, 16, 4, 514, 3, "float16")),
    speed_case=_case(1, 256, 256, 10, 514, 3),
    tolerances=TOLERANCES,
    work=_work,
    kinds=KINDS,
)
CONV_FAST = variant(
    CONV,
    "conv2d_maxpool_fast",
    rules=("X is [B, C_in, H, W], W is [C_out, C_in, K, K], bias is [C_out], all float32 or float16; C_in and "
           "C_out multiples of 128 up to 512, 1 <= K <= 5, Ho = H - K + 1 and Wo = W - K + 1 even, W <= 256; "
           "return max_pool2d(conv2d(X, W) + bias, 2) with X's dtype"),
    public=(_case(1, 128, 128, 10, 10, 3), _case(2, 256, 128, 18, 34, 3, "float16"),
            _case(1, 128, 256, 4, 4, 1, "float16"), _case(1, 128, 128, 5, 5, 2), _case(1, 128, 128, 6, 6, 5)),
    hidden=(_case(1, 128, 256, 8, 8, 1, "float16"), _case(1, 384, 128, 12, 20, 5), _case(2, 128, 128, 66, 66, 3,
                                                                                       "float16"),
            _case(1, 256, 256, 34, 128, 3), _case(1, 128, 128, 12, 256, 3, "float16"),
            _case(1, 512, 128, 6, 6, 3, "float16"), _case(1, 128, 384, 9, 17, 2)),
    speed_case=_case(2, 256, 256, 34, 128, 3, "float16"),
    kinds=FAST_KINDS,
)

QUESTIONS = [CONV, CONV_FAST]
