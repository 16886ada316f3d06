"""Loop bodies are traced once, as the compiler traces them (``runtime.recording``).

A recording launch (every launch, unless a test asks for the unrolled reference with ``record=False``) runs
an ``affine_range``/``sequential_range`` body's Python for the first iteration only and the other iterations
from the events it recorded; a body that branches on its index (``if i == 0:``) runs its Python once per way its
branches go.  What that changes is Python's side effects in a body (an address counter runs once, as on a
device); what it must not change is any result: the outputs and the cost estimate equal the unrolled launch's
and the executed program's, and a body whose Python depends on the iteration in other ways falls back to running
every iteration.
"""

from __future__ import annotations

import dataclasses
import json

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl
import numpy as np
import pytest
from program_check import check_launch, counts_python_runs, same

from nkisim import api
from nkisim.core.errors import NKIError
from nkisim.program.ir import ProgramError

RNG = np.random.default_rng(5)


def _once_loops(program) -> list[bool]:
    return [ev.once for ev in program.body if type(ev).__name__ == "LoopEnter"]


def _both(kernel, args):
    """The recorded launch and the unrolled reference, with outputs and estimates compared, and the recorded
    program executed on the same inputs after a trip through JSON (``program_check.check_launch``)."""
    traced = api.launch(kernel, args)
    unrolled = api.launch(kernel, args, record=False)
    assert same(traced.outputs, unrolled.outputs)
    assert traced.latency_us() == unrolled.latency_us()
    check_launch(api.as_kernel(kernel), traced.record, unrolled.record, tuple(args), {})
    return traced, unrolled


