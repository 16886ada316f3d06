"""Each authored lesson, run once with its reference answers in place, and kept.

A lesson run is the most expensive thing the course does outside grading a class: a real Jupyter kernel runs
``notebooks/NN_*.py`` top to bottom, and its grade cells grade the reference kernels in the sandbox.  Two readers
need it: the course site (the outputs of the demo cells, ``docs/_ext/nkidocs/lessons.py``) and the course tests
(every grade cell at full points, each demo's output, the time it took).  Both ask ``run(stem, dialect)``, which
executes the lesson only when no run is kept under a key of everything its outputs depend on (the lesson, the
simulator, the grader, the reference solutions, the pinned requirements, Python's version); so a fresh clone's
``make docs`` runs each lesson once, and a test run that builds the site too runs each lesson once in all.

Runs are kept in ``$NKIDOCS_CACHE/lessons`` (default ``build/docs-cache/lessons``), one notebook per lesson and
dialect; a lock file per lesson lets processes that ask for the same run at once (the docs build and the tests,
pytest-xdist's workers) wait for one execution instead of starting their own.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from nkilab.course import manifest
from nkilab.course.keep import REPO, cache_dir, cache_key, locked
from nkisim.api import Dialect

NOTEBOOKS = REPO / "notebooks"
TIMEOUT_S = 600.0  # per cell: a lesson's slowest cell grades a reference kernel over every case


@dataclass(frozen=True)
class LessonRun:
    """An executed lesson: the notebook with every cell's outputs (errors kept as outputs), and the wall-clock
    seconds its execution took when it ran (a kept run reports the seconds of the run that made it)."""

    stem: str
    dialect: str
    notebook: nbformat.NotebookNode
    seconds: float


def run(stem: str, dialect: Dialect | str | None = None) -> LessonRun:
    """The lesson ``notebooks/<stem>.py`` as ``dialect``'s students get it (default: the course's stub dialect),
    executed with its reference answers in place: kept, or run now and kept."""
    from nkilab.authoring.release import load_source

    dialect = manifest.dialect(dialect or manifest.course().stub_dialect)
    source = NOTEBOOKS / f"{stem}.py"
    key = cache_key(f"{stem}\0{dialect}\0".encode() + source.read_bytes())
    folder = cache_dir() / "lessons"
    path = folder / f"{stem}-{dialect}-{key}.ipynb"
    with locked(folder / f"{stem}-{dialect}.lock"):
        if not path.is_file():
            nb = load_source(source, dialect)
            start = time.monotonic()
            execute(nb)
            nb.metadata["nkilab_run"] = {"seconds": time.monotonic() - start}
            for old in folder.glob(f"{stem}-{dialect}-*.ipynb"):
                old.unlink()
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            nbformat.write(nb, partial)
            partial.replace(path)
        nb = nbformat.read(path, as_version=4)
    return LessonRun(stem, dialect, nb, float(nb.metadata["nkilab_run"]["seconds"]))


def execute(nb: nbformat.NotebookNode, cwd: Path | None = None, timeout: float = TIMEOUT_S) -> None:
    """Run ``nb`` in place in a python3 Jupyter kernel, in ``cwd`` or a scratch folder (errors stay in the outputs)."""
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="nkilab-lesson-") as tmp:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(cwd or tmp)}}).execute()

