"""The per-instruction shortcuts of issue 29 change no value, no instruction and no error.

- ``ops.elementwise.whole_pair``: a binary op of whole tiles (or a whole tile and a Python number) reuses the facts the
  general path worked out for the same shapes, dtypes and spaces.  A kernel mixing every case runs with the
  shortcut and without it: the same outputs bit for bit, the same instructions (kind, engine, partitions,
  elements, dtypes, extra facts, boxes) and the same estimate; the shortcut is taken for most of its calls.
- ``ops.reduce.reduce_values`` folds a short last axis (max, min, multiply up to 8 elements) column by column
  instead of NumPy's ``reduce``: the same bits as ``reduce`` on data with zeros of both signs, NaNs and
  infinities.
- ``cost.trace.Instruction.issued``, the record ``ops.base.emit`` makes per instruction, sets every slot as the
  keyword constructor does.
- A tile used after the loop that made it has ended is still the compiler's scope error when its shapes were
  seen before (the shortcut defers to the general path, which raises).
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim import api
from nkisim.core.errors import NKIError
from nkisim.cost.instructions import TENSOR_TENSOR
from nkisim.cost.trace import Instruction
from nkisim.ops import elementwise
from nkisim.ops.reduce import reduce_values

RNG = np.random.default_rng(29)


@nki.jit
def _mixed(a, b, c):
    """Same-shape tiles, a [P, 1] statistic broadcast, Python int and float operands, a comparison, an integer
    tile, a bf16 tile and operators, in a loop whose iterations each make new tiles."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    k = nl.load(c)
    acc = nl.zeros(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    for _ in nl.sequential_range(4):
        s = nl.add(x, y)
        d = nl.subtract(s, 0.25)
        m = nl.max(d, axis=[1], keepdims=True)
        e = nl.subtract(d, m)
        f = nl.multiply(e, 3)
        g = nl.greater(f, y)
        h = nl.multiply(f, g)
        i = nl.add(k, 2)
        j = nl.multiply(h, i)
        w = nl.copy(j, dtype=nl.bfloat16)
        v = nl.maximum(w, x)
        u = v * y - x
        acc[...] = nl.add(acc, u)
    nl.store(out, value=acc)
    return out


def _instructions(launch) -> list[tuple]:
    return [(ins.op, ins.engine, ins.p, ins.n, ins.dtypes, ins.extra, [r.box for r in ins.reads],
             [w.box for w in ins.writes]) for ins in launch.record.ctx.trace]


def test_whole_tile_shortcut_changes_nothing_and_is_taken(monkeypatch):
    a = RNG.standard_normal((128, 6), dtype=np.float32)
    b = RNG.standard_normal((128, 6), dtype=np.float32)
    c = RNG.integers(-5, 5, (128, 6)).astype(np.int32)
    program = api.trace(_mixed, [a, b, c])
    taken = []
    shortcut = elementwise.whole_pair

    def counting(*args):
        tile = shortcut(*args)
        taken.append(tile is not None)
        return tile

    monkeypatch.setattr(elementwise, "whole_pair", counting)
    fast = api.execute(program, [a, b, c])
    assert sum(taken) >= 0.7 * len(taken) and len(taken) >= 4 * 8, (sum(taken), len(taken))
    monkeypatch.setattr(elementwise, "whole_pair", lambda *args: None)
    slow = api.execute(program, [a, b, c])
    assert np.array_equal(fast.outputs, slow.outputs)
    assert _instructions(fast) == _instructions(slow)
    assert fast.estimate().total_us == slow.estimate().total_us


@pytest.mark.parametrize("op", ["max", "maximum", "min", "minimum", "multiply"])
@pytest.mark.parametrize("width", range(2, 9))
@pytest.mark.parametrize("keepdims", [True, False])
def test_short_axis_fold_equals_numpy_reduce(op, width, keepdims):
    fn = {"max": np.maximum, "maximum": np.maximum, "min": np.minimum, "minimum": np.minimum,
          "multiply": np.multiply}[op]
    for shape in ((128, width), (64, 3, width)):
        v = (RNG.standard_normal(shape) * 10.0 ** RNG.integers(-3, 4, shape)).astype(np.float32)
        for value, share in ((0.0, 0.1), (-0.0, 0.1), (np.nan, 0.03), (np.inf, 0.03), (-np.inf, 0.03)):
            v[RNG.random(shape) < share] = value
        axes = (len(shape) - 1,)
        with np.errstate(invalid="ignore", over="ignore"):
            want = fn.reduce(v, axis=axes, keepdims=keepdims)
            got = reduce_values(op, v, axes, keepdims)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got.view(np.int32), want.view(np.int32))


@nki.jit
def _out_of_scope(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    keep = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    for _ in nl.sequential_range(2):
        t = nl.add(x, x)  # the shapes of the add after the loop: seen, passed
        keep[...] = t
    u = nl.add(t, x)  # t belongs to the loop that ended
    nl.store(out, value=u)
    return out


def test_out_of_scope_tile_is_still_refused():
    with pytest.raises(NKIError) as info:
        _out_of_scope(RNG.standard_normal((128, 4), dtype=np.float32))
    assert info.value.error_id == "err_local_variable_used_out_of_scope"


def test_issued_sets_every_slot_as_the_constructor_does():
    recs = ((128, 4), ("float32", 7, None), 7, ((0, 128), (0, 4)), (128, 4), ("float32", 9, None), 9, ((0, 128), (0, 4)))
    args = dict(kind=TENSOR_TENSOR, engine="vector", loc=("k.py", 3), p=None, n=None, dtypes=(), nbytes=0, acc=False,
                extra={"alu": "add"}, instance=2, loops=((5, "affine", 1),), core=1, recs=recs, nr=1)
    made = Instruction(writes=None, **args)
    issued = Instruction.issued(*args.values())
    for slot in Instruction.__slots__:
        assert getattr(issued, slot) == getattr(made, slot), slot
    assert issued.reads == made.reads and issued.writes == made.writes and issued.bufs == made.bufs
    assert Instruction.issued(*{**args, "extra": None}.values()).extra == {}
