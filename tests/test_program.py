"""Instruction programs: tracing, the JSON form, the validator and the executor against the eager reference.

The executor's promise is bit-identical outputs and identical cost-model estimates to the eager launch of the
same kernel (``program_check.check_launch`` compares both); it is held to that here on every course question's
reference solution, on the tutorial kernels and on randomly generated kernels.  The validator's promise is
that no program -- however malformed -- makes the executor do anything but run it or refuse it with a
``ProgramError`` / the compiler's ``NKIError``: a fuzzer mutates real programs to check that.
"""

from __future__ import annotations

import json
import random

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest
from program_check import check_launch, counts_python_runs, same

from nkilab.course.questions import QUESTIONS
from nkilab.kernels import modules
from nkisim import api
from nkisim.core.errors import NKIError
from nkisim.program.ir import ProgramError

RNG = np.random.default_rng(11)


def launch_checked(kernel, args, grid=None):
    """Launch with recording, then execute the program on the same inputs and compare (raises on a mismatch)."""
    k = api.as_kernel(kernel)
    reference = api.launch(k, args, grid=grid, record=False)
    done = api.launch(k, args, grid=grid, record=True)
    check_launch(k, done.record, reference.record, tuple(args), {})
    return done


# --------------------------------------------------------------------------- executor vs eager


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_every_reference_solution_executes_as_it_ran(qid):
    q = QUESTIONS[qid]
    fn = modules.load_kernel(q.solution_path, q.function)
    grid = None
    if q.grid is not None:
        grid = tuple(nl.nc(int(x["nc"])) if isinstance(x, dict) else int(x) for x in q.grid)
    for i, case in enumerate(q.public):
        done = launch_checked(fn, q.inputs(case, 3, i), grid)
        assert done.program is not None and done.program.calls


def test_tutorial_kernels_execute_as_they_ran():
    from kernels import avgpool, layernorm, matmul, rmsnorm, softmax, spmd_add, transpose

    def randn(*shape):
        return RNG.standard_normal(shape).astype(np.float32)

    x = randn(129, 200)
    launch_checked(softmax.softmax_nl, [x])
    launch_checked(softmax.softmax_isa, [x])
    launch_checked(rmsnorm.nki_rmsnorm_kernel, [x, randn(200)])
    launch_checked(layernorm.nki_layernorm_kernel_v2, [x, 1e-5, randn(200), randn(200)])
    launch_checked(spmd_add.nki_tensor_add_ragged, [x, x], grid=(2, 1))
    launch_checked(matmul.nki_matmul_basic_, [randn(128, 64), randn(128, 512)])
    for name in ("nki_matmul_tiled_", "nki_matmul_hoist_load_"):
        launch_checked(getattr(matmul, name), [randn(256, 384), randn(256, 1024)])
    launch_checked(transpose.tensor_transpose2D_kernel_, [randn(64, 128), (32, 4)])
    launch_checked(transpose.transpose_by_store, [randn(129, 128)])
    launch_checked(avgpool.tensor_avgpool_kernel, [randn(64, 12, 9), 3])


