"""The course a class run grades, and how the run is set up: the example class's course built fresh (sources,
roster, release, hand-ins), a TA's course's layout, the run's hidden-case seed, the reference latencies measured
before any student code runs, the grading environment and limits, and ``nbgrader`` run as a child the run can stop.

``nkilab.batch.classgrade`` (``make grade``) drives a run with these; nothing here grades.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from nkilab.authoring.release import CONFIG, REPO, load_source
from nkilab.batch import example_class
from nkilab.batch.batch_control import CHILDREN
from nkilab.course import manifest
from nkilab.course.questions import QUESTIONS, timed_references
from nkilab.intake import handins as intake
from nkilab.isolate import sandbox
from nkilab.isolate.processes import kill_group
from nkilab.judge import seeds
from nkilab.judge.evaluate import grading_target, presets, reference_key, reference_latency
from nkilab.judge.grade import GRADING_ENV

EXAMPLE_DIR = REPO / "build" / "example_class"
EXAMPLE_MARK = ".nkilab-example-class"  # only a directory carrying this file is ever wiped
OLD_SEED_FILE = ".nkilab-seed"  # where earlier versions kept the seed, inside the course: removed when found
#: s per kernel run: most example kernels need a few seconds, the endless loop is stopped at it (and spins until
#: then, on a core the rest of the batch could use).  The heaviest honest run, a stage-7 0.6 kernel's tracing,
#: checking and executing, took at most 2.2 s of child and 4.0 s of executor CPU in a class graded beside four other
#: engineers' work (2 cores, load 5; a process monitor over `python -m nkilab.batch.classgrade`): 25 s keeps it
#: clear of the limit at three times that load (it was 40 s when such a kernel took 26 s)
EXAMPLE_KERNEL_TIMEOUT = 25.0


class ClassGradeError(RuntimeError):
    """A problem with the course itself (not with a submission): grading cannot start."""


@dataclass
class Limits:
    kernel: float | None  # per run of a student's kernel (None: each question's own, 60 s)
    cell: int  # per notebook cell (nbgrader Execute.timeout)
    notebook: int  # per notebook
    jobs: int = 1  # nbgrader processes grading side by side (students sharded; SQLite serialises their writes)


#: the fewest hand-ins a second nbgrader process is started for: each process costs about 5 s of CPU before its
#: first notebook (imports, the gradebook's migrations), a notebook 1-3 s, so a stage a few students handed in
#: is graded by one process and only a class-sized stage is shared out across ``--jobs``
MIN_PER_SHARD = 8


def shard(students: list[str], jobs: int) -> list[list[str]]:
    """``students`` dealt round-robin to at most ``jobs`` nbgrader processes, each with ``MIN_PER_SHARD`` or more
    (one process for fewer), every student in exactly one."""
    n = max(1, min(jobs, len(students) // MIN_PER_SHARD))
    return [students[i::n] for i in range(n)] if students else []


def say(msg: str) -> None:
    """A line of the run's log, on stdout at once (a TA watches a long run)."""
    print(msg, flush=True)


class Nbgrader:
    """Runs ``nbgrader`` commands in a course directory, each in its own process group with a time limit."""

    def __init__(self, course: Path, env: dict[str, str], logs: Path) -> None:
        self.course, self.env, self.logs = course, env, logs
        logs.mkdir(parents=True, exist_ok=True)

    def run(self, args: list[str], log_name: str, timeout: float) -> tuple[int, str]:
        """(exit code, output); -9 when it had to be killed at ``timeout``."""
        log_path = self.logs / f"{log_name}.log"
        with open(log_path, "w") as fh:
            proc = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=self.course, env=self.env,
                                    stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            CHILDREN.started(proc)
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                code = -9
            finally:
                CHILDREN.ended(proc)
        return code, log_path.read_text(errors="replace")


def reference_presets(questions: Iterable[str] | None = None) -> str:
    """The reference latencies of ``questions`` (default: every question), measured once here before any student
    code runs (JSON for the env)."""
    found = {}
    asked = QUESTIONS.values() if questions is None else [QUESTIONS[q] for q in questions if q in QUESTIONS]
    for rq in (r for q in asked for r in timed_references(q)):
        target = grading_target(rq)
        res = reference_latency(rq, target, 120.0)
        if res.ok:
            found[reference_key(rq, target)] = res
    return presets(found)


