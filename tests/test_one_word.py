"""One word per concept in the grader's identifiers.

Grading a hand-in that nbgrader discarded, cell by cell outside Jupyter, is *salvaging* it (``nkilab.batch.salvage``,
``handin_audit.salvage_submission``, "salvaged" in the logs and the table); it was also called *rescue* (the module
that decided it), which made a reader look for two mechanisms.  This reads every identifier of the Python the grader
and its tests are made of -- module and file names, definitions, arguments, names, attributes, imports -- split at
underscores and case changes, and fails on a word retired in favour of another.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the example class is students' code (some of it does not even parse, on purpose): not the grader's words
ROOTS = [REPO / "autograder" / "nkilab", REPO / "tests", REPO / "bench", REPO / "docs" / "_ext"]

#: retired word -> the word for its concept
RETIRED = {"rescue": "salvage", "rescued": "salvaged", "rescues": "salvages", "rescuing": "salvaging"}


def words(identifier: str) -> list[str]:
    return [w.lower() for part in identifier.split("_") for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", part)]


def identifiers(path: Path) -> set[str]:
    """Every identifier ``path`` defines or uses, and the names of the file and its folders."""
    out = set(path.relative_to(REPO).with_suffix("").parts)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.update((node.name or "").split("."))
            if node.asname:
                out.add(node.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.update(node.module.split("."))
    return out


def retired_words(paths: list[Path]) -> list[str]:
    return sorted(f"{p.relative_to(REPO)}: {name} (say {RETIRED[w]})"
                  for p in paths for name in identifiers(p) for w in words(name) if w in RETIRED)


def sources() -> list[Path]:
    return sorted(p for root in ROOTS for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def test_words_split_as_a_reader_reads_them():
    assert words("salvage_submission") == ["salvage", "submission"]
    assert words("RescueNotes") == ["rescue", "notes"] and words("HTTPRescue2") == ["http", "rescue", "2"]


def test_a_retired_word_in_an_identifier_is_found(tmp_path):
    mutant = REPO / "tests" / "_mutant_one_word.py"  # under REPO, so it is named as the others are
    try:
        mutant.write_text("def rescue_submission(rescued_cells):\n    return rescued_cells\n")
        found = retired_words([mutant])
    finally:
        mutant.unlink()
    assert found == ["tests/_mutant_one_word.py: rescue_submission (say salvage)",
                     "tests/_mutant_one_word.py: rescued_cells (say salvaged)"]


def test_no_retired_word_in_the_graders_identifiers():
    assert retired_words(sources()) == []
