"""The layering contracts (pyproject.toml, run by ``make lint``) hold, and they catch an import that breaks one:
a mutant tree where the grader reaches into the simulator's core instead of ``nkisim.api``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{root / 'autograder'}")
    return subprocess.run([str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "nkisim", root / "nkisim", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "autograder" / "nkilab", root / "autograder" / "nkilab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root)
    return root


def test_the_contracts_hold(tmp_path):
    proc = lint(tree(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Contracts: 4 kept, 0 broken." in proc.stdout


def test_the_grader_reaching_into_the_simulator_breaks_a_contract(tmp_path):
    root = tree(tmp_path)
    with open(root / "autograder" / "nkilab" / "compare.py", "a") as fh:
        fh.write("\n\ndef _peek():\n    from nkisim.core.tensor import Tensor\n    return Tensor\n")
    proc = lint(root)
    assert proc.returncode != 0
    assert "the course reaches the simulator only through nkisim.api" in proc.stdout
    assert "nkilab.compare -> nkisim.core.tensor" in proc.stdout


def test_an_upward_import_in_the_simulator_breaks_its_layers(tmp_path):
    root = tree(tmp_path)
    with open(root / "nkisim" / "core" / "dtypes.py", "a") as fh:
        fh.write("\n\ndef _peek():\n    from nkisim.runtime import kernel\n    return kernel\n")
    proc = lint(root)
    assert proc.returncode != 0 and "nkisim.core.dtypes -> nkisim.runtime.kernel" in proc.stdout
