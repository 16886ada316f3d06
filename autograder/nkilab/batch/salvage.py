"""Grade a submission whose notebook kernel died: the grade cells run in throwaway processes, one at a time.

When the Jupyter kernel dies, nbgrader discards the whole submission ("Kernel died", "Removing failed
assignment") and the export shows 0 as if nothing had been handed in.  Our grade cells run the student's
kernel in a child process, so a kernel that crashes only loses its own question -- but a child can still kill
the process that started it (``os.kill(os.getppid(), SIGKILL)``), which *is* the notebook's kernel.

Salvaging replays the rebuilt notebook's plan (``nkilab.autograde.cells``: answers written, grade cells run by the grader,
nothing of the student's run) in a fresh process, logging each grade cell's start and result to a file as it goes.  If that process dies or runs out of time,
the grade cell it was running scores 0 and a new process carries on from the next one; the points land in
the real gradebook and an autograded notebook with the outputs is written, so feedback is generated as usual.

    python -m nkilab.batch.salvage JOB.json   # the replay process (started by ``salvage``)
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from nkilab.autograde import cells
from nkilab.intake.sanitize import grade_id, is_answer, is_grade
from nkilab.isolate.processes import kill_group
from nkilab.judge.results import MIME

TEXT_LIMIT = 20000


@dataclass
class CellOutcome:
    """One grade cell's result: points (None: needs a person), and what it printed."""

    points: float | None
    max_points: float
    text: str
    value: str | None = None
    record: dict | None = None  # the grade record the cell made (``nkilab.judge.results``), as JSON


def _points(cell: NotebookNode) -> float:
    return float(cell.metadata.get("nbgrader", {}).get("points", 0.0))


def score(value: object, error: bool, max_points: float) -> float:
    """nbgrader's rule for a code grade cell: an error scores 0, a number is partial credit, anything else full."""
    if error:
        return 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        v = float(value)
        return 0.0 if math.isnan(v) else min(max(v, 0.0), max_points)
    return max_points


def _replay(job_path: str) -> int:
    """The replay process: the notebook's plan (``nkilab.autograde.cells``) -- answers written, grade cells run by the
    grader -- skipping finished grade cells, logging as it goes.  No code of the student's runs here: a grade cell
    that needs the notebook's kernel (a teacher's plain-Python test) is not run, and scores 0, said so."""
    job = json.loads(Path(job_path).read_text())
    nb = nbformat.read(job["notebook"], as_version=4)
    folder = Path(job_path).parent
    done = set(job["done"])
    log = open(job["log"], "a", buffering=1)  # noqa: SIM115  (line-buffered: survives a kill)
    namespace = cells.grader_namespace()
    for count, step in enumerate(cells.plan(nb), 1):
        cell = nb.cells[step.index]
        gid = grade_id(cell)
        if step.kind is cells.Kind.WRITE:
            cells.write_answer(cell, folder)
            continue
        if not step.grade:
            if not is_answer(cell):
                cells.run_teacher_imports(cell, namespace, folder)
            continue
        if gid in done:
            continue
        log.write(json.dumps({"gid": gid, "event": "start"}) + "\n")
        if step.kind is cells.Kind.GRADER:
            outputs = cells.run_grader_cell(cell, namespace, folder, count)
        else:
            outputs = [nbformat.v4.new_output("error", ename="NotRun", evalue=KERNEL_NOT_RUN, traceback=[])]
        errors = [o for o in outputs if o.output_type == "error"]
        result = [o for o in outputs if o.output_type == "execute_result"]
        value = result[-1]["data"]["text/plain"] if result else None
        records = [o["data"][MIME] for o in outputs if MIME in o.get("data", {})]
        text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
        text += "".join(f"{o['ename']}: {o['evalue']}\n" for o in errors)
        log.write(json.dumps({"gid": gid, "event": "done", "error": bool(errors), "number": _number(value),
                              "repr": value, "text": text[-TEXT_LIMIT:], "record": records[-1] if records else None})
                  + "\n")
    log.close()
    return 0


