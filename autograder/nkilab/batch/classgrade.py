"""``make grade``: grade a class's NKI notebooks with real nbgrader, fairly, and never stop the batch.

    python -m nkilab.batch.classgrade                    # the bundled example class, graded in build/example_class/
    python -m nkilab.batch.classgrade --course DIR       # your nbgrader course: DIR/submitted/ -> DIR/gradebook.db

Steps, per assignment: look at every hand-in first (``nkilab.intake.handins``: unreadable, renamed or missing
notebooks are reported, never fed to nbgrader); ``nbgrader autograde`` with our sanitize and execute steps
(``nkilab.autograde.nbgrader_plugins``: submissions rebuilt on the release, only ``%%writefile`` and grade cells run,
a time limit per cell and per notebook, stderr never zeroes a grade cell); then an audit: a student nbgrader
did not reach (the batch stopped) is graded again alone, and a submission nbgrader discarded (its kernel
died) is salvaged, its grade cells run one by one in throwaway processes (``nkilab.batch.salvage``).  Then
``generate_feedback`` with hidden cases stripped, ``nbgrader export`` (totals, ``grades.csv``) and our
per-question ``grades_by_question.csv``, the class report (``report/index.html`` and ``report.json``:
``nkilab.lms.report``, with similar hand-ins), and the table on stdout.

For the example class everything is built at run time in a fresh course directory: the sources from
``notebooks/``, the release with ``nbgrader generate_assignment``, the roster from
``autograder/example_class/roster.csv`` and the submissions from the current ``assignments/`` plus each
student's recipe (``nkilab.batch.example_class``).  With ``--course`` nothing outside nbgrader's own folders is
written but the CSVs, the class report (``report/``) and the run's lock (``.nkilab-grade.lock``), and
``submitted/`` is only read.  Each run draws a fresh hidden-case seed unless the TA pins one (``--seed``), and
keeps it in a file only the TA can read, outside the course (``nkilab.judge.seeds``); ``--resume`` keeps every
submission whose autograded scores an earlier (stopped) run already recorded and grades the rest with that run's
seed.
"""

from __future__ import annotations

import argparse
import html
import os
import sys
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import CsvExportPlugin

from nkilab.authoring.release import REPO
from nkilab.autograde.nbgrader_plugins import feedback_flags, grading_flags
from nkilab.batch import example_class, gradebook_audit
from nkilab.batch.batch_control import CourseBusy, course_lock, on_signals
from nkilab.batch.class_course import (
    EXAMPLE_DIR,
    EXAMPLE_KERNEL_TIMEOUT,
    OLD_SEED_FILE,
    ClassGradeError,
    Limits,
    Nbgrader,
    course_layout,
    course_seed,
    fresh_example_dir,
    grading_env,
    prepare_example,
    reference_presets,
    say,
    shard,
)
from nkilab.batch.handin_audit import (
    already_graded,
    attempted,
    autograded,
    failure_reason,
    salvage_submission,
    sanitize_notes,
)
from nkilab.course.questions import HIDDEN_CASES_ENV, course_target
from nkilab.intake import handins as intake
from nkilab.isolate import sandbox
from nkilab.judge import seeds
from nkilab.judge.evaluate import PRESET_ENV
from nkilab.lms import report
from nkilab.lms.grade_table import (
    Submission,
    collect_all,
    release_grade_cells,
    table,
    wrapped,
    write_csv,
    write_lms_csv,
)


def feedback_note(course: Path, student: str, assignment: str, notebooks: list[str], record: intake.Intake) -> None:
    """Say on the student's feedback page what happened to their hand-in: a notebook that could not be read gets a
    page of its own with the reason (nbgrader makes none); one graded without its outputs gets a note on top."""
    folder = course / "feedback" / student / assignment
    if record.status == "unreadable":
        text = (f"Your hand-in for {assignment} could not be graded: {record.note}. It scored 0 points; hand in the "
                "notebook again (File > Save, then submit the .ipynb file) or ask the course staff.")
    else:
        text = f"Your notebook was {intake.STRIPPED_NOTE}."
    note = f'<div class="nkilab-note" style="border:2px solid #c60;padding:1em;margin:1em">{html.escape(text)}</div>'
    for nb in notebooks:
        page = folder / f"{nb}.html"
        if page.exists():
            body = page.read_text()
            at = body.find(">", body.find("<body")) + 1 if "<body" in body else 0
            page.write_text(body[:at] + note + body[at:])
        else:
            folder.mkdir(parents=True, exist_ok=True)
            page.write_text(f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(assignment)}"
                            f"</title></head><body>{note}</body></html>\n")


