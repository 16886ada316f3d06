"""NKI 0.6 PSUM tensors across banks (issue 29 scope 1): nki-library's rotational top-k (validated on AWS's compiler)
allocates a [128, 1024] float32 PSUM tensor -- two 2 KiB banks a partition -- and fills it 512 columns a matmul.
NKI 0.6 counts PSUM in banks (``nl.tile_size.psum_num_banks``) and its matmuls write up to 'the size of 8x PSUM
banks (the entire PSUM)' (isa ``nc_matmul_mx``), so the limit of one tensor is the whole PSUM per partition; the
legacy dialect keeps its compiler's one-bank rule (``err_psum_tile_exceed_bank_size``), also after a 0.6 kernel
allocated the same shape."""

from __future__ import annotations

import numpy as np
import pytest

import nkisim

nkisim.install()

import neuronxcc.nki as lnki  # noqa: E402
import neuronxcc.nki.language as lnl  # noqa: E402
import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(2930)


@nki.jit
def two_bank_product(a, b):
    """``a.T @ b`` for b of 1024 columns into one PSUM tensor, 512 columns a matmul (as nki-library's rotate)."""
    K, M = a.shape
    N = b.shape[1]
    at = nl.ndarray((K, M), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    bt = nl.ndarray((K, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=bt, src=b)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(N // 512):
        nisa.nc_matmul(acc[:, nl.ds(i * 512, 512)], at, bt[:, nl.ds(i * 512, 512)])
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def whole_psum_and_more(a):
    acc = nl.ndarray((128, 4097), dtype=nl.float32, buffer=nl.psum)  # 16 KiB + 4 bytes a partition
    nisa.memset(dst=acc, value=0.0)
    return a


@lnki.jit
def legacy_two_banks(a):
    acc = lnl.zeros((128, 1024), lnl.float32, buffer=lnl.psum)
    out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, value=lnl.copy(acc, dtype=a.dtype))
    return out


def test_a_psum_tensor_across_two_banks_filled_by_two_matmuls():
    a = RNG.standard_normal((128, 128)).astype(np.float32)
    b = RNG.standard_normal((128, 1024)).astype(np.float32)
    np.testing.assert_allclose(two_bank_product(a, b), a.T @ b, rtol=1e-4, atol=1e-3)


def test_the_limit_is_the_whole_psum_and_legacy_keeps_one_bank():
    with pytest.raises(Exception, match="more than the PSUM's 16384") as info:
        whole_psum_and_more(np.zeros((1, 1), np.float32))
    assert getattr(info.value, "error_id", "") == "err_psum_tile_exceed_bank_size"
    two_bank_product(np.zeros((128, 128), np.float32), np.zeros((128, 1024), np.float32))  # memoised for 0.6 ...
    with pytest.raises(Exception, match="more than one 2 KiB PSUM bank") as info:  # ... not for legacy
        legacy_two_banks(np.zeros((128, 1024), np.float32))
    assert getattr(info.value, "error_id", "") == "err_psum_tile_exceed_bank_size"
