"""Grading on the simulator is compile-then-execute: the student's process only traces, the grader executes.

The sandboxed child gets shapes and dtypes, never an input value, and sends back one instruction program per
signature; a process that runs no student code validates each program and executes it on the grader's inputs.
So a kernel that gets past the static screen (these run through ``run_module`` directly, screen bypassed) and
pokes tile storage, patches the simulator in its own process or forges its program gets exactly what its
program computes.  Each attack here has its exact expected outcome; the same files through ``grade_report``
(screen included) score exactly zero.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from nkilab import grade_report
from nkilab.isolate.runner import run_module

HEADER = "import sys\n\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport numpy as np\n\n"
HONEST = """
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out
"""


def kernel(tmp_path: Path, name: str, body: str, before: str = "") -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(before) + "\n\n@nki.jit\ndef vector_add_naive(a, b):\n"
                    + textwrap.indent(textwrap.dedent(body), "    "))
    return path


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.standard_normal((128, 512)).astype(np.float32) for _ in range(2)]


def run(path: Path):
    return run_module(path, "vector_add_naive", [inputs()], timed=0, timeout=60, sandboxed=True)


@pytest.fixture(scope="module")
def honest(tmp_path_factory) -> tuple[np.ndarray, float]:
    res = run(kernel(tmp_path_factory.mktemp("honest"), "honest", HONEST))
    case = res.cases[0]
    assert case.status == "ok", case
    a, b = inputs()
    np.testing.assert_array_equal(case.output, a + b)
    return case.output, case.timing.latency_us


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_the_child_never_sees_an_input_value(tmp_path):
    """Tracing hands the kernel tensors without storage: reading one to bake the answer in finds nothing."""
    path = kernel(tmp_path, "peek", """
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        if a._data is not None:
            raise RuntimeError("saw the inputs")
        nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
        return out
        """)
    case = run(path).cases[0]
    assert case.status == "ok" and case.error is None


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_storage_written_around_the_instructions_counts_for_nothing(tmp_path):
    """No instruction writes the output, whatever the kernel does to tile objects in its own process: the
    executor's output tensor is never written, the compiler's error, no output."""
    path = kernel(tmp_path, "poke", """
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        out.written = True
        out._data = np.zeros(a.shape, np.float32)
        return out
        """)
    case = run(path).cases[0]
    assert case.status == "error" and case.output is None
    assert case.error.error_id == "err_tensor_output_not_written_to", case.error


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_patching_the_simulator_in_the_child_changes_nothing(tmp_path, honest):
    """The kernel zeroes the cost model and rewires nl.add to subtract in its own process: the grader's executor
    computes a + b and the honest latency, to the bit."""
    path = kernel(tmp_path, "patch", HONEST, before="""
        import nkisim.cost.model as _m
        import nkisim.ops.optable as _t
        _m.estimate = lambda *a, **k: type("E", (), {"total_us": 0.001})()
        _t.ALU["add"] = _t.ALU["subtract"]
        """)
    case = run(path).cases[0]
    assert case.status == "ok"
    np.testing.assert_array_equal(case.output, honest[0])
    assert case.timing.latency_us == honest[1]


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_a_forged_program_is_executed_as_written(tmp_path):
    """The kernel replaces the tracer with one that sends a hand-written program returning input `a` unchanged:
    it validates, so it runs, and the output is `a` -- what that program computes, not the answer."""
    path = kernel(tmp_path, "forge", HONEST, before="""
        from nkisim import api as _api
        _real = _api.trace

        def _forged(*args, **kwargs):
            p = _real(*args, **kwargs)
            import dataclasses
            from nkisim.program.operands import parse_operand
            return dataclasses.replace(p, body=p.body[:1], outputs=parse_operand({"T": 0}), tensors=2)

        _api.trace = _forged
        """)
    case = run(path).cases[0]
    assert case.status == "ok"
    np.testing.assert_array_equal(case.output, inputs()[0])


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_a_program_naming_what_is_not_an_nki_call_is_refused(tmp_path):
    path = kernel(tmp_path, "evil", HONEST, before="""
        from nkisim import api as _api
        _real = _api.trace

        def _forged(*args, **kwargs):
            import dataclasses
            p = _real(*args, **kwargs)
            call = dataclasses.replace(p.body[1], fn="os.system", args=("echo pwned",))
            return dataclasses.replace(p, body=(p.body[0], call) + p.body[2:])

        _api.trace = _forged
        """)
    case = run(path).cases[0]
    assert case.status == "error" and case.error.type == "ProgramError"
    assert "'os.system' is not an NKI call" in case.error.message


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_an_out_of_bounds_program_gets_the_compilers_error(tmp_path):
    """A forged access past the end of an input is caught by the op's own bounds check in the executor."""
    path = kernel(tmp_path, "oob", HONEST, before="""
        from nkisim import api as _api
        _real = _api.trace

        def _forged(*args, **kwargs):
            import dataclasses, json
            from nkisim.program.operands import operand_json, parse_operand
            p = _real(*args, **kwargs)
            call = p.body[2]  # nl.load(a)
            text = json.dumps([operand_json(a) for a in call.args]).replace('"T": 0', '"A": 0, "c": [["slice", '
                '{"X": 64, "t": [], "g": null, "affine": true, "loops": []}, {"X": 192, "t": [], "g": null, '
                '"affine": true, "loops": []}, 1]]')
            call = dataclasses.replace(call, args=tuple(parse_operand(a) for a in json.loads(text)))
            return dataclasses.replace(p, body=p.body[:2] + (call,) + p.body[3:])

        _api.trace = _forged
        """)
    case = run(path).cases[0]
    assert case.status == "error" and case.error.error_id == "err_tensor_access_out_of_bound", case.error


