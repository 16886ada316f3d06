"""AWS's RMSNorm-Quant reference kernel (nki-samples 1ee7f1d, src/nki_samples/reference/rmsnorm_quant), the kernel
whose trn2 performance targets bench/calibrate.py estimates (issue 31 scope 4), runs here unmodified and computes
what its docstring says: RMS normalisation times gamma, then per-row fp8 quantisation with the fp32 dequantisation
scale in the last four bytes.  Checked against NumPy on a ragged sequence (the outer-dimension masks), on one core
and as LNC=2 (a grid of 2).  It needs its operand mask on an advanced-indexed gamma tile and the stack allocator's
frees of unreachable tiles; it is read from the local mirror (skipped without it), never copied here."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from bench import calibrate

REF = ("aws-neuron/nki-samples@1ee7f1d:src/nki_samples/reference/rmsnorm_quant/rmsnorm_quant.py"
       "::rmsnorm_quant_kernel")


@pytest.fixture(scope="module")
def kernel():
    k = calibrate.mirror_kernel(REF)
    if k is None:
        pytest.skip("no local mirror of aws-neuron/nki-samples")
    return k


def _reference(x: np.ndarray, gamma: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    x = x.astype(np.float32)
    inverse_rms = 1 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    return x * inverse_rms * gamma.astype(np.float32).reshape(1, 1, -1)


@pytest.mark.processes  # reads AWS's kernel from the mirror with git
@pytest.mark.parametrize("s, h, grid", [(320, 1536, 0), (512, 1024, 2)])
def test_it_normalises_and_quantises_as_numpy_does(kernel, s, h, grid):
    rng = np.random.default_rng(s + h)
    x = rng.standard_normal((1, s, h)).astype(ml_dtypes.bfloat16)
    gamma = rng.standard_normal((1, h)).astype(ml_dtypes.bfloat16)
    kargs = calibrate.FromKernel("RmsNormQuantKernelArgs", (("lower_bound", 0.0),)).made(kernel)
    out = np.asarray((kernel[grid] if grid else kernel)(x, gamma, kargs))
    assert out.shape == (1, s, h + 4) and "float8_e4m3" in str(out.dtype)
    y = _reference(x, gamma)
    scale = np.ascontiguousarray(out[..., h:]).view(np.float32)
    row_max = np.abs(y).max(axis=-1, keepdims=True)
    np.testing.assert_allclose(scale, np.maximum(row_max / 240, 1e-6), rtol=0.01)  # bf16 steps on the way
    # fp8 e4m3 keeps 3 mantissa bits: each value within half a step (1/16) of its size, plus bf16 rounding
    deq = out[..., :h].astype(np.float32) * scale
    assert np.all(np.abs(deq - y) <= 0.07 * np.abs(y) + 0.01 * row_max)
