"""Loop kinds, repeated loads and broadcasts in the cost model: what the lessons claim about them.

The references are the spec's published numbers (nki-spec §2.9, §4.2-§4.4: engine clocks, the
one-input ``max(64, N)`` and two-input ``2N`` rules, the fp32 matmul factor, ~1300 ns per DMA, 368 GB/s
per trn2 NeuronCore), written out here rather than read from the target file, so the tests hold the
model to the spec.  Each check has a kernel that differs only in the property checked and must fail it.
"""

import math

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest
from course_testing import solution_variant, write
from neuronxcc.nki import typing as nt

from nkilab.kernels.modules import load_kernel
from nkisim.api import profile_kernel
from nkisim.core.target import get as get_target
from nkisim.cost import model, scheduler

#: trn2 (spec §4.1): engine clocks in GHz
PE_GHZ, ACT_GHZ, DVE_GHZ = 2.4, 1.2, 0.96
DMA_FIXED_NS = 1300  # spec §4.4 "~1300 ns" descriptor + semaphore-to-start latency of every transfer
DMA_PEAK_BYTES_PER_NS = 368  # spec §4.4: 16 engines x 23 B/ns on trn2


def _estimate(kernel, *args):
    """The trn2 cost-model estimate of ``kernel`` on ``args`` (placeholders: no values computed)."""
    return profile_kernel(kernel, *args, target="trn2").estimate


def _trace(kernel, *args):
    kernel(*args)
    return kernel.last_launch.ctx.trace


