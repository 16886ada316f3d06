"""What grading does with each cell of a rebuilt notebook, and the grader's own way of running a grade cell.

After ``RestoreSubmission`` (``nkilab.intake.sanitize``) a notebook's cells are the release's, with only the answer cells'
sources the student's.  Grading treats them so (``plan``):

* a ``%%writefile <file>`` answer: the grader writes the cell's body to ``<file>`` in the notebook's folder
  itself (``write_answer``), as IPython would -- the file a grade cell grades is the grader's copy of the answer;
* a grade cell that calls the grading library (``grade``, ``grade_report``, ``nkilab``, or a name a teacher's cell
  imported from it): run by the grader, outside the student's kernel, in a namespace of its own holding nothing
  but what the teacher's cells imported from ``nkilab`` (``run_grader_cell``).  Its source is the release's,
  never the student's, and nothing the student's code did in a kernel (replacing ``nkilab.grade``, printing a
  forged result) can reach it.  A name it uses that only the notebook's kernel defines is an error, said so;
* any other code cell (set-up, a plain-Python answer, a test of one): for the notebook's kernel, which runs in
  the sandbox (``nkilab.isolate.kernel_sandbox``) and only when some grade cell needs it; its outputs are the student's,
  and any grade record among them is a forgery, dropped (``drop_records``).

``nkilab.autograde.direct_grade`` (nbgrader's execute step) and ``nkilab.batch.salvage`` (a submission whose grading process died)
both grade from this plan.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import tokenize
import traceback
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import cast

import nbformat
from nbformat import NotebookNode

from nkilab.intake.sanitize import SKIP_TAG, WRITEFILE, is_answer, is_grade, writefile_target
from nkilab.judge.grade import MADE, grade, grade_report
from nkilab.judge.results import MIME

#: names that reach the grading library in a teacher's cell (besides any a teacher's cell imports from it)
LIBRARY_NAMES = frozenset({"nkilab", "grade", "grade_report"})


class Kind(Enum):
    WRITE = "write"  # a %%writefile answer, written by the grader
    GRADER = "grader"  # a grade cell run by the grader
    KERNEL = "kernel"  # anything else, for the notebook's (sandboxed) kernel


@dataclass(frozen=True)
class Step:
    index: int
    kind: Kind
    file: str | None = None  # a WRITE step's file
    grade: bool = False  # a grade cell (its outputs are what nbgrader scores)


def python_source(source: str) -> str:
    """A cell's source as IPython runs it (magics become calls), or the source itself if it cannot be read."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # a cell IPython cannot transform is run as it is (and fails as it would)
        return source


