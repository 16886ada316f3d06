"""The bundled example class: its submissions are built at grading time from the *current* released notebooks.

``autograder/example_class/submissions.json`` says, per student and stage, how the student's notebook differs
from ``assignments/<stage>.ipynb``: which answer goes in each answer cell (the lesson's reference answer by
default, a file from ``kernels/`` or ``answers/``, or the untouched stub) and what else they did to the notebook
(cells added, copied, edited or deleted, metadata stripped, a new file name, broken JSON, extra files).
Building from the current release rather than committing notebooks means the class can never go stale when a
lesson changes; a recipe that no longer fits (a cell id that vanished) fails loudly instead.
"""

from __future__ import annotations

import copy
import csv
import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from nkilab.authoring.release import REPO, assignments_dir, load_source
from nkilab.course import manifest
from nkilab.intake.sanitize import grade_id, is_answer
from nkisim.api import Dialect

CLASS_DIR = REPO / "autograder" / "example_class"
MARKER_LINES = ("BEGIN SOLUTION", "END SOLUTION")


class RecipeError(ValueError):
    pass


@dataclass(frozen=True)
class Student:
    id: str
    first_name: str
    last_name: str
    email: str


def roster(class_dir: Path = CLASS_DIR) -> list[Student]:
    with open(class_dir / "roster.csv", newline="") as fh:
        return [Student(r["id"], r["first_name"], r["last_name"], r["email"]) for r in csv.DictReader(fh)]


def recipes(class_dir: Path = CLASS_DIR) -> dict[str, dict]:
    """student id -> {stage: recipe, "story": ...} from submissions.json, checked against the roster."""
    data = json.loads((class_dir / "submissions.json").read_text())["students"]
    unknown = set(data) - {s.id for s in roster(class_dir)}
    if unknown:
        raise RecipeError(f"submissions.json names students missing from roster.csv: {sorted(unknown)}")
    return data


def teacher_versions(class_dir: Path = CLASS_DIR) -> dict[str, dict]:
    """stage -> how the class's teacher changed the lesson before releasing it (``submissions.json``'s ``course``):
    a TA's own course, whose grade cells are not the lesson's."""
    data = json.loads((class_dir / "submissions.json").read_text()).get("course", {})
    return {k: v for k, v in data.items() if k[:2].isdigit()}


def teacher_source(source: NotebookNode, version: dict, class_dir: Path = CLASS_DIR, where: str = "") -> NotebookNode:
    """The lesson's nbgrader source as the teacher changed it: ``edit`` (a cell's source and points) and ``add``
    (new cells from files, each with its nbgrader metadata: ``{"after", "file", "grade_id", "grade", "solution",
    "points"}``; a solution's file holds its ``BEGIN SOLUTION`` markers)."""
    nb = copy.deepcopy(source)
    for gid, change in version.get("edit", {}).items():
        cell = nb.cells[_index(nb, gid, where)]
        cell.source = change.get("source", cell.source)
        if "points" in change:
            cell.metadata["nbgrader"]["points"] = change["points"]
    for item in version.get("add", []):
        cell = _new_cell(class_dir / item["file"], item["grade_id"])
        meta = {"grade": bool(item.get("grade")), "solution": bool(item.get("solution")),
                "locked": not item.get("solution"), "grade_id": item["grade_id"], "schema_version": 3}
        if meta["grade"]:
            meta["points"] = item.get("points", 0)
        cell.metadata["nbgrader"] = meta
        nb.cells.insert(_index(nb, item["after"], where) + 1, cell)
    return nb


def teacher_answers(version: dict, class_dir: Path = CLASS_DIR) -> dict[str, str]:
    """grade_id -> the teacher's answer of each answer cell the teacher added (solution markers removed)."""
    return {item["grade_id"]: "\n".join(ln for ln in (class_dir / item["file"]).read_text().rstrip("\n").split("\n")
                                        if not any(m in ln for m in MARKER_LINES))
            for item in version.get("add", []) if item.get("solution")}


def stages_used(class_dir: Path = CLASS_DIR) -> list[str]:
    return sorted({k for r in recipes(class_dir).values() for k in r if k[:2].isdigit()})


def reference_answers(stage: str, notebooks: Path = REPO / "notebooks",
                      dialect: Dialect | str | None = None) -> dict[str, str]:
    """grade_id -> the lesson's answer with the solution marker lines removed (what a full-marks student wrote),
    its kernels in ``dialect`` (default: the course's, NKI 0.6; a recipe's ``"dialect": "legacy"`` hands in the
    legacy references)."""
    dialect = dialect or manifest.course().stub_dialect
    lesson = load_source(notebooks / f"{stage}.py", dialect)
    return {grade_id(c) or "": "\n".join(ln for ln in c.source.split("\n") if not any(m in ln for m in MARKER_LINES))
            for c in lesson.cells if is_answer(c)}


def _index(nb: NotebookNode, gid: str, where: str) -> int:
    for i, cell in enumerate(nb.cells):
        if grade_id(cell) == gid:
            return i
    raise RecipeError(f"{where}: the released notebook has no cell {gid!r}")


