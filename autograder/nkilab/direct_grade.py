"""``DirectGrade``: nbgrader's execute step for the course's notebooks without a Jupyter kernel per notebook.

After ``RestoreSubmission`` a submission runs nothing of the student's in the notebook: its kernel answers are
``%%writefile`` cells and its grade cells are the release's ``from nkilab import grade; grade("<question>",
"<file>")``, which grade the file in a sandboxed child process.  Starting a Jupyter kernel and importing the
course's set-up (matplotlib, the simulator) for every notebook only to make those calls was most of the CPU
time per hand-in.  So when every code cell that would run is one of those two forms, this step does exactly
what the kernel would have done, here in the nbgrader process (which stays warm across the class: NumPy and the
simulator imported once, each question's inputs and expected outputs drawn once per grading seed): it writes
each answer to its file (``Writing <file>``), calls ``grade_report`` for each grade cell, and records the report
as the cell's stdout and the points as its result -- the outputs nbgrader reads the score from.  Set-up and
teaching cells are not run (grading needs none of them).  A notebook with any other grade cell (a TA's own
course) goes through the Jupyter kernel as before (``TimeLimitedExecute``), and ``DirectGrade.direct=False``
turns this off.  The per-notebook time limit holds either way.
"""

from __future__ import annotations

import ast
import contextlib
import io
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from traitlets import Bool

from nkilab.grade import grade_report
from nkilab.nbgrader_plugins import TimeLimitedExecute
from nkilab.results import MIME
from nkilab.sanitize import SKIP_TAG, WRITEFILE, is_grade, writefile_target


@dataclass(frozen=True)
class Step:
    """One cell to run: write an answer to ``file``, or grade ``question`` on ``file``."""

    index: int
    file: str
    question: str | None = None  # None: a %%writefile answer


def grade_call(source: str) -> tuple[str, str] | None:
    """(question, file) when ``source`` is only ``from nkilab import grade`` and ``grade("<q>", "<file>")``."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    calls = [s for s in body if not (isinstance(s, ast.ImportFrom) and s.module == "nkilab"
                                     and [a.name for a in s.names] == ["grade"] and not s.names[0].asname)]
    if len(calls) != 1 or not isinstance(calls[0], ast.Expr) or not isinstance(calls[0].value, ast.Call):
        return None
    call = calls[0].value
    args = call.args
    if not (isinstance(call.func, ast.Name) and call.func.id == "grade" and not call.keywords and len(args) == 2
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args)):
        return None
    question, file = args[0].value, args[1].value
    return (question, file) if Path(file).name == file else None


def plan(nb: NotebookNode) -> list[Step] | None:
    """The cells to run directly, or None when some grade cell is not a plain ``grade(...)`` call."""
    steps = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or SKIP_TAG in cell.metadata.get("tags", []):
            continue
        target = writefile_target(cell.source)
        if target is not None:
            if Path(target).name != target:
                return None
            steps.append(Step(i, target))
        elif is_grade(cell):
            call = grade_call(cell.source)
            if call is None:
                return None
            steps.append(Step(i, call[1], call[0]))
    return steps


class DirectGrade(TimeLimitedExecute):
    """Run the course's ``%%writefile`` and ``grade(...)`` cells in this process (see the module docstring)."""

    direct = Bool(True, help="grade plain grade(...) cells without starting a Jupyter kernel").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict | None = None, km=None):
        where = (resources or {}).get("metadata", {}).get("path")
        steps = plan(nb) if self.direct and where else None
        if steps is None:  # not the course's plain form, or no notebook folder to write the answers into
            return super().preprocess(nb, resources, km=km)
        folder = Path(where)
        deadline = time.monotonic() + self.notebook_timeout if self.notebook_timeout else None
        for count, step in enumerate(steps, 1):
            cell = nb.cells[step.index]
            cell.execution_count, cell.outputs = count, []
            if step.question is None:
                self._write(cell, folder / step.file)
            elif deadline is not None and time.monotonic() > deadline:
                cell.outputs.append(nbformat.v4.new_output(
                    "error", ename="TimeoutError", evalue=f"the notebook's {self.notebook_timeout} s ran out",
                    traceback=[]))
            else:
                text = io.StringIO()
                with contextlib.redirect_stdout(text):
                    report = grade_report(step.question, folder / step.file)
                cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=text.getvalue()))
                if report.record is not None:  # what feedback and the TA's table read (``nkilab.results``)
                    cell.outputs.append(nbformat.v4.new_output("display_data", data={MIME: report.record.to_json(),
                                                                                     "text/plain": ""}))
                cell.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": repr(report.points)},
                                                           execution_count=count))
        return nb, resources

    @staticmethod
    def _write(cell: NotebookNode, path: Path) -> None:
        """What ``%%writefile [-a] <file>`` does: the cell's body to the file, and the same message."""
        first, _, body = cell.source.partition("\n")
        append = WRITEFILE.match(first.strip()) is not None and " -a " in f" {first} "
        existed = path.exists()
        with open(path, "a" if append else "w") as fh:
            fh.write(body if body.endswith("\n") else body + "\n")  # IPython ends a cell magic's body with one
        verb = "Appending to" if append else ("Overwriting" if existed else "Writing")
        cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=f"{verb} {path.name}\n"))
