"""``python -m nkisim script.py`` and the ``neuronxcc`` import routing, each in a fresh interpreter.

Students bring scripts written for the real compiler; they must run unmodified.  Import routing is
checked in subprocesses because it depends on interpreter start-up (.pth hook, sys.meta_path,
PYTHONPATH, NKI_SIMULATOR) that an in-process test would already have settled.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

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
