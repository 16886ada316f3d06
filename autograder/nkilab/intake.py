"""Look at what each student handed in before nbgrader does, so that no file can stop or fool the batch.

nbgrader grades ``submitted/<student>/<assignment>/<notebook>.ipynb``.  A notebook under another name is
skipped without a loud error ("Skipping unknown notebook"), a file that is not valid JSON fails the student
with a traceback in the log, and every other file handed in is copied next to the notebook that the grading
kernel runs.  ``take_in`` copies hand-ins into ``submitted/`` (the example class); ``inspect`` checks a
course's ``submitted/`` in place (a TA's class).  Either way each (student, assignment) gets one ``Intake``
record that the grading report shows:

* ``ok``: the notebook reads; only notebooks are graded, anything else handed in is listed and ignored;
* ``renamed``: exactly one notebook under another name (``lab-final.ipynb``): graded as the expected one;
* ``unreadable``: not JSON or not a notebook: reported with the parser's message, not graded;
* ``missing``: nothing handed in.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat

STATUSES = ("ok", "renamed", "unreadable", "missing")


@dataclass
class Intake:
    student: str
    assignment: str
    status: str
    note: str = ""

    @property
    def gradable(self) -> bool:
        return self.status in ("ok", "renamed")


def readable(path: Path) -> str | None:
    """None if ``path`` is a notebook nbgrader can open, else why not (in plain words)."""
    try:
        text = path.read_text(encoding="utf-8")
        json.loads(text)
    except UnicodeDecodeError:
        return "not a text file"
    except json.JSONDecodeError as err:
        return f"not valid JSON ({err.msg}: line {err.lineno}, column {err.colno})"
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # nbformat raises several kinds for malformed notebooks
        return f"not a Jupyter notebook ({type(err).__name__}: {str(err).splitlines()[0][:120]})"
    if not isinstance(nb.get("cells"), list):
        return "not a Jupyter notebook (no list of cells)"
    return None


def _look(folder: Path, expected: list[str]) -> tuple[str, str, dict[str, Path]]:
    """(status, note, {expected notebook name: the file to grade}) for one hand-in folder."""
    if not folder.is_dir():
        return "missing", "nothing handed in", {}
    notebooks = sorted(p for p in folder.iterdir() if p.suffix == ".ipynb" and p.is_file())
    others = sorted(p.name for p in folder.iterdir() if p.suffix != ".ipynb" and p.name != "timestamp.txt")
    chosen: dict[str, Path] = {}
    notes: list[str] = []
    status = "ok"
    for name in expected:
        exact = folder / f"{name}.ipynb"
        if exact in notebooks:
            chosen[name] = exact
    strays = [p for p in notebooks if p not in chosen.values()]
    if len(expected) == 1 and not chosen and len(strays) == 1:
        chosen[expected[0]] = strays[0]
        notes.append(f"handed in as {strays[0].name}, graded as {expected[0]}.ipynb")
        status, strays = "renamed", []
    if strays:
        notes.append("ignored other notebooks: " + ", ".join(p.name for p in strays))
    if others:
        notes.append("ignored other files (only notebooks are graded): " + ", ".join(others))
    for path in chosen.values():
        problem = readable(path)
        if problem:
            return "unreadable", f"{path.name} is {problem}", {}
    if not chosen:
        return "missing", "no notebook named " + ", ".join(f"{n}.ipynb" for n in expected), {}
    return status, "; ".join(notes), chosen


def take_in(incoming: Path, submitted: Path, students: list[str], assignments: dict[str, list[str]]) -> list[Intake]:
    """Copy readable hand-ins from ``incoming/<student>/<assignment>/`` to ``submitted/`` (notebooks only)."""
    records = []
    for student in students:
        for assignment, expected in assignments.items():
            status, note, chosen = _look(incoming / student / assignment, expected)
            records.append(Intake(student, assignment, status, note))
            if not chosen:
                continue
            dest = submitted / student / assignment
            dest.mkdir(parents=True, exist_ok=True)
            for name, path in chosen.items():
                shutil.copyfile(path, dest / f"{name}.ipynb")
            stamp = incoming / student / assignment / "timestamp.txt"
            if stamp.exists():
                shutil.copyfile(stamp, dest / "timestamp.txt")
    return records


def inspect(submitted: Path, students: list[str], assignments: dict[str, list[str]]) -> list[Intake]:
    """The same checks on a course's own ``submitted/`` folder, changing nothing in it.

    A notebook under another name is reported, not graded: rename it (or ``nbgrader collect`` again)."""
    records = []
    for student in students:
        for assignment, expected in assignments.items():
            status, note, chosen = _look(submitted / student / assignment, expected)
            if status == "renamed":
                status = "missing"
                note = f"{note.split(',')[0]}: rename it to {expected[0]}.ipynb to grade it"
            records.append(Intake(student, assignment, status, note))
    return records
