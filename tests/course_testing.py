"""Shared helpers of the course tests (tests/test_course_*.py): running lesson notebooks under a real Jupyter
kernel and reading their grade cells, writing kernel modules, and the parametrized mutant-grading test."""

from __future__ import annotations

import re
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from nkilab import grade_report
from nkilab.questions import QUESTIONS

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_BUDGET_S = 120  # wall-clock limit for running one lesson notebook top to bottom

HEADER = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport numpy as np\n\n\n"


def write(tmp_path: Path, name: str, body: str, header: str = HEADER) -> Path:
    """Save a kernel module: ``header`` (the imports) followed by the dedented ``body``."""
    path = tmp_path / name
    path.write_text(header + textwrap.dedent(body))
    return path


def solution_variant(stage: str, question: str, *edits: tuple[str, str], name: str | None = None) -> str:
    """A kernel body for ``write``: the reference solution ``solutions/<stage>/<question>.py`` from its
    ``@nki.jit`` on, with each ``(find, replace)`` edit applied (each must match: a stale edit would test
    nothing) and the kernel renamed to ``name`` (e.g. to grade it as another question)."""
    body = "@nki.jit" + (REPO / "solutions" / stage / f"{question}.py").read_text().split("@nki.jit", 1)[1]
    for find, replace in edits:
        assert find in body, find
        body = body.replace(find, replace)
    return body if name is None else body.replace(f"def {question}(", f"def {name}(")


# --------------------------------------------------------------------------- notebooks under Jupyter


def execute(nb: nbformat.NotebookNode, cwd: Path) -> tuple[nbformat.NotebookNode, float]:
    """Run ``nb`` in a python3 Jupyter kernel in ``cwd`` (errors stay in the outputs); return it and the seconds taken."""
    from nkilab import lesson_runs

    start = time.monotonic()
    lesson_runs.execute(nb, cwd, timeout=300)
    return nb, time.monotonic() - start


