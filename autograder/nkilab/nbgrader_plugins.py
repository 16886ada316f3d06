"""nbgrader preprocessors for grading the NKI Kernel Lab, and the settings that plug them into ``nbgrader``.

Each one closes a gap found by running nbgrader 0.9.6 against hostile submissions:

* ``RestoreSubmission`` (sanitize step, replaces ``DeduplicateIds``): the submission is rebuilt on the
  released notebook (see ``nkilab.sanitize``), so added cells, duplicated ``grade_id``s, deleted or edited
  cells and pasted notebooks neither cheat nor abort the batch;
* ``TimeLimitedExecute`` (autograde step, replaces ``Execute``): nbgrader only limits each cell; this also
  caps the whole notebook, so no submission can hold the batch for long;
* ``GradeCellStderrToStdout``: nbgrader gives 0 to a grade cell with *any* stderr output; our grade cells
  run no student code in the notebook, so a library warning must not zero a correct kernel;
* ``HideHiddenCaseDetails`` (feedback step): the grade cell's report lists every hidden case (shape, dtype,
  first wrong element); the feedback keeps one summary line per question instead.

``grading_flags`` renders all of this as ``nbgrader`` command-line options (they win over any
``nbgrader_config.py``), so the same settings grade the bundled example class and a TA's own course.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool, Integer

from nkilab.sanitize import is_grade, restore

_HERE = "nkilab.nbgrader_plugins"
SANITIZE = ["nbgrader.preprocessors.ClearOutput", f"{_HERE}.RestoreSubmission",
            "nbgrader.preprocessors.OverwriteKernelspec", "nbgrader.preprocessors.OverwriteCells",
            "nbgrader.preprocessors.CheckCellMetadata"]
AUTOGRADE = [f"{_HERE}.TimeLimitedExecute", "nbgrader.preprocessors.IgnorePattern", f"{_HERE}.GradeCellStderrToStdout",
             "nbgrader.preprocessors.LimitOutput", "nbgrader.preprocessors.SaveAutoGrades",
             "nbgrader.preprocessors.AssignLatePenalties", "nbgrader.preprocessors.CheckCellMetadata"]
FEEDBACK = ["nbgrader.preprocessors.GetGrades", "nbgrader.preprocessors.ClearHiddenTests", f"{_HERE}.HideHiddenCaseDetails",
            "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor"]

# A per-case line of nkilab.check.case_lines for a hidden case, e.g. "  [FAIL] hidden case 3/8  a, b: ...".
HIDDEN_CASE_LINE = re.compile(r"^\s*\[(ok  |FAIL)\] hidden case \d+/\d+\b.*$")


def _coursedir(pp: NbGraderPreprocessor) -> CourseDirectory:
    """The running converter's course directory (preprocessors are created with the exporter as parent)."""
    node = pp.parent
    while node is not None:
        found = getattr(node, "coursedir", None)
        if isinstance(found, CourseDirectory):
            return found
        node = getattr(node, "parent", None)
    return CourseDirectory(config=pp.config)


class RestoreSubmission(NbGraderPreprocessor):
    """Rebuild the submission on ``release/<assignment>/<notebook>.ipynb``; only answer sources are kept."""

    skip_teaching_cells = Bool(
        True, help="Do not run self-checks, demos and plots after the first answer cell while grading").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        info = resources["nbgrader"]
        coursedir = _coursedir(self)
        folder = Path(coursedir.format_path(coursedir.release_directory, ".", info["assignment"]))
        release = nbformat.read(folder / f"{info['notebook']}.ipynb", as_version=4)
        restored = restore(nb, release, skip_teaching_cells=self.skip_teaching_cells)
        for note in restored.notes:
            self.log.warning("%s / %s: %s", info["student"], info["notebook"], note)
        return restored.notebook, resources


class TimeLimitedExecute(Execute):
    """nbgrader's ``Execute`` with a wall-clock limit for the whole notebook on top of the per-cell one."""

    notebook_timeout = Integer(
        0, help="Seconds for the whole notebook (0: no limit); each cell gets at most what is left").tag(config=True)

    _deadline: float | None = None

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict | None = None, km=None):
        self._deadline = time.monotonic() + self.notebook_timeout if self.notebook_timeout else None
        return super().preprocess(nb, resources, km=km)

    def _get_timeout(self, cell: NotebookNode | None) -> int | None:
        per_cell = super()._get_timeout(cell)
        if self._deadline is None:
            return per_cell
        left = max(1, math.ceil(self._deadline - time.monotonic()))
        return left if per_cell is None else min(per_cell, left)


class GradeCellStderrToStdout(NbGraderPreprocessor):
    """Move a grade cell's stderr text to stdout (marked ``[stderr]``) so nbgrader does not zero the cell."""

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type == "code" and is_grade(cell):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream" and out.get("name") == "stderr":
                    out["name"] = "stdout"
                    out["text"] = "".join("[stderr] " + line for line in out.get("text", "").splitlines(True))
        return cell, resources


def hide_hidden_cases(text: str) -> str:
    """Replace the per-hidden-case lines of a grading report by one count, in place of the first of them."""
    lines = text.splitlines(True)
    hidden = [line for line in lines if HIDDEN_CASE_LINE.match(line)]
    if not hidden:
        return text
    passed = sum("[ok  ]" in line for line in hidden)
    summary = (f"  [{'ok  ' if passed == len(hidden) else 'FAIL'}] hidden cases: {passed} of {len(hidden)} passed "
               "(their sizes and values are not shown in feedback)\n")
    out: list[str] = []
    for line in lines:
        if HIDDEN_CASE_LINE.match(line):
            if summary:
                out.append(summary)
                summary = ""
            continue
        out.append(line)
    return "".join(out)


class HideHiddenCaseDetails(NbGraderPreprocessor):
    """Feedback without the hidden cases' sizes, dtypes and mismatch details (the autograded copy keeps them)."""

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream":
                    out["text"] = hide_hidden_cases(out.get("text", ""))
        return cell, resources


def _list(values: list[str]) -> str:
    return "[" + ", ".join(repr(v) for v in values) + "]"


def grading_flags(*, cell_timeout: int, notebook_timeout: int) -> list[str]:
    """``nbgrader autograde`` options: our sanitize/execute steps, the time limits, nothing copied but notebooks.

    ``CourseDirectory.ignore = ['*', '.*']`` keeps every non-notebook file of a submission out of
    ``autograded/``: the grading kernel runs there with its directory first on ``sys.path``, so a submitted
    ``nkilab.py`` or compiled module would otherwise replace the grader.  The kernels a notebook needs are
    written by its own ``%%writefile`` cells."""
    return [f"--Autograde.sanitize_preprocessors={_list(SANITIZE)}",
            f"--Autograde.autograde_preprocessors={_list(AUTOGRADE)}",
            "--OverwriteCells.add_missing_cells=True",
            f"--Execute.timeout={int(cell_timeout)}",
            f"--TimeLimitedExecute.notebook_timeout={int(notebook_timeout)}",
            "--CourseDirectory.ignore=['*', '.*']"]


def feedback_flags() -> list[str]:
    """``nbgrader generate_feedback`` options: hidden test regions and hidden-case details stripped."""
    return [f"--GenerateFeedback.preprocessors={_list(FEEDBACK)}"]
