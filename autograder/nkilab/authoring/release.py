"""``make release``: authored lessons (notebooks/NN_*.py) -> student notebooks and reference kernels.

For each stage and dialect: jupytext turns ``notebooks/<stage>.py`` into ``source/<stage>/<stage>.ipynb`` (that
dialect's cells) inside a temporary nbgrader course directory; ``nbgrader generate_assignment --force`` builds the
student version, which is normalised (deterministic cell ids, no volatile metadata) into
``assignments/<stage>.ipynb`` for the course's ``stub_dialect`` (NKI 0.6) and ``assignments/legacy/<stage>.ipynb``
for its twin; the ``%%writefile`` solution cells become ``solutions/<stage>/<file>.py`` (legacy) and
``solutions/<stage>/nki/<file>.py`` (NKI 0.6).
Then every file in assignments/ is scanned for solution markers and for fingerprints of the reference
code.  ``--check`` regenerates into a temporary directory and fails if the committed files differ.

    python -m nkilab.authoring.release                    # write assignments/ (both dialects) and solutions/
    python -m nkilab.authoring.release --dialect legacy   # only the legacy notebooks (assignments/legacy/) and solutions/
    python -m nkilab.authoring.release --check            # fail if they are stale or leak solutions
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jupytext
import nbformat

from nkilab.course import facts, manifest
from nkisim.api import Dialect

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "autograder" / "nbgrader_config.py"
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN MARK SCHEME")
GENERATED_HEADER = "# Reference solution, generated from notebooks/{stage}.py by `make release`. Do not edit.\n"
KEEP = {"README.md", ".gitignore"}
WRITEFILE = re.compile(r"^%%writefile\s+(?:-a\s+)?(\S+)\s*$")


class ReleaseError(RuntimeError):
    pass


def stages(notebooks: Path) -> list[Path]:
    return sorted(p for p in notebooks.glob("[0-9][0-9]_*.py"))


def cell_dialect(cell: nbformat.NotebookNode) -> Dialect | None:
    """The dialect a lesson cell is written for (its ``dialect="nki"`` metadata), or None for a cell both share."""
    word = cell.metadata.get("dialect")
    if word is None:
        return None
    try:
        return manifest.dialect(word)
    except manifest.ManifestError as err:
        raise ReleaseError(f"cell {cell.metadata.get('nbgrader', {}).get('grade_id')!r}: {err}") from None


def dialect_named(word: Dialect | str) -> Dialect:
    """``manifest.dialect`` for the release's callers: an unknown word is a ``ReleaseError``."""
    try:
        return manifest.dialect(word)
    except manifest.ManifestError as err:
        raise ReleaseError(str(err)) from None


def load_source(path: Path, dialect: Dialect | str | None = None) -> nbformat.NotebookNode:
    """The authored lesson as a notebook with deterministic cell ids and no jupytext bookkeeping, its markdown's
    hardware facts (``{{trn2:sbuf_partition_kib}}``) rendered from the target files (``nkilab.course.facts``).

    A lesson holds each kernel cell in both dialects (metadata ``dialect="legacy"`` / ``dialect="nki"``) and
    cells both share.  With ``dialect`` given, the lesson is the one that dialect's students get: the other
    dialect's cells are dropped (the course's ``stub_dialect`` picks it for ``make release``); without it, every
    cell stays (the release reads every dialect's reference solution from it)."""
    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata.pop("jupytext", None)
    if dialect is not None:
        which = dialect_named(dialect)
        nb.cells = [c for c in nb.cells if cell_dialect(c) in (None, which)]
        for cell in nb.cells:  # a 0.6 twin's grade_id is its legacy cell's plus "_nki": one id in either notebook
            meta = cell.metadata.get("nbgrader", {})
            if cell_dialect(cell) is which and str(meta.get("grade_id", "")).endswith(f"_{which.word}"):
                meta["grade_id"] = meta["grade_id"][: -len(which.word) - 1]
    seen: set[str] = set()
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("lines_to_next_cell", None)
        if cell.cell_type == "markdown":
            try:
                cell.source = facts.render(cell.source)
            except facts.FactError as err:
                raise ReleaseError(f"{path.name}: {err}") from None
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        cid = gid or f"cell-{i:03d}"
        if cid in seen:
            raise ReleaseError(f"{path.name}: duplicate cell id / grade_id {cid!r}")
        seen.add(cid)
        cell["id"] = cid
    nbformat.validate(nb)
    return nb


def _is_solution(cell: nbformat.NotebookNode) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("solution"))


