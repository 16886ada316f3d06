"""Loop bodies are traced once, as the compiler traces them (``runtime.record``).

A recording launch (every launch, unless a test asks for the unrolled reference with ``record=False``) runs
an ``affine_range``/``sequential_range`` body's Python for the first iteration only and the other iterations
from the events it recorded.  What that changes is Python's side effects in a body (an address counter runs
once, as on a device); what it must not change is any result: the outputs and the cost estimate equal the
unrolled launch's, and a body whose Python depends on the iteration falls back to running every iteration.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl
import numpy as np
import pytest
from program_check import counts_python_runs, same

from nkisim import api

RNG = np.random.default_rng(5)


def _once_loops(program) -> list[bool]:
    return [ev.once for ev in program.body if type(ev).__name__ == "LoopEnter"]


def _both(kernel, args):
    """The recorded launch and the unrolled reference, with outputs and estimates compared."""
    traced = api.launch(kernel, args)
    unrolled = api.launch(kernel, args, record=False)
    assert same(traced.outputs, unrolled.outputs)
    assert traced.latency_us() == unrolled.latency_us()
    return traced, unrolled


@counts_python_runs
def test_a_body_runs_its_python_once_and_every_iteration_computes():
    runs = []

    @nki.jit
    def scale_rows(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0] // 128):
            runs.append(1)
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(t, 3.0))
        return out

    a = RNG.standard_normal((512, 64)).astype(np.float32)
    traced, _ = _both(scale_rows, [a])
    np.testing.assert_array_equal(traced.outputs, a * np.float32(3.0))
    assert _once_loops(traced.program) == [True]
    runs.clear()
    api.launch(scale_rows, [a])
    assert len(runs) == 1
    runs.clear()
    api.launch(scale_rows, [a], record=False)
    assert len(runs) == 4


def test_nested_bodies_are_traced_once_and_the_program_does_not_grow_with_the_trip_count():
    @nki.jit
    def add_tiles(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0] // 128):
            for j in nl.affine_range(a.shape[1] // 64):
                x = nl.load(a[i * 128:(i + 1) * 128, j * 64:(j + 1) * 64])
                y = nl.load(b[i * 128:(i + 1) * 128, j * 64:(j + 1) * 64])
                nl.store(out[i * 128:(i + 1) * 128, j * 64:(j + 1) * 64], value=nl.add(x, y))
        return out

    small = [RNG.standard_normal((256, 128)).astype(np.float32) for _ in range(2)]
    big = [RNG.standard_normal((1024, 512)).astype(np.float32) for _ in range(2)]
    p_small, _ = _both(add_tiles, small)
    p_big, _ = _both(add_tiles, big)
    np.testing.assert_array_equal(p_big.outputs, big[0] + big[1])
    assert _once_loops(p_big.program) == [True, True]
    assert len(p_big.program.body) == len(p_small.program.body)


def test_a_boundary_mask_stays_symbolic():
    """``mask=(i * 128 + ip < n)`` masks the last tile only: the predicate is kept, not its first value."""
    @nki.jit
    def copy_rows(a):
        n = a.shape[0]
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ip, jf = nl.mgrid[0:128, 0:32]
        for i in nl.affine_range((n + 127) // 128):
            t = nl.load(a[i * 128 + ip, jf], mask=(i * 128 + ip < n))
            nl.store(out[i * 128 + ip, jf], value=t, mask=(i * 128 + ip < n))
        return out

    a = RNG.standard_normal((300, 32)).astype(np.float32)
    traced, _ = _both(copy_rows, [a])
    np.testing.assert_array_equal(traced.outputs, a)
    assert _once_loops(traced.program) == [True]


@counts_python_runs
def test_an_address_counter_in_a_body_advances_once_as_on_a_device():
    """The kernel advances a Python address per allocation inside the loop (as nki-samples' allocated attention
    kernel does).  The compiler traces the body once, so the addresses fit SBUF; run per iteration they would
    drift past it."""
    @nki.jit
    def counted(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        addr = 0
        for i in nl.affine_range(a.shape[0] // 128):
            t = nl.ndarray((nl.par_dim(128), a.shape[1]), dtype=a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=addr))
            addr += 96 * 1024
            t[...] = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out

    a = RNG.standard_normal((512, 64)).astype(np.float32)
    np.testing.assert_array_equal(api.launch(counted, [a]).outputs, a)
    with pytest.raises(Exception, match="(?i)sbuf|partition|address|exceed"):
        api.launch(counted, [a], record=False)


@pytest.mark.parametrize("body", ["if", "rebind", "collect", "frozen"])
def test_a_body_whose_python_depends_on_the_iteration_runs_every_iteration(body):
    """What the compiler could not trace once either falls back to the unrolled launch, and computes what the
    unrolled launch computes: a branch on the loop variable, a tile variable rebound to the last iteration's
    tile, tiles collected in a list, an index frozen at one iteration (``i % 2``).  The branch is on a
    ``sequential_range`` variable: on an ``affine_range`` one it is refused (tests/test_errors_teach.py)."""
    loop = nl.sequential_range if body == "if" else nl.affine_range

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        kept = []
        for i in loop(a.shape[0] // 128):
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            if body == "if":
                if i == 0:
                    t = nl.multiply(t, 2.0)
            elif body == "rebind":
                acc = nl.add(acc, t)
                t = acc
            elif body == "collect":
                kept.append(t)
            else:
                t = nl.load(a[(i % 2) * 128:(i % 2 + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out

    a = RNG.standard_normal((512, 16)).astype(np.float32)
    traced, _ = _both(kernel, [a])
    assert _once_loops(traced.program) == [False]
    want = a.copy()
    if body == "if":
        want[:128] *= np.float32(2.0)
    elif body == "rebind":
        want = np.cumsum(a.reshape(4, 128, 16), axis=0, dtype=np.float32).reshape(512, 16)
    elif body == "frozen":
        want = np.concatenate([a[:128], a[128:256], a[:128], a[128:256]])
    np.testing.assert_allclose(traced.outputs, want, rtol=1e-6)


def test_an_error_in_a_later_iteration_names_the_students_line():
    """An iteration run from the traced body raises the compiler's error at the line the body was traced from."""
    @nki.jit
    def gather_past_the_end(a, idx):
        out = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            ix = nl.load(idx[i * 128:(i + 1) * 128, :])
            t = nl.load(a[ix[:, 0], nl.arange(8)[None, :]])  # the bad line
            nl.store(out, value=t)
        return out

    a = RNG.standard_normal((256, 8)).astype(np.float32)
    idx = np.zeros((512, 1), dtype=np.int32)
    idx[300, 0] = 9999  # in the third iteration only
    with pytest.raises(Exception) as info:
        api.launch(gather_past_the_end, [a, idx])
    err = info.value
    line = [n for n, text in enumerate(open(__file__).read().splitlines(), 1) if "# the bad line" in text
            and "t = nl.load" in text][0]
    assert getattr(err, "nki_location", (None, None))[1] == line
