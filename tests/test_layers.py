"""The layering contracts (pyproject.toml, run by ``make lint``) hold, and they catch an import that breaks one:
a mutant tree where the grader reaches into the simulator's core instead of ``nkisim.api``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


#: one mutant per contract: (file, the module it imports from a function, the broken import lint must name)
MUTANTS = [
    ("nkisim/core/errors.py", "nkilab.questions", "nkisim.core.errors -> nkilab.questions"),
    ("autograder/nkilab/compare.py", "nkisim.core.tensor", "nkilab.compare -> nkisim.core.tensor"),
    ("autograder/nkilab/questions.py", "nkilab.grade", "nkilab.questions -> nkilab.grade"),
    ("nkisim/core/dtypes.py", "nkisim.runtime.kernel", "nkisim.core.dtypes -> nkisim.runtime.kernel"),
]


@pytest.mark.parametrize("file,module,named", MUTANTS, ids=[m[2] for m in MUTANTS])
def test_an_import_against_the_layers_breaks_a_contract(tmp_path, file, module, named):
    root = tree(tmp_path)
    with open(root / file, "a") as fh:
        fh.write(f"\n\ndef _peek():\n    import {module}\n    return {module}\n")
    proc = lint(root)
    assert proc.returncode != 0 and named in proc.stdout, proc.stdout[-2000:]
    assert "Contracts: 3 kept, 1 broken." in proc.stdout
