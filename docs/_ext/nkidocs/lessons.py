"""The lesson pages: the *student* notebooks (``docs/lessons`` links to ``assignments/``: NKI 0.6, the course's
``stub_dialect``; the legacy twins in ``assignments/legacy/`` are not pages), with the outputs of their demo cells.

A student notebook has no outputs, and running it would fail at every kernel the student has not written yet.
So the authored lesson (``notebooks/NN_*.py``, reference answers in place) runs once under a real Jupyter kernel,
and the outputs of its *demo* cells are put into the student notebook as MyST-NB reads it (``source-read``).
Answers, checks and graded cells get none: their outputs would describe the reference kernels.  Every line of
reference code a demo prints (a profile's source column) is hidden first (``nkilab.redact.scrub_outputs``), and
``tests/test_docs_site.py`` scans the site as built for any that got through.

Running the lessons takes minutes, so each run is kept (``nkilab.lesson_runs``, in ``build/docs-cache/lessons``)
under a key made of everything it depends on (the lesson, the simulator, the grader, the reference solutions and
the pinned requirements); a fresh clone, like CI's, runs them once, and the course tests read the same runs.  ``NKIDOCS_OUTPUTS=0`` leaves the outputs out (a quick build of the text).
"""

from __future__ import annotations

import os
import re

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

from nkilab import lesson_runs
from nkilab.keep import cache_dir, cache_key  # noqa: F401  (the error pages' examples are kept under it too)
from nkilab.redact import HIDDEN, scrub_outputs

logger = logging.getLogger(__name__)

NOTEBOOKS = lesson_runs.NOTEBOOKS
CACHE = cache_dir()
_STEM = re.compile(r"lessons/(\d\d_\w+)$")


def setup(app: Sphinx) -> None:
    app.connect("source-read", _with_demo_outputs)


def _with_demo_outputs(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: a lesson notebook as its page shows it (captions, demo outputs, download link)."""
    match = _STEM.match(docname)
    if not match or not (NOTEBOOKS / f"{match.group(1)}.py").is_file():
        return
    nb = nbformat.reads(source[0], as_version=4)
    stem = match.group(1)
    outputs = demo_outputs(stem) if os.environ.get("NKIDOCS_OUTPUTS", "1") != "0" else None
    source[0] = nbformat.writes(lesson_page(nb, stem, outputs))


def lesson_page(nb: nbformat.NotebookNode, stem: str, outputs: dict[str, list] | None) -> nbformat.NotebookNode:
    """The student notebook ``nb`` as its page: a caption over each code cell saying what it is for, the demo
    cells' ``outputs`` (by cell id; None: outputs are not shown), every other cell without any, and under the
    title where to get the notebook."""
    hidden = 0
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            kind, caption = _caption(cell)
            cells.append(nbformat.v4.new_markdown_cell(f"{{.cell-caption .{kind}}}\n{caption}"))
            cell.outputs = []
            cell.execution_count = None
            if kind == "demo" and outputs is not None:
                cell.outputs, n = scrub_outputs(outputs.get(cell.get("id"), []), _fingerprints())
                hidden += n
                cell.outputs = [_short_error(out) for out in cell.outputs]
                cell.metadata.setdefault("mystnb", {})["image"] = {"alt": "plot made by this cell"}
            tags = cell.metadata.setdefault("tags", [])
            tags.append(f"nkidocs-{kind}")
        cells.append(cell)
    if hidden:
        logger.info(f"{stem}: {hidden} line(s) of reference code hidden from its demo outputs")
    if outputs is not None:
        shown = ("Demo cells show what they print when the lesson runs with the reference solutions in place; in "
                 "your copy, run them to see your own kernels' results.")
        if hidden:
            shown += (" Lines of the reference solutions that a demo prints (a profile's source column, say) read "
                      f"`{HIDDEN}`.")
    else:
        shown = "Outputs are not shown here: run the cells to see them."
    download = nbformat.v4.new_markdown_cell(
        f"{{.download}}\nWork through it in Jupyter: {{download}}`{stem}.ipynb` (or `make lab` in the course "
        f"repository). {shown}")
    first = 1 if cells and cells[0].cell_type == "markdown" else 0
    nb.cells = [*cells[:first], download, *cells[first:]]
    return nb


def _caption(cell: nbformat.NotebookNode) -> tuple[str, str]:
    """(kind, caption) of a code cell: ``answer``, ``graded``, ``check`` or ``demo``."""
    meta = cell.metadata.get("nbgrader", {})
    if meta.get("solution"):
        kind, label = "answer", "your answer"
    elif meta.get("grade"):
        points = meta.get("points")
        kind, label = "graded", f"graded cell ({points:g} points)" if points else "graded cell"
    elif not is_demo(cell):
        kind, label = "check", "check your answer on the public cases"
    else:
        kind, label = "demo", "run me"
    first = cell.source.split("\n", 1)[0]
    if first.startswith("%%writefile"):
        label += f"; saved as `{first.split()[-1]}` when run"
    return kind, label


def is_demo(cell: nbformat.NotebookNode) -> bool:
    """A cell every reader runs as it is: not an answer, not graded, not a self-check of an answer."""
    meta = cell.metadata.get("nbgrader", {})
    return not (meta.get("solution") or meta.get("grade") or re.match(r"\s*check\(", cell.source))


def _short_error(out: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """An error output as its last line, ``ValueError: message``: the frames of a traceback name the scratch
    folder the lesson ran in, and the message already points at the line."""
    if out.get("output_type") != "error":
        return out
    out["traceback"] = [f"{out['ename']}: {out['evalue']}"]
    return out


_PRINTS: set[str] | None = None


def _fingerprints() -> set[str]:
    """The release's fingerprints of the reference solutions (lines no student notebook shows)."""
    global _PRINTS
    if _PRINTS is None:
        from nkilab.release import reference_fingerprints

        _PRINTS = reference_fingerprints(NOTEBOOKS)
    return _PRINTS


def demo_outputs(stem: str) -> dict[str, list]:
    """The raw outputs of the authored lesson ``stem``'s demo cells by cell id, as the course's students get the
    lesson (its stub dialect), from the lesson's kept run (``nkilab.lesson_runs``; run now if none is kept)."""
    logger.info(f"lesson {stem}: demo outputs from its run kept in {CACHE} (run now if there is none) ...")
    nb = lesson_runs.run(stem).notebook
    return {cell["id"]: cell.outputs for cell in nb.cells if cell.cell_type == "code" and is_demo(cell)}
