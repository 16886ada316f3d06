"""NKI 0.6's ``nisa.nc_n_gather`` (GpSimd, ``nkisim/ops/movement.py``) and ``nisa.dma_compute`` (the DMA engines'
add, ``nkisim/ops/dma.py``): our own kernels against NumPy, every documented refusal at the kernel's line, the DMA estimate against its bytes, and
mutants."""

from __future__ import annotations

import numpy as np
import pytest
from test_nki06_isa_more import BF16, F32, load, new, out, refused

import nkisim
from nkisim import api
from nkisim.core.target import get as get_target
from nkisim.cost import costs
from nkisim.ops import dma as dma_op
from nkisim.ops import movement as movement_op
from nkisim.ops.dma import dma_sum

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(2062)


@pytest.fixture(autouse=True)
def _trn3(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")


# --- nc_n_gather ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int32, BF16])
def test_nc_n_gather_gathers_within_each_partition(dtype):
    data = RNG.integers(-100, 100, (32, 4, 25)).astype(dtype)
    idx = RNG.integers(0, 100, (32, 6, 9)).astype(np.uint32)
    idx[:, 0, 0] = 99  # the last element of each partition

    def kernel(d, i):
        dst = new(i.shape, d.dtype)
        nisa.nc_n_gather(dst=dst, data=load(d), indices=load(i))
        return out(dst)

    got = nki.jit(kernel)(data, idx)
    flat = data.reshape(32, 100)
    want = np.stack([flat[p][idx[p].reshape(-1).astype(np.int64)] for p in range(32)]).reshape(idx.shape)
    assert got.dtype == data.dtype
    np.testing.assert_array_equal(got, want)


def test_nc_n_gather_refusals():
    def int_indices(a):
        i = new((32, 4), nl.int32)
        nisa.memset(dst=i, value=0)
        nisa.nc_n_gather(dst=new((32, 4)), data=load(a), indices=i)  # ERR
    refused(int_indices, Exception, "'indices' of 'nc_n_gather' has dtype int32")

    def cast(a):
        i = new((32, 4), nl.uint32)
        nisa.memset(dst=i, value=0)
        nisa.nc_n_gather(dst=new((32, 4), nl.bfloat16), data=load(a), indices=i)  # ERR
    refused(cast, Exception, "must have the dtype of 'data'")

    def out_of_bounds(a):
        i = new((32, 4), nl.uint32)
        nisa.memset(dst=i, value=8)
        nisa.nc_n_gather(dst=new((32, 4)), data=load(a), indices=i)  # ERR
    refused(out_of_bounds, Exception, "index 8 of 'nc_n_gather' is out of bounds")

    def in_psum(a):
        i = new((32, 4), nl.uint32)
        nisa.memset(dst=i, value=0)
        nisa.nc_n_gather(dst=nl.ndarray((32, 4), dtype=nl.float32, buffer=nl.psum), data=load(a), indices=i)  # ERR
    refused(in_psum, Exception, "address space 'sbuf'")


def test_gather_flattened_is_the_flattened_free_dimension_gather_and_other_axes_are_refused():
    """``nl.gather_flattened`` on SDK 2.26's docstring example (its ``np.take_along_axis`` over the flattened free
    dimensions, the only gather AWS's docs define); ``axis`` other than 0 is not defined by AWS's docs (the 0.6
    docstring names it, 'axis along which to gather', and says only that the index selects 'from the free dimension
    of data'), so the simulator refuses it as its own limit (rule ``limit.gather_axis``)."""
    data = np.array([[[1., 2.], [3., 4.]], [[5., 6.], [7., 8.]]], np.float32)
    idx = np.array([[[0, 1], [1, 3]], [[3, 3], [1, 0]]], np.uint32)

    def kernel(d, i):
        return out(nl.gather_flattened(load(d), load(i)))

    got = nki.jit(kernel)(data, idx)
    np.testing.assert_array_equal(got, [[[1., 2.], [2., 4.]], [[8., 8.], [6., 5.]]])
    want = np.take_along_axis(data.reshape(2, -1), idx.reshape(2, -1).astype(np.int64), axis=-1).reshape(idx.shape)
    np.testing.assert_array_equal(got, want)

    def other_axis(d, i):
        return out(nl.gather_flattened(load(d), load(i), axis=1))

    with pytest.raises(NotImplementedError, match="axis 0 only"):
        nki.jit(other_axis)(data, idx)


# --- dma_compute --------------------------------------------------------------------------------------------------
def test_dma_compute_adds_its_sources_in_fp32_and_casts_once():
    """Three sources from HBM and SBUF, of different dtypes and shapes with equal element counts, into a bf16 SBUF
    tile and into an HBM tensor."""
    a = RNG.uniform(-2, 2, (32, 16)).astype(F32)
    b = RNG.uniform(-2, 2, (32, 16)).astype(BF16)
    c = RNG.uniform(-2, 2, (32, 4, 4)).astype(F32)

    def kernel(x, y, z):
        into_sbuf = new((32, 16), nl.bfloat16)
        nisa.dma_compute(dst=into_sbuf, srcs=[x, load(y), z], reduce_op=nl.add)
        into_hbm = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_compute(dst=into_hbm, srcs=[load(x), y], reduce_op=nl.add, scales=[1.0, 1.0])
        return out(into_sbuf), into_hbm

    got_sbuf, got_hbm = nki.jit(kernel)(a, b, c)
    total = a.astype(F32) + b.astype(F32) + c.reshape(32, 16)
    np.testing.assert_array_equal(got_sbuf, total.astype(BF16))
    np.testing.assert_array_equal(got_hbm, a + b.astype(F32))


def test_dma_compute_refusals():
    def multiply(a):
        nisa.dma_compute(dst=new(a.shape), srcs=[a, a], reduce_op=nl.multiply)  # ERR
    refused(multiply, Exception, "multiply is not supported in 'dma_compute'")

    def scaled(a):
        nisa.dma_compute(dst=new(a.shape), srcs=[a, a], reduce_op=nl.add, scales=[1.0, 2.0])  # ERR
    refused(scaled, Exception, "all 1.0")

    def seventeen(a):
        nisa.dma_compute(dst=new(a.shape), srcs=[a] * 17, reduce_op=nl.add)  # ERR
    refused(seventeen, Exception, "at most 16 source tensors")

    def short(a):
        nisa.dma_compute(dst=new(a.shape), srcs=[a, a[:, 0:4]], reduce_op=nl.add)  # ERR
    refused(short, Exception, "every source needs dst's 256 elements")

    def from_psum(a):
        p = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.psum)
        nisa.dma_compute(dst=new(a.shape), srcs=[a, p], reduce_op=nl.add)  # ERR
    refused(from_psum, Exception, "address space")

    def int_oob(a):
        nisa.dma_compute(dst=new(a.shape), srcs=[a, a], reduce_op=nl.add, oob_mode=0)  # ERR
    refused(int_oob, Exception, "must be a member of nki.isa.oob_mode")