def run_reference_notebook(stage: str, grade_ids: set[str], dialect: str | None = None) -> nbformat.NotebookNode:
    """The authored lesson ``stage`` (reference answers in place) as ``dialect``'s students get it (default: the
    course's stub dialect), executed once per test run and shared with the docs build (``nkilab.lesson_runs``),
    checked for what every lesson owes: no error or stderr output, exactly ``grade_ids`` graded and each at full
    points, every self-check cell passing at 1.00x the reference's estimated trn2 latency, all within the notebook
    budget.  Returns the executed notebook for the lesson's own checks of its demos."""
    from nkilab import lesson_runs

    run = lesson_runs.run(stage, dialect)
    nb, seconds = run.notebook, run.seconds
    assert errors_and_stderr(nb) == []
    cells = grade_cells(nb)
    assert set(cells) == grade_ids
    for gid, (value, points, _) in cells.items():
        assert value == points, f"{stage} {gid}: {value} of {points}"
    checks = [c for c in nb.cells if c.get("id", "").endswith("_check")]
    assert len(checks) == len(grade_ids)
    for cell in checks:
        text = outputs_text(nb, cell["id"])
        assert "Public checks passed; hidden tests run at grading." in text, (stage, cell["id"], text)
        qid = re.match(r"check (\w+) --", text).group(1)
        if QUESTIONS[qid].speed_points:
            assert "estimate (nkisim cost model, trn2)" in text and f"{twin_ratio(qid, dialect):.2f}x the reference" in text
        else:  # graded on correctness only: no timed run
            assert "Speed" not in text and "estimate" not in text, text
    assert seconds < NOTEBOOK_BUDGET_S, f"{stage} reference notebook took {seconds:.0f} s"
    figures = sum(bool({"image/png", "image/svg+xml"} & set(o.get("data", {})))  # plots; diagrams (SVG)
                  for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert figures >= 1, f"{stage}: every lesson shows at least one figure (issue 22)"
    return nb


def twin_ratio(qid: str, dialect: str | None) -> float:
    """The latency ratio check() prints for the lesson's own reference kernel in ``dialect`` (default: the course's
    stub dialect).  Off a device a kernel is timed against the legacy reference: 1.0 for the legacy twin itself; the
    0.6 twin's own estimate over it for the 0.6 one -- 1.0 but where AWS runs 0.6's ``nl.rsqrt`` on GpSimd
    (tests/test_dialects.py: within 1%)."""
    from nkilab import manifest
    from nkilab._child import make_grid
    from nkilab.modules import kernel_dialect, load_kernel
    from nkisim import api

    if (dialect or manifest.course().stub_dialect) == "legacy":
        return 1.0
    q = QUESTIONS[qid]
    args = q.inputs(q.speed_case, 0, 0)
    total = {}
    for path in (q.solution_path, q.reference_path(on_device=True)):
        kernel = load_kernel(path, q.function)
        grid = make_grid(q.grid, kernel_dialect(api.as_kernel(kernel)))
        total[path] = api.launch(kernel, args, grid=grid, target=q.target or "trn2").estimate().total_us
    return total[q.reference_path(on_device=True)] / total[q.solution_path]


def grade_cells(nb: nbformat.NotebookNode) -> dict[str, tuple[float | None, float, list]]:
    """grade_id -> (float result of the cell or None, points, outputs) for every autograded code cell."""
    found = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        value = None
        for out in cell.outputs:
            if out.output_type == "execute_result":
                value = float(out.data["text/plain"])
        found[meta["grade_id"]] = (value, float(meta["points"]), cell.outputs)
    return found


def errors_and_stderr(nb: nbformat.NotebookNode) -> list[str]:
    """Every error output and every stderr stream of an executed notebook, one line each."""
    bad = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                bad.append(f"{cell.get('id')}: {out.ename}: {out.evalue}")
            if out.output_type == "stream" and out.name == "stderr":
                bad.append(f"{cell.get('id')}: stderr: {out.text[:300]}")
    return bad


def outputs_text(nb: nbformat.NotebookNode, cell_id: str) -> str:
    """The printed text of the cell with id ``cell_id``."""
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    return "".join(o.get("text", "") for o in cell.outputs)


# --------------------------------------------------------------------------- the grader's verdicts


def processes_under(folder: Path, markers: tuple[str, ...] = (), repo: Path | None = None) -> list[str]:
    """Processes working for a grading run in ``folder``: their working directory or command line is in it, or
    their command line holds one of ``markers`` (a grading child, a sandbox) -- and, given ``repo``, their command
    line or environment names that checkout (other checkouts' test runs on the same machine are not this run's) and
    they are not working for a live test (a process of this test run's pytest, or of another pytest-xdist worker,
    descends from the run's pytest; one a finished grading run left behind was handed to init).
    For "nothing outlives grading"."""
    import os

    root = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(p / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(folder)) or str(folder) in cmd:
            found.append(f"{p.name}: {cmd[:120]}")
        elif any(m in cmd for m in markers) and (repo is None or _names(p, cmd, repo)) \
                and not _descends_from(int(p.name), root):
            found.append(f"{p.name}: {cmd[:120]}")
    return found


def _descends_from(pid: int, root: int) -> bool:
    """Whether ``root`` is among the ancestors of process ``pid`` (False once the chain cannot be read)."""
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent's pid
        if pid == root:
            return True
    return False


def _names(proc: Path, cmd: str, repo: Path) -> bool:
    """Whether a process's command line or environment mentions the checkout ``repo``."""
    if str(repo) in cmd:
        return True
    try:
        return str(repo).encode() in (proc / "environ").read_bytes()
    except OSError:
        return True  # cannot tell: count it


# --------------------------------------------------------------------------- grading in process


def grade_in_process(qid: str, path: Path, seed: int, name: str | None = None):
    """``grade_report`` of the kernel in the file ``path``, imported and run in this process: the grader's cases,
    tolerances and tiers without its sandbox (for mutants and tier kernels, where the sandbox is not the point)."""
    from nkilab.modules import load_kernel

    return grade_report(qid, load_kernel(path, name or QUESTIONS[qid].function), seed=seed, verbose=False)


def inprocess_mutant_test(mutants: dict[str, tuple[str, str]], *, seed: int,
                          header: str = HEADER) -> Callable[[Path, str], None]:
    """The test that every mutant (name -> (question id, kernel body)) loses correctness points, and so earns no
    speed points, graded with ``seed`` in this process (``grade_in_process``: the sandbox is not what a mutant
    tests; each stage's lesson run grades its references through it). Assign it to a ``test_*`` name::

        test_mutants_lose_correctness_points = inprocess_mutant_test(MUTANTS, seed=7)
    """

    @pytest.mark.parametrize("name", sorted(mutants))
    def test_mutants_lose_correctness_points(tmp_path: Path, name: str) -> None:
        qid, body = mutants[name]
        r = grade_in_process(qid, write(tmp_path, f"{name}.py", body, header), seed)
        assert r.evaluation is not None and r.evaluation.problem is None, (name, r.evaluation)
        assert r.correctness < QUESTIONS[qid].correctness_points, (name, r.correctness)
        assert r.speed == 0.0  # correctness gates speed

    return test_mutants_lose_correctness_points
