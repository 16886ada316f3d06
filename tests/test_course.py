"""A TA's own class (issue 22, scope 6): ``make course`` builds a real nbgrader course from the lessons (source,
release, gradebook, roster), nbgrader runs from the venv without PATH surgery, ``make grade`` grades it and the
feedback shows written answers as waiting for a TA until one marks them; the grading log names every outcome."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest
from course_testing import REPO
from nbgrader.api import Gradebook

from nkilab import course, grade_table, manifest
from nkilab.classgrade import course_layout, outcome_counts
from nkilab.nbgrader_plugins import feedback_flags
from nkilab.release import load_source

ROSTER = "id,first_name,last_name,email\nzoe,Zoe,Li,zoe@example.edu\nyan,Yan,Ko,yan@example.edu\n"
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"  # no virtualenv on it


def bare_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = BARE_PATH
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course")
    (root / "roster.csv").write_text(ROSTER)
    proc = subprocess.run(["make", "--no-print-directory", "course", f"COURSE={root / 'c'}", "STAGES=1",
                           f"COURSE_ARGS=--roster {root / 'roster.csv'} --course-id cs-nki-test"], cwd=REPO, capture_output=True, text=True, timeout=900,
                          env=bare_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "make course: generated 01_vector_add" in proc.stdout and "make grade COURSE=" in proc.stdout
    return root / "c"


@pytest.mark.processes
def test_make_course_builds_source_release_gradebook_and_roster(built: Path, tmp_path: Path) -> None:
    src = nbformat.read(built / "source" / "01_vector_add" / "01_vector_add.ipynb", as_version=4)
    # the lesson, as make release reads it for the course's stub dialect (the other dialect's kernel cells dropped)
    lesson = load_source(REPO / "notebooks" / "01_vector_add.py", manifest.course().stub_dialect)
    assert [c.source for c in src.cells] == [c.source for c in lesson.cells]
    released = nbformat.read(built / "release" / "01_vector_add" / "01_vector_add.ipynb", as_version=4)
    student = nbformat.read(REPO / "assignments" / "01_vector_add.ipynb", as_version=4)
    assert [c.source for c in released.cells] == [c.source for c in student.cells]  # what students get
    assert 'c.CourseDirectory.course_id = "cs-nki-test"' in (built / "nbgrader_config.py").read_text()
    with Gradebook(f"sqlite:///{built / 'gradebook.db'}") as gb:
        assert sorted(s.id for s in gb.students) == ["yan", "zoe"]
        (a,) = gb.assignments
        assert a.name == "01_vector_add"
        points = {g.name: g.max_score for nb in a.notebooks for g in nb.grade_cells}
    expected = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in lesson.cells
                if c.metadata.get("nbgrader", {}).get("grade")}
    assert points == expected and "w1_answer" in points  # the written answer is in the gradebook too
    # STAGES=1: the course grades stage 1 only, and the LMS export's "points possible" are its 8 points, not 72
    students, assignments, _ = course_layout(built, None)
    assert assignments == ["01_vector_add"]
    db = f"sqlite:///{built / 'gradebook.db'}"
    subs = [grade_table.collect(built, db, s, "01_vector_add", "missing", ["nothing handed in"]) for s in students]
    grade_table.write_lms_csv(subs, students, assignments, tmp_path / "lms.csv")
    possible = (tmp_path / "lms.csv").read_text().splitlines()[1]
    assert possible == f"points possible,{sum(expected.values()):g},{sum(expected.values()):g},"


@pytest.mark.processes
def test_make_course_dialect_legacy_hands_out_the_legacy_twins(tmp_path: Path) -> None:
    """One word, ``make course ... DIALECT=legacy``: the course's release is the legacy twin students of CS149's
    handouts get (``assignments/legacy/``), its gradebook the same questions and points."""
    proc = subprocess.run(["make", "--no-print-directory", "course", f"COURSE={tmp_path / 'c'}", "DIALECT=legacy",
                           "STAGES=01_vector_add"], cwd=REPO, capture_output=True, text=True,
                          timeout=900, env=bare_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    released = nbformat.read(tmp_path / "c" / "release" / "01_vector_add" / "01_vector_add.ipynb", as_version=4)
    twin = nbformat.read(REPO / "assignments" / "legacy" / "01_vector_add.ipynb", as_version=4)
    assert [c.source for c in released.cells] == [c.source for c in twin.cells]
    assert any("import neuronxcc.nki as nki" in c.source for c in released.cells if c.cell_type == "code")


@pytest.mark.processes
def test_rebuilding_keeps_the_course_and_adds_lessons(built: Path) -> None:
    release = built / "release" / "01_vector_add" / "01_vector_add.ipynb"
    before = release.stat().st_mtime_ns
    made = course.build(built, only=["01_vector_add", "02_partition_tiling"])
    assert made == ["02_partition_tiling"] and release.stat().st_mtime_ns == before
    assert (built / "release" / "02_partition_tiling" / "02_partition_tiling.ipynb").exists()
    with pytest.raises(course.CourseError, match="no lesson named 99_nothing"):
        course.build(built, only=["99_nothing"])


@pytest.mark.processes
def test_bare_venv_nbgrader_finds_alembic(tmp_path: Path) -> None:
    """nbgrader starts `alembic` by name when it makes a gradebook: with the venv's bin/ not on PATH that failed
    ("No such file or directory: 'alembic'"); make setup's path hook fixes it for every interpreter of the venv."""
    hook = Path(sysconfig.get_paths()["purelib"]) / course.PATH_HOOK
    assert hook.read_text() == course.PATH_HOOK_LINE
    (tmp_path / "source" / "x").mkdir(parents=True)
    nbformat.write(load_source(REPO / "notebooks" / "01_vector_add.py"), tmp_path / "source" / "x" / "x.ipynb")
    nbgrader = Path(sys.executable).with_name("nbgrader")
    proc = subprocess.run([str(nbgrader), "generate_assignment", "x"], cwd=tmp_path, capture_output=True, text=True,
                          env=bare_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "release" / "x" / "x.ipynb").exists() and (tmp_path / "gradebook.db").exists()


