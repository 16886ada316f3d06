"""Capacity over live tiles: what is an error at the allocating line and what the compiler spills.

Spec (nki-spec §1.1-§1.3, §3): SBUF has 180224 (trn1) / 212984 (trn2) usable bytes per partition and
PSUM 8 banks of 2 KiB per partition.  One tile that cannot fit at all is an error where it is allocated,
naming the student's variable: more bytes per partition than SBUF has, or a PSUM tile over one bank.
With ``ncc.enable_stack_allocator`` the live tiles overflowing SBUF or the 8 banks is a stack overflow
error.  Otherwise oversubscription "is not an error: it is handled by spilling (perf cost)": the kernel
runs, and the cost model charges moving the spilled tensor out and back.
"""

import inspect
import os

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim.core.errors import NKIError
from nkisim.core.target import get as get_target
from nkisim.cost import model, scheduler

HERE = os.path.abspath(__file__)
USABLE_SBUF = {"trn1": 192 * 1024 - 16 * 1024, "trn2": 224 * 1024 - 16392}  # spec §1.2
PSUM_BANK_BYTES, PSUM_BANKS = 2048, 8  # spec §1.1
DMA_PEAK_BYTES_PER_NS = 368  # spec §4.4, trn2


def _err_line(fn):
    fn = getattr(fn, "func", fn)
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if line.rstrip().endswith("# ERR")]
    assert len(hits) == 1
    return hits[0]


def _expect(call, error_id, cls, phrases, where):
    with pytest.raises(NKIError) as info:
        call()
    err = info.value
    assert err.error_id == error_id and isinstance(err, cls), str(err)
    for phrase in phrases:
        assert phrase in str(err), str(err)
    assert err.nki_location == (HERE, _err_line(where))
    return err


def _sbuf_tile(cols, target):
    @nki.jit(platform_target=target)
    def k(a):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        wide = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)  # ERR
        wide[:, 0:1] = nl.load(a)
        nl.store(out, value=wide[:, 0:1])
        return out

    return k


@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_one_sbuf_tile_over_the_usable_partition_is_an_error_naming_the_variable(target):
    a = np.arange(128, dtype=np.float32).reshape(128, 1)
    fits = USABLE_SBUF[target] // 4  # float32 columns: exactly the usable bytes per partition
    np.testing.assert_array_equal(_sbuf_tile(fits, target)(a), a)  # the mutant: one column less passes
    k = _sbuf_tile(fits + 1, target)
    _expect(lambda: k(a), "err_sbuf_free_dim_exceed_partition_size", ValueError,
            ["Size of free dimensions", "KB per partition on SBUF buffer",
             f"{USABLE_SBUF[target]} bytes available per partition on {target}", f"wide[128, {fits + 1}]"], k)


@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_an_op_result_over_the_usable_partition_is_the_same_error(target):
    """A result tile is allocated like any tile: ``nl.load`` of a row wider than SBUF fails at its line."""
    fits = USABLE_SBUF[target] // 4

    def loader(cols):
        @nki.jit(platform_target=target)
        def k(a):
            out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
            row = nl.load(a[:, 0:cols])  # ERR
            nl.store(out, value=row[:, 0:1])
            return out

        return k

    a = np.ones((128, fits + 1), dtype=np.float32)
    np.testing.assert_array_equal(loader(fits)(a), a[:, :1])  # the mutant: one column less passes
    k = loader(fits + 1)
    _expect(lambda: k(a), "err_sbuf_free_dim_exceed_partition_size", ValueError,
            [f"{USABLE_SBUF[target]} bytes available per partition on {target}", f"row[128, {fits + 1}]"], k)


def _psum_tile(cols, dtype):
    @nki.jit(platform_target="trn2")
    def k(a):
        acc = nl.zeros((128, cols), dtype=dtype, buffer=nl.psum)  # ERR
        out = nl.ndarray((128, cols), dtype=dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(acc))
        return out

    return k


