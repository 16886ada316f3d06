"""``import nki`` resolution and ``python -m nkisim`` for NKI 0.6 scripts, each in a fresh interpreter.

nkisim provides ``nki`` wherever AWS's package is absent or only PyPI's placeholder is installed (its import
raises "WRONG PACKAGE"); a real ``nki`` is never shadowed unless ``NKISIM_FORCE=1`` asks for nkisim (or the user
runs ``python -m nkisim``, which is that request).  ``NKI_SIMULATOR=1`` means AWS's own simulator in NKI 0.6,
so it does not route a real ``nki`` to nkisim.  Resolution depends on interpreter start-up (the .pth hook,
``sys.meta_path``, ``PYTHONPATH``), so every case runs in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes  # every test here starts a process (a command)

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = 'raise ImportError("WRONG PACKAGE. This name is reserved; install the real package elsewhere")\n'


def run_py(args: list[str], *, env_extra: dict[str, str] | None = None, pythonpath: list[str] | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NKI_SIMULATOR", "NKISIM_FORCE", "PYTHONPATH")}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120,
                          cwd=str(cwd or ROOT))


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def fake_nki(root: Path, init_source: str) -> Path:
    pkg = root / "nki"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(init_source)
    (pkg / "language.py").write_text("REAL_LANGUAGE = True\n")
    return root


WHICH = ("import nki, nki.language as nl; "
         "print('WHICH', 'sim' if getattr(nki, 'SIMULATED', False) else 'real', nl.__name__)")


def hook_installed() -> bool:
    return (Path(sysconfig.get_paths()["purelib"]) / "nkisim_neuronxcc_hook.pth").exists()


def test_install_gives_nki_and_every_submodule():
    code = ("import nkisim; nkisim.install(); import nki, nki.language, nki.isa, nki.isa.constants, nki.typing, "
            "nki.collectives; from nki.isa.constants import dge_mode; print('SIM', nki.SIMULATED, "
            "nkisim.provides_nki(), nki.isa.__name__, dge_mode.hwdge.value)")
    assert "SIM True True nkisim.frontend.v06.isa 2" in ok(run_py(["-c", code]))


def test_the_pth_hook_makes_a_plain_import_nki_work():
    if not hook_installed():
        pytest.skip("the .pth hook is not installed in this interpreter (make setup installs it)")
    assert "WHICH sim nkisim.frontend.v06.language" in ok(run_py(["-c", WHICH]))


def test_pypis_placeholder_is_replaced(tmp_path: Path):
    root = fake_nki(tmp_path, PLACEHOLDER)
    out = ok(run_py(["-c", "import nkisim; nkisim.install(); " + WHICH], pythonpath=[str(root)]))
    assert "WHICH sim nkisim.frontend.v06.language" in out
    if hook_installed():  # the hook alone: the placeholder on the path does not win either
        assert "WHICH sim" in ok(run_py(["-c", WHICH], pythonpath=[str(root)]))


def test_a_real_nki_is_never_shadowed(tmp_path: Path):
    root = fake_nki(tmp_path, "REAL = True\n")
    code = "import nkisim; nkisim.install(); print('PROVIDES', nkisim.provides_nki()); " + WHICH
    out = ok(run_py(["-c", code], pythonpath=[str(root)]))
    assert "PROVIDES False" in out and "WHICH real nki.language" in out
    # NKI_SIMULATOR=1 is AWS's simulator switch in NKI 0.6: it leaves the real package in charge
    out = ok(run_py(["-c", code], pythonpath=[str(root)], env_extra={"NKI_SIMULATOR": "1"}))
    assert "WHICH real nki.language" in out
    if hook_installed():
        assert "WHICH real" in ok(run_py(["-c", WHICH], pythonpath=[str(root)]))


def test_nkisim_force_shadows_a_real_nki(tmp_path: Path):
    root = fake_nki(tmp_path, "REAL = True\n")
    out = ok(run_py(["-c", "import nkisim; nkisim.install(); " + WHICH], pythonpath=[str(root)],
                    env_extra={"NKISIM_FORCE": "1"}))
    assert "WHICH sim nkisim.frontend.v06.language" in out


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import nki
    import nki.isa as nisa
    import nki.language as nl

    @nki.jit
    def scale(x, s):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(s))
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    y = nki.simulate(scale)(x, 3)
    assert np.array_equal(y, x * 3)
    print("SCRIPT OK", sys.argv[1:])
""")


def test_python_m_nkisim_runs_a_06_script_with_latency_and_profile(tmp_path: Path):
    script = tmp_path / "scale06.py"
    script.write_text(SCRIPT)
    out = ok(run_py(["-m", "nkisim", str(script), "--n", "1"], cwd=tmp_path))
    assert "SCRIPT OK ['--n', '1']" in out
    prof = tmp_path / "prof"
    proc = run_py(["-m", "nkisim", "--latency", "--profile", str(prof), str(script)], cwd=tmp_path)
    assert "SCRIPT OK" in ok(proc)
    assert "nkisim: scale launch 1: estimated " in proc.stderr and "us on trn2 (cost-model estimate" in proc.stderr
    assert (prof / "scale_1.json").stat().st_size > 0
    assert "line" in (prof / "scale_1_lines.txt").read_text().lower()
    # a target no published figure has checked says so beside every estimate
    proc = run_py(["-m", "nkisim", "--target", "trn3", "--latency", str(script)], cwd=tmp_path)
    assert "SCRIPT OK" in ok(proc) and "us on trn3 (uncalibrated) (cost-model estimate" in proc.stderr, proc.stderr


def test_python_m_nkisim_runs_over_a_real_nki_as_asked(tmp_path: Path):
    """``python -m nkisim`` is the explicit request to simulate: it provides ``nki`` even where a real one is."""
    root = fake_nki(tmp_path / "site", "REAL = True\n")
    script = tmp_path / "scale06.py"
    script.write_text(SCRIPT)
    assert "SCRIPT OK" in ok(run_py(["-m", "nkisim", str(script)], pythonpath=[str(root)], cwd=tmp_path))
