"""``make course COURSE=dir``: a TA's own nbgrader course, built from the lessons in one step.

nbgrader wants ``source/<assignment>/<notebook>.ipynb`` with nbgrader cell metadata; the lessons are authored as
jupytext ``notebooks/NN_<stage>.py``.  This builds, in ``COURSE``:

1. ``nbgrader_config.py`` (the course's settings: ``autograder/nbgrader_config.py`` with your course id);
2. ``source/<stage>/<stage>.ipynb`` for the stages the TA gives out now (``--stages 1,2``, ``STAGES=1,2`` in make;
   ``all`` for every lesson), exactly as ``make release`` reads them.  There is no default: a stage in the course is
   an assignment in the gradebook, and ``grades.csv`` and the LMS export would score 0 of its points for a stage
   nobody was given yet; running again with more stages adds them;
3. ``release/<stage>/<stage>.ipynb`` and the SQLite gradebook (``gradebook.db``) with ``nbgrader
   generate_assignment`` (each assignment recorded with its graded cells and points);
4. the class roster in the gradebook with ``nbgrader db student import`` when ``--roster FILE.csv`` is given
   (columns ``id,first_name,last_name,email``).

Every nbgrader command runs from this virtualenv with its ``bin/`` on ``PATH`` (nbgrader starts ``alembic`` by
name); ``install-path-hook`` does the same for a bare ``.venv/bin/nbgrader`` (``make setup`` runs it).  An
existing course is never overwritten: re-running adds the lessons it lacks (``--force`` regenerates them).

    python -m nkilab.authoring.nbgrader_course build --course DIR --stages 1,2 [--roster roster.csv] [--course-id ID]
    python -m nkilab.authoring.nbgrader_course install-path-hook
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat

from nkilab.authoring.release import CONFIG, REPO, load_source, stages
from nkilab.course import manifest
from nkisim.api import Dialect

PATH_HOOK = "nkilab_venv_path.pth"
#: one line a .pth file runs at interpreter start: this environment's bin/ first on PATH, as `activate` would
PATH_HOOK_LINE = ("import os, sys; _b = os.path.dirname(sys.executable); _p = os.environ.get('PATH', ''); "
                  "os.environ['PATH'] = _p if _b in _p.split(os.pathsep) else _b + os.pathsep + _p\n")


class CourseError(RuntimeError):
    pass


def venv_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with this interpreter's bin/ first on PATH."""
    env = dict(os.environ if base is None else base)
    bin_dir = str(Path(sys.executable).parent)
    parts = env.get("PATH", "").split(os.pathsep)
    if bin_dir not in parts:
        env["PATH"] = os.pathsep.join([bin_dir, *[p for p in parts if p]])
    return env


def nbgrader(course: Path, *args: str, timeout: float = 900) -> str:
    """Run ``nbgrader <args>`` in ``course`` from this virtualenv; its output, or a CourseError with it."""
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=venv_env(),
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise CourseError(f"nbgrader {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
                          f"{proc.stderr[-3000:]}")
    return proc.stdout + proc.stderr


def write_config(course: Path, course_id: str | None) -> Path:
    """The course's nbgrader_config.py: the lab's settings, with ``course_id`` if given (kept if it exists)."""
    path = course / "nbgrader_config.py"
    if path.exists():
        return path
    text = CONFIG.read_text()
    if course_id:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", course_id):
            raise CourseError(f"course id {course_id!r}: use letters, digits, '.', '_' or '-'")
        text = re.sub(r'c\.CourseDirectory\.course_id = "[^"]*"', f'c.CourseDirectory.course_id = "{course_id}"', text)
    path.write_text(text)
    return path


def stage_slugs(spec: str) -> list[str]:
    """The lessons a ``--stages`` value names: stage numbers and ranges (``1,2``, ``1-3``), lesson names
    (``01_vector_add``) or ``all``, in course order."""
    known = manifest.course().stages
    by_number = {s.number: s.slug for s in known}
    wanted: set[str] = set()
    for part in (p.strip() for p in spec.split(",")):
        if part == "all":
            wanted |= set(by_number.values())
        elif re.fullmatch(r"\d+(-\d+)?", part):
            lo, _, hi = part.partition("-")
            numbers = range(int(lo), int(hi or lo) + 1)
            missing = [n for n in numbers if n not in by_number]
            if missing or not numbers:
                raise CourseError(f"no stage {part}: the stages are 1 to {max(by_number)}")
            wanted |= {by_number[n] for n in numbers}
        elif part in by_number.values():
            wanted.add(part)
        else:
            raise CourseError(f"--stages {spec!r}: {part!r} is not a stage number (1 to {max(by_number)}), a range "
                              "such as 1-3, a lesson name or 'all'")
    return [s.slug for s in known if s.slug in wanted]


