"""NKI 0.6 dynamic control flow against NumPy: registers (``nisa.register_*``), ``nl.fori_loop``, ``nl.while_loop``
and the deprecated ``nl.dynamic_range``, with ``.ap(scalar_offset=register)`` / ``.select(dim, register)``
addressing; and their documented errors (a register in Python control flow, a write to an induction register, a
register step, a dynamic loop inside ``no_reorder``).  Source: ``nki/api/nki/language/__init__.py`` (fori_loop,
while_loop, dynamic_range docstrings), ``nki/api/nki/isa/__init__.py`` (VirtualRegister, register_*),
``nki/deep-dives/nki-aps.rst`` (scalar offsets).
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

from nkisim.program.ir import LoopEnter  # noqa: E402


def column_copy(n_cols_tensor=None):
    """Copy ``x``'s first columns one by one through an SBUF element, addressed by the loop's register."""

    def body(x, n):
        rows, cols = x.shape
        out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
        zeros = nl.zeros((rows, cols), dtype=x.dtype)
        nisa.dma_copy(dst=out, src=zeros)
        temp = nl.ndarray((rows, 1), dtype=x.dtype, buffer=nl.sbuf)
        if n_cols_tensor:
            nsb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.dma_copy(dst=nsb, src=n)
            upper = nisa.register_alloc()
            nisa.register_load(upper, nsb)
        else:
            upper = cols

        def step(i):
            nisa.dma_copy(dst=temp, src=x.ap([[cols, rows], [1, 1]], scalar_offset=i, indirect_dim=1))
            nisa.dma_copy(dst=out.ap([[cols, rows], [1, 1]], scalar_offset=i, indirect_dim=1), src=temp)

        nl.fori_loop(0, upper, step)
        return out

    return nki.jit(body)


def test_fori_loop_with_compile_time_bounds_is_one_traced_body():
    x = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    kernel = column_copy()
    launch = api.launch(kernel, [x, np.zeros((1, 1), np.int32)], target="trn2")
    np.testing.assert_array_equal(launch.outputs, x)
    loops = [e for e in launch.program.body if isinstance(e, LoopEnter)]
    assert len(loops) == 1 and loops[0].once and loops[0].stop == 6  # the body is in the program once
    assert sum(1 for c in launch.program.calls if c.fn == "nisa.dma_copy") == 3  # zero fill + the body's two
    done = api.execute(api.program_from_json(launch.program.to_json()), [x, np.zeros((1, 1), np.int32)])
    np.testing.assert_array_equal(done.outputs, x)
    assert done.latency_us() == launch.latency_us()


def test_fori_loop_to_a_bound_loaded_from_a_tensor():
    x = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    want = np.where(np.arange(6)[None, :] < 4, x, 0)
    np.testing.assert_array_equal(column_copy(n_cols_tensor=True)(x, np.array([[4]], np.int32)), want)


def test_more_iterations_cost_more():
    x = np.ones((8, 6), np.float32)
    short = api.launch(column_copy(True), [x, np.array([[2]], np.int32)], target="trn2").latency_us()
    long = api.launch(column_copy(True), [x, np.array([[6]], np.int32)], target="trn2").latency_us()
    assert long > short


def test_a_bound_read_from_a_tensor_needs_values():
    x = np.ones((8, 6), np.float32)
    with pytest.raises(TypeError, match="unknown while tracing without values"):
        api.trace(column_copy(True), [x, np.zeros((1, 1), np.int32)])


@nki.jit
def count_down(data, count):
    """``while_loop``: add ``data`` into an accumulator ``count`` times, decrementing a counter in SBUF."""
    val = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=val, src=data)
    acc = nl.zeros((1, 4), dtype=nl.float32, buffer=nl.sbuf)
    cnt = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=cnt, src=count)
    one = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=one, value=1)
    reg = nisa.register_alloc()
    nisa.register_load(reg, cnt)

    def body(r):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=val, op=nl.add)
        nisa.tensor_tensor(dst=cnt, data1=cnt, data2=one, op=nl.subtract)
        nisa.register_load(r, cnt)
        return r

    nl.while_loop(reg, body)
    out = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return out


@pytest.mark.parametrize("n", [0, 1, 5])
def test_while_loop_runs_while_the_register_is_nonzero(n):
    d = np.array([[1.5, -2, 3, 0.25]], np.float32)
    np.testing.assert_array_equal(count_down(d, np.array([[n]], np.int32)), d * n)


def test_dynamic_range_select_and_register_store():
    """The deprecated ``dynamic_range``: rows picked by ``select(0, i)`` of an HBM tensor; the index stored back
    through ``register_store``."""

    def body(x):
        rows, cols = x.shape
        out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
        ids = nl.ndarray((rows, 1), dtype=nl.int32, buffer=nl.shared_hbm)
        for i in nl.dynamic_range(rows):
            t = nl.ndarray((1, cols), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x.select(0, i).reshape((1, cols)))
            nisa.activation(dst=t, op=nl.exp, data=t)
            nisa.dma_copy(dst=out.select(0, i).reshape((1, cols)), src=t)
            nisa.register_store(ids.select(0, i).reshape((1, 1)), i)
        return out, ids

    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    with pytest.warns(DeprecationWarning, match="dynamic_range is deprecated"):
        out, ids = nki.jit(body)(x)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(ids[:, 0], np.arange(4))


def _refused(body, exc, match, *args):
    with pytest.raises(exc, match=match):
        nki.jit(body)(*(args or (np.ones((8, 4), np.float32),)))


def test_a_register_cannot_drive_python_control_flow():
    def body(x):
        r = nisa.register_alloc(3)
        if r:
            pass
        return x

    _refused(body, TypeError, "cannot be used in a Python if/while, int\\(\\) or range\\(\\)")

    def ranged(x):
        for _ in range(nisa.register_alloc(2)):
            pass
        return x

    _refused(ranged, TypeError, "cannot be used in a Python")


def test_the_induction_register_is_read_only_and_the_step_a_positive_int():
    def write_induction(x):
        def step(i):
            nisa.register_move(i, 0)

        nl.fori_loop(0, 4, step)
        return x

    _refused(write_induction, AssertionError, "induction register of a dynamic loop is read-only")

    def register_step(x):
        for _ in nl.dynamic_range(0, 4, nisa.register_alloc(1)):
            pass
        return x

    with pytest.warns(DeprecationWarning):
        _refused(register_step, AssertionError, "step must be a positive compile-time int")


def test_no_dynamic_loop_inside_no_reorder():
    def body(x):
        with nl.no_reorder():
            nl.fori_loop(0, 2, lambda i: None)
        return x

    _refused(body, ValueError, "inside nl.no_reorder")


def test_a_while_body_returns_the_condition_register():
    def body(x):
        nl.while_loop(nisa.register_alloc(1), lambda r: None)
        return x

    _refused(body, TypeError, "must return the register holding the next condition")
