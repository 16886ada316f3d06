"""``python -m nkisim script.py`` and the ``neuronxcc`` import routing, each in a fresh interpreter.

Students bring scripts written for the real compiler; they must run unmodified.  Import routing is
checked in subprocesses because it depends on interpreter start-up (.pth hook, sys.meta_path,
PYTHONPATH, NKI_SIMULATOR) that an in-process test would already have settled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes  # every test here starts a process (a command, a sandbox)
ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def run_py(args: list[str], *, env_extra: dict[str, str] | None = None, pythonpath: list[str] | None = None,
           cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``sys.executable`` with a clean NKI environment (no inherited NKI_SIMULATOR)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NKI_SIMULATOR", "PYTHONPATH")}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=str(cwd or ROOT))


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


# --- unmodified third-party scripts -----------------------------------------------------------
@pytest.mark.parametrize("script, args, marker", [
    ("cs149_vector_add.py", ["--size", "512"], "CS149 VECTOR ADD OK size=512"),
    ("tutorial_add.py", [], "TUTORIAL OK"),
    ("spmd_add.py", [], "SPMD OK grid=[2, 2]"),
])
def test_script_runs_unmodified(script: str, args: list[str], marker: str, tmp_path: Path) -> None:
    # run from an unrelated directory so nothing relies on the repo being the working directory
    out = ok(run_py(["-m", "nkisim", str(SCRIPTS / script), *args], cwd=tmp_path))
    assert marker in out


def test_script_sees_its_own_argv_and_dir(tmp_path: Path) -> None:
    helper = tmp_path / "helper_mod.py"
    helper.write_text("VALUE = 7\n")
    script = tmp_path / "argv_script.py"
    script.write_text(textwrap.dedent("""
        import sys
        import helper_mod
        import neuronxcc.nki as nki
        assert __name__ == "__main__"
        print("ARGV", sys.argv[1:], helper_mod.VALUE, getattr(nki, "SIMULATED", False))
    """))
    out = ok(run_py(["-m", "nkisim", str(script), "--flag", "x"]))
    assert "ARGV ['--flag', 'x'] 7 True" in out


def test_help_exits_cleanly() -> None:
    assert "nkisim" in ok(run_py(["-m", "nkisim", "--help"]))


# --- import routing --------------------------------------------------------------------------
def test_install_then_import_in_fresh_process() -> None:
    code = ("import nkisim; assert nkisim.install(); import neuronxcc.nki as nki; "
            "import neuronxcc.nki.language as nl; print('SIM', nki.SIMULATED, nl.__name__)")
    assert "SIM True nkisim.frontend.language" in ok(run_py(["-c", code]))


def test_pth_hook_makes_plain_import_work() -> None:
    hook = Path(sysconfig.get_paths()["purelib"]) / "nkisim_neuronxcc_hook.pth"
    if not hook.exists():
        pytest.skip("the .pth hook is not installed in this interpreter (make setup installs it)")
    code = "import neuronxcc.nki.language as nl; print('LANG', nl.__name__)"
    assert "LANG nkisim.frontend.language" in ok(run_py(["-c", code]))


def _fake_package(root: Path, init_source: str) -> Path:
    pkg = root / "neuronxcc"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(init_source)
    return root


def test_real_neuronxcc_is_not_shadowed(tmp_path: Path) -> None:
    root = _fake_package(tmp_path, "REAL = True\n")
    code = ("import nkisim; print('INSTALLED', nkisim.install()); import neuronxcc; "
            "print('REAL', getattr(neuronxcc, 'REAL', False))")
    out = ok(run_py(["-c", code], pythonpath=[str(root)]))
    assert "INSTALLED False" in out and "REAL True" in out
    # with only the .pth hook (finder at the end of sys.meta_path) the real package also wins
    out = ok(run_py(["-c", "import neuronxcc; print('REAL', getattr(neuronxcc, 'REAL', False))"],
                    pythonpath=[str(root)]))
    assert "REAL True" in out


def test_nki_simulator_env_forces_the_simulator(tmp_path: Path) -> None:
    root = _fake_package(tmp_path, "REAL = True\n")
    code = ("import nkisim; nkisim.install(); import neuronxcc, neuronxcc.nki as nki; "
            "print('REAL', getattr(neuronxcc, 'REAL', False), 'SIM', nki.SIMULATED)")
    out = ok(run_py(["-c", code], pythonpath=[str(root)], env_extra={"NKI_SIMULATOR": "1"}))
    assert "REAL False SIM True" in out


def test_pypi_placeholder_is_replaced(tmp_path: Path) -> None:
    placeholder = ('raise ImportError("WRONG PACKAGE: this is a placeholder; install neuronx-cc from the '
                   'Neuron repository")\n')
    root = _fake_package(tmp_path, placeholder)
    code = ("import nkisim; print('INSTALLED', nkisim.install()); import neuronxcc.nki.language as nl; "
            "import neuronxcc.nki as nki; print('SIM', nki.SIMULATED, nl.__name__)")
    out = ok(run_py(["-c", code], pythonpath=[str(root)]))
    assert "INSTALLED True" in out and "SIM True nkisim.frontend.language" in out


# --- options: target, benchmark, profile, output; tracebacks ------------------------------------------
LAUNCHES = '''
import sys
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


a = np.ones((128, 512), np.float32)
for _ in range(2):
    add_kernel(a, a)
print("SCRIPT OUT", sys.argv[1:])
'''


def test_help_documents_every_option() -> None:
    out = ok(run_py(["-m", "nkisim", "--help"]))
    from nkisim.api import targets

    assert {"trn1", "trn2"} <= set(targets())
    for option in ("--target", "{" + ",".join(targets()) + "}", "--benchmark", "--profile DIR", "--json FILE", "--full-traceback",
                   "--install-hook", "nki.benchmark", "nki.profile", "save_trace_name=NAME",
                   "NEURON_PLATFORM_TARGET_OVERRIDE", "NKI_SIMULATOR", "estimate"):
        assert option in out, option
    # no script: the help, and a usage error's exit status
    bare = run_py(["-m", "nkisim"])
    assert bare.returncode == 2 and "usage: python -m nkisim" in bare.stdout


def test_benchmark_profile_and_json_report_every_launch(tmp_path: Path) -> None:
    script = tmp_path / "two_launches.py"
    script.write_text(LAUNCHES)
    prof_dir, out_json = tmp_path / "prof", tmp_path / "launches.json"
    proc = run_py(["-m", "nkisim", "--target", "trn1", "--benchmark", "--profile", str(prof_dir), "--json",
                   str(out_json), str(script), "--flag"], cwd=tmp_path)
    stdout = ok(proc)
    assert "SCRIPT OUT ['--flag']" in stdout and "nkisim:" not in stdout  # the script's output is its own
    assert proc.stderr.count("nkisim: add_kernel launch") == 2 and "on trn1" in proc.stderr
    records = json.loads(out_json.read_text())
    assert [(r["kernel"], r["launch"], r["target"]) for r in records] == [("add_kernel", 1, "trn1"),
                                                                         ("add_kernel", 2, "trn1")]
    # the numbers are the cost model's for that launch on trn1 (independent of the CLI: computed here again)
    import neuronxcc.nki.typing as nt

    from nkisim.api import profile_kernel

    scope: dict = {}
    exec(compile(LAUNCHES.split("a = np.ones")[0], "k.py", "exec"), scope)
    expected = profile_kernel(scope["add_kernel"], nt.tensor[[128, 512], "float32"],
                              nt.tensor[[128, 512], "float32"], target="trn1").estimate
    assert records[0]["estimated_latency_us"] == pytest.approx(expected.total_us, abs=1e-3)
    assert records[0]["dma_transfers"] == expected.dma_count == 3
    assert "estimate" in records[0]["label"]
    assert {p.name for p in prof_dir.iterdir()} == {f"add_kernel_{n}{s}" for n in (1, 2) for s in
                                                   (".json", "_summary.json", "_lines.txt", "_timeline.png")}
    summary = json.loads((prof_dir / "add_kernel_1_summary.json").read_text())
    assert summary["target"] == "trn1" and summary["total_time_us"] == pytest.approx(expected.total_us, abs=1e-3)


def test_target_option_sets_the_launch_target(tmp_path: Path) -> None:
    script = tmp_path / "which.py"
    script.write_text(LAUNCHES + "print('TARGET', add_kernel.last_launch.ctx.target.name)\n")
    assert "TARGET trn1" in ok(run_py(["-m", "nkisim", "--target", "trn1", str(script)]))
    assert "TARGET trn2" in ok(run_py(["-m", "nkisim", str(script)]))
    bad = run_py(["-m", "nkisim", "--target", "trn9", str(script)])
    assert bad.returncode == 2 and "invalid choice: 'trn9'" in bad.stderr


ERRORS = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def bad_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(out, value={value})
    return out


bad_kernel(np.ones((128, 4), np.float32))
'''


@pytest.mark.parametrize("value, last_line", [
    ("np.exp(x)", "TypeError: np.exp cannot compute on an NKI tile"),  # not an NKI error: trimmed all the same
    ("nl.add(x, nl.ndarray((256, 4), dtype=a.dtype, buffer=nl.sbuf))", "exceed architecture limitation of 128"),
])
def test_traceback_starts_at_the_users_script(tmp_path: Path, value: str, last_line: str) -> None:
    script = tmp_path / "bad.py"
    script.write_text(ERRORS.replace("{value}", value))
    proc = run_py(["-m", "nkisim", str(script)])
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    files = [line.split('"')[1] for line in lines if line.startswith('  File "')]
    assert files and all(f == str(script) for f in files), proc.stderr  # no runpy, nkisim or <frozen> frames
    assert "line 15, in <module>" in lines[1] and last_line in lines[-1]
    full = run_py(["-m", "nkisim", "--full-traceback", str(script)])
    assert "runpy" in full.stderr and "nkisim" in full.stderr  # the debugging view keeps them


def test_script_exit_status_passes_through(tmp_path: Path) -> None:
    script = tmp_path / "exits.py"
    script.write_text("import sys\nsys.exit(3)\n")
    assert run_py(["-m", "nkisim", str(script)]).returncode == 3