def grade_assignment(course: Path, nbg: Nbgrader, assignment: str, notebooks: list[str],
                     records: list[intake.Intake], limits: Limits, env: dict[str, str],
                     resume: bool = False) -> dict[str, tuple[str, list[str]]]:
    """Autograde one assignment for everyone (with ``resume``: everyone without recorded scores yet);
    returns student -> (status, notes) for every intake record."""
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    results: dict[str, tuple[str, list[str]]] = {
        r.student: (r.status, [r.note] if r.note else []) for r in records if not r.gradable}
    everyone = [r.student for r in records]  # a shard's nbgrader excludes all the others, kept ones included
    if resume:
        kept = [r for r in records if r.gradable and already_graded(db_url, r.student, assignment, notebooks)]
        results.update({r.student: ("graded", ["kept the scores an earlier run recorded (--resume)"]) for r in kept})
        records = [r for r in records if r not in kept]
    gradable = [r.student for r in records if r.gradable and r.folder == "submitted"]
    elsewhere = [r for r in records if r.gradable and r.folder != "submitted"]  # oversized: an outputs-free copy
    if not gradable and not elsewhere:
        return results
    flags = grading_flags(cell_timeout=limits.cell, notebook_timeout=limits.notebook)
    start = time.monotonic()
    shards = shard(gradable, limits.jobs)

    def autograde(k: int, shard: list[str]) -> tuple[int, str]:
        """One nbgrader process for the students of ``shard`` (everyone else excluded by name)."""
        others = [st for st in everyone if st not in shard]
        exclude = [f"--CourseDirectory.student_id_exclude={','.join(others)}"] if others else []
        name = f"autograde-{assignment}" + (f"-shard{k}" if len(shards) > 1 else "")
        return nbg.run(["autograde", assignment, "--force", "--create", *flags, *exclude], name,
                       len(shard) * limits.notebook + 300)

    with ThreadPoolExecutor(max_workers=max(len(shards), 1)) as pool:  # nbgrader processes side by side
        done = list(pool.map(autograde, range(len(shards)), shards))
    for r in elsewhere:
        done.append(nbg.run(["autograde", assignment, "--student", r.student, "--force", "--create", *flags,
                             f"--CourseDirectory.submitted_directory={r.folder}"],
                            f"autograde-{assignment}-{r.student}", limits.notebook + 300))
    code = max((c for c, _ in done), key=abs, default=0)
    log = "\n".join(text for _, text in done)
    for r in (r for r in records if r.gradable):
        notes = ([r.note] if r.note else []) + sanitize_notes(course, r.student, assignment, notebooks, r.folder)
        status = "graded"
        if not autograded(course, r.student, assignment, notebooks) and not attempted(log, r.student, assignment):
            _, log1 = nbg.run(["autograde", assignment, "--student", r.student, "--force", "--create", *flags,
                               f"--CourseDirectory.submitted_directory={r.folder}"],
                              f"autograde-{assignment}-{r.student}", limits.notebook + 300)
            log += log1
            notes.append("not reached by the class-wide run: graded on its own")
        if not autograded(course, r.student, assignment, notebooks):
            reason = failure_reason(log, r.student)
            try:
                notes += salvage_submission(course, db_url, r.student, assignment, notebooks, limits.notebook, env, reason,
                                            r.folder)
                status = "salvaged"
            except Exception as err:  # the batch goes on; the TA sees why
                notes.append(f"{reason}; salvaging failed too ({type(err).__name__}: {err})")
                status = "failed"
        results[r.student] = (status, notes)
    say(f"  autograde {assignment}: {outcome_counts(results)}, in {time.monotonic() - start:.0f} s "
         f"(nbgrader exit code {code})")
    return results


#: what each outcome of a hand-in means in the grading log (intake statuses, then grading's own)
OUTCOMES = {"graded": "graded", "salvaged": "salvaged (its notebook kernel died; graded cell by cell)",
            "failed": "could not be graded (see the table's notes)", "missing": "nothing handed in",
            "unreadable": "unreadable (not a notebook, or its folder or timestamp could not be read)"}


def outcome_counts(results: dict[str, tuple[str, list[str]]]) -> str:
    """'12 graded, 1 salvaged, 11 nothing handed in': every outcome named, none lumped together as 'other'."""
    counts: dict[str, int] = {}
    for status, _notes in results.values():
        counts[status] = counts.get(status, 0) + 1
    order = [*OUTCOMES, *sorted(set(counts) - set(OUTCOMES))]
    parts = [f"{counts[s]} {OUTCOMES.get(s, s)}" for s in order if counts.get(s)]
    return ", ".join(parts) or "no hand-ins"