def grading_env(limits: Limits, seed_path: Path, sandboxed: bool) -> dict[str, str]:
    env = dict(os.environ)
    if not sandboxed:
        env[sandbox.NO_SANDBOX_ENV] = "1"
    env.pop("NKILAB_SEED", None)  # the seed is read from the TA's file (its path below), never the environment
    env[seeds.SEED_FILE_ENV] = str(seed_path)
    env[GRADING_ENV] = "1"
    if limits.kernel is not None:
        env["NKILAB_TIMEOUT_S"] = f"{limits.kernel:g}"
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    return env


# --------------------------------------------------------------------------- the example class


def prepare_example(course: Path, nbg: Nbgrader, class_dir: Path = example_class.CLASS_DIR,
                    only: list[str] | None = None) -> tuple[list[str], list[str], list[intake.Intake]]:
    """A fresh nbgrader course for the bundled class (or another in its format): sources, roster, release,
    hand-ins taken in; with ``only``, just those stages (the course is rebuilt on every run, so a run grading one
    stage need not release and hand in the others)."""
    stages = [s for s in example_class.stages_used(class_dir) if only is None or s in only]
    students = [s.id for s in example_class.roster(class_dir)]
    (course / "source").mkdir(parents=True)
    shutil.copy(CONFIG, course / "nbgrader_config.py")
    (course / EXAMPLE_MARK).write_text("Built by `python -m nkilab.batch.classgrade`; deleted and rebuilt on every run.\n")
    versions = example_class.teacher_versions(class_dir)
    for stage in stages:
        folder = course / "source" / stage
        folder.mkdir()
        source = load_source(REPO / "notebooks" / f"{stage}.py", manifest.course().stub_dialect)
        if stage in versions:  # the class's teacher changed this lesson before releasing it
            source = example_class.teacher_source(source, versions[stage], class_dir, f"course/{stage}")
        nbformat.write(source, folder / f"{stage}.ipynb")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:  # as `nbgrader db student import roster.csv`
        for s in example_class.roster(class_dir):
            gb.update_or_create_student(s.id, first_name=s.first_name, last_name=s.last_name, email=s.email)
    code, out = nbg.run(["generate_assignment", "*", "--force", "--create"], "generate_assignment", 900)
    for stage in stages:
        if code != 0 or not (course / "release" / stage / f"{stage}.ipynb").exists():
            raise ClassGradeError(f"nbgrader generate_assignment failed for {stage}:\n{out[-3000:]}")
    example_class.build_submissions(course / "incoming", class_dir=class_dir, release=course / "release",
                                    stages=stages)
    records = intake.take_in(course / "incoming", course / "submitted", students, {s: [s] for s in stages})
    return students, stages, records


def fresh_example_dir(course: Path) -> None:
    if course.exists() and any(course.iterdir()):
        if not (course / EXAMPLE_MARK).exists():
            raise ClassGradeError(f"{course} exists and was not made by this tool; not deleting it")
        shutil.rmtree(course)
    course.mkdir(parents=True, exist_ok=True)


# --------------------------------------------------------------------------- a TA's own course


def course_layout(course: Path, only: list[str] | None) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """(students, assignments, {assignment: notebook names}) of an existing nbgrader course."""
    db = course / "gradebook.db"
    if not db.exists():
        raise ClassGradeError(f"{db} not found: is {course} an nbgrader course directory?")
    with Gradebook(f"sqlite:///{db}") as gb:
        names = sorted(a.name for a in gb.assignments)
        students = {s.id for s in gb.students}
    submitted = course / "submitted"
    if submitted.is_dir():
        students |= {p.name for p in submitted.iterdir() if p.is_dir()}
    assignments = [a for a in names if only is None or a in only]
    layout: dict[str, list[str]] = {}
    for a in assignments:
        release = course / "release" / a
        nbs = sorted(p.stem for p in release.glob("*.ipynb"))
        if not nbs:
            raise ClassGradeError(f"{release} has no notebooks: run `nbgrader generate_assignment {a}` first")
        layout[a] = nbs
    return sorted(students), assignments, layout


# --------------------------------------------------------------------------- the run's seed


def course_seed(course: Path, given: int | None, resume: bool) -> int:
    """``--seed``, else ``NKILAB_SEED`` (both pinned by the TA), else on ``--resume`` the stopped run's seed from the
    TA's seed file, else a fresh one."""
    if given is not None:
        return given
    if os.environ.get("NKILAB_SEED"):
        return int(os.environ["NKILAB_SEED"])
    found = seeds.read_seed(seeds.seed_file(course)) if resume else None
    return found if found is not None else secrets.randbits(32)