#: why a grade cell that needs the notebook's kernel scores 0 when its submission is salvaged
KERNEL_NOT_RUN = "this test runs in the notebook's kernel, which grading a salvaged submission does not start"


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _run_replay(job: dict, folder: Path, timeout: float, env: dict[str, str]) -> bool:
    """One replay process; True if it finished by itself."""
    job_path = folder / "salvage-job.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.Popen([sys.executable, "-m", "nkilab.batch.salvage", str(job_path)], cwd=folder, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return False


def salvage(restored: NotebookNode, folder: Path, *, timeout: float, env: dict[str, str] | None = None
            ) -> dict[str, CellOutcome]:
    """Run the grade cells of ``restored`` in ``folder``; returns grade_id -> outcome for every code grade cell."""
    folder.mkdir(parents=True, exist_ok=True)
    nb_path = folder / "salvage-notebook.ipynb"
    nbformat.write(restored, nb_path)
    log_path = folder / "salvage-log.jsonl"
    log_path.write_text("")
    #: a grade cell without a grade_id has no row in the gradebook to score (the release gives every one an id)
    grade_cells = {gid: c for c in restored.cells if c.cell_type == "code" and is_grade(c) and (gid := grade_id(c))}
    outcomes: dict[str, CellOutcome] = {}
    env = dict(os.environ if env is None else env)
    for _ in range(len(grade_cells) + 1):
        finished = _run_replay({"notebook": str(nb_path), "log": str(log_path), "done": sorted(outcomes)},
                               folder, timeout, env)
        started: str | None = None
        for line in log_path.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            gid = event.get("gid")
            if gid not in grade_cells or gid in outcomes:
                continue
            if event["event"] == "start":
                started = gid
            else:
                cell = grade_cells[gid]
                value = event.get("number")
                outcomes[gid] = CellOutcome(score(value, event.get("error", True), _points(cell)), _points(cell),
                                            event.get("text", ""), event.get("repr"), event.get("record"))
                started = None
        if started is not None:
            why = "ran out of time" if not finished else "died"
            outcomes[started] = CellOutcome(0.0, _points(grade_cells[started]),
                                            f"The grading process {why} while running this cell: 0 points.\n")
        if finished and started is None:
            break
    for gid, cell in grade_cells.items():
        outcomes.setdefault(gid, CellOutcome(0.0, _points(cell), "This grade cell could not be run: 0 points.\n"))
    return outcomes


def with_outcomes(restored: NotebookNode, outcomes: dict[str, CellOutcome], reason: str) -> NotebookNode:
    """The rebuilt notebook carrying the salvaged outputs, headed by a note saying how it was graded."""
    nb = nbformat.from_dict(json.loads(nbformat.writes(restored)))
    for cell in nb.cells:
        outcome = outcomes.get(grade_id(cell) or "")
        if cell.cell_type != "code" or outcome is None:
            continue
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=outcome.text)]
        if outcome.record is not None:
            cell.outputs.append(nbformat.v4.new_output("display_data", data={MIME: outcome.record, "text/plain": ""}))
        if outcome.value is not None:
            cell.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": outcome.value},
                                                       execution_count=None))
    note = nbformat.v4.new_markdown_cell(
        f"**Graded outside the notebook's kernel.** {reason} Each grade cell was run in a separate process; "
        "a cell whose process died scored 0.")
    note["id"] = "nkilab-salvage-note"
    nb.cells.insert(0, note)
    return nb


def answer_cells_unchanged(nb: NotebookNode) -> dict[str, bool]:
    """grade_id -> True for graded answer cells (written answers) the student left as released."""
    from nbgrader.utils import compute_checksum

    found = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if is_grade(cell) and is_answer(cell):
            found[grade_id(cell) or ""] = meta.get("checksum") == compute_checksum(cell)
    return found


if __name__ == "__main__":
    sys.exit(_replay(sys.argv[1]))
