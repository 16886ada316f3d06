"""Issue 29 scope 3, "full size": ``make bench NKILIB=<clone>`` runs the largest test shapes of each of nki-library's
test files and prints the slowest, each with the whole case's seconds, the simulator's own seconds and the cost
model's latency estimate.

In process: how a case's size is read from its id and which cases the pytest plugin keeps, how the simulator's
lines are matched to the cases, and the row printed from them.  In a process (the stand-in for AWS's CPU simulator
replaces ``nki`` for the process that imports it): ``nki.cpu_simulate`` logs each launch with the estimate
``nkisim.api`` gives for the same launch.  Marked slow: the row's run on the local mirror of nki-library (skipped
without one, like the other conformance tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "nkilib_support"))

import nkilib_sample  # noqa: E402
import nkilib_suite  # noqa: E402

MIRROR = os.environ.get("NKILAB_NKILIB_MIRROR", "/work/.mirror/aws-neuron+nki-library/repo")


@pytest.mark.parametrize(("case_id", "size"), [
    ("test_cumsum[64_1024_3_4_bfloat16]", 64 * 1024 * 3 * 4),  # the 16 of bfloat16 is a name, not a dimension
    ("test_cumsum[1_256_2_1_float32]", 256 * 2),
    ("test_x[batch_128-hidden_8192-fp8_e4m3]", 128 * 8192),
    ("test_no_parameters", 1),
])
def test_a_case_size_is_the_product_of_the_numbers_standing_alone_in_its_id(case_id: str, size: int) -> None:
    assert nkilib_sample.case_size(case_id) == size


def _items(names: list[str]) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=n) for n in names]


def _keep(names: list[str], per_file: int = 0, largest: int = 0) -> list[str]:
    """The names ``nkilib_sample`` keeps of a file's collected cases."""
    deselected: list = []
    options = {"--nkilib-per-file": per_file, "--nkilib-largest": largest}
    config = SimpleNamespace(getoption=options.__getitem__,
                             hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items)))
    items = _items(names)
    nkilib_sample.pytest_collection_modifyitems(config, items)
    assert sorted(i.name for i in items + deselected) == sorted(names)
    return [i.name for i in items]


def test_the_plugin_keeps_the_largest_shapes_in_collection_order() -> None:
    names = ["t[1_256_float32]", "t[128_8192_bfloat16]", "t[boundary_4096-8192]", "t[64_1024_float32]",
             "t[128_8192_float32]", "t[2_2]"]
    assert _keep(names, largest=2) == ["t[128_8192_bfloat16]", "t[128_8192_float32]"]  # a boundary case comes last
    assert _keep(names, largest=10) == names
    assert _keep(names, per_file=3) == ["t[1_256_float32]", "t[boundary_4096-8192]", "t[128_8192_float32]"]


def test_simulator_lines_are_added_to_the_cases_they_ran_in(tmp_path: Path) -> None:
    log = tmp_path / "sim.jsonl"
    lines = [
        {"case": "test/x.py::TestX::test_a[128_8192] (call)", "sim_s": 1.5, "estimate_us": 10.0, "estimate_s": 0.1,
         "target": "trn2"},
        {"case": "test/x.py::TestX::test_a[128_8192] (call)", "sim_s": 0.5, "estimate_us": 2.5, "estimate_s": 0.1,
         "target": "trn2"},
        {"case": "test/x.py::TestX::test_b[1_256] (call)", "sim_s": 0.25},
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in lines))
    cases = [nkilib_suite.Case("test/x.py", "test_a[128_8192]", "passed", 3.0),
             nkilib_suite.Case("test/x.py", "test_b[1_256]", "failed", 1.0, "boom"),
             nkilib_suite.Case("test/x.py", "test_c[2]", "skipped", 0.0, "why")]
    nkilib_suite.add_simulation_times(cases, str(log))
    assert (cases[0].sim_seconds, cases[0].latency_us, cases[0].target) == (2.0, 12.5, "trn2")
    assert (cases[1].sim_seconds, cases[1].latency_us) == (0.25, None)
    assert (cases[2].sim_seconds, cases[2].latency_us) == (None, None)