def _looping(tmp_path, trips: int):
    """The honest kernel's calls wrapped in two nested loop bodies traced once, of ``trips`` iterations each."""
    return kernel(tmp_path, f"loops{trips}", HONEST, before=f"""
        from nkisim import api as _api
        from nkisim.program.ir import LoopEnter, LoopKind, LoopLeave
        _real = _api.trace

        def _forged(*args, **kwargs):
            import dataclasses
            p = _real(*args, **kwargs)
            loops = (LoopEnter(0, LoopKind.SEQUENTIAL, 0, {trips}, 1, True),
                     LoopEnter(1, LoopKind.SEQUENTIAL, 0, {trips}, 1, True))
            return dataclasses.replace(p, body=p.body[:2] + loops + p.body[2:] + (LoopLeave(1), LoopLeave(0)))

        _api.trace = _forged
        """)


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_a_program_looping_a_trillion_times_is_refused_before_it_runs(tmp_path):
    """Two nested loop bodies of a million iterations each would run for days: the validator counts the calls a
    program would run and refuses it (``limits.MAX_EXECUTED_CALLS``), with no time spent."""
    res = run_module(_looping(tmp_path, 10**6), "vector_add_naive", [inputs()], timed=0, timeout=60, sandboxed=True)
    assert not res.timed_out
    (case,) = res.cases
    assert case.status == "error" and case.error.type == "ProgramError", case
    assert "would run more than 16777216 calls" in case.error.message


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_a_long_program_within_the_caps_is_stopped_at_the_timeout(tmp_path):
    """Just under the cap (2,000 x 2,000 iterations of the kernel's four calls) the program is valid and would
    run for minutes: the executor's fork is killed at the run's timeout, and nothing is graded."""
    res = run_module(_looping(tmp_path, 2000), "vector_add_naive", [inputs()], timed=0, timeout=4, sandboxed=True)
    assert res.timed_out  # (what the grade report shows as the run's timeout: evaluate.py)
    assert [(c.status, c.output) for c in res.cases] == [("not_run", None)], res.cases


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
@pytest.mark.parametrize("name", ["poke", "patch", "forge"])
def test_the_same_kernels_through_the_grader_score_zero(tmp_path, name):
    bodies = {"poke": ("out._data = a", ""), "patch": (HONEST, "import nkisim.cost.model as _m"),
              "forge": (HONEST, "from nkisim import api as _api")}
    body, before = bodies[name]
    path = kernel(tmp_path, name, body if body != "out._data = a" else "out = nl.ndarray(a.shape, dtype=a.dtype, "
                  "buffer=nl.shared_hbm)\nout._data = a\nreturn out\n", before=before)
    r = grade_report("vector_add_naive", path, seed=1, verbose=False)
    assert r.points == 0.0 and "refused your file" in r.evaluation.problem
