"""Launching and grading an NKI 0.6 kernel the way its dialect launches (issue 21 scope 3).

* A question's grid maps to each dialect's launch (``nkilab.isolate._child.make_grid``): ``{"nc": 2}`` is ``nl.nc(2)`` for a
  legacy kernel and two logical cores, ``kernel[2]``, for a 0.6 one; plain grid dimensions (legacy instances run
  one after another on one core) have no 0.6 spelling and are the 0.6 kernel's own loop (no bracket).
* The grader's launch and trace (``tensors_only``) keep a 0.6 kernel a 0.6 kernel, and its executor holds the
  program to the request in the program's dialect: a 0.6 program on one core is refused for a two-core question.
* A masked legacy instruction covers only the partitions its mask leaves, as the 0.6 smaller tile does.
* A 0.6 view of a 1-D HBM vector as (tiles, 128, F) compiles to a basic access, not a grid of coordinates.
* The tiles of a Python loop (every 0.6 loop, a legacy ``range`` loop) get the buffers of an unrolled NKI loop's, in
  SBUF and in PSUM, so both spellings of one algorithm get the same estimate.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkisim
from nkilab.course.questions import SOLUTIONS
from nkilab.isolate import _execute
from nkilab.isolate._child import make_grid
from nkilab.kernels.modules import kernel_dialect, load_kernel
from nkisim import api
from nkisim.core.target import get as get_target
from nkisim.cost import scheduler

nkisim.install()

import neuronxcc.nki as lnki  # noqa: E402
import neuronxcc.nki.language as lnl  # noqa: E402
import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402


def _sig(shape, dtype="float32"):
    class Sig:
        pass

    s = Sig()
    s.shape, s.dtype = tuple(shape), dtype
    return s


def test_a_questions_grid_in_each_dialect():
    legacy = make_grid([{"nc": 2}], "legacy")
    assert len(legacy) == 1 and isinstance(legacy[0], type(lnl.nc(2))) and legacy[0].k == 2
    assert make_grid([4], "legacy") == (4,)
    assert make_grid([{"nc": 2}], "0.6") == 2
    assert make_grid([{"nc": 2}, 2], "0.6") == 2  # 4 legacy instances over two cores: two logical cores
    assert make_grid([4], "0.6") is None  # 4 instances on one core: one logical core, the kernel loops
    assert make_grid(None, "0.6") is None


def test_the_dialect_of_a_loaded_kernel():
    assert kernel_dialect(load_kernel(SOLUTIONS / "05_multicore_spmd/nki/rmsnorm_2core.py", "rmsnorm_2core")) == "0.6"
    assert kernel_dialect(load_kernel(SOLUTIONS / "05_multicore_spmd/rmsnorm_2core.py", "rmsnorm_2core")) == "legacy"


@nki.jit
def _which_core(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    half = a.shape[0] // nl.num_programs(0)
    for t in range(half // 128):
        lo = nl.program_id(0) * half + t * 128
        nl.store(out[lo:lo + 128, :], value=nl.add(nl.load(a[lo:lo + 128, :]), float(nl.program_id(0))))
    return out


def test_the_graders_launch_of_a_06_kernel_on_two_cores_is_two_logical_cores():
    """``tensors_only`` (the grader's launch) used to rewrap a 0.6 kernel as a legacy one, whose ``kernel[2]`` is two
    SPMD instances on one core: now it is the 0.6 launch, two logical cores, core 1 adding 1 to its half."""
    a = np.zeros((256, 8), np.float32)
    launch = api.launch(_which_core, [a], grid=make_grid([{"nc": 2}], "0.6"), target="trn2", tensors_only=True)
    np.testing.assert_array_equal(launch.outputs, np.repeat([[0.0], [1.0]], 128, axis=0) * np.ones((1, 8)))
    assert len(launch.estimate().core_us) == 2
    program = api.trace(_which_core, [_sig((256, 8))], grid=2, target="trn2", tensors_only=True)
    assert (program.dialect, tuple(program.grid), program.cores) == ("0.6", (2,), 2)


def _executed(program, grid) -> dict:
    """What the grader's executor makes of ``program`` answering a question launched on ``grid`` (JSON spec): the
    case's facts, and its output when it ran."""
    a = np.zeros((256, 8), np.float32)
    job = {"programs": 1, "cases": [1], "case_program": [0], "timed": None,
           "requests": [{"target": "trn2", "grid": grid, "inputs": [[[256, 8], "float32"]]}]}
    got: list = []
    _execute.run_cases(job, [np.frombuffer(program.to_json().encode(), dtype=np.uint8)], [[a]],
                       lambda head, arrays: got.append((head, arrays)))
    (head, arrays), = got
    return {**head, "out": arrays[0] if arrays else None}


def test_the_executor_holds_a_06_program_to_the_request_in_its_dialect():
    two = api.trace(_which_core, [_sig((256, 8))], grid=2, target="trn2", tensors_only=True)
    one = api.trace(_which_core, [_sig((256, 8))], target="trn2", tensors_only=True)
    ran = _executed(two, [{"nc": 2}])
    assert ran["status"] == "ok" and ran["out"][128:].min() == 1.0  # core 1 ran its half
    assert _executed(one, [4])["status"] == "ok"  # legacy's [4], four instances on one core: no bracket in 0.6
    for program, grid in ((one, [{"nc": 2}]), (two, [4])):
        ran = _executed(program, grid)
        assert ran["status"] == "error" and "core" in ran["error"]["message"], ran


@lnki.jit
def _masked_copy(x):
    out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
    i_p, i_f = lnl.arange(128)[:, None], lnl.arange(x.shape[1])[None, :]
    for t in lnl.affine_range((x.shape[0] + 127) // 128):
        rows = t * 128 + i_p
        nl_tile = lnl.load(x[rows, i_f], mask=(rows < x.shape[0]))
        lnl.store(out[rows, i_f], value=nl_tile, mask=(rows < x.shape[0]))
    return out


@nki.jit
def _sliced_copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((x.shape[0] + 127) // 128):
        lo, hi = t * 128, min(t * 128 + 128, x.shape[0])
        nl.store(out[lo:hi, :], value=nl.load(x[lo:hi, :]))
    return out


def test_a_masked_instruction_covers_the_partitions_its_mask_leaves():
    x = np.arange(200 * 64, dtype=np.float32).reshape(200, 64)
    old, new = api.launch(_masked_copy, [x], target="trn2"), api.launch(_sliced_copy, [x], target="trn2")
    np.testing.assert_array_equal(old.outputs, x)
    np.testing.assert_array_equal(new.outputs, x)
    assert [(i.p, i.nbytes) for i in old.record.ctx.trace] == [(128, 32768)] * 2 + [(72, 72 * 256)] * 2
    assert [(i.p, i.nbytes) for i in new.record.ctx.trace] == [(i.p, i.nbytes) for i in old.record.ctx.trace]
    assert old.latency_us() == new.latency_us()


def test_a_06_view_of_a_vector_as_tiles_is_a_basic_access():
    """stream_add_1d's 0.6 reference on 2,048,000 elements: its program stays small (every access a slice of the
    reshaped vector) where a grid of every element's coordinates took 21 MB."""
    k = load_kernel(SOLUTIONS / "03_free_dim_streaming/nki/stream_add_1d.py", "stream_add_1d")
    program = api.trace(k, [_sig((2_048_000,))] * 2, target="trn2", tensors_only=True)
    assert len(program.to_json()) < 64 * 1024
    a, b = np.random.default_rng(5).standard_normal((2, 2_048_000)).astype(np.float32)
    np.testing.assert_array_equal(api.execute(program, [a, b]).outputs, a + b)


@lnki.jit
def _copy_rows_legacy(x):
    out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
    for t in lnl.affine_range(x.shape[0] // 128):
        tile = lnl.load(x[t * 128:(t + 1) * 128, :])
        squared = lnl.multiply(tile, tile)
        lnl.store(out[t * 128:(t + 1) * 128, :], value=lnl.multiply(squared, tile))
    return out


@nki.jit
def _copy_rows_06(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(x.shape[0] // 128):
        tile = nl.load(x[t * 128:(t + 1) * 128, :])
        squared = nl.multiply(tile, tile)
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(squared, tile))
    return out


@pytest.mark.parametrize("rows", [512, 4096])
def test_an_unrolled_06_loops_tiles_get_the_buffers_of_an_unrolled_legacy_loops(rows):
    """The tiles of a 0.6 Python loop are the tiles of an unrolled loop: a buffer per iteration while SBUF has room,
    rotating when it has not (4096 rows of 2048 float32: 32 iterations of three 8 KiB tiles per partition, 768 KiB
    against trn2's 192 KiB).  They used to be separate allocations without a bound, so every load could start at
    once: the estimate and each instruction's time must be the legacy loop's."""
    x = np.random.default_rng(3).standard_normal((rows, 2048)).astype(np.float32)
    old, new = api.launch(_copy_rows_legacy, [x], target="trn2"), api.launch(_copy_rows_06, [x], target="trn2")
    np.testing.assert_array_equal(new.outputs, old.outputs)
    est_old, est_new = old.estimate(), new.estimate()
    assert est_new.total_us == est_old.total_us
    assert sorted(est_new.line_us.values()) == pytest.approx(sorted(est_old.line_us.values()))


@lnki.jit
def _transpose_then_accumulate_legacy(w, x):
    """out[r] = sum_t w[:, t, :] @ x[r]: twelve filters transposed on the PE by a Python loop (a PSUM tile each, dead
    once copied to SBUF), then an affine_range loop of rows, each twelve matmuls into one PSUM accumulator (stage
    8's conv2d in small)."""
    out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
    w_nat = lnl.load(w)
    w_t = lnl.ndarray((128, 12, 128), dtype=w.dtype, buffer=lnl.sbuf)
    for t in range(12):
        w_t[:, t, :] = lnl.copy(lnl.transpose(w_nat[:, t, :]), dtype=w.dtype)
    for r in lnl.affine_range(x.shape[0]):
        x_tile = lnl.load(x[r])
        acc = lnl.zeros((128, 512), lnl.float32, buffer=lnl.psum)
        for t in range(12):
            acc += lnl.matmul(w_t[:, t, :], x_tile, transpose_x=True)
        lnl.store(out[r], value=lnl.copy(acc, dtype=x.dtype))
    return out


@nki.jit
def _transpose_then_accumulate_06(w, x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    w_nat = nl.load(w)
    w_t = nl.ndarray((128, 12, 128), dtype=w.dtype, buffer=nl.sbuf)
    for t in range(12):
        w_ps = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=w_ps, data=w_nat[:, t, :])
        nisa.activation(dst=w_t[:, t, :], op=nl.copy, data=w_ps)
    for r in range(x.shape[0]):
        x_tile = nl.load(x[r])
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        for t in range(12):
            nisa.nc_matmul(dst=acc, stationary=w_t[:, t, :], moving=x_tile)
        res = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=res, op=nl.copy, data=acc)
        nl.store(out[r], value=res)
    return out


def test_a_python_loops_psum_tiles_rotate_in_either_dialect():
    """A legacy Python loop's PSUM tiles used to be fixed allocations, a bank each for the whole kernel: twelve
    transposes held twelve of PSUM's eight banks, so the accumulator of the rows after them got one bank and each
    row's matmuls waited for the previous row's copy out of PSUM, where the 0.6 twin (the same instructions) rotated
    both over two banks and overlapped the rows.  The compiler reuses the banks of dead tiles: every PSUM site of
    either spelling rotates over ``psum_rotation`` banks, and the two get the same estimate."""
    rng = np.random.default_rng(11)
    w = rng.standard_normal((128, 12, 128)).astype(np.float32)
    x = rng.standard_normal((4, 128, 512)).astype(np.float32)
    old = api.launch(_transpose_then_accumulate_legacy, [w, x], target="trn2")
    new = api.launch(_transpose_then_accumulate_06, [w, x], target="trn2")
    want = np.einsum("mtk,rkn->rmn", w.astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(old.outputs, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(new.outputs, old.outputs)
    trace_old, trace_new = old.record.ctx.trace, new.record.ctx.trace
    assert [(i.engine, i.p, i.n, i.nbytes) for i in trace_new] == [(i.engine, i.p, i.n, i.nbytes) for i in trace_old]
    prm = get_target("trn2").params
    for trace in (trace_old, trace_new):
        psum_k = scheduler.Buffers(trace, prm).psum_k
        assert len(psum_k) == 2 and set(psum_k.values()) == {prm.buffers.psum_rotation}, psum_k
    est_old, est_new = old.estimate(), new.estimate()
    assert est_new.total_us == est_old.total_us
    assert sum(est_new.line_us.values()) == pytest.approx(sum(est_old.line_us.values()))


@lnki.jit
def _transposes_in_an_nki_loop_legacy(w):
    """Per output tile (an affine_range loop), three filters transposed on the PE by a Python loop inside it, each
    PSUM tile dead once copied out: stage 8's fast conv filter prologue in small."""
    out = lnl.ndarray((4, 128, 3, 128), dtype=w.dtype, buffer=lnl.shared_hbm)
    for o in lnl.affine_range(4):
        w_nat = lnl.load(w[o])
        w_t = lnl.ndarray((128, 3, 128), dtype=w.dtype, buffer=lnl.sbuf)
        for t in range(3):
            w_ps = lnl.ndarray((128, 128), dtype=lnl.float32, buffer=lnl.psum)
            w_ps[...] = lnl.transpose(w_nat[:, t, :])
            w_t[:, t, :] = lnl.copy(w_ps, dtype=w.dtype)
        lnl.store(out[o], value=w_t)
    return out


@nki.jit
def _transposes_in_an_nki_loop_06(w):
    out = nl.ndarray((4, 128, 3, 128), dtype=w.dtype, buffer=nl.shared_hbm)
    for o in range(4):
        w_nat = nl.load(w[o])
        w_t = nl.ndarray((128, 3, 128), dtype=w.dtype, buffer=nl.sbuf)
        for t in range(3):
            w_ps = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=w_ps, data=w_nat[:, t, :])
            nisa.activation(dst=w_t[:, t, :], op=nl.copy, data=w_ps)
        nl.store(out[o], value=w_t)
    return out


@lnki.jit
def _accumulators_kept_together_legacy(w):
    """The same three transposes, but all three PSUM tiles stay live until one add reads them together."""
    out = lnl.ndarray((4, 128, 128), dtype=w.dtype, buffer=lnl.shared_hbm)
    for o in lnl.affine_range(4):
        w_nat = lnl.load(w[o])
        held = []
        for t in range(3):
            w_ps = lnl.ndarray((128, 128), dtype=lnl.float32, buffer=lnl.psum)
            w_ps[...] = lnl.transpose(w_nat[:, t, :])
            held.append(w_ps)
        lnl.store(out[o], value=lnl.add(lnl.add(held[0], held[1]), held[2]))
    return out


def _psum_per_iteration(trace) -> dict:
    bufs = scheduler.Buffers(trace, get_target("trn2").params)
    return {k: n for k, n in bufs.per_iteration.items() if k[0] == "psum"}


def test_tiles_an_inner_python_loop_makes_one_after_another_rotate_as_in_the_06_twin():
    """A legacy ``affine_range`` body whose inner Python loop makes three PSUM tiles, each dead before the next, needs
    one bank per rotation step, not three: counting every tile the site makes per iteration gave the legacy kernel
    three times the 0.6 twin's banks (whose loops are all Python loops) and a different estimate for the same
    instructions (stage 8's fast conv, 160.3 against 162.8 us).  Tiles of one iteration that are live together (a
    list of accumulators) still need a bank each."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 128, 3, 128)).astype(np.float32)
    old = api.launch(_transposes_in_an_nki_loop_legacy, [w], target="trn2")
    new = api.launch(_transposes_in_an_nki_loop_06, [w], target="trn2")
    np.testing.assert_array_equal(old.outputs, w.transpose(0, 3, 2, 1))  # out[o, i, t, j] = w[o, j, t, i]
    np.testing.assert_array_equal(new.outputs, old.outputs)
    assert list(_psum_per_iteration(old.record.ctx.trace).values()) == [1]
    assert list(_psum_per_iteration(new.record.ctx.trace).values()) == [1]
    assert new.estimate().total_us == old.estimate().total_us
    held = api.launch(_accumulators_kept_together_legacy, [w], target="trn2")
    np.testing.assert_allclose(held.outputs, w.sum(axis=2).transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    assert list(_psum_per_iteration(held.record.ctx.trace).values()) == [3]


@lnki.jit
def _blocks_of_rows_legacy(x):
    out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
    for c in range(8):  # a Python loop around an affine_range loop: eight copies of a small loop
        for t in lnl.affine_range(x.shape[0] // 128):
            tile = lnl.load(x[t * 128:(t + 1) * 128, c * 256:(c + 1) * 256])
            sq = lnl.multiply(tile, tile)
            lnl.store(out[t * 128:(t + 1) * 128, c * 256:(c + 1) * 256], value=lnl.exp(lnl.exp(lnl.multiply(sq, tile))))
    return out


@nki.jit
def _blocks_of_rows_06(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for c in range(8):
        for t in range(x.shape[0] // 128):
            tile = nl.load(x[t * 128:(t + 1) * 128, c * 256:(c + 1) * 256])
            sq = nl.multiply(tile, tile)
            nl.store(out[t * 128:(t + 1) * 128, c * 256:(c + 1) * 256], value=nl.exp(nl.exp(nl.multiply(sq, tile))))
    return out


def test_the_copies_of_an_unrolled_loop_in_a_python_loop_are_one_straight_line():
    """Eight copies (a Python loop) of a two-trip affine_range loop the compiler unrolls are sixteen copies of its
    body in straight-line code, as the 0.6 twin's two Python loops are: each tile gets its own buffer while SBUF has
    room.  The legacy tiles used to get a buffer per copy of one loop only (two), so each copy's loads waited for
    the previous copy's tiles to be consumed (39.55 us against the twin's 36.47 us on trn2)."""
    x = np.random.default_rng(4).uniform(-1.0, 1.0, (256, 2048)).astype(np.float32)
    old, new = api.launch(_blocks_of_rows_legacy, [x], target="trn2"), api.launch(_blocks_of_rows_06, [x], target="trn2")
    np.testing.assert_allclose(old.outputs, np.exp(np.exp(x.astype(np.float64) ** 3)), rtol=1e-5)
    np.testing.assert_array_equal(new.outputs, old.outputs)
    prm = get_target("trn2").params
    bufs = scheduler.Buffers(old.record.ctx.trace, prm)
    assert len(bufs.k) == 5 and set(bufs.k.values()) == {16}, bufs.k
    est_old, est_new = old.estimate(), new.estimate()
    assert est_new.total_us == est_old.total_us
    assert sorted(est_new.line_us.values()) == pytest.approx(sorted(est_old.line_us.values()))
