"""mypy (``make lint``) checks the packages whose records are typed (issue 32 scope 2): the program a grader reads
back, the cost model (its trace records, ``Instruction.extra``'s ``Extra``, and the target's ``Params``), and nkilab.  A
package dropped from ``[tool.mypy] files`` would let a misspelt field of those records through unnoticed."""

from __future__ import annotations

from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]


def test_mypy_checks_the_typed_packages_strictly():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert {"nkisim/program", "nkisim/cost", "autograder/nkilab"} <= set(cfg["files"])
    assert cfg["disallow_untyped_defs"] and cfg["check_untyped_defs"]
    assert all((REPO / f).is_dir() for f in cfg["files"])