def test_the_full_size_row_names_the_slowest_cases_against_the_target(capsys: pytest.CaptureFixture[str]) -> None:
    result = nkilib_suite.NkilibResult("nki-library main at d2ad3a5", ["sampled: the 1 case(s) of each test file "
                                                                      "with the largest shapes"])
    result.cases = [
        nkilib_suite.Case("test/integration/nkilib/core/a.py", "test_a[4096]", "passed", 12.5, "", 11.0, 321.5,
                          "trn2"),
        nkilib_suite.Case("test/integration/nkilib/core/b.py", "test_b[128]", "failed", 0.5, "values differ"),
        nkilib_suite.Case("test/integration/nkilib/core/c.py", "test_c[8]", "skipped", 0.0, "collectives"),
        nkilib_suite.Case("test/integration/nkilib/core/d.py", "test_d[1024]", "passed", 4.0, "", 3.0, 20.0, "trn2"),
    ]
    nkilib_suite.full_size_report(result, show=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("(f) nki-library at full size, nki-library main at d2ad3a5: 1 of 3 cases passed within 10 s on "
                      "one core (2 passed: values equal to the test's reference at its tolerance; 1 failed; 1 skipped)")
    rows = [ln.split() for ln in out if "::" in ln]
    assert rows == [["12.50", "11.00", "321.5", "MISS", "passed", "core/a.py::test_a[4096]"],
                    ["4.00", "3.00", "20.0", "PASS", "passed", "core/d.py::test_d[1024]"]]
    nkilib_suite.full_size_report(result, show=3)
    failed = [ln for ln in capsys.readouterr().out.splitlines() if "core/b.py" in ln]
    assert failed[0].split()[:5] == ["0.50", "-", "-", "-", "failed"]  # a failure has no verdict against the time
    assert "an estimate for trn2" in out[-1]


@pytest.mark.processes
def test_cpu_simulate_logs_each_launch_with_its_estimate(tmp_path: Path) -> None:
    log = tmp_path / "sim.jsonl"
    script = textwrap.dedent("""
        import numpy as np
        import nki_cpu_simulator
        from nki_cpu_simulator import nki
        import nkisim.api as api
        nl, nisa = nki.language, nki.isa

        def double(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
            nisa.dma_copy(dst=out, src=t)
            return out

        x = np.arange(512, dtype=np.float32).reshape(128, 4)
        got = nki.cpu_simulate(nki.jit(double))(x=x)
        assert np.array_equal(got, 2 * x)
        print(api.launch(nki.jit(double), [x]).latency_us())
    """)
    env = dict(os.environ, NKILIB_SIM_LOG=str(log), PYTEST_CURRENT_TEST="test/x.py::test_double (call)",
               PYTHONPATH=os.pathsep.join([str(ROOT / "bench" / "nkilib_support"), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    entry, = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["case"] == "test/x.py::test_double (call)"
    assert entry["sim_s"] > 0
    assert entry["estimate_us"] == pytest.approx(float(proc.stdout.split()[-1]))
    assert entry["target"].startswith("trn2")


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.skipif(not os.path.isdir(MIRROR), reason="no local mirror of nki-library")
def test_the_largest_cumsum_shape_runs_with_its_simulator_time_and_estimate() -> None:
    result = nkilib_suite.run(MIRROR, "main", only=["core/cumsum/test_cumsum.py"], largest=1, progress=False)
    case, = result.cases
    assert case.outcome == "passed", case.message
    assert nkilib_sample.case_size(case.name) >= 128 * 2048 * 2  # at least its largest fast shape, 128_2048_2_1
    # the shape test_nkilib_conformance leaves out of its run of the whole file is run here
    assert case.name.endswith("[2048-6144-3-10-float32]"), case.name
    assert case.sim_seconds is not None and 0 < case.sim_seconds <= case.seconds
    assert case.latency_us is not None and case.latency_us > 0