def test_stages_name_what_the_course_gives_out() -> None:
    slugs = [s.slug for s in manifest.course().stages]
    assert course.stage_slugs("1,2") == slugs[:2]
    assert course.stage_slugs("2, 1") == slugs[:2]  # in course order, whatever the order given
    assert course.stage_slugs("3-5,01_vector_add") == [slugs[0], *slugs[2:5]]
    assert course.stage_slugs("all") == slugs
    for bad in ("0", "1-99", "vector_add", ""):
        with pytest.raises(course.CourseError):
            course.stage_slugs(bad)


@pytest.mark.processes
def test_make_course_asks_which_stages(tmp_path: Path) -> None:
    """No default: a course of all nine stages scored every student 0 of 64 points for stages not given yet in
    grades.csv and the LMS export ("total 7, points possible 72")."""
    proc = subprocess.run(["make", "--no-print-directory", "course", f"COURSE={tmp_path / 'c'}"], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env=bare_env())
    assert proc.returncode == 2 and "STAGES=1,2" in proc.stderr, proc.stderr
    assert not (tmp_path / "c").exists()
    assert course.main(["build", "--course", str(tmp_path / "c")]) == 1  # the module asks too
    assert not (tmp_path / "c").exists()


def test_grading_log_names_every_outcome() -> None:
    results = {"a": ("graded", []), "b": ("graded", []), "c": ("missing", ["nothing handed in"]),
               "d": ("salvaged", []), "e": ("unreadable", []), "f": ("failed", [])}
    text = outcome_counts(results)
    assert text == ("2 graded, 1 salvaged (its notebook kernel died; graded cell by cell), 1 could not be graded "
                    "(see the table's notes), 1 nothing handed in, 1 unreadable (not a notebook, or its folder or "
                    "timestamp could not be read)")
    assert "other" not in text and outcome_counts({}) == "no hand-ins"


def _submit(built: Path, student: str) -> None:
    """The release with the reference kernels and a written answer filled in, as the student hands it in."""
    nb = nbformat.read(built / "release" / "01_vector_add" / "01_vector_add.ipynb", as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in ("q1_kernel", "q2_kernel"):
            name = re.match(r"%%writefile (\S+)", cell.source).group(1)
            cell.source = f"%%writefile {name}\n" + (REPO / "solutions" / "01_vector_add" / name).read_text()
        elif gid == "w1_answer":
            cell.source = "The 128 partitions are lanes that work side by side."
    folder = built / "submitted" / student / "01_vector_add"
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "01_vector_add.ipynb")


def _feedback_scores(built: Path) -> list[str]:
    html = (built / "feedback" / "zoe" / "01_vector_add" / "01_vector_add.html").read_text()
    return re.findall(r"(?:Score[^:<]*|Waiting for a TA): [^<]*", html)


@pytest.mark.slow
def test_make_grade_on_the_course_and_feedback_waits_for_a_ta(built: Path) -> None:
    _submit(built, "zoe")  # yan hands in nothing
    proc = subprocess.run(["make", "--no-print-directory", "grade", f"COURSE={built}",
                           "GRADE_ARGS=--assignment 01_vector_add"], cwd=REPO, capture_output=True, text=True,
                          timeout=900, env=bare_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "autograde 01_vector_add: 1 graded, 1 nothing handed in," in proc.stdout + proc.stderr
    # the class report of the TA's own course, beside its gradebook (issue 33 scope 1: make grade COURSE=...)
    data = json.loads((built / "report" / "report.json").read_text())
    assert str(built / "report" / "index.html") in proc.stdout and (built / "report" / "index.html").is_file()
    assert {q["question"] for q in data["questions"]} == {"vector_add_naive", "vector_add_stream"}, data["questions"]
    scores = _feedback_scores(built)
    # the kernels' 7 points are in; the written answer's point is not a zero but waits for a TA
    assert scores[0] == ("Score so far: 7.0 / 8.0; 1.0 points of written answers are waiting for a TA to mark "
                         "them)")
    waiting = [s for s in scores if s.startswith("Waiting for a TA")]
    assert len(waiting) == 2 and all(s.startswith("Waiting for a TA: not marked yet (1.0 points)") for s in waiting)
    assert not any(s.startswith("Score: 0.0 / 1.0") for s in scores)
    # a TA marks it (as formgrader does: a manual score in the gradebook); the feedback then shows the score
    with Gradebook(f"sqlite:///{built / 'gradebook.db'}") as gb:
        grade = gb.find_grade("w1_answer", "01_vector_add", "01_vector_add", "zoe")
        grade.manual_score = 1.0
        gb.db.commit()
    regen = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", "01_vector_add", "--force",
                            *feedback_flags()], cwd=built, capture_output=True, text=True, timeout=300)
    assert regen.returncode == 0, regen.stderr[-3000:]
    scores = _feedback_scores(built)
    assert scores[0] == "Score: 8.0 / 8.0)" and not any(s.startswith("Waiting") for s in scores)
    assert sum(s.startswith("Score: 1.0 / 1.0") for s in scores) == 2  # the table of contents and the cell