def build(course: Path, *, only: list[str] | None = None, roster: Path | None = None, course_id: str | None = None,
          force: bool = False, notebooks: Path = REPO / "notebooks", dialect: Dialect | str | None = None) -> list[str]:
    """Build (or extend) the nbgrader course in ``course``, its student notebooks in ``dialect`` (default: the
    manifest's ``stub_dialect``); returns the assignments generated."""
    dialect = manifest.dialect(dialect or manifest.course().stub_dialect)
    lessons = {p.stem: p for p in stages(notebooks)}
    wanted = only or sorted(lessons)
    unknown = [a for a in wanted if a not in lessons]
    if unknown:
        raise CourseError(f"no lesson named {', '.join(unknown)}; the lessons are: {', '.join(sorted(lessons))}")
    if roster is not None and not roster.is_file():
        raise CourseError(f"roster {roster} not found (a CSV with columns id,first_name,last_name,email)")
    course.mkdir(parents=True, exist_ok=True)
    write_config(course, course_id)
    made = []
    for stage in wanted:
        src = course / "source" / stage / f"{stage}.ipynb"
        released = course / "release" / stage / f"{stage}.ipynb"
        if released.exists() and src.exists() and not force:
            continue
        src.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(load_source(lessons[stage], dialect), src)
        nbgrader(course, "generate_assignment", stage, "--force", "--log-level=WARN")
        if not released.exists():
            raise CourseError(f"nbgrader generate_assignment {stage} wrote no {released}")
        made.append(stage)
    if roster is not None:
        nbgrader(course, "db", "student", "import", str(roster.resolve()), "--log-level=WARN")
    return made


def install_path_hook() -> Path:
    """Write the .pth file that puts this environment's bin/ on PATH for every interpreter of it, so a bare
    ``.venv/bin/nbgrader generate_assignment`` finds ``alembic`` without activating the venv."""
    path = Path(sysconfig.get_paths()["purelib"]) / PATH_HOOK
    path.write_text(PATH_HOOK_LINE)
    return path


NEXT_STEPS = """\
Course ready in {course}:
  source/    the lessons as nbgrader source notebooks     release/   the student notebooks to hand out
  gradebook.db  assignments{roster}
Next (autograder/README.md, "Your own class, step by step"):
  hand out release/<assignment>/<assignment>.ipynb (the same notebooks as assignments/ in the repository),
  collect hand-ins into {course}/submitted/<student>/<assignment>/ (nbgrader collect or zip_collect),
  then grade: make grade COURSE={course}"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nkilab.authoring.nbgrader_course", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build or extend an nbgrader course from the lessons")
    b.add_argument("--course", type=Path, required=True, help="the course directory (created if needed)")
    b.add_argument("--roster", type=Path, help="CSV of students (id,first_name,last_name,email) to import")
    b.add_argument("--course-id", help="nbgrader's course id for a new course (default: nki-kernel-lab)")
    b.add_argument("--stages", help="the stages to give out now: numbers or ranges (1,2 or 1-3), lesson names, or "
                                   "'all'; run again with more to add them")
    b.add_argument("--assignment", action="append", help="also this lesson (repeatable), e.g. 01_vector_add")
    b.add_argument("--force", action="store_true", help="regenerate assignments that exist already")
    b.add_argument("--dialect", choices=manifest.DIALECT_WORDS,
                   help="the students' kernel stubs: legacy (import neuronxcc.nki, Neuron SDK <= 2.29) or nki "
                        "(NKI 0.6, import nki, SDK >= 2.32); default: the course manifest's stub_dialect")
    sub.add_parser("install-path-hook", help="put this venv's bin/ on PATH for its interpreters (make setup)")
    args = ap.parse_args(argv)
    if args.cmd == "install-path-hook":
        print(f"nkilab: wrote {install_path_hook()}")
        return 0
    try:
        only = [*(stage_slugs(args.stages) if args.stages else []), *(args.assignment or [])]
        if not only:
            raise CourseError("say which stages you give out now, e.g. --stages 1,2 (make course ... STAGES=1,2), "
                              "or --stages all; run again with more stages to add them later")
        made = build(args.course, only=only, roster=args.roster, course_id=args.course_id,
                     force=args.force, dialect=args.dialect)
    except CourseError as err:
        print(f"make course: {err}", file=sys.stderr)
        return 1
    print(f"make course: generated {', '.join(made) if made else 'nothing new (every assignment exists)'}")
    print(NEXT_STEPS.format(course=args.course, roster=", students" if args.roster else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
