"""The lesson pages: the *student* notebooks (``docs/lessons`` links to ``assignments/``: NKI 0.6, the course's
``stub_dialect``; the legacy twins in ``assignments/legacy/`` are not pages), with the outputs of their demo cells.

A student notebook has no outputs, and running it would fail at every kernel the student has not written yet.
So the authored lesson (``notebooks/NN_*.py`` in the stub dialect, reference answers in place) runs once under a
real Jupyter kernel, and the outputs of its *demo* cells are put into the student notebook as MyST-NB reads it
(``source-read``).
Answers, checks and graded cells get none: their outputs would describe the reference kernels.  Every line of
reference code a demo prints (a profile's source column) is hidden first (``nkilab.redact.scrub_outputs``), and
``tests/test_docs_site.py`` scans the site as built for any that got through.

Running the seven lessons takes about a minute, so the raw outputs are cached in ``build/docs-cache/`` under a
key made of everything they depend on (the lesson, the simulator, the grader and the pinned requirements); a
fresh clone, like CI's, runs them.  ``NKIDOCS_OUTPUTS=0`` leaves the outputs out (a quick build of the text).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

from nkilab.redact import HIDDEN, scrub_outputs

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[3]
NOTEBOOKS = REPO / "notebooks"
#: what the outputs of an authored lesson depend on, besides the lesson itself
INPUTS = ("nkisim", "autograder/nkilab", "requirements.txt", "pyproject.toml")
CACHE = Path(os.environ.get("NKIDOCS_CACHE", REPO / "build" / "docs-cache"))
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
    """The raw outputs of the authored lesson ``stem``'s demo cells by cell id, from the cache or by running it."""
    source = NOTEBOOKS / f"{stem}.py"
    path = CACHE / f"{stem}-{_key(source)}.json"
    if path.is_file():
        return {k: [nbformat.from_dict(o) for o in v] for k, v in json.loads(path.read_text()).items()}
    logger.info(f"running {source.relative_to(REPO)} for its demo outputs ...")
    outputs = run_lesson(source)
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob(f"{stem}-*.json"):
        old.unlink()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(outputs))
    tmp.replace(path)
    return outputs


def _key(source: Path) -> str:
    """A digest of everything the outputs of ``source`` depend on."""
    return cache_key(str(source.relative_to(REPO)).encode() + b"\0" + source.read_bytes())


_INPUTS_DIGEST: bytes | None = None


def cache_key(content: bytes) -> str:
    """A digest of ``content`` and of everything a run of course code depends on besides it: the simulator, the
    grader, the pinned requirements and Python's version (read once per build)."""
    global _INPUTS_DIGEST
    if _INPUTS_DIGEST is None:
        digest = hashlib.sha256(f"{sys.version_info[:2]}\n".encode())
        for path in sorted(p for part in INPUTS for p in _files(REPO / part)):
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
        _INPUTS_DIGEST = digest.digest()
    return hashlib.sha256(_INPUTS_DIGEST + content).hexdigest()[:16]


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return [p for p in path.rglob("*") if p.suffix in (".py", ".toml") and "__pycache__" not in p.parts]


def run_lesson(source: Path, timeout: float = 600) -> dict[str, list]:
    """Run an authored lesson (reference answers in place) in a scratch folder under a real Jupyter kernel;
    the outputs of its demo cells by cell id."""
    from nbclient import NotebookClient

    from nkilab import manifest
    from nkilab.release import load_source

    nb = load_source(source, manifest.course().stub_dialect)  # the cells of the notebooks the pages show
    with tempfile.TemporaryDirectory(prefix="nkidocs-lesson-") as tmp:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": tmp}}).execute()
    return {cell["id"]: cell.outputs for cell in nb.cells if cell.cell_type == "code" and is_demo(cell)}
