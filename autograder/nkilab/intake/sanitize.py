"""Rebuild a submitted notebook on the released one: the teacher's cells, with only the student's answers in them.

nbgrader's own sanitising restores locked cells whose checksum changed, but it keeps every cell a student
added (code that then runs in the grading kernel, before the grade cells), it aborts the whole batch on a
duplicated ``grade_id`` (``DeduplicateIds`` blanks the metadata, ``CheckCellMetadata`` then raises), and it
cannot match answers pasted into a fresh notebook (no nbgrader metadata).  Here the released notebook is the
skeleton, cell for cell and in its order; the submission contributes nothing but the *source* of each answer
cell.  So:

* added cells are dropped, deleted and edited cells come back from the release, moved cells go back in place;
* a ``grade_id`` used twice keeps its last cell (nbgrader's own rule), and the batch goes on;
* an answer cell that lost its metadata is recognised by its ``%%writefile <file>`` line;
* a kernel answer cell always starts with the released ``%%writefile <file>`` line, so the student's code is
  saved to a file and graded in a subprocess, never executed in the grading kernel;
* with ``skip_teaching_cells``, code cells after the first answer that are neither answers nor grade cells
  (self-checks, demos, plots, profiles -- some of which import the student's file in the kernel) are tagged
  ``skip-execution``: grading then runs only the set-up, the ``%%writefile`` cells and the grade cells.

Every change is described in ``Restored.notes`` for the grading report.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import nbformat
from nbformat import NotebookNode

WRITEFILE = re.compile(r"^%%writefile\s+(?:-a\s+)?(\S+)\s*$")
SKIP_TAG = "skip-execution"  # nbclient's default ``skip_cells_with_tag``


@dataclass
class Restored:
    """The rebuilt notebook and, in plain words, what had to change."""

    notebook: NotebookNode
    notes: list[str] = field(default_factory=list)


def nbgrader_meta(cell: NotebookNode) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def grade_id(cell: NotebookNode) -> str | None:
    gid = nbgrader_meta(cell).get("grade_id")
    return gid if isinstance(gid, str) and gid else None


def is_answer(cell: NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_grade(cell: NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("grade"))


def writefile_target(source: str) -> str | None:
    """The file a ``%%writefile`` cell writes (first non-blank line), else None."""
    for line in source.splitlines():
        if line.strip():
            m = WRITEFILE.match(line.strip())
            return m.group(1) if m else None
    return None


def _source(cell: NotebookNode) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _with_magic(answer: str, magic: str) -> str:
    """``answer`` with its first line being exactly ``magic`` (replaced if it was another %%writefile)."""
    lines = answer.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and lines[0].lstrip().startswith("%%writefile"):
        lines[0] = magic
    else:
        lines.insert(0, magic)
    return "\n".join(lines)


def _fresh(cell: NotebookNode) -> NotebookNode:
    new = copy.deepcopy(cell)
    if new.cell_type == "code":
        new.outputs = []
        new.execution_count = None
    return new


def _names(ids: list[str]) -> str:
    return ", ".join(ids[:6]) + (f" (+{len(ids) - 6} more)" if len(ids) > 6 else "")


def restore(submitted: NotebookNode, release: NotebookNode, *, skip_teaching_cells: bool = True) -> Restored:
    """The released notebook with each answer cell's source taken from ``submitted`` (see the module doc)."""
    notes: list[str] = []
    by_id: dict[str, list[NotebookNode]] = {}
    loose: list[NotebookNode] = []
    for cell in submitted.get("cells", []):
        gid = grade_id(cell)
        if gid is None:
            loose.append(cell)
        else:
            by_id.setdefault(gid, []).append(cell)

    released_ids = [gid for gid in (grade_id(c) for c in release.cells) if gid]
    known = set(released_ids)
    magic_of: dict[str, str] = {}  # file written -> grade_id of its answer cell
    for cell in release.cells:
        target = writefile_target(_source(cell)) if is_answer(cell) and cell.cell_type == "code" else None
        if target:
            magic_of[target] = grade_id(cell) or ""

    for gid, copies in by_id.items():
        if len(copies) > 1 and gid in known:
            notes.append(f"{len(copies)} cells share grade_id {gid!r}: kept the last, dropped the copies")
    invented = [gid for gid in by_id if gid not in known]

    matched: dict[str, NotebookNode] = {}
    unmatched_loose = 0
    for cell in loose:
        gid = magic_of.get(writefile_target(_source(cell)) or "")
        if cell.get("cell_type") == "code" and gid and gid not in by_id and gid not in matched:
            matched[gid] = cell
        else:
            unmatched_loose += 1
    pasted = not by_id  # no cell kept its nbgrader metadata: pasted into a new notebook, or metadata stripped
    if pasted:
        found = ", ".join(sorted(matched)) or "none"
        notes.append("no nbgrader metadata in the notebook (cells pasted into a new one?): rebuilt on the release; "
                     f"answers recognised by their %%writefile line: {found}")
    elif matched:
        notes.append(f"answer(s) without nbgrader metadata recognised by their %%writefile line: "
                     f"{', '.join(sorted(matched))}")
    added = unmatched_loose + sum(len(by_id[g]) for g in invented)
    if added and not pasted:
        notes.append(f"dropped {added} cell(s) the student added")

    cells: list[NotebookNode] = []
    deleted: list[str] = []
    edited: list[str] = []
    for skel in release.cells:
        gid = grade_id(skel)
        new = _fresh(skel)
        theirs = by_id.get(gid, [])[-1:] if gid else []
        if gid and not theirs and gid in matched:
            theirs = [matched[gid]]
        if gid and not theirs:
            deleted.append(gid)
        if is_answer(skel) and theirs:
            answer = _source(theirs[0])
            magic = _source(skel).split("\n", 1)[0] if skel.cell_type == "code" else ""
            if WRITEFILE.match(magic.strip()):
                fixed = _with_magic(answer, magic)
                if fixed.split("\n", 1)[0] != answer.lstrip("\n").split("\n", 1)[0]:
                    notes.append(f"answer {gid!r}: restored its first line {magic.strip()!r} "
                                 "(the code is saved and graded in a separate process, never run in the notebook)")
                answer = fixed
            new.source = answer
        elif theirs and _source(theirs[0]) != _source(skel):
            edited.append(gid or "?")
        cells.append(new)
    if deleted and not pasted:
        notes.append(f"restored {len(deleted)} deleted cell(s) from the release: {_names(deleted)}")
    if edited:
        notes.append(f"restored {len(edited)} edited read-only cell(s) from the release: {_names(edited)}")

    if skip_teaching_cells:
        answers = [i for i, c in enumerate(cells) if is_answer(c) and c.cell_type == "code"]
        for i, cell in enumerate(cells):
            if answers and i > answers[0] and cell.cell_type == "code" and not is_answer(cell) and not is_grade(cell):
                tags = list(cell.metadata.get("tags", []))
                if SKIP_TAG not in tags:
                    cell.metadata["tags"] = tags + [SKIP_TAG]

    nb = nbformat.v4.new_notebook()
    nb.metadata = copy.deepcopy(release.metadata)
    nb.cells = cells
    return Restored(nb, notes)