UNARY = ["exp", "tanh", "abs", "negative", "square", "sigmoid", "relu"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


def random_kernel(rng: random.Random):
    """A kernel of a random chain of elementwise, scalar, reduction and transpose steps over a loop of tiles."""
    steps = []
    for _ in range(rng.randint(2, 7)):
        kind = rng.choice(["unary", "binary", "scalar", "reduce", "isa", "transpose", "mask"])
        steps.append((kind, rng.choice(UNARY), rng.choice(BINARY), round(rng.uniform(-2, 2), 3)))

    @nki.jit
    def kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        rows = a.shape[0]
        for i in nl.affine_range((rows + 127) // 128):
            ip, jf = nl.mgrid[0:128, 0:a.shape[1]]
            live = i * 128 + ip < rows
            x = nl.load(a[i * 128 + ip, jf], mask=live)
            y = nl.load(b[i * 128 + ip, jf], mask=live)
            for kind, un, bi, s in steps:
                if kind == "unary":
                    x = getattr(nl, un)(x)
                elif kind == "binary":
                    x = getattr(nl, bi)(x, y)
                elif kind == "scalar":
                    x = x * s + s
                elif kind == "reduce":
                    x = nl.add(x, nl.max(x, axis=1, keepdims=True))
                elif kind == "isa":
                    x = nisa.tensor_scalar(x, np.multiply, s, op1=np.add, operand1=1.0)
                elif kind == "transpose" and a.shape[1] == 128:
                    x = nl.copy(nisa.nc_transpose(x))
                elif kind == "mask":
                    x = nl.where(x > s, x, y)
            nl.store(out[i * 128 + ip, jf], value=x, mask=live)
        return out

    return kernel


@pytest.mark.parametrize("seed", range(12))
def test_random_kernels_execute_as_they_ran(seed):
    rng = random.Random(seed)
    rows, cols = rng.choice([(128, 128), (200, 64), (77, 128), (256, 96)])
    a = RNG.standard_normal((rows, cols)).astype(np.float32)
    b = RNG.standard_normal((rows, cols)).astype(np.float32)
    launch_checked(random_kernel(rng), [a, b])


@counts_python_runs
def test_a_kernels_python_runs_once_per_signature():
    """The compile half runs the kernel's Python once; executing the program on other inputs does not."""
    calls = []

    @nki.jit
    def scaled(a):
        calls.append(1)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(a), 3.0))
        return out

    program = api.trace(scaled, [nki.typing.tensor[[128, 64], nl.float32]] if hasattr(nki, "typing")
                        else [np.zeros((128, 64), np.float32)])
    for _ in range(3):
        x = RNG.standard_normal((128, 64)).astype(np.float32)
        np.testing.assert_array_equal(api.execute(program, [x]).outputs, x * np.float32(3.0))
    assert len(calls) == 1
    with pytest.raises(ProgramError, match="must be \\[128, 64\\] float32"):
        api.execute(program, [np.zeros((128, 32), np.float32)])


# --------------------------------------------------------------------------- the JSON form and the validator


