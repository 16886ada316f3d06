"""Tutorial-style kernels (tests/kernels/) against NumPy / torch references over several shapes.

These kernels are written exactly as the official NKI tutorials and CS149 write them, so a failure
here means the simulator rejects or miscomputes a kernel that ran on real Trainium.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

# pytest puts tests/ on sys.path (no tests/__init__.py), so the kernel package imports as `kernels`
from kernels import avgpool, layernorm, matmul, rmsnorm, softmax, spmd_add, transpose, vector_add

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(7)


def randn(*shape: int, dtype: object = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32).astype(dtype)


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32).astype(np.float64)


# ----------------------------------------------------------------------------------------------
# vector add
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 77, 128])
def test_vector_add_naive(n: int) -> None:
    a, b = randn(n), randn(n)
    out = vector_add.vector_add_naive(a, b)
    assert out.shape == (n,)
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("n", [128, 1024, 128 * 25])
def test_vector_add_tiled(n: int) -> None:
    a, b = randn(n), randn(n)
    np.testing.assert_array_equal(vector_add.vector_add_tiled(a, b), a + b)


@pytest.mark.parametrize("tiles", [1, 3])
@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=str)
def test_vector_add_stream(tiles: int, dtype: object) -> None:
    n = tiles * 128 * vector_add.FREE_DIM
    a, b = randn(n, dtype=dtype), randn(n, dtype=dtype)
    out = vector_add.vector_add_stream(a, b)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, (f64(a) + f64(b)).astype(np.float32).astype(dtype))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("tiles", [1, 2, 5])
def test_vector_add_direct_allocation(tiles: int) -> None:
    n = tiles * 128 * vector_add.FREE_DIM
    a, b = randn(n), randn(n)
    np.testing.assert_array_equal(vector_add.vector_add_direct_allocation(a, b), a + b)


# ----------------------------------------------------------------------------------------------
# SPMD tensor add
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(128, 512), (256, 1024), (384, 512)])
def test_spmd_tensor_add(shape: tuple[int, int]) -> None:
    a, b = randn(*shape), randn(*shape)
    np.testing.assert_array_equal(spmd_add.tensor_add(a, b), a + b)


@pytest.mark.parametrize("shape", [(129, 513), (1, 7), (300, 1000)])
def test_spmd_tensor_add_ragged(shape: tuple[int, int]) -> None:
    a, b = randn(*shape, dtype=BF16), randn(*shape, dtype=BF16)
    got = spmd_add.tensor_add_ragged(a, b)
    np.testing.assert_array_equal(got, (f64(a) + f64(b)).astype(np.float32).astype(BF16))


# ----------------------------------------------------------------------------------------------
# norms and softmax
# ----------------------------------------------------------------------------------------------


def rmsnorm_ref(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    t = torch.from_numpy(f64(a))
    return (t * torch.rsqrt(t.pow(2).mean(dim=1, keepdim=True)) * torch.from_numpy(f64(g))).numpy()


@pytest.mark.parametrize("shape", [(250, 512), (1, 64), (128, 100), (1000, 32), (129, 256)])
def test_rmsnorm(shape: tuple[int, int]) -> None:
    a = randn(*shape)
    g = randn(shape[1])
    out = rmsnorm.nki_rmsnorm_kernel(a, g)
    np.testing.assert_allclose(out, rmsnorm_ref(a, g), rtol=2e-5, atol=2e-5)


def test_rmsnorm_bf16() -> None:
    a = randn(250, 512, dtype=BF16)
    g = randn(512, dtype=BF16)
    out = rmsnorm.nki_rmsnorm_kernel(a, g)
    assert out.dtype == BF16
    np.testing.assert_allclose(f64(out), rmsnorm_ref(a, g), rtol=2 ** -6, atol=2 ** -6)


def layernorm_ref(x: np.ndarray, eps: float, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    t = torch.from_numpy(f64(x))
    return torch.nn.functional.layer_norm(t, (x.shape[1],), torch.from_numpy(f64(gamma)),
                                          torch.from_numpy(f64(beta)), eps).numpy()


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("shape", [(128, 512), (250, 1000), (1, 64), (129, 1537), (300, 512)])
def test_layernorm(version: str, shape: tuple[int, int]) -> None:
    x = randn(*shape) * 3 + 1
    gamma, beta = randn(shape[1]), randn(shape[1])
    kernel = layernorm.nki_layernorm_kernel_v1 if version == "v1" else layernorm.nki_layernorm_kernel_v2
    out = kernel(x.astype(np.float32), 1e-5, gamma, beta)
    np.testing.assert_allclose(out, layernorm_ref(x, 1e-5, gamma, beta), rtol=1e-4, atol=1e-4)


def test_layernorm_v2_bf16() -> None:
    x = randn(200, 768, dtype=BF16)
    gamma, beta = randn(768, dtype=BF16), randn(768, dtype=BF16)
    out = layernorm.nki_layernorm_kernel_v2(x, 1e-5, gamma, beta)
    assert out.dtype == BF16
    np.testing.assert_allclose(f64(out), layernorm_ref(x, 1e-5, gamma, beta), rtol=2 ** -6, atol=2 ** -5)


@pytest.mark.parametrize("kernel", ["softmax_nl", "softmax_isa"])
@pytest.mark.parametrize("shape", [(128, 512), (1000, 64), (1, 33), (129, 200)])
def test_softmax(kernel: str, shape: tuple[int, int]) -> None:
    x = randn(*shape) * 4
    out = getattr(softmax, kernel)(x)
    ref = torch.softmax(torch.from_numpy(f64(x)), dim=1).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_softmax_bf16() -> None:
    x = randn(200, 128, dtype=BF16)
    ref = torch.softmax(torch.from_numpy(f64(x)), dim=1).numpy()
    for kernel in (softmax.softmax_nl, softmax.softmax_isa):
        out = kernel(x)
        assert out.dtype == BF16
        np.testing.assert_allclose(f64(out), ref, rtol=2 ** -8, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# matmul
# ----------------------------------------------------------------------------------------------


def matmul_ref(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return f64(lhsT).T @ f64(rhs)


def test_matmul_basic() -> None:
    lhsT, rhs = randn(128, 64), randn(128, 512)
    np.testing.assert_allclose(matmul.nki_matmul_basic_(lhsT, rhs), matmul_ref(lhsT, rhs), rtol=1e-5, atol=1e-4)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the tutorial still uses block dims
@pytest.mark.parametrize("kernel", ["nki_matmul_tiled_", "nki_matmul_hoist_load_"])
@pytest.mark.parametrize("mkn", [(128, 128, 512), (256, 384, 1024), (128, 512, 512)])
def test_matmul_tiled_fp32(kernel: str, mkn: tuple[int, int, int]) -> None:
    m, k, n = mkn
    lhsT, rhs = randn(k, m), randn(k, n)
    out = getattr(matmul, kernel)(lhsT, rhs)
    assert out.shape == (m, n) and out.dtype == np.float32
    np.testing.assert_allclose(out, matmul_ref(lhsT, rhs), rtol=1e-5, atol=2e-4)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("kernel", ["nki_matmul_tiled_", "nki_matmul_hoist_load_"])
def test_matmul_tiled_bf16(kernel: str) -> None:
    """bf16 inputs multiply exactly and accumulate in fp32 PSUM; one rounding to bf16 on eviction."""
    m, k, n = 256, 512, 512
    lhsT, rhs = randn(k, m, dtype=BF16), randn(k, n, dtype=BF16)
    out = getattr(matmul, kernel)(lhsT, rhs)
    assert out.dtype == BF16
    ref = matmul_ref(lhsT, rhs)
    np.testing.assert_allclose(f64(out), ref, rtol=2 ** -8, atol=1e-3)
    torch_ref = (torch.from_numpy(f64(lhsT)).T.float() @ torch.from_numpy(f64(rhs)).float()).to(torch.bfloat16)
    assert np.mean(f64(out) == torch_ref.float().numpy()) > 0.95


# ----------------------------------------------------------------------------------------------
# transpose and pooling
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p,f1,f2", [(128, 8, 16), (64, 32, 4), (1, 5, 7)])
def test_transpose2d_tutorial(p: int, f1: int, f2: int) -> None:
    x = randn(p, f1 * f2)
    out = transpose.tensor_transpose2D_kernel_(x, (f1, f2))
    np.testing.assert_array_equal(out, x.reshape(p, f1, f2).transpose(0, 2, 1).reshape(p, f1 * f2))


@pytest.mark.parametrize("shape", [(128, 64), (300, 96), (1, 10), (129, 128)])
def test_transpose_by_store(shape: tuple[int, int]) -> None:
    x = randn(*shape, dtype=BF16)
    np.testing.assert_array_equal(transpose.transpose_by_store(x), x.T)


@pytest.mark.parametrize("c,h,w,pool", [(128, 16, 16, 2), (64, 12, 9, 3), (3, 8, 8, 4), (16, 7, 7, 2)])
def test_avgpool(c: int, h: int, w: int, pool: int) -> None:
    x = randn(c, h, w)
    out = avgpool.tensor_avgpool_kernel(x, pool)
    ref = torch.nn.functional.avg_pool2d(torch.from_numpy(f64(x))[None], pool).numpy()[0]
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
