"""The executor's fast paths for a loop body's calls change no value and no error.

A ``CallPlan`` builds its call for the call's shape (``program.plan``): leading tile operands looked up straight
from the executor's tensors, constants passed as they are, a reduction's ``axis`` list made afresh.  Every shape
must pass exactly what ``Decoder.value`` decodes; a tensor id nothing made is the decoder's ``ProgramError``
(not a ``KeyError`` of the lookup), while a ``KeyError`` the op itself raises stays the op's failure.  A plan
whose only index expressions are its accesses' keys is re-bound, not made again, when a loop it names is entered
again (an inner loop of few iterations), and decodes what a new plan would.
"""

from __future__ import annotations

import dataclasses

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim import api
from nkisim.core import buffers
from nkisim.core.access import Access
from nkisim.core.indexing import Loop
from nkisim.core.recording import CALLS
from nkisim.core.tensor import Tensor
from nkisim.program.encode import Decoder
from nkisim.program.ir import Call, ProgramError
from nkisim.program.operands import parse_operand
from nkisim.program.plan import CallPlan
from nkisim.runtime.execute import execute

RNG = np.random.default_rng(23)


def _tensors() -> dict[int, Tensor]:
    return {pid: Tensor((128, 8), np.dtype(np.float32), buffers.sbuf, np.zeros((128, 8), np.float32), f"t{pid}")
            for pid in range(3)}


def _same(a, b) -> bool:
    if isinstance(a, Access):
        return type(b) is Access and a.tensor is b.tensor and a.is_whole and b.is_whole
    if isinstance(a, Tensor):
        return a is b
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


LEADS = [(), ("T",), ("W",), ("T", "T"), ("T", "W"), ("W", "T"), ("W", "W"), ("T", "T", "T"), ("W", "T", "T")]


@pytest.mark.parametrize("lead", LEADS)
@pytest.mark.parametrize("kwargs", [(), (("k", 1), ("name", "x"))])
def test_every_shape_of_call_passes_what_the_decoder_decodes(lead, kwargs):
    tensors = _tensors()
    dec = Decoder((), tensors, {})
    args = tuple(parse_operand(a) for a in tuple({kind: pid} for pid, kind in enumerate(lead)) +
                 (2.5, "add", {"dtype": "float32"}))
    plan = CallPlan(Call("f", args, kwargs, (), ("x", 1)), dec, lambda *a, **k: (a, k))
    for _ in range(2):
        got_args, got_kwargs = plan.run()
        assert _same(list(got_args), [dec.value(a) for a in args])
        assert _same(got_kwargs, {k: dec.value(v) for k, v in kwargs})
    tensors[0] = Tensor((128, 8), np.dtype(np.float32), buffers.sbuf, None, "new")  # the id now names another tile
    got_args, _ = plan.run()
    assert _same(list(got_args), [dec.value(a) for a in args])
    assert plan.args == (None if lead else (2.5, "add", np.dtype(np.float32)))


def test_a_reduction_gets_a_fresh_axis_list_every_run():
    dec = Decoder((), _tensors(), {})
    plan = CallPlan(Call("nl.max", (parse_operand({"T": 1}),), (("axis", parse_operand([1])), ("keepdims", True)), (),
                         ("x", 1)), dec,
                    lambda x, **k: (x, k))
    (x, first), (_, again) = plan.run(), plan.run()
    assert x is dec.tensors[1] and first == {"axis": [1], "keepdims": True} == again
    assert first["axis"] is not again["axis"]  # made fresh every run, as the decoder makes it


def test_a_tensor_nothing_made_is_the_decoders_error():
    dec = Decoder((), _tensors(), {})
    plan = CallPlan(Call("f", (parse_operand({"T": 0}), parse_operand({"T": 7})), (), (), ("x", 1)), dec,
                    lambda *a: a)
    with pytest.raises(KeyError):
        plan.run()
    with pytest.raises(ProgramError, match="tensor 7 is used before any call made it"):
        plan.missing()


@nki.jit
def _body(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[i * 128:(i + 1) * 128, :])
        y = nl.exp(x)
        z = nl.multiply(y, 2.0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=z)
    return out


def _program_and_input():
    a = RNG.standard_normal((256, 32)).astype(np.float32)
    program = api.trace(_body, [a])
    assert any(getattr(ev, "once", False) for ev in program.body)  # the body is traced once: plans run it
    return program, a


def _edited(program, fn: str, args: tuple):
    body = list(program.body)
    at = next(i for i, ev in enumerate(body) if isinstance(ev, Call) and ev.fn == fn)
    body[at] = dataclasses.replace(body[at], args=args)
    return dataclasses.replace(program, body=tuple(body))


