"""Grading trust at the program boundary (issue 19): a hand-in controls nothing but the instructions it asks for.

Each attack here assumes the static screen was bypassed (the kernels are run through ``run_module`` or with the
screen switched off, and patch the tracer in their own sandboxed process, as a bypass would let them), and the
sandbox held.  What is left to a hostile child is the program it hands back and the words it says; every test
checks one field of that against what the grader asked for, with the exact outcome.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from nkilab import grade_report
from nkilab.course.questions import HIDDEN_CASES_ENV
from nkilab.isolate.runner import run_module
from nkilab.judge import gate
from nkilab.judge.results import Audience

pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("needs_sandbox")]

HEADER = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport numpy as np\n\n"
HONEST = """
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out
"""
#: the first line of every kernel file below: what a forged location may be shown with, and nothing else
FIRST_LINE = HEADER.splitlines()[0]


def kernel(tmp_path: Path, name: str, body: str = HONEST, forge: str = "", before: str = "") -> Path:
    """A vector-add kernel file whose tracer is replaced by ``forge`` (the body of ``_forged(p)``, returning the
    program to hand back instead of the traced ``p``)."""
    patch = ""
    if forge:
        patch = ("from nkisim import api as _api\n_real = _api.trace\n\n\ndef _forged(*args, **kwargs):\n"
                 "    import dataclasses\n    p = _real(*args, **kwargs)\n" + textwrap.indent(textwrap.dedent(forge), "    ")
                 + "\n\n_api.trace = _forged\n")
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(before) + patch + "\n\n@nki.jit\ndef vector_add_naive(a, b):\n"
                    + textwrap.indent(textwrap.dedent(body), "    "))
    return path


def inputs(shape=(128, 512)) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]


def run(path: Path, **kwargs):
    return run_module(path, "vector_add_naive", [inputs()], timed=0, timeout=60, sandboxed=True, **kwargs)


def test_a_forged_location_is_shown_from_the_students_own_file_only(tmp_path):
    """The failing call names a grader file (the TA's seed file, /etc/passwd) as its location: nothing is opened;
    the line number is shown with the student's own line of that number, and the file name is dropped."""
    secret = tmp_path / "seed-of-the-course"
    secret.write_text("SECRET-SEED-31337\n")
    path = kernel(tmp_path, "where", forge=f"""
        alloc = dataclasses.replace(p.body[1], loc=({str(secret)!r}, 1))  # out = nl.ndarray(...), "at" the secret
        return dataclasses.replace(p, body=(p.body[0], alloc) + p.body[2:-1])  # and its store dropped
        """)
    case = run(path).cases[0]
    assert case.status == "error" and case.error.error_id == "err_tensor_output_not_written_to", case
    assert case.error.line == 1 and case.error.code == FIRST_LINE
    assert "SECRET" not in json.dumps(dataclasses.asdict(case.error))


def test_a_location_outside_the_students_file_is_dropped(tmp_path):
    path = kernel(tmp_path, "far", forge="""
        alloc = dataclasses.replace(p.body[1], loc=("/etc/passwd", 10**6))
        return dataclasses.replace(p, body=(p.body[0], alloc) + p.body[2:-1])
        """)
    case = run(path).cases[0]
    assert case.status == "error" and case.error.error_id == "err_tensor_output_not_written_to"
    assert case.error.line is None and case.error.code is None
    assert "root:" not in json.dumps(dataclasses.asdict(case.error))


@pytest.mark.parametrize("forge,words", [
    ("return _real(*args, **dict(kwargs, grid=(nl.nc(2),)))",
     "launched on grid [2] with 2 core(s), not the requested grid [] with 1 core(s)"),
    ("return dataclasses.replace(p, on_chip_outputs=True)", "outputs must be HBM tensors here"),
    ("import nkisim.program.ir as ir\n"
     "return dataclasses.replace(p, inputs=(p.inputs[0], ir.Input('b', (64, 512), 'float32')))",
     "not the requested shapes and dtypes"),
    ("return dataclasses.replace(p, target='trn1')", "traced for 'trn1', not 'trn2'"),
])
def test_launch_fields_are_the_questions_not_the_childs(tmp_path, forge, words):
    """A program traced for two cores on a one-core question (4x the speed points on a slow matmul before), an
    SBUF output that skips its store, other input shapes, another target: each is refused, the case fails."""
    case = run(kernel(tmp_path, "launch", forge=forge), target="trn2").cases[0]
    assert case.status == "error" and case.error.type == "ProgramError" and words in case.error.message, case


def test_an_sbuf_output_is_refused_even_when_the_kernel_asks_for_simulation_mode(tmp_path):
    """``nki.jit(mode="simulation")`` let the legacy CPU simulator return an SBUF tile; when grading, outputs are
    the question's, in HBM."""
    path = tmp_path / "sim.py"
    path.write_text(HEADER + "\n@nki.jit(mode='simulation')\ndef vector_add_naive(a, b):\n"
                    "    return nl.add(nl.load(a), nl.load(b))\n")
    case = run(path).cases[0]
    assert case.status == "error" and "outputs must be HBM tensors here" in case.error.message, case


def test_the_child_learns_the_hidden_signatures_only_after_it_answered_for_the_public_ones(tmp_path):
    """The kernel raises with every shape it has been traced for: the public case's error names the public shape
    only; the hidden case's (traced after) names both, and that text is the TA's, never the student's."""
    path = kernel(tmp_path, "seen", body="""
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        SEEN.append(tuple(a.shape))
        raise ValueError(f"seen {SEEN}")
        """, before="SEEN = []\n")
    res = run_module(path, "vector_add_naive", [inputs(), inputs((96, 77))], timeout=60, sandboxed=True,
                     hidden=frozenset({1}))
    public, hidden = res.cases
    assert public.error.message == "seen [(128, 512)]"
    assert hidden.error.message == "seen [(128, 512), (96, 77)]"


def test_a_hidden_cases_words_never_reach_the_student(tmp_path, monkeypatch):
    """With the TA's private hidden cases, a kernel that raises its input shape: the student's report shows the
    hidden cases as a count and 'raised ValueError', never the shape; the TA's report has it."""
    private = tmp_path / "hidden.json"
    private.write_text(json.dumps({"vector_add_naive": [{"shape": [97, 333], "dtype": "float32"}]}))
    monkeypatch.setenv(HIDDEN_CASES_ENV, str(private))
    monkeypatch.setattr(gate, "screen", lambda path: None)  # as if the screen were bypassed
    path = kernel(tmp_path, "shape", body="""
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        if a.shape[0] == 97:
            raise ValueError(f"the hidden shape is {a.shape}")
        nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
        return out
        """)
    report = grade_report("vector_add_naive", path, seed=3, verbose=False)
    student, ta = report.record.render_text(Audience.STUDENT), report.record.render_text(Audience.TA)
    assert "hidden case" in student and "raised ValueError" in student
    assert not [x for x in ("97, 333", "97,333", "the hidden shape") if x in student], student
    assert "the hidden shape is (97, 333)" in ta


def test_a_huge_program_is_refused_and_the_grader_stays_small(tmp_path):
    """A 300 MB "program" (the issue's was 950 MB, inside a 1 GiB pipe budget): the grader reads at most the
    program cap per signature, calls the stream malformed and stops the child at once, and its own peak memory
    stays under ``GRADER_PEAK_MB``."""
    path = kernel(tmp_path, "huge", before="""
        from nkisim import api as _api


        class _Huge:
            def to_json(self):
                return "x" * (300 * 2**20)


        _api.trace = lambda *a, **k: _Huge()
        """)
    # the peak is the process's own high-water mark (VmHWM): ru_maxrss would also count the pytest process this
    # one was forked from, whose pages it held until its exec
    probe = (
        "import re\n"
        "from nkilab.isolate.runner import run_module\n"
        "import numpy as np\n"
        "x = [np.ones((128, 512), np.float32)] * 2\n"
        f"r = run_module({str(path)!r}, 'vector_add_naive', [x], timed=0, timeout=120, sandboxed=True)\n"
        "hwm = int(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1))\n"
        "print(r.garbled, r.cases[0].status, hwm // 1024)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    garbled, status, peak_mb = out.stdout.split()[-3:]
    assert "than allowed" in out.stdout and status == "not_run", out.stdout
    assert int(peak_mb) < GRADER_PEAK_MB, out.stdout


#: the grading process's stated memory cap for one question (it holds the programs, the inputs and the outputs)
GRADER_PEAK_MB = 600


def test_trace_and_execution_share_one_time_budget(tmp_path):
    """A kernel whose tracing takes most of the budget and whose program would run for hours: the whole question
    (trace, execute, cost) ends at its limit, not at twice it."""
    path = kernel(tmp_path, "slow", forge="""
        import time as _t
        from nkisim.program.ir import LoopEnter, LoopLeave
        _t.sleep(6)
        loop = (LoopEnter(0, "sequential", 0, 10**6, 1, True),)
        return dataclasses.replace(p, body=p.body[:2] + loop + p.body[2:] + (LoopLeave(0),))
        """)
    start = time.monotonic()
    res = run_module(path, "vector_add_naive", [inputs()], timed=0, timeout=8, sandboxed=True)
    elapsed = time.monotonic() - start
    assert res.timed_out and res.cases[0].status == "not_run"
    # the limit and the kill: a budget each (the old rule) would take 6 s to trace, then 8 s more to execute
    assert elapsed < 8 + 4, elapsed