@pytest.mark.parametrize("dtype, itemsize", [(nl.float32, 4), (nl.bfloat16, 2)])
def test_a_psum_tile_over_one_bank_is_an_error_naming_the_variable(dtype, itemsize):
    fits = PSUM_BANK_BYTES // itemsize
    assert not _psum_tile(fits, dtype)(np.zeros((1, 1), np.float32)).any()  # the mutant: one bank exactly
    k = _psum_tile(fits + 1, dtype)
    _expect(lambda: k(np.zeros((1, 1), np.float32)), "err_psum_tile_exceed_bank_size", ValueError,
            [f"PSUM tile acc[128, {fits + 1}] needs {(fits + 1) * itemsize} bytes per partition",
             "more than one 2 KiB PSUM bank"], k)


def test_an_unassigned_tile_is_named_by_its_name_argument():
    @nki.jit
    def k(a):
        return [nl.ndarray((128, 60000), dtype=nl.float32, name="scratch") for _ in range(1)]  # ERR

    _expect(lambda: k(np.zeros((1, 1), np.float32)), "err_sbuf_free_dim_exceed_partition_size", ValueError,
            ["scratch[128, 60000]"], k)


def _nine_accumulators(n, stack=False):
    """n live [128, 512] fp32 PSUM accumulators (one bank each), each accumulating 4 matmuls."""

    def body(a):
        out = nl.ndarray((n, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        accs = []
        for _ in range(n - 1):
            accs.append(nl.zeros((128, 512), nl.float32, buffer=nl.psum))
        last = nl.zeros((128, 512), nl.float32, buffer=nl.psum)  # ERR
        accs.append(last)
        for _k in nl.affine_range(4):
            for j in range(n):
                accs[j] += nisa.nc_matmul(x[:, 0:128], x)
        for j in range(n):
            nl.store(out[j], value=nl.copy(accs[j]))
        return out

    jit = nki.jit(body, platform_target="trn2")
    return (ncc.enable_stack_allocator(jit) if stack else jit), body


def test_more_live_psum_accumulators_than_banks_spill_and_cost_copies():
    a = np.random.default_rng(0).random((128, 512), dtype=np.float32)
    want = 4 * (a[:, 0:128].T @ a)
    prm = get_target("trn2").params
    extra_copy_us = {}
    for n in (8, 9):
        k, _ = _nine_accumulators(n)
        got = k(a)  # not an error with the compiler's own allocator
        for j in range(n):
            np.testing.assert_allclose(got[j], want, rtol=1e-5)
        trace = k.last_launch.ctx.trace
        spilled = scheduler.Buffers(trace, prm).spilled
        assert len(spilled) == n - PSUM_BANKS and set(spilled.values()) <= {"psum"}
        busy = model.estimate(trace, "trn2").engine_busy_us
        extra_copy_us[n] = busy["act"] + busy["dve"]
    # the ninth accumulator goes to SBUF and back around each of its 4 matmuls, and out after its
    # zeroing: at least 8 copies of 512 fp32 per partition (max(64, N) cycles, spec §4.3) on ScalarE or
    # VectorE, beyond the 9th accumulator's own eviction
    eviction_us = (512 + 60) / 1.2 / 1000
    assert extra_copy_us[9] - extra_copy_us[8] >= eviction_us + 8 * 512 / 1.2 / 1000


def test_more_live_psum_banks_than_eight_with_the_stack_allocator_is_an_error_naming_the_variable():
    k, body = _nine_accumulators(9, stack=True)
    _expect(lambda: k(np.ones((128, 512), np.float32)), "err_stack_overflow_psum", RuntimeError,
            ["stack overflow: required psum banks 9 exceeds available psum banks 8", "allocating 'last'"], body)
    k, _ = _nine_accumulators(8, stack=True)  # the mutant: eight banks fit
    assert k(np.ones((128, 512), np.float32)).shape == (8, 128, 512)


def _two_tiles(cols, together):
    """Two [128, cols] float32 tiles summed per row; ``together``: both loaded before either is used."""

    @nki.jit(platform_target="trn2")
    def k(a, b):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        if together:
            y = nl.load(b)
        sx = nl.sum(x, axis=[1], keepdims=True)
        if not together:
            y = nl.load(b)
        sy = nl.sum(y, axis=[1], keepdims=True)
        nl.store(out, value=nl.add(sx, sy))
        return out

    return k


def test_two_live_120_kib_tiles_spill_instead_of_failing():
    """2 x 120 KiB per partition > trn2's 208 KiB: not an error (spec §3 back-end notes), a spill: one tile
    is reloaded from HBM before its use, which takes at least its bytes at the peak DMA rate."""
    cols = 120 * 1024 // 4
    a = np.random.default_rng(1).random((128, cols), dtype=np.float32)
    b = np.random.default_rng(2).random((128, cols), dtype=np.float32)
    prm = get_target("trn2").params
    roomy = prm.replace("buffers", "sbuf_partition_bytes", 2 * USABLE_SBUF["trn2"])
    for together in (True, False):
        k = _two_tiles(cols, together)
        got = k(a, b)
        np.testing.assert_allclose(got[:, 0], a.sum(1) + b.sum(1), rtol=1e-4)
        trace = k.last_launch.ctx.trace
        spilled = scheduler.Buffers(trace, prm).spilled
        cost = model.estimate(trace, "trn2").total_us
        without = model.estimate(trace, "trn2", prm=roomy).total_us
        if together:
            assert len(spilled) == 1 and set(spilled.values()) == {"sbuf"}
            assert cost - without >= 128 * cols * 4 / DMA_PEAK_BYTES_PER_NS / 1000
        else:  # the mutant: the first tile is dead before the second is loaded, so both fit in turn
            assert spilled == {} and cost == without


def test_two_live_120_kib_tiles_overflow_the_stack_allocator():
    cols = 120 * 1024 // 4

    def body(a):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        first = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        second = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)  # ERR
        first[:, 0:1] = nl.load(a)
        second[:, 0:1] = nl.load(a)
        nl.store(out, value=nl.add(first[:, 0:1], second[:, 0:1]))
        return out

    a = np.ones((128, 1), np.float32)
    np.testing.assert_array_equal(nki.jit(body, platform_target="trn2")(a), 2 * a)  # default allocator: runs
    k = ncc.enable_stack_allocator(nki.jit(body, platform_target="trn2"))
    _expect(lambda: k(a), "err_stack_overflow_sbuf", RuntimeError,
            [f"required sbuf size {2 * cols * 4} exceeds available sbuf size {USABLE_SBUF['trn2']}",
             "allocating 'second'"], body)


def _accumulators_in_a_loop(n):
    """Per iteration of an affine_range loop, a list of n [128, 512] fp32 PSUM accumulators (one bank each)."""

    @nki.jit(platform_target="trn2")
    def k(a):
        out = nl.ndarray((2, n, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            x = nl.load(a[i])
            accs = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(n)]
            for _k in nl.affine_range(2):
                for j in range(n):
                    accs[j] += nisa.nc_matmul(x[:, 0:128], x)
            for j in range(n):
                nl.store(out[i, j], value=nl.copy(accs[j]))
        return out

    return k


def test_a_list_of_accumulators_made_in_each_iteration_needs_a_bank_each():
    """Nine accumulators made together in one iteration are nine live banks, not one rotating site: the
    ninth is spilled (and eight fit)."""
    a = np.random.default_rng(3).random((2, 128, 512), dtype=np.float32)
    prm = get_target("trn2").params
    for n, spills in ((8, 0), (9, 1)):
        k = _accumulators_in_a_loop(n)
        got = k(a)
        for i in range(2):
            want = 2 * (a[i][:, 0:128].T @ a[i])
            for j in range(n):
                np.testing.assert_allclose(got[i, j], want, rtol=1e-5)
        spilled = scheduler.Buffers(k.last_launch.ctx.trace, prm).spilled
        assert len(spilled) == 2 * spills and set(spilled.values()) <= {"psum"}  # one per iteration