def solution_path(name: str, dialect: Dialect | None) -> str:
    """Where a dialect's reference ``name`` goes under ``solutions/<stage>/``: legacy beside the stage, NKI 0.6
    in ``nki/`` (both define the same kernel, so each question has one file name per dialect)."""
    return name if dialect in (None, Dialect.LEGACY) else f"{dialect.word}/{name}"


def solution_files(nb: nbformat.NotebookNode) -> dict[str, str]:
    """``%%writefile`` solution cells -> {path under solutions/<stage>/: reference module text (markers removed)}.

    A file written by two cells of one dialect (or by a shared cell and a dialect's) is an authoring error: the
    student notebook would run both."""
    files: dict[str, str] = {}
    writers: dict[str, list[Dialect | None]] = {}  # file name -> the dialects of the cells writing it so far
    for cell in nb.cells:
        if cell.cell_type != "code" or not _is_solution(cell):
            continue
        first, _, body = cell.source.partition("\n")
        m = WRITEFILE.match(first.strip())
        if not m:
            continue
        dialect = cell_dialect(cell)
        seen = writers.setdefault(m.group(1), [])
        if dialect in seen or (seen and (dialect is None or None in seen)):
            raise ReleaseError(f"{m.group(1)} is written by more than one solution cell for one dialect")
        seen.append(dialect)
        path = solution_path(m.group(1), dialect)
        lines = [ln for ln in body.splitlines() if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")]
        files[path] = "\n".join(lines).strip("\n") + "\n"
    return files


def fingerprints(*nbs: nbformat.NotebookNode) -> set[str]:
    """Distinctive lines of the solution regions: long enough, and found nowhere else in the lessons given.

    Pass every lesson at once: a line one lesson shows students outside its solutions (boilerplate such as
    ``i_p = nl.arange(128)[:, None]``) is public, so it cannot be another lesson's fingerprint."""
    inside: set[str] = set()
    outside: set[str] = set()
    for cell in (c for nb in nbs for c in nb.cells):
        region = False
        for raw in cell.source.splitlines():
            line = raw.strip().lstrip("#").strip() if cell.cell_type == "markdown" else raw.strip()
            if "BEGIN SOLUTION" in line or "BEGIN MARK SCHEME" in line:
                region = True
                continue
            if "END SOLUTION" in line or "END MARK SCHEME" in line:
                region = False
                continue
            (inside if region else outside).add(line)
    return {ln for ln in inside - outside if len(ln) >= 16 and not ln.startswith("#")}


def _normalise(nb: nbformat.NotebookNode) -> str:
    nb.metadata.pop("jupytext", None)
    nb.metadata.pop("language_info", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("lines_to_next_cell", None)
        cell.metadata.pop("execution", None)
    return nbformat.writes(nb, version=4) + "\n"


def _nbgrader(course: Path, stages: list[str]) -> None:
    """``nbgrader generate_assignment`` of every stage in ``stages`` in the temporary course ``course`` (one
    nbgrader start-up for them all)."""
    cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", "*", "--force", "--create",
           f"--CourseDirectory.root={course}", "--log-level=WARN"]
    env = dict(os.environ)  # nbgrader runs the `alembic` script from PATH: put this venv's bin/ first
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=900, env=env)
    missing = [s for s in stages if not (course / "release" / s / f"{s}.ipynb").exists()]
    if proc.returncode != 0 or missing:
        raise ReleaseError(f"nbgrader generate_assignment {', '.join(missing) or '*'} failed:\n{proc.stdout}\n"
                           f"{proc.stderr}")


def assignments_dir(root: Path, dialect: Dialect | str) -> Path:
    """Where ``dialect``'s student notebooks go under ``root``: the course's ``stub_dialect`` in ``assignments/``,
    its twin in ``assignments/<dialect>/`` (``assignments/legacy/``: the CS149-style ``neuronxcc.nki`` set)."""
    which = dialect_named(dialect)
    return root / "assignments" if which is manifest.course().stub_dialect else root / "assignments" / which.word


def release_dialects(dialect: Dialect | str | None = None) -> list[Dialect]:
    """The dialects ``make release`` writes notebooks for: ``dialect`` alone, or every one, the stub dialect first."""
    if dialect is not None:
        return [dialect_named(dialect)]
    stub = manifest.course().stub_dialect
    return [stub, *(d for d in manifest.DIALECTS if d is not stub)]


