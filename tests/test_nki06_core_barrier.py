"""``nisa.core_barrier`` as AWS documents it (nki/api/nki/isa/__init__.py, core_barrier): both logical cores of an LNC2
launch meet, the engine the call names waits on each core until the later core arrives ("The barrier will block
execution on this engine, other engines will not be blocked"), and the core sets AWS's validated kernels write.

Values are checked against NumPy; the engine hold against the cost model's own schedule (``Profile.events``, a
deterministic estimate), never a wall clock.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkisim
from nkisim import api

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

from nkisim.frontend.v06.adapters.known_issues import DocumentedRuleWarning  # noqa: E402

ROWS, COLS = 128, 64


@nki.jit
def late_core_one(x):
    """Core 1 reaches the barrier late (a chain of Scalar-engine activations before its write); after the barrier core
    0 fills one tile on the engine the barrier holds (GpSimd) and one on an engine it does not (Vector)."""
    pid = nl.program_id(0)
    scratch = nl.ndarray((2 * ROWS, COLS), dtype=x.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray((3 * ROWS, COLS), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((ROWS, COLS), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid * ROWS:(pid + 1) * ROWS, :])
    if pid == 1:
        for _ in range(24):
            nisa.activation(dst=t, data=t, op=nl.copy)
    nisa.dma_copy(dst=scratch[pid * ROWS:(pid + 1) * ROWS, :], src=t)
    nisa.core_barrier(data=scratch, cores=(0, 1), engine=nisa.engine.gpsimd)
    if pid == 0:
        held = nl.ndarray((ROWS, COLS), dtype=x.dtype, buffer=nl.sbuf)
        free = nl.ndarray((ROWS, COLS), dtype=x.dtype, buffer=nl.sbuf)
        nisa.memset(dst=held, value=1.0, engine=nisa.engine.gpsimd)
        nisa.memset(dst=free, value=2.0, engine=nisa.engine.vector)
        nisa.dma_copy(dst=out[0:ROWS, :], src=held)
        nisa.dma_copy(dst=out[ROWS:2 * ROWS, :], src=free)
        nisa.dma_copy(dst=out[2 * ROWS:, :], src=scratch[ROWS:, :])  # core 1's half, read after the barrier
    return out


def _events(launch):
    prof = launch.profile()
    return [(ev.instruction.core, ev.instruction.kind.name, ev.engine, ev.start_ns, ev.end_ns) for ev in prof.events]


def test_the_barrier_holds_its_engine_until_the_later_core_arrives():
    x = np.random.default_rng(29).standard_normal((2 * ROWS, COLS)).astype(np.float32)
    launch = api.launch(late_core_one, [x], grid=2, target="trn2")
    np.testing.assert_array_equal(launch.outputs, np.concatenate([np.ones((ROWS, COLS), np.float32),
                                                                  np.full((ROWS, COLS), 2, np.float32), x[ROWS:]]))
    ev = _events(launch)
    # core 1's semaphore write: the last DMA of core 1 that is the barrier's (4 bytes, after its activations)
    core1_arrives = max(end for core, kind, _e, _s, end in ev if core == 1 and kind == "activation")
    waits = [(core, eng, start, end) for core, kind, eng, start, end in ev if kind == "core_barrier"]
    assert sorted((core, eng) for core, eng, _s, _e in waits) == [(0, "pool"), (1, "pool")]
    assert all(start >= core1_arrives for _c, _e, start, _end in waits)  # neither core passes before core 1 arrives
    wait0_end = next(end for core, _e, _s, end in waits if core == 0)
    memsets = {eng: start for core, kind, eng, start, _end in ev if core == 0 and kind == "memset"}
    assert memsets["pool"] >= wait0_end  # the held engine runs nothing issued after the barrier before it ends
    assert memsets["dve"] < core1_arrives  # another engine is not blocked
    # the program replays the barrier and its hold
    program = api.program_from_json(launch.program.to_json())
    done = api.execute(program, [x])
    np.testing.assert_array_equal(done.outputs, launch.outputs)
    assert done.latency_us() == launch.latency_us()


def test_a_list_of_cores_is_the_pair_and_other_sets_are_refused():
    """``cores=[0, 1]`` (nki-library 2.29_release's mlp_tkg_utils.py) is the pair; AWS's docs support only (0, 1)
    (isa:2620 "Currently only cores=(0, 1) is supported"), so a set naming another core is refused."""

    def barrier(cores):
        @nki.jit
        def kernel(x):
            pid = nl.program_id(0)
            scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=scratch[pid * ROWS:(pid + 1) * ROWS, :], src=x[pid * ROWS:(pid + 1) * ROWS, :])
            nisa.core_barrier(scratch, cores)
            return scratch

        return kernel

    x = np.arange(2 * ROWS * COLS, dtype=np.float32).reshape(2 * ROWS, COLS)
    np.testing.assert_array_equal(barrier([0, 1])[2](x), x)
    with pytest.raises(TypeError, match="'cores' of 'core_barrier' must be \\(0, 1\\), got \\(0, 2\\)"):
        barrier((0, 2))[2](x)


def test_a_barrier_of_core_zero_alone_runs_with_the_docs_quoted():
    """nki-library 2.29_release writes ``nisa.core_barrier(output, (0))`` for one shard (bwmm_shard_on_I.py): it runs,
    as the core's own semaphore write and wait, with a warning quoting the doc it breaks."""

    @nki.jit
    def one_shard(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        nisa.core_barrier(out, (0))
        nisa.core_barrier(out, (0,))
        return out

    x = np.random.default_rng(3).standard_normal((ROWS, COLS)).astype(np.float32)
    with pytest.warns(DocumentedRuleWarning, match="Currently only cores=\\(0, 1\\) is supported"):
        launch = api.launch(one_shard, [x], target="trn2")
    np.testing.assert_array_equal(launch.outputs, x)
    assert [kind for _c, kind, *_ in _events(launch)].count("core_barrier") == 2


@nki.jit
def counted_blocks(x):
    """nki-library's moe_cte block loop: each core adds one to an SBUF block counter, then both meet at a barrier
    through that counter (bwmm_shard_on_I.py:577 ``nisa.core_barrier(block_idx, (0, 1))``)."""
    pid = nl.program_id(0)
    out = nl.ndarray((2, COLS), dtype=nl.float32, buffer=nl.shared_hbm)
    count = nl.ndarray((1, COLS), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=count, src=x[pid:pid + 1, :])
    nisa.tensor_scalar(dst=count, data=count, op0=nl.add, operand0=1.0)
    nisa.core_barrier(count, (0, 1))
    nisa.dma_copy(dst=out[pid:pid + 1, :], src=count)
    return out


def test_a_barrier_through_an_sbuf_tile_runs_after_its_last_write_with_the_docs_quoted():
    """AWS's docs ask for shared HBM (isa:2624), nki-library 2.29_release and main pass an SBUF counter: it runs, with a
    warning quoting the doc; the wait on each core comes after that core's write of the counter."""
    x = np.random.default_rng(7).standard_normal((2, COLS)).astype(np.float32)
    with pytest.warns(DocumentedRuleWarning, match="This must be data in shared HBM that multiple cores are accessing"):
        launch = api.launch(counted_blocks, [x], grid=2, target="trn2")
    np.testing.assert_array_equal(launch.outputs, x + np.float32(1))
    ev = _events(launch)
    for core in (0, 1):
        added = max(end for c, kind, _e, _s, end in ev if c == core and kind == "tensor_scalar")
        (wait,) = [start for c, kind, _e, start, _end in ev if c == core and kind == "core_barrier"]
        assert wait >= added


def test_a_barrier_through_private_hbm_stays_refused():
    @nki.jit
    def private(x):
        scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.private_hbm)
        nisa.dma_copy(dst=scratch, src=x)
        nisa.core_barrier(scratch, (0, 1))
        return x

    with pytest.raises(TypeError, match="address space 'shared_hbm'"):
        private[2](np.ones((ROWS, COLS), np.float32))