def grade_class(course: Path, *, example: bool, only: list[str] | None = None, limits: Limits,
                seed: int | None = None, csv_path: Path | None = None, sandboxed: bool = True,
                class_dir: Path = example_class.CLASS_DIR, resume: bool = False) -> tuple[list[Submission], str]:
    """The whole pipeline; returns every (student, assignment) graded and the printed table."""
    lock = course.parent / f".{course.name}.nkilab-lock" if example else course / ".nkilab-grade.lock"
    try:
        with course_lock(lock):
            return _grade_class(course, example=example, only=only, limits=limits, seed=seed, csv_path=csv_path,
                                sandboxed=sandboxed, class_dir=class_dir, resume=resume)
    except CourseBusy as err:
        raise ClassGradeError(str(err)) from None


def _grade_class(course: Path, *, example: bool, only: list[str] | None, limits: Limits, seed: int | None,
                 csv_path: Path | None, sandboxed: bool, class_dir: Path,
                 resume: bool) -> tuple[list[Submission], str]:
    if sandboxed:
        try:
            sandbox.require()
        except sandbox.SandboxUnavailable as err:
            raise ClassGradeError(str(err)) from None
    else:
        say(sandbox.WARNING)
    seed = course_seed(course, seed, resume)
    seed_path = seeds.seed_file(course)
    seeds.write_seed(seed_path, seed)
    (course / OLD_SEED_FILE).unlink(missing_ok=True)
    bin_dir = str(Path(sys.executable).parent)  # nbgrader's Gradebook runs `alembic` from PATH, here too
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    env = grading_env(limits, seed_path, sandboxed)
    t0 = time.monotonic()
    if example:
        fresh_example_dir(course)
    nbg = Nbgrader(course, env, course / "logs")
    if example:
        say(f"Example class: building the course in {course} (nbgrader generate_assignment, roster, hand-ins)")
        students, assignments, records = prepare_example(course, nbg, class_dir, only)
        layout = {a: [a] for a in assignments}
    else:
        students, assignments, layout = course_layout(course, only)
        records = intake.inspect(course / "submitted", students, {a: layout[a] for a in assignments})
    say(f"Grading {len(students)} students x {len(assignments)} assignments (seed {seed}; "
         f"kernel time limit {f'{limits.kernel:g} s' if limits.kernel else 'per question'}, "
         f"{limits.cell} s per cell, {limits.notebook} s per notebook; {limits.jobs} at a time)")
    subs: list[Submission] = []
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    before = gradebook_audit.snapshot(db_url)  # a TA's manual scores, to prove grading left them alone
    graded = {question for a in assignments for rows in release_grade_cells(course, a).values()
              for _, kind, _, question in rows if kind == "kernel"}
    env[PRESET_ENV] = reference_presets(graded)  # only the questions this run grades: a TA's one stage waits less
    # the references' program fingerprints for the class report, traced in a thread while nbgrader's processes grade
    # (this process only waits on them meanwhile)
    tracer = ThreadPoolExecutor(max_workers=1)
    fingerprints = tracer.submit(report.reference_fingerprints, graded)
    tracer.shutdown(wait=False)
    results = {a: grade_assignment(course, nbg, a, layout[a], [r for r in records if r.assignment == a], limits, env,
                                   resume)
               for a in assignments}
    for which in (["*"] if only is None else assignments):  # one nbgrader start-up for the whole class
        name = "generate_feedback" + ("" if which == "*" else f"-{which}")
        code, _ = nbg.run(["generate_feedback", which, "--force", *feedback_flags()], name,
                          60 * len(students) * len(assignments) + 300)
        if code != 0:
            say(f"  generate_feedback {which}: exit code {code} (see {course / 'logs' / f'{name}.log'})")
    for a in assignments:  # no hand-in goes without a feedback page saying what happened to it
        for r in records:
            if r.assignment == a and (r.status == "unreadable" or r.stripped):
                feedback_note(course, r.student, a, layout[a], r)
    tampered = gradebook_audit.changes(before, gradebook_audit.snapshot(db_url))
    for ch in tampered:
        say(f"  gradebook: {ch} during this grading run")
    subs += collect_all(course, db_url, [(st, a, *results[a].get(st, ("missing", []))) for a in assignments
                                         for st in students])
    with Gradebook(db_url) as gb:  # what `nbgrader export --to grades.csv` runs
        CsvExportPlugin(to=str(course / "grades.csv")).export(gb)
    csv_path = csv_path or course / "grades_by_question.csv"
    write_csv(subs, csv_path)
    write_lms_csv(subs, students, assignments, course / "lms_grades.csv")
    text = table(subs, students, assignments)
    page = class_report(course, subs, students, assignments, sandboxed, fingerprints)
    files = [(course / "grades.csv", "nbgrader export, totals"), (csv_path, "per question"),
             (course / "lms_grades.csv", "one row per student, for an LMS import"),
             (page, "the class report: scores, verdicts and speeds per question, hand-ins to look at, similar pairs"),
             (f"{course / 'feedback'}/<student>/<assignment>/", "feedback HTML, hidden cases stripped"),
             (f"{course / 'logs'}/", "every command's output")]
    lines = ["", "Files:"] + [ln for path, what in files for ln in wrapped("  ", f"{path} ({what})")]
    lines += wrapped("", "Speed points compare the kernel's latency with the reference solution's on the question's "
                     f"target ({course_target()} unless the question says otherwise); on the simulator both are "
                     f"nkisim cost-model estimates, not measurements.  Reproduce with NKILAB_SEED={seed}.  Graded "
                     f"in {time.monotonic() - t0:.0f} s.")
    footer = "\n".join(lines)
    footer += ("\nGradebook: manual scores, extra credit and comments unchanged by this run." if not tampered else
               "\nGradebook: manual values CHANGED during this run: " + "; ".join(map(str, tampered)))
    if not sandboxed:
        footer += "\n" + sandbox.WARNING
    return subs, text + "\n" + footer


