"""Stage 1 (vector add) end to end: notebooks run under a real Jupyter kernel, the grader's verdicts on
reference, stub, mutant and hostile submissions, and the release pipeline (fresh, reproducible, no leaks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from course_testing import (
    REPO,
    grade_in_process,
    inprocess_mutant_test,
    outputs_text,
    run_reference_notebook,
    write,
)

from nkilab import check, grade, grade_report
from nkilab.authoring.release import build, reference_fingerprints, scan_for_leaks
from nkilab.course.questions import QUESTIONS

STAGE = "01_vector_add"
SOLUTIONS = REPO / "solutions" / STAGE


# --------------------------------------------------------------------------- notebooks under Jupyter


@pytest.mark.slow
def test_reference_notebook_runs_and_earns_full_marks():
    nb = run_reference_notebook(STAGE, {"q1_grade", "q2_grade"})
    # the 128-partition demo shows the compiler's message
    assert "exceed architecture limitation of 128" in outputs_text(nb, "demo_limit")


# --------------------------------------------------------------------------- the grader's verdicts


def test_reference_kernels_full_marks():
    for qid in ("vector_add_naive", "vector_add_stream"):
        q = QUESTIONS[qid]
        r = grade_in_process(qid, q.solution_path, 123)
        assert r.points == q.points, (qid, r)


MUTANTS = {
    # vector_add_naive
    "returns_input": ("vector_add_naive", """
        @nki.jit
        def vector_add_naive(a, b):
            return a
        """),
    "partition_256": ("vector_add_naive", """
        @nki.jit
        def vector_add_naive(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            a_tile = nl.ndarray((256, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
            a_tile[0:a.shape[0], :] = nl.load(a)
            b_tile = nl.load(b)
            nl.store(out, value=nl.add(a_tile[0:a.shape[0], :], b_tile))
            return out
        """),
    "subtracts": ("vector_add_naive", """
        @nki.jit
        def vector_add_naive(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.subtract(nl.load(a), nl.load(b)))
            return out
        """),
    "float32_output": ("vector_add_naive", """
        @nki.jit
        def vector_add_naive(a, b):
            out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
            return out
        """),
    # vector_add_stream
    "second_half_not_stored": ("vector_add_stream", """
        @nki.jit
        def vector_add_stream(a, b):
            chunk = 1024
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            half = a.shape[1] // 2
            for j in nl.affine_range(half // chunk):
                s = j * chunk
                nl.store(out[:, s:s + chunk], value=nl.add(nl.load(a[:, s:s + chunk]), nl.load(b[:, s:s + chunk])))
            nl.store(out[:, half:a.shape[1]], value=0.0)
            return out
        """),
    "wrong_offset": ("vector_add_stream", """
        @nki.jit
        def vector_add_stream(a, b):
            chunk = 2048
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for j in nl.affine_range(a.shape[1] // chunk):
                a_tile = nl.load(a[:, j * chunk:(j + 1) * chunk])
                b_tile = nl.load(b[:, 0:chunk])
                nl.store(out[:, j * chunk:(j + 1) * chunk], value=nl.add(a_tile, b_tile))
            return out
        """),
    "first_chunk_only": ("vector_add_stream", """
        @nki.jit
        def vector_add_stream(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out[:, 0:2048], value=nl.add(nl.load(a[:, 0:2048]), nl.load(b[:, 0:2048])))
            return out
        """),
}


test_mutants_lose_correctness_points = inprocess_mutant_test(MUTANTS, seed=7)


@pytest.mark.processes
def test_check_diagnoses_in_plain_words(tmp_path, capsys):
    path = write(tmp_path, "m.py", MUTANTS["wrong_offset"][1])
    result = check("vector_add_stream", path)
    text = capsys.readouterr().out
    assert not result.passed
    assert "public case 1/4" in text and "first at index [0, 2048] = row 0 (row tile 0, partition 0), column 2048" in text
    assert "Public checks passed" not in text and "Speed" not in text

    path = write(tmp_path, "m2.py", MUTANTS["float32_output"][1])
    assert not check("vector_add_naive", path).passed  # the public float16 and bfloat16 cases catch it (issue 22)
    text = capsys.readouterr().out
    assert "[FAIL] public case 3/4  a, b: float16 [1, 4096]: output dtype float32 but expected float16" in text
    assert "Public checks passed" not in text

    path = write(tmp_path, "m3.py", MUTANTS["partition_256"][1])
    check("vector_add_naive", path)
    text = capsys.readouterr().out
    assert "m3.py line" in text and "128" in text


def test_check_accepts_a_kernel_object(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("ref_naive", SOLUTIONS / "vector_add_naive.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert check("vector_add_naive", mod.vector_add_naive).passed
    assert "full speed points" in capsys.readouterr().out


def test_slow_kernel_gets_partial_or_no_speed_points(tmp_path):
    # (one tile per input no longer serves as the slow kernel: the hidden [128, 65536] fp32 case needs 256 KiB
    # per partition, more than SBUF holds, and fails as the compiler fails it)
    one_pair = write(tmp_path, "one.py", """
        @nki.jit
        def vector_add_stream(a, b):
            rows, cols = a.shape
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            x = nl.ndarray((rows, 2048), dtype=a.dtype, buffer=nl.sbuf)
            y = nl.ndarray((rows, 2048), dtype=a.dtype, buffer=nl.sbuf)
            for j in nl.sequential_range(cols // 2048):
                x[...] = nl.load(a[:, j * 2048:(j + 1) * 2048])
                y[...] = nl.load(b[:, j * 2048:(j + 1) * 2048])
                nl.store(out[:, j * 2048:(j + 1) * 2048], value=nl.add(x, y))
            return out
        """)
    r = grade_in_process("vector_add_stream", one_pair, 3)
    assert r.correctness == 2.0 and r.evaluation.ratio > 1.2 and r.speed < 2.0
    tiny = write(tmp_path, "tiny.py", """
        @nki.jit
        def vector_add_stream(a, b):
            chunk = 128
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for j in nl.affine_range(a.shape[1] // chunk):
                s = j * chunk
                nl.store(out[:, s:s + chunk], value=nl.add(nl.load(a[:, s:s + chunk]), nl.load(b[:, s:s + chunk])))
            return out
        """)
    r = grade_in_process("vector_add_stream", tiny, 3)
    assert r.correctness == 2.0 and r.evaluation.ratio > 2.0 and r.speed == 0.0


@pytest.mark.processes
def test_infinite_loop_times_out_with_zero(tmp_path):
    path = write(tmp_path, "loop.py", """
        @nki.jit
        def vector_add_naive(a, b):
            while True:
                pass
        """)
    start = time.monotonic()
    r = grade_report("vector_add_naive", path, seed=1, timeout=5, verbose=False)
    assert time.monotonic() - start < 30
    assert r.points == 0.0 and "timed out" in r.evaluation.problem


@pytest.mark.processes
def test_memory_hog_gets_a_memory_error_not_the_machine(tmp_path, capsys):
    # an 8 GiB HBM tensor, which this machine could allocate and fill: the grader's child process is capped,
    # so the kernel fails at its own line in a moment instead of filling memory (the batch behind it goes on)
    path = write(tmp_path, "hog.py", """
        @nki.jit
        def vector_add_naive(a, b):
            huge = nl.ndarray((1 << 15, 1 << 16), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(huge[0:a.shape[0], 0:a.shape[1]], value=nl.add(nl.load(a), nl.load(b)))
            return huge
        """)
    start = time.monotonic()
    r = grade_report("vector_add_naive", path, seed=1, verbose=False)
    assert time.monotonic() - start < 60
    assert r.points == 0.0
    verdict = r.evaluation.cases[0].verdict.message
    assert "MemoryError at hog.py line 9" in verdict and "at most 4096 MiB of memory" in verdict, verdict


@pytest.mark.processes
def test_an_output_never_written_is_reported_at_the_students_allocation(tmp_path, capsys):
    # the zero-trip loop: the error names the student's variable and line, not the grader's (it used to say
    # "NKIValueError at _child.py line 126: Output tensor `t3` is never written to")
    path = write(tmp_path, "empty.py", """
        @nki.jit
        def vector_add_naive(a, b):
            result = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range(a.shape[0] // 4096):
                nl.store(result[i], value=nl.load(a[i]))
            return result
        """)
    r = grade_report("vector_add_naive", path, seed=1, verbose=False)
    assert r.points == 0.0
    verdict = r.evaluation.cases[0].verdict.message
    line = 1 + [ln.strip() for ln in path.read_text().splitlines()].index(
        "result = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)")
    assert f"at empty.py line {line} " in verdict and "Output tensor `result` is never written to" in verdict, verdict
    assert "result = nl.ndarray(a.shape" in verdict, verdict


@pytest.mark.processes
def test_crash_and_import_error_score_zero(tmp_path, capsys):
    crash = write(tmp_path, "crash.py", """
        import os

        @nki.jit
        def vector_add_naive(a, b):
            os._exit(3)
        """)
    assert grade("vector_add_naive", crash, seed=1) == 0.0
    broken = tmp_path / "broken.py"
    broken.write_text("def vector_add_naive(a, b)\n    return a\n")
    assert grade("vector_add_naive", broken, seed=1) == 0.0
    out = capsys.readouterr()
    assert "did not import" in out.out and "SyntaxError" in out.out and out.err == ""


def test_monkeypatching_numpy_cannot_change_the_grade(tmp_path):
    path = write(tmp_path, "cheat.py", """
        import builtins
        import sys

        np.allclose = lambda *a, **k: True
        np.isclose = lambda a, b, **k: np.ones(np.shape(a), bool)
        np.array_equal = lambda *a, **k: True
        np.testing.assert_allclose = lambda *a, **k: None
        builtins.float = lambda *a: 3.0
        for m in list(sys.modules):
            if m.startswith("nkilab"):
                sys.modules[m].__dict__.update(grade=lambda *a, **k: 3.0)

        @nki.jit
        def vector_add_naive(a, b):
            return a
        """)
    r = grade_report("vector_add_naive", path, seed=5, verbose=False)
    assert r.points == 0.0 and r.correctness == 0.0


@pytest.mark.processes
def test_numpy_result_poked_into_the_output_scores_zero(tmp_path):
    """A kernel that stores something legal, then overwrites its output's values from NumPy, must not pass:
    NKI tensors expose no host-side values inside a kernel, on hardware or here."""
    path = write(tmp_path, "poke.py", """
        @nki.jit
        def vector_add_naive(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.load(a))
            out.data[...] = np.asarray(a.data) + np.asarray(b.data)
            return out
        """)
    r = grade_report("vector_add_naive", path, seed=2, verbose=False)
    assert r.points == 0.0
    assert all("has no attribute 'data'" in c.verdict.message for c in r.evaluation.cases)


@pytest.mark.processes
def test_stderr_noise_in_a_correct_kernel_does_not_cost_points(tmp_path, capsys):
    # (`sys` is refused by the grader's screen of kernel files, so the noise is warnings, which go to stderr)
    path = write(tmp_path, "noisy.py", """
        import warnings

        print("debug output")
        warnings.warn("a compiler-style warning")

        @nki.jit
        def vector_add_naive(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
            return out
        """)
    assert grade("vector_add_naive", path, seed=2) == 3.0
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- release pipeline


@pytest.mark.slow
def test_release_is_fresh_reproducible_and_leak_free(tmp_path):
    """``make release`` now writes exactly the committed assignments/ and solutions/ (both dialects), which hold no
    solution code."""
    built = build(tmp_path)
    assert tmp_path / "assignments" / f"{STAGE}.ipynb" in built
    for sub in ("assignments", "solutions"):
        fresh = sorted(p.relative_to(tmp_path / sub) for p in (tmp_path / sub).rglob("*") if p.is_file())
        assert fresh, sub
        for rel in fresh:
            committed = REPO / sub / rel
            assert committed.exists(), f"{sub}/{rel} missing: run make release"
            assert committed.read_bytes() == (tmp_path / sub / rel).read_bytes(), f"{sub}/{rel} stale: make release"
    # reproducible: this build, now, equals byte for byte the committed one, made earlier by another process (a
    # second build here proved nothing more and cost two nbgrader runs)
    assert scan_for_leaks(REPO / "assignments", reference_fingerprints()) == []


def test_leak_scan_catches_solution_code(tmp_path):
    prints = reference_fingerprints()
    assert prints, "no fingerprints extracted from the reference solutions"
    leaky = tmp_path / "assignments"
    leaky.mkdir()
    shutil.copy(REPO / "assignments" / f"{STAGE}.ipynb", leaky / "ok.ipynb")
    assert scan_for_leaks(leaky, prints) == []
    (leaky / "vector_add_stream.py").write_text((SOLUTIONS / "vector_add_stream.py").read_text())
    assert scan_for_leaks(leaky, prints)


@pytest.mark.processes
def test_nkilab_imports_from_anywhere(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import nkilab; print(nkilab.grade.__name__)"], cwd=tmp_path,
                          capture_output=True, text=True, env={k: v for k, v in os.environ.items()
                                                              if k != "PYTHONPATH"})
    assert proc.returncode == 0 and proc.stdout.strip() == "grade", proc.stderr