def _paths(program) -> list[int]:
    """How many paths each loop traced once has (0: one body, no branch)."""
    counts, stack = [], []
    for ev in program.body:
        name = type(ev).__name__
        if name == "LoopEnter":
            stack.append(len(counts))
            counts.append(0)
        elif name == "Path":
            counts[stack[-1]] += 1
        elif name == "LoopLeave":
            stack.pop()
    return counts


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
def test_a_body_whose_python_depends_on_the_iteration_computes_what_the_unrolled_launch_does(body):
    """A branch on the loop variable is traced once per way it goes; what the compiler could not trace once
    either falls back to the unrolled launch, and computes what the unrolled launch computes: a tile variable
    rebound to the last iteration's tile, tiles collected in a list, an index frozen at one iteration (``i % 2``)."""
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        kept = []
        for i in nl.affine_range(a.shape[0] // 128):
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
    assert _once_loops(traced.program) == [body == "if"]
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


# --------------------------------------------------------------------------- branches on the loop index


def _branchy(kind: str, runs: list):
    """A kernel whose body branches on its index in the way ``kind`` names; ``runs`` counts its body's Python."""
    @nki.jit
    def kernel(a):
        n = a.shape[0] // 128
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(n):
            runs.append(1)
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            if kind == "first":
                if i == 0:
                    t = nl.multiply(t, 2.0)
            elif kind == "not_first":
                if i > 0:
                    t = nl.add(t, 1.0)
                else:
                    t = nl.negative(t)
            elif kind == "last":
                if i == n - 1:
                    t = nl.exp(t)
            elif kind == "truthy":
                if i:
                    t = nl.multiply(t, 3.0)
            elif kind == "both":
                if i >= 1 and i < n - 1:
                    t = nl.multiply(t, 0.5)
            elif kind == "inner":  # branches on both indices: the inner loop's paths inside the outer's
                for j in nl.affine_range(4):
                    u = t[:, j * 4:(j + 1) * 4]
                    if j == 0:
                        u = nl.multiply(u, 2.0)
                    if i == 0:
                        u = nl.add(u, 1.0)
                    nl.store(out[i * 128:(i + 1) * 128, j * 4:(j + 1) * 4], value=u)
                continue
            elif kind == "nested":  # a branch on the outer index inside an inner loop traced once
                for j in nl.affine_range(2):
                    if i == 1:
                        nl.store(out[i * 128:(i + 1) * 128, j * 8:(j + 1) * 8],
                                 value=nl.multiply(t[:, j * 8:(j + 1) * 8], 4.0))
                    else:
                        nl.store(out[i * 128:(i + 1) * 128, j * 8:(j + 1) * 8], value=t[:, j * 8:(j + 1) * 8])
                continue
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out

    return kernel


def _reference(kind: str, a: np.ndarray) -> np.ndarray:
    tiles = [a[k * 128:(k + 1) * 128].astype(np.float32) for k in range(a.shape[0] // 128)]
    n = len(tiles)
    f = np.float32
    for i, t in enumerate(tiles):
        if kind == "first" and i == 0:
            tiles[i] = t * f(2.0)
        elif kind == "not_first":
            tiles[i] = t + f(1.0) if i > 0 else -t
        elif kind == "last" and i == n - 1:
            tiles[i] = np.exp(t)
        elif kind == "truthy" and i:
            tiles[i] = t * f(3.0)
        elif kind == "both" and 1 <= i < n - 1:
            tiles[i] = t * f(0.5)
        elif kind == "nested" and i == 1:
            tiles[i] = t * f(4.0)
        elif kind == "inner":
            t = t.copy()
            t[:, :4] *= f(2.0)
            if i == 0:
                t += f(1.0)
            tiles[i] = t
    return np.concatenate(tiles)


#: kind -> (paths of the loop, runs of the body's Python): one run per way the branches go
BRANCHES = {"first": (2, 2), "not_first": (2, 2), "last": (2, 2), "truthy": (2, 2), "both": (3, 3),
            "nested": (2, 2), "inner": (2, 2)}


@counts_python_runs
@pytest.mark.parametrize("kind", sorted(BRANCHES))
def test_a_branch_on_the_index_is_traced_once_per_way_it_goes(kind):
    """The body's Python runs once per way its branches go, whatever the trip count; every iteration computes
    what NumPy and the unrolled launch (which runs the Python every iteration) compute, and so does the program."""
    paths, python_runs = BRANCHES[kind]
    for tiles in (4, 9):
        a = RNG.standard_normal((tiles * 128, 16)).astype(np.float32)
        runs: list = []
        kernel = _branchy(kind, runs)
        traced = api.launch(kernel, [a])
        np.testing.assert_allclose(traced.outputs, _reference(kind, a), rtol=1e-6)
        assert len(runs) == python_runs
        runs.clear()
        _both(kernel, [a])
        assert len(runs) == python_runs + tiles  # (the unrolled reference runs the Python every iteration)
        assert _once_loops(traced.program)[0] is True and _paths(traced.program)[0] == paths
        if kind == "inner":  # the inner loop, in each of the outer loop's two paths, has two of its own
            assert _once_loops(traced.program) == [True] * 3 and _paths(traced.program) == [2, 2, 2]
    assert len(traced.program.to_json()) < 2 * len(api.trace(kernel, [a[:512]]).to_json())


@counts_python_runs
def test_an_address_counter_beside_a_branch_on_the_index_advances_once_per_way():
    """nki-samples' pipelined attention advances a Python address for every allocation of its
    ``sequential_range`` body and branches on the section index (``if section_i == 0:``): the compiler traces
    the body once, so the addresses fit SBUF.  Traced once per way its branches go, the counter advances twice
    here, not once per section: 16 sections of 40 KiB each overflow a partition, two do not."""
    @nki.jit
    def sections(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        addr = 0
        acc = nl.zeros((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        for s in nl.sequential_range(a.shape[0] // 128):
            t = nl.ndarray((nl.par_dim(128), a.shape[1]), dtype=a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=addr))
            addr += 40 * 1024
            t[...] = nl.load(a[s * 128:(s + 1) * 128, :])
            if s == 0:
                acc[...] = nl.copy(t)
            else:
                acc[...] = nl.add(acc, t)
            nl.store(out[s * 128:(s + 1) * 128, :], value=acc)
        return out

    a = RNG.standard_normal((16 * 128, 64)).astype(np.float32)
    np.testing.assert_allclose(api.launch(sections, [a]).outputs,
                               np.cumsum(a.reshape(16, 128, 64), axis=0, dtype=np.float32).reshape(-1, 64),
                               rtol=1e-5)
    with pytest.raises(Exception, match="(?i)sbuf|partition|address|exceed"):
        api.launch(sections, [a], record=False)


@counts_python_runs
@pytest.mark.parametrize("divided", ["mod", "floordiv"])
def test_a_branch_on_the_index_modulo_a_constant_is_traced_once_per_way(divided):
    """``if i % 2 == 0`` (or ``if i // 2 == 0``) is a predicate the program holds (an index divided by a positive
    integer): the body's Python runs once per way the branch goes, and every iteration computes what the unrolled
    launch computes (outputs, estimate, and the executed program's after a trip through JSON)."""
    runs = []

    @nki.jit
    def alternate(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0] // 128):
            runs.append(1)
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            if (i % 2 == 0) if divided == "mod" else (i // 2 == 0):
                t = nl.negative(t)
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out

    a = RNG.standard_normal((768, 8)).astype(np.float32)
    traced, _ = _both(alternate, [a])
    want = a.copy()
    for k in ((0, 2, 4) if divided == "mod" else (0, 1)):
        want[k * 128:(k + 1) * 128] *= -1
    np.testing.assert_array_equal(traced.outputs, want)
    assert _once_loops(traced.program) == [True] and _paths(traced.program) == [2]
    runs.clear()
    api.launch(alternate, [a])
    assert len(runs) == 2  # one run of the body's Python per way the branch goes, not one per iteration


@counts_python_runs
def test_an_inner_loop_branching_on_its_index_modulo_and_divided_is_traced_once():
    """``if (j + 1) % 3:`` / ``elif j // 2 >= 1:`` in an inner ``sequential_range`` of an ``affine_range``: two ways
    through the inner body, so its Python runs twice for 16 iterations, and everything equals the unrolled launch."""
    runs = []

    @nki.jit
    def rows(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            for j in nl.sequential_range(a.shape[0] // 256):
                runs.append(1)
                r = i * (a.shape[0] // 2) + j * 128
                t = nl.load(a[r:r + 128, :])
                if (j + 1) % 3:
                    t = nl.multiply(t, 2.0)
                elif j // 2 >= 1:
                    t = nl.negative(t)
                nl.store(out[r:r + 128, :], value=t)
        return out

    a = RNG.standard_normal((2048, 8)).astype(np.float32)
    traced, _ = _both(rows, [a])
    want = a.copy()
    for i in range(2):
        for j in range(8):
            r = i * 1024 + j * 128
            want[r:r + 128] *= 2.0 if (j + 1) % 3 else -1.0
    np.testing.assert_array_equal(traced.outputs, want)
    assert _once_loops(traced.program) == [True, True] and _paths(traced.program) == [0, 2]
    runs.clear()
    api.launch(rows, [a])
    assert len(runs) == 2


def _forged_guards(program, change):
    """``program`` with each path's guards replaced by ``change(guard)``, through JSON as a forger would."""
    from nkisim.program.ir import Path

    body = [Path(tuple(change(g) for g in ev.guards)) if isinstance(ev, Path) else ev for ev in program.body]
    return api.program_from_json(dataclasses.replace(program, body=tuple(body)).to_json())


def test_a_forged_modulo_guard_is_refused_by_the_validator():
    from nkisim.program.ir import Guard
    from nkisim.program.kinds.masks import Cmp, Divided

    @nki.jit
    def alternate(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            if i % 2 == 0:
                t = nl.negative(t)
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out

    a = RNG.standard_normal((512, 8)).astype(np.float32)
    program = api.launch(alternate, [a]).program
    api.validate(program)
    for m in (0, -2):
        bad = _forged_guards(program, lambda g, m=m: Guard(Cmp(g.condition.op, dataclasses.replace(
            g.condition.lhs, m=m), g.condition.rhs), g.held))
        with pytest.raises(ProgramError, match="only % and // by a positive integer"):
            api.validate(bad)
    # `i % 2 == 1` where the branch was taken (and `not i % 2 == 0` elsewhere): no path holds at iteration 0
    first = [True]

    def shifted(g):
        if not first[0]:
            return g
        first[0] = False
        return Guard(Cmp("==", g.condition.lhs, dataclasses.replace(g.condition.rhs, const=1)), g.held)

    with pytest.raises(ProgramError, match="no path of the body of loop 0 holds at its iteration 0"):
        api.validate(_forged_guards(program, shifted))
    raw = json.loads(program.to_json())
    text = json.dumps(raw).replace('"D": ["%"', '"D": ["**"')
    with pytest.raises(ProgramError, match="a divided index is"):
        api.program_from_json(text)
    assert isinstance(program.body[3].guards[0].condition.lhs, Divided)


@pytest.mark.parametrize("how", ["list", "product"])
def test_a_branch_the_program_cannot_hold_falls_back_to_every_iteration(how):
    """A Python list indexed by ``i * i`` (a value frozen at its iteration), or ``(i * i) % 2`` (a non-affine index
    divided): no predicate holds it, so the loop is unrolled, and computes what the unrolled launch computes."""
    flags = [True, True, False, False, True, False, False, False, False, True]

    @nki.jit
    def alternate(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0] // 128):
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            if flags[i * i] if how == "list" else (i * i) % 2 == 0:
                t = nl.negative(t)
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out

    a = RNG.standard_normal((512, 8)).astype(np.float32)
    traced, _ = _both(alternate, [a])
    want = a.copy()
    for k in range(4):
        if (flags[k * k] if how == "list" else (k * k) % 2 == 0):
            want[k * 128:(k + 1) * 128] *= -1
    np.testing.assert_array_equal(traced.outputs, want)
    assert _once_loops(traced.program) == [False]


def test_an_iteration_whose_python_depends_on_it_keeps_its_events_for_itself():
    """The first iteration indexes a Python list by the loop variable (``scales[i]``, a value no guard holds) and
    the others do not: its events hold for it alone (a path guarded by ``i == 0``), and the others run from the
    second iteration's."""
    scales = [5.0]

    @nki.jit
    def first_scaled(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0] // 128):
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            if i == 0:
                t = nl.multiply(t, scales[i])
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out

    a = RNG.standard_normal((512, 8)).astype(np.float32)
    traced, _ = _both(first_scaled, [a])
    want = a.copy()
    want[:128] *= np.float32(5.0)
    np.testing.assert_array_equal(traced.outputs, want)
    assert _once_loops(traced.program) == [True] and _paths(traced.program) == [2]
    first = next(ev for ev in traced.program.body if type(ev).__name__ == "Path")
    assert first.guards[0].condition.op == "==" and first.guards[0].condition.rhs.const == 0


def test_reading_a_tile_of_an_earlier_iteration_after_traced_ones_ran_is_the_compilers_scope_error():
    """``prev`` is made in the branch of the first iterations and read in the last: the compiler's branches are
    scopes, and the iterations between ran from the traced body, so the kernel's Python holds the first
    iteration's tile, not the one before the last.  The compiler's error, at the line that read it."""
    @nki.jit
    def carried(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        n = a.shape[0] // 128
        for i in nl.affine_range(n):
            if i < n - 1:
                prev = nl.load(a[i * 128:(i + 1) * 128, :])
            else:
                nl.store(out[i * 128:(i + 1) * 128, :], value=prev)  # the reading line
        return out

    a = RNG.standard_normal((512, 8)).astype(np.float32)
    with pytest.raises(NKIError, match="Local variable 'prev' is referenced outside of its parent scope") as info:
        api.launch(carried, [a])
    line = [n for n, text in enumerate(open(__file__).read().splitlines(), 1) if "# the reading line" in text][0]
    assert info.value.nki_location[1] == line


def test_a_program_with_paths_round_trips_and_a_forged_one_with_no_path_for_an_iteration_is_refused():
    a = RNG.standard_normal((512, 16)).astype(np.float32)
    program = api.trace(_branchy("first", []), [a])
    again = api.program_from_json(program.to_json())
    assert again == program
    assert same(api.execute(again, [a]).outputs, _reference("first", a))
    raw = json.loads(program.to_json())
    paths = [k for k, ev in enumerate(raw["body"]) if ev[0] == "path"]
    raw["body"][paths[1]][1][0][1] = True  # both paths now need i == 0
    forged = api.program_from_json(json.dumps(raw))
    with pytest.raises(ProgramError, match="no path of the body of loop 0 holds at its iteration 1"):
        api.execute(forged, [a])  # (refused by the validator the executor runs first)
    raw = json.loads(program.to_json())
    raw["body"].insert(paths[0], raw["body"][paths[0] + 1])  # a call before the body's first path
    with pytest.raises(ProgramError, match="starts with its first path"):
        api.validate(api.program_from_json(json.dumps(raw)), "trn2")