@nki.jit
def _tiled(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        ip, jf = nl.mgrid[0:128, 0:64]
        x = nl.load(a[i * 128 + ip, jf])
        y = nl.load(b[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(x) * y, mask=(jf < 60))
    return out


def _inputs():
    return [RNG.standard_normal((256, 64)).astype(np.float32) for _ in range(2)]


def test_a_program_round_trips_through_json():
    program = api.trace(_tiled, _inputs())
    again = api.program_from_json(program.to_json())
    assert again == program and again.to_json() == program.to_json()
    x, y = _inputs()
    assert same(api.execute(again, [x, y]).outputs, _tiled(x, y))


def _edit(text: str, fn) -> str:
    raw = json.loads(text)
    fn(raw)
    return json.dumps(raw)


@pytest.mark.parametrize("edit, words", [
    (lambda r: r["body"][1].__setitem__(1, "nl.fetch_secrets"), "'nl.fetch_secrets' is not an NKI call"),
    (lambda r: r["body"][4][2][0].__setitem__("A", 9), "tensor 9 is used before any call made it"),
    (lambda r: r["body"].insert(1, ["iter", 0, 0]), "not the innermost running loop"),
    (lambda r: r["body"].insert(3, ["iter", 0, 1]), "traced once and has no iteration events"),
    (lambda r: (r["body"][2].__setitem__(6, False), r["body"].insert(3, ["iter", 0, 5])), "outside the loop's range"),
    (lambda r: r["body"][0].__setitem__(1, [3]), "does not fit grid"),
    (lambda r: r.__setitem__("target", "trn1"), "traced for 'trn1'"),
    (lambda r: r["arrays"][0].__setitem__(2, "AAAA"), "bytes, its shape needs"),
    (lambda r: r.__setitem__("format", "pickle"), "format must be"),
    (lambda r: r["body"].pop(), "loops still running"),
    (lambda r: r["body"][4][2][0]["c"][0].__setitem__(0, "eval"), "malformed access component"),
    (lambda r: r["body"][1][3][1].__setitem__(1, {"buf": "dram", "alloc": None}), "unknown memory space"),
    (lambda r: r["body"][4][2][0]["c"][0][1]["t"][0].__setitem__(0, 7), "names loop 7, which is not running"),
])
def test_malformed_programs_are_refused_with_a_clear_error(edit, words):
    text = _edit(api.trace(_tiled, _inputs()).to_json(), edit)
    with pytest.raises(ProgramError, match=words.replace("[", "\\[").replace("(", "\\(")):
        program = api.program_from_json(text)
        api.validate(program, "trn2")


def test_not_json_and_not_a_program_are_program_errors():
    for text in ("{", "[]", '{"format": "nkisim-program/1"}', "1" * 10, '{"a": ' * 100000):
        with pytest.raises(ProgramError):
            api.program_from_json(text)


def _mutate(raw: object, rng: random.Random) -> object:
    """One random change somewhere in a JSON tree: a number, a string, a list element dropped or duplicated."""
    if isinstance(raw, list) and raw:
        i = rng.randrange(len(raw))
        roll = rng.random()
        if roll < 0.15:
            del raw[i]
        elif roll < 0.3:
            raw.insert(i, raw[i])
        else:
            raw[i] = _mutate(raw[i], rng)
        return raw
    if isinstance(raw, dict) and raw:
        k = rng.choice(sorted(raw))
        raw[k] = _mutate(raw[k], rng)
        return raw
    if isinstance(raw, bool):
        return not raw
    if isinstance(raw, int):
        return rng.choice([raw + 1, raw - 1, -raw, raw * 1000, 2 ** 40, 0])
    if isinstance(raw, float):
        return rng.choice([raw * 1e30, -raw, 0.0])
    if isinstance(raw, str):
        return rng.choice(["", raw[::-1], "nl.add", "tile.assign", "sbuf", "X", "T"])
    return rng.choice([0, "x", None, [], {}])


def test_fuzzed_programs_run_or_are_refused_never_crash():
    """Hundreds of mutants of a real program: each parses, validates and executes, or is refused with a
    ProgramError or the compiler's NKIError -- never another exception."""
    base = api.trace(_tiled, _inputs()).to_json()
    x, y = _inputs()
    rng = random.Random(5)
    outcomes = {"ran": 0, "refused": 0}
    for _ in range(400):
        raw = json.loads(base)
        for _ in range(rng.randint(1, 3)):
            _mutate(raw, rng)
        try:
            program = api.program_from_json(json.dumps(raw))
            api.execute(program, [x, y], target="trn2")
            outcomes["ran"] += 1
        except (ProgramError, NKIError):
            outcomes["refused"] += 1
    assert outcomes["refused"] > 200 and outcomes["ran"] > 0, outcomes


def test_every_nki_call_is_registered_once_and_documented():
    """The registry a program may name is exactly the calls the front end offers: every public nl/nisa function
    that issues instructions is a registered call under its own name, and each says what it does."""
    from nkisim.core.recording import CALLS, call_name

    for module, prefix in ((nl, "nl"), (nisa, "nisa")):
        for name in dir(module):
            fn = getattr(module, name)
            if call_name(fn) is not None:
                assert call_name(fn) == f"{prefix}.{name}" or call_name(fn).startswith(f"{prefix}.")
                assert CALLS[call_name(fn)] is fn.__wrapped__
    assert {n.split(".")[0] for n in CALLS} == {"nl", "nisa", "tile"}
    assert not [n for n, f in CALLS.items() if not (f.__doc__ or "").strip()]
    for skipped in ("arange", "ds", "affine_range", "program_id"):  # trace-time values, never calls
        assert call_name(getattr(nl, skipped)) is None


def test_a_trace_kernel_writing_its_parameters_executes_as_it_ran():
    """nki.trace kernels write their array parameters: the program marks those inputs mutable, and executing it
    writes a copy, never the caller's array."""

    @nki.jit(mode="trace")
    def scale_into(a, out):
        nl.store(out, value=nl.multiply(nl.load(a), 2.0))

    a = RNG.standard_normal((128, 32)).astype(np.float32)
    out = np.zeros_like(a)
    k = api.as_kernel(scale_into)
    done = api.launch(k, [a, out], record=True)
    assert [i.mutable for i in done.program.inputs] == [True, True]
    fresh = np.zeros_like(a)
    again = api.execute(done.program, [a, fresh])
    np.testing.assert_array_equal(again.outputs[1][1], a * np.float32(2.0))
    assert not fresh.any()
    check_launch(k, done.record, api.launch(k, [a, np.zeros_like(a)], record=False).record, (a, out), {})
