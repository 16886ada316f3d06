"""The executor decodes a call in a loop body once (``program.plan.CallPlan``) and reuses what cannot change.

What it must not change is any value: every kind of operand builds what ``Decoder.value`` builds,
fresh where the decoder's result is per run (tensors looked up again, accesses and mutable values made
again), shared only where it is immutable; a plan follows the loop objects it was bound to; and executing a
program gives the eager launch's outputs and estimate, with ``t[...] = nl.load(x)`` no longer copying the
loaded tile where the program says it is the tile's last use.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np

from nkisim import api
from nkisim.core import buffers
from nkisim.core.access import Access
from nkisim.core.grids import DynSlice
from nkisim.core.indexing import Affine, Loop, MaskExpr
from nkisim.core.tensor import Tensor
from nkisim.program.encode import Decoder
from nkisim.program.ir import Array, Call
from nkisim.program.operands import parse_operand
from nkisim.program.plan import CallPlan

RNG = np.random.default_rng(11)


def _setup():
    t = Tensor((256, 64), np.dtype(np.float32), buffers.sbuf, np.zeros((256, 64), np.float32), "t")
    loops = {0: Loop("affine", 0, 2, 1)}
    grid = np.arange(4, dtype=np.int64).reshape(4, 1)
    dec = Decoder((Array("int64", (4, 1), grid.tobytes()), Array("bool", (4, 1), np.ones((4, 1), bool).tobytes())),
                  {0: t}, loops)
    return dec, t, loops


def _x(const, terms=(), affine=True, g=None):
    return {"X": const, "t": [list(p) for p in terms], "g": g, "affine": affine, "loops": [lp for lp, _ in terms]}


#: one operand of every kind, in its JSON form (parsed into its record where used)
ARGS_JSON = [
    None, True, 3, 2.5, "add", [1, {"T": 0}], {"tuple": [1, 2]}, {"dict": [["a", 1]]}, {"float": "nan"},
    {"T": 0}, {"W": 0},
    {"A": 0, "c": [["slice", _x(0, [(0, 128)]), _x(128, [(0, 128)]), 1], ["int", _x(3)]]},
    {"A": 0, "c": [["adv", _x(0, [(0, 4)], g=0)], ["int", _x(1)]]},
    _x(5, [(0, 2)]), {"slice": [0, 4, None]}, {"ds": [_x(0, [(0, 4)]), 4]}, {"ellipsis": 1},
    {"dtype": "bfloat16"}, {"np": "float32", "v": 1.5}, {"arr": 0}, {"par_dim": 128}, {"fn": "add"},
    {"mask": 1, "ok": True, "reason": None, "grid": True},
    {"M": ["and", {"M": ["cmp", "<", _x(0, [(0, 128)]), _x(200)]}, {"M": ["not", {"M": ["cmp", ">", _x(0), _x(1)]}]}]},
    {"buf": "psum", "alloc": None}, {"buf": "sbuf", "alloc": ["sbuf", 0, 0, [1], [2], None]},
]
ARGS = [parse_operand(a) for a in ARGS_JSON]


def _op(raw):
    return parse_operand(raw)


def _same(a, b) -> bool:
    """Equal values of the same kind (accesses and masks by what they select)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Tensor):
        return a is b
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Access):
        return a.tensor is b.tensor and a.shape == b.shape and all(
            np.array_equal(x, y) for x, y in zip(a.np_index(), b.np_index()))
    if isinstance(a, Affine):
        return np.array_equal(a.value(), b.value()) and a.affine == b.affine and a.loops == b.loops
    if isinstance(a, MaskExpr):
        return np.array_equal(a.value, b.value) and (a.ok, a.reason, a.has_grid) == (b.ok, b.reason, b.has_grid)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, slice):
        return _same((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    if isinstance(a, DynSlice):
        return _same(a.start, b.start) and a.size == b.size
    if isinstance(a, buffers.Buffer):
        return a == b
    return a == b


def test_a_plan_builds_what_the_decoder_decodes_at_every_iteration():
    dec, _, loops = _setup()
    plan = CallPlan(Call("f", tuple(ARGS), (("k", _op({"T": 0})),), (), ("x", 1)), dec, lambda *a, **k: (a, k))
    assert plan.lids == (0,)
    for v in (0, 1):
        loops[0].current = v
        args, kwargs = plan.run()
        assert _same(list(args), [dec.value(a) for a in ARGS])
        assert _same(kwargs, {"k": dec.value(_op({"T": 0}))})
    first, _ = plan.run()
    again, _ = plan.run()
    for i, (a, b) in enumerate(zip(first, again)):
        if isinstance(a, (list, dict, np.ndarray, Access, MaskExpr, buffers.Buffer)) and a is not buffers.psum:
            assert a is not b, ARGS_JSON[i]  # made fresh every run, as the decoder makes them


def test_a_plan_is_bound_to_the_loops_it_was_made_with():
    dec, _, loops = _setup()
    plan = CallPlan(Call("f", (_op(_x(0, [(0, 1)])),), (), (), ("x", 1)), dec, lambda a: a)
    assert plan.valid(loops)
    loops[0] = Loop("affine", 0, 2, 1)  # the loop entered again: a new Loop object
    assert not plan.valid(loops)


def test_a_constant_call_passes_its_arguments_as_they_are():
    dec, _, _ = _setup()
    plan = CallPlan(Call("f", (_op({"tuple": [128, 4]}), _op({"dtype": "float32"})), (), (), ("x", 1)), dec,
                    lambda *a: a)
    assert plan.args == ((128, 4), np.dtype(np.float32)) and plan.lids == ()


@nki.jit
def _tiled_matmul(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                a[...] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b[...] = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(a[...], b[...], transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc, dtype=out.dtype))
    return out


def test_executing_hands_a_loaded_tile_over_and_changes_nothing(monkeypatch):
    from nkisim.ops import memory

    lhsT = RNG.standard_normal((384, 256), dtype=np.float32)
    rhs = RNG.standard_normal((384, 1024), dtype=np.float32)
    eager = api.launch(_tiled_matmul, [lhsT, rhs])
    program = api.trace(_tiled_matmul, [lhsT, rhs])
    handed = []
    real = memory._hand_over  # noqa: SLF001 - counting the executor's use of the assignment's fast path
    monkeypatch.setattr(memory, "_hand_over", lambda dst, value: handed.append(real(dst, value)) or handed[-1])
    done = api.execute(program, [lhsT, rhs])
    assert np.array_equal(done.outputs, eager.outputs)
    assert done.latency_us() == eager.latency_us()
    assert handed and all(handed) and len(handed) == 2 * 3 * 2 * 2  # two loads per k step, every one


@nki.jit
def _scalar_operands(a):
    out = nl.ndarray((4, 128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    for j in nl.affine_range(4):
        y = nl.add(x, x)  # no scalar operand
        z = nl.multiply(y, 0.5)  # a constant scalar
        w = nl.multiply(z, j + 1)  # a scalar that changes with the loop
        nl.store(out[j], value=w)
    return out


def test_a_plan_drops_the_scalar_notes_only_where_there_are_none():
    """A plan calls the implementation without the wrapper that notes scalar operands (``ops.registry``) when
    its call has none: the executed trace notes the same scalars as the eager launch's, instruction by
    instruction, and the outputs are NumPy's."""
    from nkisim.core.recording import CALLS
    from nkisim.ops.registry import without_scalar_notes

    add = CALLS["nl.add"]
    assert without_scalar_notes(add, ("x",)) is not add  # nothing to note: the bare implementation
    assert without_scalar_notes(add, (0.5,)) is add and without_scalar_notes(add, (True,)) is not add
    assert without_scalar_notes(add, (Affine(0, ()),)) is add
    a = RNG.standard_normal((128, 8), dtype=np.float32)
    eager = api.launch(_scalar_operands, [a])
    done = api.execute(api.trace(_scalar_operands, [a]), [a])
    want = np.stack([(a + a) * np.float32(0.5) * np.float32(j + 1) for j in range(4)])
    assert np.array_equal(done.outputs, want) and np.array_equal(eager.outputs, want)

    def notes(launch):
        return [(i.kind.name, (i.extra or {}).get("scalars")) for i in launch.record.ctx.trace]

    assert notes(done) == notes(eager)
    assert [s for _, s in notes(done) if s] == [(0.5,), (1,), (0.5,), (2,), (0.5,), (3,), (0.5,), (4,)]


def _slots(acc: Access) -> tuple:
    """Every slot of an access (its index and box evaluated), for comparing two of them field by field."""
    return (acc.tensor, [tuple(c) for c in acc.comps], acc.shape, acc.advanced, acc.loops, acc.done, acc.par_axis,
            acc.np_index(), acc.box, acc.is_whole)


def test_an_access_of_slices_is_the_one_the_key_makes_at_every_iteration():
    """``Access.sliced`` (what a plan makes every iteration from the components of its key, ``Access.components``)
    gives the access ``Access(tensor, key)`` gives, slot by slot, on tiles with and without a direct allocation and
    with a partition axis that is not the first; keys it cannot take are left to ``Access``."""
    outer, inner = Loop("affine", 0, 2, 1), Loop("sequential", 0, 4, 1)
    i, j = Affine(0, {outer: 1}), Affine(0, {inner: 1})
    flat = Tensor((256, 64), np.dtype(np.float32), buffers.sbuf, np.zeros((256, 64), np.float32), "flat")
    blocks = Tensor((4, 128, 64), np.dtype(np.float32), buffers.sbuf, np.zeros((4, 128, 64), np.float32), "blocks",
                    par_axis=1)
    placed = Tensor((4, 128, 64), np.dtype(np.float32), buffers.Buffer("sbuf", buffers.ModAlloc("sbuf", 0, 0, (), (2,))),
                    np.zeros((4, 128, 64), np.float32), "placed", par_axis=1)
    keys = [
        (flat, (slice(i * 128, i * 128 + 128, 1), slice(j * 16, j * 16 + 16, 1))),
        (flat, (slice(i * 128, i * 128 + 128, 1), slice(Affine(0), Affine(64), 2))),  # a step
        (flat, (i * 100 + 3, slice(j * 16, j * 16 + 8, 1))),  # a position: the dimension dropped
        (blocks, (j, slice(Affine(0), Affine(128), 1), slice(i * 32, i * 32 + 32, 1))),
        (placed, (j, slice(Affine(0), Affine(128), 1), slice(i * 32, i * 32 + 32, 1))),
    ]
    for tensor, key in keys:
        parts = Access.components(key)
        assert parts is not None, key
        for a in range(2):
            for b in range(4):
                outer.current, inner.current = a, b
                assert _slots(Access.sliced(tensor, *parts)) == _slots(Access(tensor, key))
    grid = Affine(0, None, np.arange(4, dtype=np.int64).reshape(4, 1))
    for key in [(slice(Affine(-16), Affine(64), 1),), (slice(Affine(0), Affine(64), -1),), (grid,),
                (slice(grid, grid + 4, 1),), (3,), (slice(None, 4, 1),), (DynSlice(i, 4),)]:
        assert Access.components(key) is None, key  # (a negative bound is wrapped by the size: Access does that)