def _stream(loop, free):
    """out = a + b over [128, 8000] float32, ``free`` columns per iteration of ``loop``."""

    @nki.jit(platform_target="trn2")
    def vadd(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for t in loop(a.shape[1] // free):
            x = nl.load(a[:, t * free:(t + 1) * free])
            y = nl.load(b[:, t * free:(t + 1) * free])
            nl.store(out[:, t * free:(t + 1) * free], value=nl.add(x, y))
        return out

    return vadd


def test_sequential_range_keeps_the_carried_output_in_program_order():
    """``out`` is carried across the loop's iterations: under sequential_range the compiler respects the
    inter-iteration dependency, so each store starts after the previous one has completed (with its
    ~1300 ns completion); affine_range stores overlap."""
    a = np.ones((128, 8000), np.float32)
    trips = 80
    prm = get_target("trn2").params
    lat = {}
    for loop in (nl.sequential_range, nl.affine_range):
        trace = _trace(_stream(loop, 100), a, a)
        sched = scheduler.schedule(trace, prm)
        stores = [i for i, ins in enumerate(trace) if ins.op == "store"]
        assert len(stores) == trips
        in_order = all(sched.start[j] >= sched.end[i] for i, j in zip(stores, stores[1:]))
        lat[loop] = model.estimate(trace, "trn2", sched=sched).total_us
        if loop is nl.sequential_range:
            assert in_order
            assert lat[loop] >= trips * DMA_FIXED_NS / 1000  # every store pays its completion in turn
        else:  # the mutant: independent iterations overlap their stores
            assert not in_order
            assert lat[loop] < trips * DMA_FIXED_NS / 1000
    # identical values: the loop kind changes only the schedule
    k1, k2 = _stream(nl.sequential_range, 100), _stream(nl.affine_range, 100)
    np.testing.assert_array_equal(k1(a, 2 * a), k2(a, 2 * a))
    np.testing.assert_array_equal(k1(a, 2 * a), 3 * a)


def test_sequential_range_costs_nothing_extra_when_the_stores_are_not_the_bottleneck():
    """Eight 512 KiB iterations: DMA bandwidth bounds both loop kinds, so ordering the stores is free."""
    a = nt.tensor[[128, 8000], nl.float32]
    seq = _estimate(_stream(nl.sequential_range, 1000), a, a).total_us
    aff = _estimate(_stream(nl.affine_range, 1000), a, a).total_us
    moved = 3 * 128 * 8000 * 4
    assert seq == aff >= moved / DMA_PEAK_BYTES_PER_NS / 1000
    # the mutant: 100-column iterations, where each store's completion is the bottleneck, do differ
    seq, aff = (_estimate(_stream(lp, 100), a, a).total_us for lp in (nl.sequential_range, nl.affine_range))
    assert seq > aff


def _carried_chain(carried):
    """Per iteration a tanh on ScalarE and an add on VectorE of [128, 512] float32; with ``carried`` the tanh
    reads what the previous iteration's add wrote (a loop-carried dependency), without it the tanh reads
    the input."""

    @nki.jit(platform_target="trn2")
    def chain(a):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        acc[...] = nl.copy(x)
        for _ in nl.sequential_range(16):
            t = nl.tanh(acc if carried else x)
            acc[...] = nl.add(t, x)
        nl.store(out, value=acc)
        return out

    return chain


def test_a_loop_carried_dependency_serialises_the_engines():
    """tanh (ScalarE, max(64, N) + ~60 cycles) then add (VectorE, 2N + ~60 cycles) per iteration: carried
    through ``acc``, no iteration's tanh can start before the previous add ends, so the loop takes at least
    16 x (tanh + add); without the dependency ScalarE runs ahead and the loop is shorter than that chain."""
    chain_ns = 16 * ((512 + 60) / ACT_GHZ + (2 * 512 + 60) / DVE_GHZ)
    a = np.full((128, 512), 0.01, np.float32)
    prm = get_target("trn2").params
    spans = {}
    for carried in (True, False):
        k = _carried_chain(carried)
        got = k(a)
        want = a.copy()
        for _ in range(16):
            want = np.tanh(want if carried else a) + a
        np.testing.assert_allclose(got, want, rtol=1e-5)
        trace = k.last_launch.ctx.trace
        sched = scheduler.schedule(trace, prm)
        body = [i for i, ins in enumerate(trace) if ins.loops]
        spans[carried] = max(sched.end[i] for i in body) - min(sched.start[i] for i in body)
    assert spans[True] >= chain_ns
    assert spans[False] < chain_ns  # the mutant: nothing carried, the engines overlap


def _repeated(inside, free=2048, tiles=16):
    """out[t] = a[t] + b, with b loaded once before the loop or again in every iteration."""

    @nki.jit(platform_target="trn2")
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        if not inside:
            y = nl.load(b)
        for t in nl.affine_range(tiles):
            if inside:
                y = nl.load(b)
            x = nl.load(a[t])
            nl.store(out[t], value=nl.add(x, y))
        return out

    return k


def test_a_load_repeated_inside_the_loop_moves_its_bytes_every_time():
    """A DMA-bound kernel: reloading b in each of 16 iterations moves 16 MiB more, which no schedule can move
    faster than the 368 GB/s peak; hoisting the load out of the loop avoids it."""
    free, tiles = 2048, 16
    a, b = nt.tensor[[tiles, 128, free], nl.float32], nt.tensor[[128, free], nl.float32]
    tile_bytes = 128 * free * 4
    hoisted = _estimate(_repeated(False), a, b)
    inside = _estimate(_repeated(True), a, b)
    assert (hoisted.dma_count, inside.dma_count) == (2 * tiles + 1, 3 * tiles)
    assert inside.dma_bytes - hoisted.dma_bytes == (tiles - 1) * tile_bytes
    for prof, loads in ((hoisted, 2 * tiles + 1), (inside, 3 * tiles)):
        assert prof.total_us >= loads * tile_bytes / DMA_PEAK_BYTES_PER_NS / 1000
    assert inside.total_us - hoisted.total_us >= 0.9 * (tiles - 1) * tile_bytes / DMA_PEAK_BYTES_PER_NS / 1000
    # same values either way
    av = np.arange(tiles * 128 * 8, dtype=np.float32).reshape(tiles, 128, 8)
    bv = np.ones((128, 8), np.float32)
    np.testing.assert_array_equal(_repeated(True, 8)(av, bv), av + bv)


def _broadcasts(partition, free=2048, tiles=8, dtype=nl.float32):
    """``tiles`` broadcasts in a loop: a [1, free] row to [128, free] (``partition``), or a [128, 1] column
    to [128, free] (the mutant: along the free axis, no TensorE)."""

    @nki.jit(platform_target="trn2")
    def k(g, col):
        out = nl.ndarray((tiles, 128, free), dtype=dtype, buffer=nl.shared_hbm)
        for t in nl.affine_range(tiles):
            src = nl.load(g) if partition else nl.load(col)
            nl.store(out[t], value=src.broadcast_to((128, free)))
        return out

    return k


def test_a_partition_broadcast_costs_tensor_engine_matmuls_and_a_psum_copy():
    """Spec §2.10: broadcast_to along partitions is a TensorE matmul with a ones vector.  A [1, 2048] float32
    row needs four matmuls (one 2 KiB PSUM bank = 512 fp32 columns each), each max(64, 512) cycles times
    the fp32 factor 4, halved for the one-zero stationary (spec §2.9); then ScalarE or VectorE copies the
    [128, 2048] result out of PSUM, max(64, N) cycles."""
    free, tiles = 2048, 8
    g, col = np.arange(free, dtype=np.float32).reshape(1, free), np.arange(128, dtype=np.float32).reshape(128, 1)
    row = _broadcasts(True)
    np.testing.assert_array_equal(row(g, col), np.broadcast_to(g, (tiles, 128, free)))
    est = model.estimate(row.last_launch.ctx.trace, "trn2")
    pe_floor_us = tiles * math.ceil(free / 512) * 512 * 4 / 2 / PE_GHZ / 1000
    assert pe_floor_us <= est.engine_busy_us["pe"] <= 1.2 * pe_floor_us
    copy_floor_us = tiles * free / max(ACT_GHZ, DVE_GHZ) / 1000
    assert est.engine_busy_us["act"] + est.engine_busy_us["dve"] >= copy_floor_us

    column = _broadcasts(False)  # the mutant: a free-axis broadcast is a plain copy, no TensorE
    np.testing.assert_array_equal(column(g, col), np.broadcast_to(col, (tiles, 128, free)))
    est = model.estimate(column.last_launch.ctx.trace, "trn2")
    assert est.engine_busy_us["pe"] == 0
    assert est.engine_busy_us["dve"] >= tiles * free / DVE_GHZ / 1000


def test_a_bfloat16_partition_broadcast_has_no_fp32_factor():
    free, tiles = 2048, 8
    k = _broadcasts(True, dtype=nl.bfloat16)
    k(np.ones((1, free), np.float32).astype(nl.bfloat16), np.ones((128, 1), np.float32).astype(nl.bfloat16))
    pe_us = model.estimate(k.last_launch.ctx.trace, "trn2").engine_busy_us["pe"]
    floor_us = tiles * math.ceil(free / 512) * 512 / PE_GHZ / 1000
    assert floor_us <= pe_us <= 1.2 * floor_us
    # the mutant: the same broadcasts of float32 pay the (halved) fp32 factor, twice the bfloat16 time
    k = _broadcasts(True)
    k(np.ones((1, free), np.float32), np.ones((128, 1), np.float32))
    assert model.estimate(k.last_launch.ctx.trace, "trn2").engine_busy_us["pe"] > 1.2 * floor_us


def _tiled_add(loop):
    """Stage 2's tiled_add (solutions/02_partition_tiling/tiled_add.py) with the loop kind as a parameter."""

    @nki.jit(platform_target="trn2")
    def tiled_add(a, b):
        n, _f = a.shape
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for t in loop(n // 128):
            a_tile = nl.load(a[t * 128:(t + 1) * 128, :])
            b_tile = nl.load(b[t * 128:(t + 1) * 128, :])
            nl.store(out[t * 128:(t + 1) * 128, :], value=nl.add(a_tile, b_tile))
        return out

    return tiled_add


def test_stage2_numbers_for_sequential_range():
    """notebooks/02_partition_tiling.py: '108 µs with sequential_range against 48 µs with affine_range' for
    N = 8192, F = 64; 'for F = 2048 both take 583 µs'."""
    small = nt.tensor[[8192, 64], nl.float32]
    seq, aff = (_estimate(_tiled_add(lp), small, small).total_us for lp in (nl.sequential_range, nl.affine_range))
    assert (round(seq), round(aff)) == (108, 48)
    big = nt.tensor[[8192, 2048], nl.float32]
    seq, aff = (_estimate(_tiled_add(lp), big, big).total_us for lp in (nl.sequential_range, nl.affine_range))
    assert round(seq) == round(aff) == 583


def test_stage4_numbers_for_a_broadcast_redone_per_tile():
    """notebooks/04_masked_rmsnorm.py: the g broadcast is 'about 1.8 µs of TensorE and 1.8 µs of ScalarE time for
    C = 2048 float32', 'paid 32 times for 4096 rows', and the `[1, C]` load of g in 4-byte DMA pieces on trn2 'about
    23 µs', so redone per tile it 'nearly triples the estimate'."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "solutions" / "04_masked_rmsnorm" / "rmsnorm.py"
    source = path.read_text()
    hoist = "g_bcast = g_tile.broadcast_to((128, n_cols))\n"
    assert source.count(hoist) == 1
    # the mutant: g loaded and broadcast inside the row loop
    inside = source.replace("    g_tile = nl.load", "    pass  # g_tile = nl.load").replace("    " + hoist, "")
    inside = inside.replace("        rows = i * 128 + i_p\n",
                            "        g_bcast = nl.load(g.reshape((1, n_cols))[nl.arange(1)[:, None], i_f])"
                            ".broadcast_to((128, n_cols))\n        rows = i * 128 + i_p\n")
    kernels = {}
    for name, text in (("hoisted", source), ("inside", inside)):
        spec = importlib.util.spec_from_loader(f"rmsnorm_{name}", loader=None)
        mod = importlib.util.module_from_spec(spec)
        exec(compile(text, str(path), "exec"), mod.__dict__)
        kernels[name] = mod.rmsnorm
    a, g = nt.tensor[[4096, 2048], nl.float32], nt.tensor[[2048], nl.float32]
    est = {name: _estimate(k, a, g) for name, k in kernels.items()}
    extra_pe = est["inside"].engine_busy_us["pe"] - est["hoisted"].engine_busy_us["pe"]
    extra_act = est["inside"].engine_busy_us["act"] - est["hoisted"].engine_busy_us["act"]
    assert 31 * 1.7 <= extra_pe <= 31 * 1.9 and 31 * 1.6 <= extra_act <= 31 * 1.9
    assert est["inside"].dma_count == est["hoisted"].dma_count + 31
    assert 2.5 * est["hoisted"].total_us <= est["inside"].total_us <= 3 * est["hoisted"].total_us
    d = get_target("trn2").params.dma  # a DMA buffer's fixed cost on its queue, one per 4 bytes of g
    assert 2048 * 4 // d.trivial_dim_piece_bytes * d.descriptor_bytes / d.bytes_per_ns / 1000 == \
        pytest.approx(23, abs=0.5)  # "about 23 µs"
    np_a = np.random.default_rng(0).random((300, 64), dtype=np.float32)
    np_g = np.random.default_rng(1).random(64, dtype=np.float32)
    want = np_a / np.sqrt((np_a ** 2).mean(1, keepdims=True) + 1e-6) * np_g
    for k in kernels.values():
        np.testing.assert_allclose(k(np_a, np_g), want, rtol=1e-5, atol=1e-5)


def _rmsnorm_linear(tmp_path, loop):
    """The course's fused RMSNorm + linear (stage 7's legacy reference, read from solutions/), its row loop written
    with ``loop``: 8 rows of 77 instructions, a 617-instruction loop."""
    body = solution_variant("07_fused_rmsnorm_linear", "rmsnorm_linear",
                            ("@nki.jit\n", '@nki.jit(platform_target="trn2")\n'),
                            ("for r in nl.affine_range(R // 128):", f"for r in nl.{loop}(R // 128):"))
    return load_kernel(write(tmp_path, f"rmsnorm_linear_{loop}.py", body), "rmsnorm_linear")


def test_a_617_instruction_affine_loop_is_unrolled_like_the_same_loop_in_python(tmp_path):
    """The compiler unrolls affine_range loops short enough (nkisim/cost/unroll.py): AWS's fused Mamba tutorial says
    so of a 16 x 32-iteration nest ("the loop instances will be unrolled by Neuron Compiler", aws-neuron-sdk v2.26.0
    general/nki/tutorials/fused_mamba.rst:648), CS149 2024's 800-instruction vector-add loop ran as a rolled one, and
    the unroll budget is the largest the figures allow (799).  NKI 0.6 unrolls every loop, so stage 7's two references
    (legacy ``affine_range``, 0.6 ``range``: a 617-instruction row loop) get one schedule; with a 512 budget the
    legacy loop stayed rolled, its tiles on two rotating buffers, and its estimate 3.4% above the unrolled one's."""
    bf16 = nl.bfloat16
    args = (nt.tensor[[1024, 1024], bf16], nt.tensor[[1024], bf16], nt.tensor[[1024, 1024], bf16])
    assert get_target("trn2").params.loops.unroll_max_instructions >= 617
    affine, python = (_estimate(_rmsnorm_linear(tmp_path, loop), *args) for loop in ("affine_range", "static_range"))
    assert len(_trace(_rmsnorm_linear(tmp_path, "affine_range"), *args)) == 618  # the row loop's 617 and g's load
    assert affine.total_us == python.total_us
