"""Every nkilab module the repository names exists: imports, ``python -m`` entry points, module names in strings.

nkilab moved into sub-packages (issue 32 scope 3) while other branches went on importing ``nkilab.runner`` or
``from nkilab import manifest``; a merge that brings one back fails here, by file and line, before a test that
happens to import it does (or, for a string such as a subprocess's ``-m nkilab.X``, before a class is graded).
Read from the sources with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AUTOGRADER = REPO / "autograder"

#: what ``from nkilab import X`` may name that is not a module: the package's lazy exports (nkilab/__init__.py)
EXPORTS = {"QUESTIONS", "CheckResult", "GradeReport", "check", "figures", "grade", "grade_report", "latency_label",
           "latency_us", "load_kernel", "peak"}
DOTTED = re.compile(r"nkilab(\.[A-Za-z_]\w*)+")
#: a string that names a file, not a module (the example class's fake ``nkilab.py``)
FILE_SUFFIXES = (".py", ".toml", ".json", ".ipynb")


def is_module(name: str) -> bool:
    path = AUTOGRADER.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def names_a_module(dotted: str) -> bool:
    """``dotted`` is a module, or a module's attribute (``nkilab.autograde.nbgrader_plugins.RestoreSubmission``)."""
    parts = dotted.split(".")
    return is_module(dotted) or (len(parts) > 2 and is_module(".".join(parts[:-1])))


def unresolved(path: Path, source: str) -> list[str]:
    rel = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    out = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "nkilab":
            module = node.module or ""
            if not is_module(module):
                out.append(f"{rel}:{node.lineno}: from {module} import ...")
            elif module == "nkilab":
                out += [f"{rel}:{node.lineno}: from nkilab import {a.name}" for a in node.names
                        if a.name not in EXPORTS and not is_module(f"nkilab.{a.name}")]
        elif isinstance(node, ast.Import):
            out += [f"{rel}:{node.lineno}: import {a.name}" for a in node.names
                    if a.name.split(".")[0] == "nkilab" and not is_module(a.name)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and DOTTED.fullmatch(node.value) \
                and not node.value.endswith(FILE_SUFFIXES) and not names_a_module(node.value) \
                and node.value.split(".")[1] not in EXPORTS:
            out.append(f"{rel}:{node.lineno}: {node.value!r}")
    return out


def python_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / f for f in listed.stdout.split() if (REPO / f).exists()]


def test_every_nkilab_import_and_module_name_resolves():
    found = []
    for path in python_files():
        try:
            source = path.read_text()
            found += unresolved(path, source)
        except (SyntaxError, UnicodeDecodeError):  # the example class's hostile files, on purpose
            continue
    assert found == []


def test_every_python_m_entry_point_of_the_makefile_exists():
    entry = re.findall(r"-m (nkilab[\w.]*)", (REPO / "Makefile").read_text())
    assert entry and [e for e in entry if not is_module(e)] == []


def test_an_old_path_is_found(tmp_path):
    old = tmp_path / "old.py"
    text = ("from nkilab import manifest, grade\nimport nkilab.runner\nfrom nkilab.questions import QUESTIONS\n"
            "argv = ['-m', 'nkilab.classgrade']\nfrom nkilab.course import manifest\n")
    assert unresolved(old, text) == [f"{old}:1: from nkilab import manifest", f"{old}:2: import nkilab.runner",
                                     f"{old}:3: from nkilab.questions import ...", f"{old}:4: 'nkilab.classgrade'"]