def class_report(course: Path, subs: list[Submission], students: list[str], assignments: list[str],
                 sandboxed: bool, references: Future[dict[str, tuple[int, ...]]]) -> Path | str:
    """``course/report/index.html`` (and ``report.json``) from the records just collected; a report that fails says
    why in the footer and never costs the grades."""
    notes = [] if sandboxed else [sandbox.WARNING]
    try:
        facts = report.build(subs, students, assignments, report.course_sources(course, subs, references.result()),
                             notes=notes)
        return report.write(facts, course / "report")
    except Exception as err:  # the grades are written already; the TA sees why the report is missing
        say(f"  class report: not written ({type(err).__name__}: {err})")
        return "no class report (see above)"


def _split(values: Iterable[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v for item in values for v in item.split(",") if v]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:4]))
    ap.add_argument("--course", type=Path, help="an nbgrader course directory to grade (default: the example class)")
    ap.add_argument("--workdir", type=Path, default=EXAMPLE_DIR,
                    help=f"where the example class's course is built (default: {EXAMPLE_DIR.relative_to(REPO)})")
    ap.add_argument("--class-dir", type=Path, default=example_class.CLASS_DIR,
                    help="a class in the example class's format to build and grade (default: the example class)")
    ap.add_argument("--assignment", action="append", help="only these assignments (repeat or comma-separate)")
    ap.add_argument("--kernel-timeout", type=float, default=None,
                    help="seconds per run of a student kernel (default: 20 for the example class, else each "
                         "question's own, 60)")
    ap.add_argument("--cell-timeout", type=int, default=None, help="seconds per notebook cell (default: derived)")
    ap.add_argument("--notebook-timeout", type=int, default=None, help="seconds per notebook (default: derived)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="students graded side by side, one nbgrader process each (default: the number of cores)")
    ap.add_argument("--seed", type=int, default=None,
                    help="pin the hidden-case data seed (default: NKILAB_SEED, else a fresh one per run, kept in a "
                         "file only you can read, outside the course: see nkilab.judge.seeds)")
    ap.add_argument("--hidden-cases", type=Path, default=None,
                    help="a JSON file of your own hidden cases per question (kept private; see nkilab.course.questions)")
    ap.add_argument("--resume", action="store_true",
                    help="keep every submission whose autograded scores are already recorded (after a stopped run); "
                         "grade the rest with the stopped run's seed")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="grade without the bubblewrap sandbox (only on a machine you can lose: student code then "
                         "runs as your user); every report says so")
    ap.add_argument("--csv", type=Path, default=None, help="per-question CSV (default: COURSE/grades_by_question.csv)")
    args = ap.parse_args(argv)
    example = args.course is None
    kernel = args.kernel_timeout if args.kernel_timeout is not None else (EXAMPLE_KERNEL_TIMEOUT if example else None)
    per_kernel = kernel if kernel is not None else 60.0
    cell = args.cell_timeout or int(3 * per_kernel + 120)
    limits = Limits(kernel, cell, args.notebook_timeout or 4 * cell, max(1, args.jobs or os.cpu_count() or 1))
    course = (args.workdir if example else args.course).resolve()
    try:
        on_signals()
        if args.hidden_cases is not None:  # read by grade() in the grading processes, never by the sandbox
            os.environ[HIDDEN_CASES_ENV] = str(args.hidden_cases.resolve())
        _, text = grade_class(course, example=example, only=_split(args.assignment), limits=limits, seed=args.seed,
                              csv_path=args.csv, sandboxed=not args.no_sandbox, class_dir=args.class_dir.resolve(),
                              resume=args.resume)
    except (ClassGradeError, example_class.RecipeError) as err:
        print(f"make grade: {err}", file=sys.stderr)
        return 1
    print()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
