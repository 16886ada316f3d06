"""Did anything touch the TAs' work in the gradebook while the autograder ran?

An automatic grading run should only ever write *auto* scores and auto comments.  What a human entered --
``manual_score`` and ``extra_credit`` on a grade, ``manual_comment`` on a comment -- must come out of it as it
went in.  Student code runs during grading; without a sandbox it runs as the grader's user and can open
``gradebook.db`` like any other file, so a hostile kernel (or a daemon it leaves behind) could raise its own
manual score or erase someone else's.  ``snapshot`` records every such value before grading, ``changes`` lists
the ones that differ afterwards, by student, assignment, notebook and cell, so the run can report them; and
``restore`` puts them back if the TA wants that.

Only manual fields are compared: auto scores are meant to change, and a submission that grading creates comes
with empty manual fields (a new row is only reported if it arrives with a manual value already set).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbgrader.api import (
    Assignment,
    BaseCell,
    Comment,
    Grade,
    Gradebook,
    Notebook,
    SubmittedAssignment,
    SubmittedNotebook,
)

FIELDS = ("manual_score", "extra_credit", "manual_comment")

Value = float | str | None


@dataclass(frozen=True, order=True)
class Key:
    """One human-entered value: whose, where, and which field."""

    student: str
    assignment: str
    notebook: str
    cell: str
    field: str


@dataclass(frozen=True)
class Snapshot:
    """Every manual value in a gradebook at one moment (``None`` where nothing was entered)."""

    values: dict[Key, Value] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    """A manual value that differs between two snapshots (``removed``: its grade or comment row is gone)."""

    student: str
    assignment: str
    notebook: str
    cell: str
    field: str
    old: Value
    new: Value
    removed: bool = False

    def __str__(self) -> str:
        where = f"{self.student} / {self.assignment} / {self.notebook} / {self.cell}"
        if self.removed:
            return f"{where}: {self.field} {self.old!r} was deleted from the gradebook"
        return f"{where}: {self.field} changed from {self.old!r} to {self.new!r}"


def _sqlite_file(db_url: str) -> Path | None:
    prefix = "sqlite:///"
    return Path(db_url[len(prefix):]) if db_url.startswith(prefix) else None


def _rows(gb: Gradebook, table: Any, columns: tuple[str, ...]) -> list[Any]:
    """(student, assignment, notebook, cell, *columns) for every row of ``Grade`` or ``Comment``."""
    return (gb.db.query(SubmittedAssignment.student_id, Assignment.name, Notebook.name, BaseCell.name,
                        *(getattr(table, c) for c in columns))
            .select_from(table)
            .join(SubmittedNotebook, table.notebook_id == SubmittedNotebook.id)
            .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
            .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .join(BaseCell, table.cell_id == BaseCell.id)
            .all())


def snapshot(db_url: str) -> Snapshot:
    """Every grade's ``manual_score`` and ``extra_credit`` and every comment's ``manual_comment`` now.

    A SQLite gradebook that does not exist yet is an empty snapshot (and is not created here)."""
    path = _sqlite_file(db_url)
    if path is not None and not path.exists():
        return Snapshot()
    values: dict[Key, Value] = {}
    with Gradebook(db_url) as gb:
        for student, assignment, notebook, cell, manual, extra in _rows(gb, Grade, ("manual_score", "extra_credit")):
            values[Key(student, assignment, notebook, cell, "manual_score")] = manual
            values[Key(student, assignment, notebook, cell, "extra_credit")] = extra
        for student, assignment, notebook, cell, comment in _rows(gb, Comment, ("manual_comment",)):
            values[Key(student, assignment, notebook, cell, "manual_comment")] = comment
    return Snapshot(values)


def changes(before: Snapshot, after: Snapshot) -> list[Change]:
    """Every manual value that differs, was deleted, or appeared already set; sorted by student and place."""
    found = []
    for key in sorted(before.values.keys() | after.values.keys()):
        old, new = before.values.get(key), after.values.get(key)
        gone = key in before.values and key not in after.values
        if gone and old is None:
            continue  # an empty row dropped (e.g. a submission re-created): nothing a human entered is lost
        if gone or old != new:
            found.append(Change(key.student, key.assignment, key.notebook, key.cell, key.field, old, new, gone))
    return found


def restore(db_url: str, found: list[Change]) -> int:
    """Put the old values of ``found`` back (rows that were deleted cannot be); returns how many were restored.

    Only for a run where nobody graded by hand at the same time: it also undoes a TA's concurrent edit."""
    restored = 0
    with Gradebook(db_url) as gb:
        for ch in (c for c in found if not c.removed):
            if ch.field == "manual_comment":
                row = gb.find_comment(ch.cell, ch.notebook, ch.assignment, ch.student)
            else:
                row = gb.find_grade(ch.cell, ch.notebook, ch.assignment, ch.student)
            setattr(row, ch.field, ch.old)
            restored += 1
        gb.db.commit()
    return restored