def _answer(spec: str | dict, cell: NotebookNode, reference: dict[str, str], class_dir: Path, where: str) -> str | None:
    """The source a student put in answer ``cell`` (None: left the stub)."""
    if isinstance(spec, str):
        spec = {"file": spec}
    name = spec.get("file", "reference")
    if name == "stub":
        return None
    gid = grade_id(cell) or ""
    if name == "reference":
        if gid not in reference:
            raise RecipeError(f"{where}: no reference answer for {gid!r}")
        return reference[gid]
    body = (class_dir / name).read_text()
    first = cell.source.split("\n", 1)[0]
    if cell.cell_type == "code" and first.startswith("%%writefile") and spec.get("writefile_line", True):
        return first + "\n" + body
    return body


def _new_cell(path: Path, cid: str) -> NotebookNode:
    text = path.read_text().rstrip("\n")
    cell = nbformat.v4.new_markdown_cell(text) if path.suffix == ".md" else nbformat.v4.new_code_cell(text)
    cell["id"] = cid
    return cell


def build_notebook(released: NotebookNode, recipe: dict, reference: dict[str, str], class_dir: Path = CLASS_DIR,
                   where: str = "") -> NotebookNode:
    """One student's notebook: the released one with the recipe's answers and edits applied."""
    nb = copy.deepcopy(released)
    answers = recipe.get("answers", {})
    default = recipe.get("default", "reference")
    for cell in nb.cells:
        if is_answer(cell):
            source = _answer(answers.get(grade_id(cell), default), cell, reference, class_dir, where)
            if source is not None:
                cell.source = source
    for gid, change in recipe.get("edit", {}).items():
        cell = nb.cells[_index(nb, gid, where)]
        cell.source = change.get("source", cell.source)
        if "points" in change:
            cell.metadata["nbgrader"]["points"] = change["points"]
    for n, item in enumerate(recipe.get("copy", [])):
        dup = copy.deepcopy(nb.cells[_index(nb, item["cell"], where)])
        dup["id"] = f"copy-{n}"
        if "source" in item:
            dup.source = item["source"]
        nb.cells.insert(_index(nb, item["after"], where) + 1, dup)
    for n, item in enumerate(recipe.get("add", [])):
        nb.cells.insert(_index(nb, item["after"], where) + 1, _new_cell(class_dir / item["file"], f"added-{n}"))
    for gid in recipe.get("delete", []):
        del nb.cells[_index(nb, gid, where)]
    if recipe.get("strip_metadata"):
        for i, cell in enumerate(nb.cells):
            cell.metadata = {}
            cell["id"] = f"pasted-{i}"
    if recipe.get("big_output_mb"):  # a student who printed a large array: one cell output of that many MB
        first = next(c for c in nb.cells if c.cell_type == "code")
        first.outputs = [nbformat.v4.new_output("stream", name="stdout", text="0." * (recipe["big_output_mb"] << 19))]
    return nb


#: how deep the "nested" corruption nests: a 200 KB file that overflows a recursive JSON parser
NESTED_DEPTH = 100_000


def corrupted(text: str, how: bool | str) -> str:
    """A broken hand-in: ``true`` cuts the notebook in half (a bad merge), ``"nested"`` is a notebook whose cells
    are arrays nested 100,000 deep."""
    if how == "nested":
        return '{"cells": ' + "[" * NESTED_DEPTH + "]" * NESTED_DEPTH + ', "metadata": {}, "nbformat": 4}'
    return text[: len(text) // 2]


def build_submissions(dest: Path, assignments: Path = REPO / "assignments", class_dir: Path = CLASS_DIR,
                      notebooks: Path = REPO / "notebooks", release: Path | None = None,
                      stages: Collection[str] | None = None) -> list[Path]:
    """Write every student's hand-in under ``dest/<student>/<stage>/`` (nbgrader's ``submitted`` layout): each
    built on the released notebook of its recipe's dialect (default: the course's, in ``assignments``; ``legacy``:
    the twin in ``assignments/legacy``).  A stage the teacher changed (``teacher_versions``) is handed in on the
    course's own release (``release/<stage>/<stage>.ipynb``).  ``stages``: only those (default: every one)."""
    written: list[Path] = []
    references: dict[tuple[str, str], dict[str, str]] = {}
    versions = teacher_versions(class_dir)
    for student, entry in recipes(class_dir).items():
        for stage, recipe in entry.items():
            if not stage[:2].isdigit() or (stages is not None and stage not in stages):
                continue
            where = f"{student}/{stage}"
            try:
                key = (stage, manifest.dialect(recipe.get("dialect", manifest.course().stub_dialect)))
            except manifest.ManifestError as err:
                raise RecipeError(f"{where}: {err}") from None
            if key not in references:
                references[key] = reference_answers(stage, notebooks, key[1])
                references[key].update(teacher_answers(versions.get(stage, {}), class_dir))
            if stage in versions:
                if release is None:
                    raise RecipeError(f"{where}: the teacher changed {stage}: hand it in on the course's release")
                released = nbformat.read(release / stage / f"{stage}.ipynb", as_version=4)
            else:
                released = nbformat.read(assignments_dir(assignments.parent, key[1]) / f"{stage}.ipynb",
                                         as_version=4)
            nb = build_notebook(released, recipe, references[key], class_dir, where)
            folder = dest / student / stage
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / recipe.get("file_name", f"{stage}.ipynb")
            text = nbformat.writes(nb, version=4)
            path.write_text(corrupted(text, recipe["corrupt"]) if recipe.get("corrupt") else text)
            (folder / "timestamp.txt").write_text("2030-01-15 17:00:00.000000 UTC\n")
            for name, src in recipe.get("extra_files", {}).items():
                (folder / name).write_text((class_dir / src).read_text())
            written.append(path)
    return written
