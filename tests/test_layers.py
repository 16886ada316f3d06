"""The layering contracts (pyproject.toml, run by ``make lint``) hold, and they catch an import that breaks one:
mutant trees where the grader reaches into the simulator's core instead of ``nkisim.api``, or one of nkilab's
sub-packages reaches up past its place in the order a hand-in flows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes  # every test here starts a process (a command)

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
#: how many contracts pyproject.toml states
CONTRACTS = (REPO / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")


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
    assert f"Contracts: {CONTRACTS} kept, 0 broken." in proc.stdout


#: one mutant per contract: (file, the module it imports from a function, the broken import lint must name,
#: how many contracts break)
MUTANTS = [
    # the simulator reaching into the course also closes paths through the registry, which reads the target through
    # nkisim.api: from the course's facts up to the registry, from the simulator's core up to its api, from the
    # program's records up to its encoder, from every op module up to the op catalog and from a 0.6 view up to the
    # adapters above it
    ("nkisim/core/errors.py", "nkilab.course.questions", "nkisim.core.errors -> nkilab.course.questions", 6),
    ("autograder/nkilab/judge/compare.py", "nkisim.core.tensor", "nkilab.judge.compare -> nkisim.core.tensor", 1),
    # nkilab's sub-packages in the order a hand-in flows (and, within them, module by module): the registry reaching
    # up into grading breaks both; a stage module (in no module layer) only the package order; the pipe reaching up
    # into the process that reads it only the module order (the same package may import within itself)
    ("autograder/nkilab/course/questions.py", "nkilab.judge.grade", "nkilab.course.questions -> nkilab.judge.grade", 2),
    ("autograder/nkilab/isolate/runner.py", "nkilab.judge.results", "nkilab.isolate.runner -> nkilab.judge.results", 2),
    ("autograder/nkilab/course/stages/s01_vector_add.py", "nkilab.authoring.release",
     "nkilab.course.stages.s01_vector_add -> nkilab.authoring.release", 1),
    ("autograder/nkilab/isolate/_io.py", "nkilab.isolate.runner", "nkilab.isolate._io -> nkilab.isolate.runner", 1),
    # core -> runtime also closes a path from the program's records (which read core) back to its encoder
    ("nkisim/core/dtypes.py", "nkisim.runtime.kernel", "nkisim.core.dtypes -> nkisim.runtime.kernel", 2),
    # the ir <-> encode cycle the typed operand records removed (issue 20 scope 6) must not come back
    ("nkisim/program/ir.py", "nkisim.program.encode", "nkisim.program.ir -> nkisim.program.encode", 1),
    # the two nkisim cycles issue 32 removed: the registry importing the catalog, a view importing the binding
    ("nkisim/ops/registry.py", "nkisim.ops.catalog", "nkisim.ops.registry -> nkisim.ops.catalog", 1),
    ("nkisim/frontend/v06/adapters/tensor.py", "nkisim.frontend.v06.adapters.binding",
     "nkisim.frontend.v06.adapters.tensor -> nkisim.frontend.v06.adapters.binding", 1),
]


@pytest.mark.parametrize("file,module,named,broken", MUTANTS, ids=[m[2] for m in MUTANTS])
def test_an_import_against_the_layers_breaks_a_contract(tmp_path, file, module, named, broken):
    root = tree(tmp_path)
    with open(root / file, "a") as fh:
        fh.write(f"\n\ndef _peek():\n    import {module}\n    return {module}\n")
    proc = lint(root)
    assert proc.returncode != 0 and named in proc.stdout, proc.stdout[-2000:]
    assert f"Contracts: {CONTRACTS - broken} kept, {broken} broken." in proc.stdout