def build(out: Path, notebooks: Path = REPO / "notebooks", dialect: Dialect | str | None = None) -> list[Path]:
    """Generate the student notebooks of ``dialect`` (default: every dialect: the course's ``stub_dialect`` in
    ``assignments/``, the other in ``assignments/<dialect>/``) and solutions/ (every dialect's reference) under
    ``out``; returns the files written."""
    written: list[Path] = []
    lessons = {src.stem: load_source(src) for src in stages(notebooks)}
    for which in release_dialects(dialect):
        with tempfile.TemporaryDirectory(prefix="nkilab-release-") as tmp:
            course = Path(tmp) / "course"
            course.mkdir()
            shutil.copy(CONFIG, course / "nbgrader_config.py")
            for src in stages(notebooks):
                folder = course / "source" / src.stem
                folder.mkdir(parents=True)
                nbformat.write(load_source(src, which), folder / f"{src.stem}.ipynb")
            _nbgrader(course, list(lessons))
            for stage in lessons:
                student = nbformat.read(course / "release" / stage / f"{stage}.ipynb", as_version=4)
                target = assignments_dir(out, which) / f"{stage}.ipynb"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(_normalise(student))
                written.append(target)
    for stage, nb in lessons.items():
        for name, text in solution_files(nb).items():
            path = out / "solutions" / stage / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(GENERATED_HEADER.format(stage=stage) + text)
            written.append(path)
    leaks = scan_for_leaks(out / "assignments", fingerprints(*lessons.values()))
    if leaks:
        raise ReleaseError("solution code in assignments/:\n" + "\n".join(leaks))
    return written


def check_stages(notebooks: Path = REPO / "notebooks") -> list[str]:
    """The lessons against the course manifest: one lesson per stage, in its order."""
    want = [s.slug for s in manifest.course().stages]
    have = [p.stem for p in stages(notebooks)]
    return [] if want == have else [f"notebooks/ has lessons {have} but the manifest lists stages {want}"]


def scan_for_leaks(folder: Path, prints: set[str]) -> list[str]:
    """Every file under ``folder`` (README/.gitignore aside): solution markers or reference-code lines."""
    found: list[str] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in KEEP):
        text = path.read_text(errors="replace")
        for marker in MARKERS:
            if marker in text:
                found.append(f"{path}: contains {marker!r}")
        for fp in sorted(prints):
            if fp in text:
                found.append(f"{path}: contains reference code {fp!r}")
    return found


def reference_fingerprints(notebooks: Path = REPO / "notebooks") -> set[str]:
    return fingerprints(*(load_source(src) for src in stages(notebooks)))


def check(repo: Path = REPO) -> list[str]:
    """Problems with the committed generated files: stale, missing, extra, or leaking solutions."""
    problems = check_stages(repo / "notebooks")
    problems += [f"{rel}: its course tables are stale: run `make release`" for rel in manifest.stale_tables(repo)]
    problems += scan_for_leaks(repo / "assignments", reference_fingerprints(repo / "notebooks"))
    with tempfile.TemporaryDirectory(prefix="nkilab-release-check-") as tmp:
        fresh = Path(tmp)
        build(fresh, repo / "notebooks")
        for sub in ("assignments", "solutions"):
            new = {p.relative_to(fresh / sub) for p in (fresh / sub).rglob("*") if p.is_file()}
            old = {p.relative_to(repo / sub) for p in (repo / sub).rglob("*")
                   if p.is_file() and p.name not in KEEP and "__pycache__" not in p.parts}
            for rel in sorted(new - old):
                problems.append(f"{sub}/{rel} is missing: run `make release`")
            for rel in sorted(old - new):
                if sub == "solutions" or rel.suffix == ".ipynb":
                    problems.append(f"{sub}/{rel} is not generated by `make release` (stale or hand-made)")
            for rel in sorted(new & old):
                if not filecmp.cmp(fresh / sub / rel, repo / sub / rel, shallow=False):
                    problems.append(f"{sub}/{rel} is stale: run `make release`")
    return problems


def shown(path: Path) -> str:
    """``path`` as a log line names it: relative to the working directory when inside it, else absolute."""
    path = path.resolve()
    cwd = Path.cwd().resolve()
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if assignments/ or solutions/ are stale or leak")
    ap.add_argument("--out", type=Path, default=REPO, help="where assignments/ and solutions/ go")
    ap.add_argument("--dialect", choices=manifest.DIALECT_WORDS, default=None,
                    help="write only this dialect's student notebooks (default: both; the manifest's stub_dialect "
                         "goes in assignments/, the other in assignments/<dialect>/)")
    args = ap.parse_args(argv)
    try:
        if args.check:
            problems = check()
            for p in problems:
                print(p)
            print("release check:", "FAILED" if problems else "up to date, no solution code in assignments/")
            return 1 if problems else 0
        problems = check_stages()
        if problems:
            raise ReleaseError("; ".join(problems))
        for path in build(args.out, dialect=args.dialect):
            print("wrote", shown(path))
        if args.out.resolve() == REPO:
            for rel in manifest.write_tables():
                print("rewrote the course tables of", rel)
        return 0
    except ReleaseError as err:
        print(f"release failed: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