def test_a_body_naming_a_tile_made_later_is_a_program_error_when_not_validated():
    """``checked=True`` skips the validator (its caller says it ran: ``runtime.execute``); the executor still
    refuses with its own ``ProgramError`` rather than a ``KeyError`` from the fast path's lookup."""
    program, a = _program_and_input()
    later = next(ev for ev in program.body if isinstance(ev, Call) and ev.fn == "nl.multiply").out[0]
    forged = _edited(program, "nl.exp", (parse_operand({"T": later}),))
    with pytest.raises(ProgramError, match=f"tensor {later} is used before any call made it"):
        execute(forged, [a], checked=True)


def test_an_ops_own_key_error_is_its_failure_not_a_missing_tensor(monkeypatch):
    program, a = _program_and_input()
    assert np.array_equal(api.execute(program, [a]).outputs, _body(a))

    def broken(*_, **__):
        raise KeyError("table")

    monkeypatch.setitem(CALLS, "nl.exp", broken)
    with pytest.raises(ProgramError, match="nl.exp at line [0-9]+ failed: KeyError"):
        api.execute(program, [a])


def _x(const, terms=()):
    return {"X": const, "t": [list(p) for p in terms], "g": None, "affine": True, "loops": [lp for lp, _ in terms]}


def _loop_setup():
    t = Tensor((256, 64), np.dtype(np.float32), buffers.sbuf, np.zeros((256, 64), np.float32), "t")
    loops = {0: Loop("affine", 0, 2, 1)}
    return Decoder((), {0: t}, loops), loops


ACCESS = parse_operand({"A": 0, "c": [["slice", _x(0, [(0, 128)]), _x(128, [(0, 128)]), 1], ["int", _x(3)]]})


def test_a_plan_whose_index_expressions_are_its_accesses_rebinds_to_a_loop_entered_again():
    dec, loops = _loop_setup()
    plan = CallPlan(Call("f", (ACCESS,), (), (), ("x", 1)), dec, lambda a: a)
    loops[0] = Loop("affine", 0, 2, 1)  # the loop entered again: a new Loop object, at another iteration
    loops[0].current = 1
    assert not plan.valid(loops) and plan.rebind(loops) and plan.valid(loops)
    got, want = plan.run(), dec.value(ACCESS)
    assert got.tensor is want.tensor and got.loops == want.loops == frozenset([loops[0]])
    assert got.np_index() == want.np_index() == (slice(128, 256, 1), 3)


def test_a_mask_predicate_rebinds_too():
    dec, loops = _loop_setup()
    mask = parse_operand({"M": ["cmp", "<", _x(0, [(0, 128)]), _x(100)]})
    plan = CallPlan(Call("f", (ACCESS,), (("mask", mask),), (), ("x", 1)), dec, lambda a, mask: mask)
    assert plan.run().value  # iteration 0: 0 < 100
    loops[0] = Loop("affine", 0, 2, 1)
    loops[0].current = 1
    assert plan.rebind(loops)
    got, want = plan.run(), dec.value(mask)
    assert got.value == want.value and not got.value  # iteration 1: 128 < 100 no longer holds
    assert got.loops == want.loops == frozenset([loops[0]])


def test_a_plan_with_index_expressions_elsewhere_is_made_again():
    dec, loops = _loop_setup()
    plan = CallPlan(Call("f", (ACCESS, parse_operand(_x(5, [(0, 2)]))), (), (), ("x", 1)), dec, lambda *a: a)
    loops[0] = Loop("affine", 0, 2, 1)
    assert not plan.rebind(loops)


@nki.jit
def _nested(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        for j in nl.affine_range(a.shape[1] // 8):
            x = nl.load(a[i * 128:(i + 1) * 128, j * 8:(j + 1) * 8])
            nl.store(out[i * 128:(i + 1) * 128, j * 8:(j + 1) * 8], value=nl.exp(x))
    return out


def test_an_inner_loop_entered_again_keeps_its_plans_and_changes_nothing(monkeypatch):
    from nkisim.runtime import runner

    a = RNG.standard_normal((512, 16)).astype(np.float32)
    eager = api.launch(_nested, [a])
    program = api.trace(_nested, [a])
    made = []

    class Counted(CallPlan):
        __slots__ = ()

        def __init__(self, *args):
            made.append(args[0].fn)
            super().__init__(*args)

    monkeypatch.setattr(runner, "CallPlan", Counted)
    done = api.execute(program, [a])
    assert np.array_equal(done.outputs, eager.outputs) and done.latency_us() == eager.latency_us()
    assert sorted(made) == ["nl.exp", "nl.load", "nl.store"]  # one plan each, re-bound at every entry of j
