"""One submission after ``nbgrader autograde``: was it graded (every autograded cell scored, or its notebook
written), why not (nbgrader's log), what rebuilding it on the release changed, and -- for one nbgrader discarded --
grading it outside Jupyter, cell by cell (``nkilab.batch.salvage``), with its scores written to the gradebook.
``nkilab.batch.classgrade``'s audit calls these for every hand-in of an assignment."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from nkilab.batch.salvage import answer_cells_unchanged, salvage, with_outcomes
from nkilab.intake.sanitize import Restored, grade_id, is_grade, restore


def autograded(course: Path, student: str, assignment: str, notebooks: list[str]) -> bool:
    folder = course / "autograded" / student / assignment
    return all((folder / f"{nb}.ipynb").exists() for nb in notebooks)


def already_graded(db_url: str, student: str, assignment: str, notebooks: list[str]) -> bool:
    """Every autograded cell of the submission has a recorded score (what ``--resume`` keeps)."""
    with Gradebook(db_url) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return False
        nbs = {nb.name: nb for nb in sub.notebooks}
        if set(notebooks) - set(nbs):
            return False
        grades = [g for nb in notebooks for g in nbs[nb].grades if g.cell.cell_type == "code"]
        return bool(grades) and all(g.auto_score is not None for g in grades)


def attempted(log: str, student: str, assignment: str) -> bool:
    return re.search(rf"Sanitizing \S*[/\\]{re.escape(student)}[/\\]{re.escape(assignment)}[/\\]", log) is not None


def failure_reason(log: str, student: str) -> str:
    section = log.split(f"Creating/updating student with ID '{student}'")[-1]
    section = section.split("Creating/updating student with ID")[0]
    if "Kernel died" in section or "DeadKernelError" in section:
        return "the notebook's kernel died"
    if "UnresponsiveKernelError" in section or "became unresponsive" in section:
        return "the notebook's kernel stopped responding"
    if "CellTimeoutError" in section or "Timeout waiting" in section:
        return "the notebook ran out of time"
    return "nbgrader could not grade it"


def _restored_from_gradebook(course: Path, db_url: str, student: str, assignment: str, notebook: str,
                             folder: str = "submitted") -> Restored:
    """The submission rebuilt exactly as RestoreSubmission + OverwriteCells would (grade cells from the DB)."""
    submitted = nbformat.read(course / folder / student / assignment / f"{notebook}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / assignment / f"{notebook}.ipynb", as_version=4)
    restored = restore(submitted, release)
    with Gradebook(db_url) as gb:
        for cell in restored.notebook.cells:
            if is_grade(cell) and cell.cell_type == "code":
                try:
                    cell.source = gb.find_source_cell(grade_id(cell), notebook, assignment).source
                except MissingEntry:
                    pass
    return restored


def salvage_submission(course: Path, db_url: str, student: str, assignment: str, notebooks: list[str],
                       timeout: float, env: dict[str, str], reason: str, folder: str = "submitted") -> list[str]:
    """Grade a discarded submission outside Jupyter; scores go to the gradebook.  Returns notes."""
    notes = [f"{reason}, so nbgrader discarded the submission: graded outside the notebook kernel instead"]
    for notebook in notebooks:
        restored = _restored_from_gradebook(course, db_url, student, assignment, notebook, folder)
        work = course / "salvage" / student / assignment
        outcomes = salvage(restored.notebook, work, timeout=timeout, env=env)
        unchanged = answer_cells_unchanged(restored.notebook)
        with Gradebook(db_url) as gb:
            gb.update_or_create_submission(assignment, student)
            for gid, outcome in outcomes.items():
                g = gb.find_grade(gid, notebook, assignment, student)
                g.auto_score, g.needs_manual_grade = outcome.points, False
                if outcome.text.startswith("The grading process"):
                    notes.append(f"{gid}: {outcome.text.strip()}")
            for gid, untouched in unchanged.items():
                g = gb.find_grade(gid, notebook, assignment, student)
                g.auto_score = 0.0 if untouched else None
                g.needs_manual_grade = not untouched
            gb.db.commit()
        out = course / "autograded" / student / assignment
        out.mkdir(parents=True, exist_ok=True)
        nbformat.write(with_outcomes(restored.notebook, outcomes, f"Its kernel could not finish: {reason}."),
                       out / f"{notebook}.ipynb")
    return notes


def sanitize_notes(course: Path, student: str, assignment: str, notebooks: list[str],
                   folder: str = "submitted") -> list[str]:
    """What RestoreSubmission changed (recomputed: it is a pure function of submission and release)."""
    notes = []
    for notebook in notebooks:
        path = course / folder / student / assignment / f"{notebook}.ipynb"
        release = course / "release" / assignment / f"{notebook}.ipynb"
        if path.exists() and release.exists():
            restored = restore(nbformat.read(path, as_version=4), nbformat.read(release, as_version=4))
            notes += restored.notes
    return notes
