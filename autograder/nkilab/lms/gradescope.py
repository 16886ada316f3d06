"""Grading on Gradescope: ``make gradescope`` builds one autograder bundle per assignment, running this grader.

    python -m nkilab.lms.gradescope build [--assignment NAME] [--out DIR] [--no-sandbox]
    python -m nkilab.lms.gradescope run --assignment NAME [--root /autograder]      # what run_autograder calls

A bundle (``build/gradescope/<assignment>.zip``; ``build/gradescope/legacy/`` for the legacy twins, ``make gradescope
DIALECT=legacy``) holds ``setup.sh``, ``run_autograder``, the simulator and
``nkilab`` packages, the released notebook and the reference solutions' latencies measured at build time
(``reference_latencies.json``) -- not the solutions themselves, so nothing in a grading container can reveal
them.  ``run`` takes the student's notebook from ``<root>/submission``, rebuilds it on the release (only the
answer cells' sources are the student's, as in ``make grade``), writes each kernel answer to a scratch folder,
grades it with ``nkilab.judge.grade`` (the same screen, sandbox, cases, seed handling and speed tiers) and writes
``<root>/results/results.json`` in Gradescope's format, rendered from each question's grade record
(``nkilab.judge.results``): per question one visible test (public cases in full, hidden cases as a count and their
verdict categories) and one zero-point test with the hidden cases' details for the course staff only
(``hidden``: a TA's private hidden cases never reach a student).  Written answers are left to the course staff.
The grading seed is drawn afresh for every submission.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from nkilab.authoring.release import assignments_dir, shown
from nkilab.course import manifest
from nkilab.course.questions import HIDDEN_CASES_ENV, QUESTION_CALL, QUESTIONS, REPO, timed_references
from nkilab.intake import handins as intake
from nkilab.intake.sanitize import grade_id, is_grade, restore, writefile_target
from nkilab.isolate import sandbox
from nkilab.isolate.facts import Latency
from nkilab.judge.check import truncate_text
from nkilab.judge.evaluate import PRESET_ENV, grading_target, presets, reference_key, reference_latency
from nkilab.judge.grade import GRADING_ENV, grade_report
from nkilab.judge.results import Audience
from nkisim.api import Dialect

CONFIG = "gradescope.json"  # in the bundle: the assignment, the sandbox policy
LATENCIES = "reference_latencies.json"
OUTPUT_CHARS = 8000  # of one test's output
#: what the grading container needs (the notebook tools and NumPy; no Jupyter, torch or nbgrader)
PACKAGES = ("numpy", "ml_dtypes", "threadpoolctl", "nbformat")


@dataclass(frozen=True)
class KernelQuestion:
    """A grade cell of the release: its question, the file its answer cell writes, its grade id."""

    qid: str
    file: str
    grade_id: str


def kernel_questions(release: nbformat.NotebookNode) -> list[KernelQuestion]:
    """The release's autograded kernel questions, in order (each answer cell writes ``<function>.py``)."""
    found = []
    for cell in release.cells:
        m = QUESTION_CALL.search(cell.source) if cell.cell_type == "code" and is_grade(cell) else None
        if m and m.group(1) in QUESTIONS:
            found.append(KernelQuestion(m.group(1), QUESTIONS[m.group(1)].default_module, grade_id(cell) or ""))
    return found


# --------------------------------------------------------------------------- building the bundle


SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv bubblewrap >/dev/null
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -q -r /autograder/source/requirements.txt
cd /autograder/source && PYTHONPATH=/autograder/source /autograder/venv/bin/python -m nkisim --install-hook
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission; it writes results/results.json under the autograder root.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$(cd "$(dirname "$0")" && pwd)"
[ -d "$SOURCE/nkilab" ] || SOURCE="$ROOT/source"
PYTHON="${NKILAB_PYTHON:-$ROOT/venv/bin/python}"
cd "$SOURCE"
PYTHONPATH="$SOURCE" exec "$PYTHON" -m nkilab.lms.gradescope run --root "$ROOT" --source "$SOURCE"
"""


def _pins() -> list[str]:
    wanted = {p.lower().replace("_", "-") for p in PACKAGES}
    pins = []
    for line in (REPO / "requirements.txt").read_text().splitlines():
        spec = line.split("#")[0].strip()
        if spec and spec.split("==")[0].split("[")[0].lower().replace("_", "-") in wanted:
            pins.append(spec)
    return pins


HIDDEN = "hidden_cases.json"  # in the bundle when the TA gives their own hidden cases


def build(assignment: str, out: Path, *, sandboxed: bool = True, hidden: Path | None = None,
          dialect: Dialect | str | None = None) -> Path:
    """``out/<assignment>.zip``: the autograder bundle for one assignment, on its notebook in ``dialect`` (default:
    the course's ``stub_dialect``; ``legacy``: the twin in ``assignments/legacy/``)."""
    release = assignments_dir(REPO, dialect or manifest.course().stub_dialect) / f"{assignment}.ipynb"
    if not release.exists():
        raise SystemExit(f"make gradescope: no released notebook {release} (run make release)")
    questions = kernel_questions(nbformat.read(release, as_version=4))
    latencies: dict[str, Latency] = {}
    for q in (r for kq in questions for r in timed_references(QUESTIONS[kq.qid])):
        target = grading_target(q)
        res = reference_latency(q, target, 300.0)
        if not res.ok:
            raise SystemExit(f"make gradescope: the reference for {q.qid} did not run: {res.error}")
        latencies[reference_key(q, target)] = res
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        shutil.copytree(REPO / "nkisim", src / "nkisim", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(Path(__file__).parents[1], src / "nkilab", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(release, src / release.name)
        (src / LATENCIES).write_text(presets(latencies))
        if hidden is not None:
            shutil.copy(hidden, src / HIDDEN)
        (src / CONFIG).write_text(json.dumps({"assignment": assignment, "notebook": release.name,
                                              "sandbox": sandboxed}, indent=1))
        (src / "requirements.txt").write_text("\n".join(_pins()) + "\n")
        (src / "setup.sh").write_text(SETUP_SH)
        (src / "run_autograder").write_text(RUN_AUTOGRADER)
        out.mkdir(parents=True, exist_ok=True)
        bundle = out / f"{assignment}.zip"
        with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(src.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo(str(path.relative_to(src)), date_time=(2026, 1, 1, 0, 0, 0))
                    info.external_attr = (0o755 if path.name in ("setup.sh", "run_autograder") else 0o644) << 16
                    info.compress_type = zipfile.ZIP_DEFLATED
                    zf.writestr(info, path.read_bytes())
    return bundle


# --------------------------------------------------------------------------- grading one submission


def _submitted_notebook(submission: Path, expected: str) -> tuple[nbformat.NotebookNode | None, str]:
    """The student's notebook in Gradescope's submission folder (its outputs dropped if it was too large with
    them), or None; and a note saying why not, or what was dropped."""
    exact = submission / expected
    found = [exact] if exact.is_file() else sorted(p for p in submission.rglob("*.ipynb")
                                                   if ".ipynb_checkpoints" not in p.parts)
    if not found:
        return None, f"no notebook in the submission (expected {expected})"
    if len(found) > 1:
        return None, f"{len(found)} notebooks in the submission; hand in only {expected}"
    data, note = intake.load(found[0])
    if data is None:
        return None, f"{found[0].name} is {note}"
    return nbformat.reads(data.decode("utf-8"), as_version=4), (f"{found[0].name} was {note}" if note else "")


def _test(name: str, score: float, max_score: float, output: str, visibility: str, passed: bool | None = None) -> dict:
    """One Gradescope test; ``passed`` defaults to full marks (a 0-point test says whether its cases passed)."""
    ok = score >= max_score if passed is None else passed
    return {"name": name, "score": round(score, 4), "max_score": max_score, "output": truncate_text(output, OUTPUT_CHARS),
            "visibility": visibility, "status": "passed" if ok else "failed"}


def grade_submission(root: Path, source: Path) -> dict:
    """Gradescope's results for ``root/submission`` (see the module docstring)."""
    start = time.monotonic()
    config = json.loads((source / CONFIG).read_text())
    os.environ[PRESET_ENV] = (source / LATENCIES).read_text()
    os.environ[GRADING_ENV] = "1"  # the held-back test gets every hidden case; the visible one only counts
    if (source / HIDDEN).exists():
        os.environ[HIDDEN_CASES_ENV] = str(source / HIDDEN)
    if not config.get("sandbox", True):
        os.environ[sandbox.NO_SANDBOX_ENV] = "1"
    release = nbformat.read(source / config["notebook"], as_version=4)
    questions = kernel_questions(release)
    notes = [sandbox.WARNING] if not config.get("sandbox", True) else []
    submitted, why = _submitted_notebook(root / "submission", config["notebook"])
    tests = []
    with tempfile.TemporaryDirectory(prefix="nkilab-gs-") as tmp:
        answers: dict[str, str] = {}
        if submitted is not None:
            restored = restore(submitted, release, skip_teaching_cells=False)
            notes += ([why] if why else []) + restored.notes
            for cell in restored.notebook.cells:
                target = writefile_target(cell.source) if cell.cell_type == "code" else None
                if target:
                    answers[target] = cell.source.split("\n", 1)[1] if "\n" in cell.source else ""
        else:
            notes.append(why)
        for kq in questions:
            q = QUESTIONS[kq.qid]
            if kq.file not in answers:
                tests.append(_test(q.title, 0.0, q.points, f"no answer for {q.qid} ({why if submitted is None else 'cell missing'})",
                                   "visible"))
                continue
            kernel = Path(tmp) / kq.file
            kernel.write_text(answers[kq.file])
            with contextlib.redirect_stdout(io.StringIO()):
                report = grade_report(q.qid, kernel)
            rec = report.record
            assert rec is not None
            tests.append(_test(q.title, report.points, q.points, rec.render_text(Audience.STUDENT), "visible"))
            hidden_ok = rec.problem is None and all(c.ok for c in rec.cases if c.hidden)
            tests.append(_test(f"{q.title}: hidden case details (course staff only)", 0.0, 0.0,
                               rec.render_text(Audience.TA), "hidden", passed=hidden_ok))
    return {"score": round(sum(t["score"] for t in tests), 4), "execution_time": round(time.monotonic() - start),
            "output": "\n".join(notes) or "Kernel questions graded; written answers are graded by the course staff.",
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the autograder bundles")
    b.add_argument("--assignment", action="append", help="only these (default: every released assignment)")
    b.add_argument("--out", type=Path, default=None,
                   help="where the bundles go (default: build/gradescope/, build/gradescope/legacy/ for the twin)")
    b.add_argument("--dialect", choices=manifest.DIALECT_WORDS, default=None,
                   help="bundle the notebooks of this dialect: nki (NKI 0.6, assignments/) or legacy "
                        "(assignments/legacy/); default: the course's stub_dialect")
    b.add_argument("--no-sandbox", action="store_true", help="grade without bubblewrap in the container (loudly)")
    b.add_argument("--hidden-cases", type=Path, default=None, help="your own hidden cases (JSON), shipped in the bundle")
    r = sub.add_parser("run", help="grade <root>/submission into <root>/results/results.json")
    r.add_argument("--root", type=Path, default=Path("/autograder"))
    r.add_argument("--source", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        dialect = manifest.dialect(args.dialect or manifest.course().stub_dialect)
        folder = assignments_dir(REPO, dialect)
        out = args.out or REPO / "build" / "gradescope" / folder.relative_to(REPO / "assignments")
        names = args.assignment or sorted(p.stem for p in folder.glob("*.ipynb"))
        for name in names:
            bundle = build(name, out, sandboxed=not args.no_sandbox, hidden=args.hidden_cases, dialect=dialect)
            print(f"make gradescope: wrote {shown(bundle)}")
        return 0
    results = grade_submission(args.root, args.source or args.root / "source")
    out = args.root / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"score {results['score']} in {results['execution_time']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
