"""autograder/README.md walks a hand-in from notebook to grade through every module of nkilab, in the order of the
sub-packages it flows through.

A module the walk leaves out is one a reader cannot place (the README once omitted ``evaluate.py``, where the verdicts
are decided); a package walked out of order hides the flow the layout shows.  Read from the files on disk, so a module
added to nkilab without a line in the walk fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NKILAB = REPO / "autograder" / "nkilab"
README = REPO / "autograder" / "README.md"

#: the order a hand-in flows through nkilab's sub-packages (the import order is pyproject.toml's contract)
FLOW = ["course", "authoring", "intake", "autograde", "judge", "isolate", "kernels", "batch", "lms"]


def walk(text: str) -> dict[str, str]:
    """The walk's sections (``### N. `nkilab/<package>/`: ...``) by package, in the README's order."""
    body = text.split("## A hand-in, from notebook to grade", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### \d+\. `nkilab/(\w+)/`.*$", body, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def unnamed(text: str) -> list[str]:
    """Modules of nkilab (a stage module counts as its folder, ``course/stages/``) no section of the walk names:
    by path, or by file name in its own package's section."""
    sections = walk(text)
    missing = []
    for path in sorted(NKILAB.rglob("*.py")):
        rel = path.relative_to(NKILAB)
        if path.name == "__init__.py" or "__pycache__" in rel.parts:
            continue
        if rel.parts[:2] == ("course", "stages"):
            named = "nkilab/course/stages/" in text
        else:
            section = sections.get(rel.parts[0], "") if len(rel.parts) == 2 else ""
            named = f"nkilab/{rel.as_posix()}" in section or f"`{rel.name}`" in section
        if not named:
            missing.append(rel.as_posix())
    return missing


def test_the_walk_follows_the_flow_through_every_package():
    packages = sorted(p.name for p in NKILAB.iterdir() if (p / "__init__.py").exists())
    assert sorted(FLOW) == packages  # a new sub-package needs its place in the flow
    assert list(walk(README.read_text())) == FLOW


def test_every_module_is_named_in_the_walk():
    assert unnamed(README.read_text()) == []


def test_a_module_left_out_of_the_walk_is_found():
    text = README.read_text()
    without = "\n".join(line for line in text.splitlines() if "`nkilab/judge/evaluate.py`" not in line)
    assert unnamed(without) == ["judge/evaluate.py"]
