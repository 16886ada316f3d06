"""nkilab's modules and packages stay a size a reader can hold: no module past about 500 lines, no package past a dozen
modules (a bigger one gets sub-packages), as the developers' guide asks.  Counted on the files on disk."""

from __future__ import annotations

from pathlib import Path

NKILAB = Path(__file__).resolve().parents[1] / "autograder" / "nkilab"

#: "about 500 lines": a module this long is split by what it holds (runner.py's reading of the child's messages
#: became replies.py; classgrade.py's set-up of a run, at 520 lines, became class_course.py)
MAX_LINES = 500
MAX_MODULES = 12


def too_long(root: Path = NKILAB) -> list[str]:
    return sorted(f"{p.relative_to(root)}: {n} lines" for p in root.rglob("*.py")
                  if "__pycache__" not in p.parts and (n := len(p.read_text().splitlines())) > MAX_LINES)


def too_many(root: Path = NKILAB) -> list[str]:
    out = []
    for package in [root, *(p.parent for p in root.rglob("__init__.py"))]:
        modules = [p for p in package.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES:
            out.append(f"{package.relative_to(root.parent)}: {len(modules)} modules")
    return sorted(set(out))


def test_no_module_is_past_about_500_lines():
    assert too_long() == []


def test_no_package_holds_more_than_a_dozen_modules():
    assert too_many() == []


def test_a_long_module_and_a_crowded_package_are_found(tmp_path):
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    for i in range(MAX_MODULES):
        (tmp_path / f"m{i}.py").write_text("")
    assert too_long(tmp_path) == [f"long.py: {MAX_LINES + 1} lines"]
    assert too_many(tmp_path) == [f"{tmp_path.name}: {MAX_MODULES + 1} modules"]