def test_dma_compute_is_priced_at_the_dma_compute_throughput():
    """Four 128 x 2048 fp32 sources (4 MiB) added into SBUF: at least their bytes over 16 queues at the DMA rate
    times the compute engines' throughput, and the HBM bytes at HBM bandwidth."""
    x = RNG.uniform(-1, 1, (128, 2048)).astype(F32)

    def kernel(a, b, c, d):
        acc = new((128, 2048))
        nisa.dma_compute(dst=acc, srcs=[a, b, c, d], reduce_op=nl.add)
        return out(acc)

    launch = api.launch(nki.jit(kernel), [x, x, x, x], target="trn2")
    prm = get_target("trn2").params
    ins = next(i for i in launch.record.ctx.trace if i.kind.name == "dma_compute")
    nbytes = 4 * x.nbytes
    assert ins.nbytes == nbytes
    ns = costs.dma_queue_ns(ins, costs.dma_queues(ins, prm), prm)
    d = prm.dma
    assert ns >= nbytes / d.queues / (d.bytes_per_ns * d.rmw_sbuf_throughput)
    assert ns >= nbytes / d.hbm_gbps


def test_mutants_of_the_gather_and_the_dma_sum_fail_the_references(monkeypatch):
    with monkeypatch.context() as m:  # the flattened index read from the other end of the partition
        gathered = movement_op.gathered
        m.setattr(movement_op, "gathered", lambda api, a, ix, ctx: gathered(api, a, ix, ctx)[:, ::-1])
        with pytest.raises(AssertionError):
            test_nc_n_gather_gathers_within_each_partition(np.float32)
    with monkeypatch.context() as m:  # the last source dropped
        m.setattr(dma_op, "dma_sum", lambda arrays: dma_sum(arrays[:-1]))
        with pytest.raises(AssertionError):
            test_dma_compute_adds_its_sources_in_fp32_and_casts_once()
    with monkeypatch.context() as m:  # a cast per source (the first rounded to bf16), not one cast of the fp32 sum
        m.setattr(dma_op, "dma_sum", lambda arrays: sum(a.reshape(-1) for a in arrays[1:]).astype(F32)
                  + arrays[0].reshape(-1).astype(BF16).astype(F32))
        with pytest.raises(AssertionError):
            test_dma_compute_adds_its_sources_in_fp32_and_casts_once()