def library_imports(source: str) -> list[ast.stmt]:
    """The statements of a teacher's cell that import from the grading library (``nkilab``)."""
    try:
        tree = ast.parse(python_source(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "nkilab":
            found.append(node)
        elif isinstance(node, ast.Import) and all(a.name.split(".")[0] == "nkilab" for a in node.names):
            found.append(node)
    return found


def _bound(imports: list[ast.stmt]) -> set[str]:
    names = set()
    for node in imports:
        for a in node.names:  # type: ignore[attr-defined]
            names.add(a.asname or a.name.split(".")[0])
    return names


def _names_in(source: str) -> set[str]:
    """Every identifier of a cell's Python (from its tokens: a call through any alias or attribute is seen)."""
    found = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(python_source(source)).readline):
            if tok.type == tokenize.NAME:
                found.add(tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return found


def plan(nb: NotebookNode) -> list[Step]:
    """What grading does with each code cell that runs (see the module docstring), in notebook order."""
    library = set(LIBRARY_NAMES)
    for cell in nb.cells:
        if cell.cell_type == "code" and not is_answer(cell):
            library |= _bound(library_imports(cell.source))
    steps = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or SKIP_TAG in cell.metadata.get("tags", []):
            continue
        target = writefile_target(cell.source)
        if target is not None and Path(target).name == target and is_answer(cell):
            steps.append(Step(i, Kind.WRITE, file=target))
        elif is_grade(cell) and not is_answer(cell) and _names_in(cell.source) & library:
            steps.append(Step(i, Kind.GRADER, grade=True))
        else:
            steps.append(Step(i, Kind.KERNEL, grade=is_grade(cell)))
    return steps


def needs_kernel(steps: list[Step]) -> bool:
    """A kernel is started only when a grade cell's verdict comes from it (a teacher's plain-Python test)."""
    return any(s.kind is Kind.KERNEL and s.grade for s in steps)


def write_answer(cell: NotebookNode, folder: Path) -> list[NotebookNode]:
    """What ``%%writefile [-a] <file>`` does: the cell's body to the file in ``folder``; its output."""
    first, _, body = cell.source.partition("\n")
    target = writefile_target(cell.source)
    assert target is not None and Path(target).name == target
    path = folder / target
    append = WRITEFILE.match(first.strip()) is not None and " -a " in f" {first} "
    existed = path.exists()
    with open(path, "a" if append else "w") as fh:
        fh.write(body if body.endswith("\n") else body + "\n")  # IPython ends a cell magic's body with one
    verb = "Appending to" if append else ("Overwriting" if existed else "Writing")
    return [nbformat.v4.new_output("stream", name="stdout", text=f"{verb} {path.name}\n")]


def grader_namespace() -> dict:
    """A fresh namespace for a notebook's grader-run cells: the grading library's names and nothing else."""
    import nkilab

    return {"__name__": "__main__", "__builtins__": builtins, "nkilab": nkilab, "grade": grade,
            "grade_report": grade_report}


def run_teacher_imports(cell: NotebookNode, namespace: dict, folder: Path) -> None:
    """A teacher's cell's imports from ``nkilab`` into the grader's namespace (a later grade cell may use them)."""
    imports = library_imports(cell.source)
    if imports:
        with contextlib.chdir(folder):
            exec(compile(ast.Module(body=imports, type_ignores=[]), "<teacher's imports>", "exec"), namespace)


def run_grader_cell(cell: NotebookNode, namespace: dict, folder: Path, count: int) -> list[NotebookNode]:
    """Run a (teacher's) grade cell as IPython would -- its last expression's value is its result -- here, in
    ``namespace``, with ``folder`` as the working directory; its outputs: what it printed, each grade record it
    made (``nkilab.judge.results``), its result or its error."""
    out, err = io.StringIO(), io.StringIO()
    outputs: list[NotebookNode] = []
    MADE.clear()
    value, error = None, None
    try:
        tree = ast.parse(python_source(cell.source), "<grade cell>")
        last = cast(ast.Expr, tree.body.pop()) if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with contextlib.chdir(folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(compile(tree, "<grade cell>", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<grade cell>", "eval"), namespace)
    except Exception as exc:  # the cell's error, as the kernel would show it
        error = exc
    for name, stream in (("stdout", out), ("stderr", err)):
        if stream.getvalue():
            outputs.append(nbformat.v4.new_output("stream", name=name, text=stream.getvalue()))
    for rec in MADE:  # what feedback and the TA's table read (``nkilab.judge.results``)
        outputs.append(nbformat.v4.new_output("display_data", data={MIME: rec.to_json(), "text/plain": ""}))
    MADE.clear()
    if error is not None:
        hint = ""
        if isinstance(error, NameError):
            hint = (" (this grade cell runs in the grader, outside the notebook's kernel: it can use what it imports "
                    "and what the teacher's cells import from nkilab, not the notebook's variables)")
        outputs.append(nbformat.v4.new_output("error", ename=type(error).__name__, evalue=f"{error}{hint}",
                                              traceback=traceback.format_exception_only(error)))
    elif value is not None:
        outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": repr(value)},
                                              execution_count=count))
    return outputs


def drop_records(cell: NotebookNode) -> None:
    """A cell the student's kernel ran: any grade record among its outputs is a forgery, and goes."""
    cell.outputs = [o for o in cell.get("outputs", []) if MIME not in o.get("data", {})]
