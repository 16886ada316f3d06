"""Grading a real class: hostile hand-ins are contained, nothing leaks into feedback, no TA's work is lost.

* intake: any malformed file handed in -- huge, not UTF-8, nested 100 000 deep, a 5000-digit number, JSON
  that is not a notebook, a link, a FIFO, a bad time stamp -- is reported by name with a plain reason, and the
  rest of the class is still taken in (``nkilab.intake.handins``);
* feedback: a written answer with ``<script>``, ``onerror=`` or ``javascript:`` links and megabyte-long
  outputs come out of the feedback exporter inert and truncated (``nkilab.autograde.nbgrader_plugins``), and so through
  real ``nbgrader generate_feedback`` (slow);
* gradebook: a manual score, extra credit or comment changed during a grading run is reported exactly
  (``nkilab.batch.gradebook_audit``), against a real SQLite gradebook built with nbgrader's API.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbgrader.api import Gradebook
from nbgrader.converters import GenerateFeedback
from nbgrader.coursedir import CourseDirectory

from nkilab.autograde.nbgrader_plugins import (
    FEEDBACK,
    FEEDBACK_EXPORTER,
    FeedbackHTMLExporter,
    RenderGradeRecords,
    SanitizeStudentHTML,
    TruncateOutputs,
    feedback_flags,
    truncate_text,
)
from nkilab.batch import gradebook_audit
from nkilab.batch.gradebook_audit import Change
from nkilab.intake import handins as intake
from nkilab.intake.handins import (
    MAX_BYTES,
    MAX_DEPTH,
    STRIPPED_NOTE,
    drop_outputs,
    inspect,
    nesting_depth,
    readable,
    take_in,
)
from nkilab.judge.results import MIME, Audience, CaseRecord, ErrorFacts, GradeRecord, Outcome

GOOD = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]))
CELL = {"cell_type": "markdown", "source": "x", "metadata": {}}
# nbgrader's own Gradebook.add_submission, under SQLAlchemy 2.1: not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")


def _nb_json(**fields) -> str:
    return json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **fields})


@pytest.fixture(autouse=True, scope="module")
def _alembic_on_path():
    """nbgrader's Gradebook runs ``alembic`` from PATH when it creates a database (as classgrade arranges)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
        yield


# --------------------------------------------------------------------------- intake

MALFORMED = {  # student -> (what they handed in as lab.ipynb, words the report must contain)
    "deep_list": ('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested 100001 levels deep"),
    "deep_unclosed": ('{"cells": ' + "[" * 100_000, "nested 100001 levels deep"),
    "deep_objects": ('{"a": ' * 50_000 + "1" + "}" * 50_000, "nested 50000 levels deep"),
    "big_integer": ('{"cells": [], "metadata": {"n": ' + "9" * 5000 + '}, "nbformat": 4, "nbformat_minor": 5}',
                    "a number with thousands of digits"),
    "not_utf8": (b'{"cells": ["\xff\xfe"]}', "not UTF-8 text (invalid byte at offset 12)"),
    "not_json": ('{"cells": [', "not valid JSON (Expecting value: line 1"),
    "empty": ("", "is empty"),
    "a_list": ("[1, 2, 3]", "the JSON is a list, not an object"),
    "no_version": ('{"cells": []}', "no nbformat version number"),
    "no_cells": (json.dumps({"metadata": {}, "nbformat": 4, "nbformat_minor": 5}), "no list of cells"),
    "cells_dict": (_nb_json(cells={}), "no list of cells"),
    "cells_ints": (_nb_json(cells=[1, 2]), "a cell that is not a JSON object"),
    "bad_cell_type": (_nb_json(cells=[{**CELL, "cell_type": "evil"}]),
                      "not a valid Jupyter notebook (cells[0]: does not match the notebook format)"),
    "source_number": (_nb_json(cells=[{**CELL, "source": 5}]), "(cells[0].source: does not match the notebook format)"),
    "version_99": (_nb_json(nbformat=99), "Unsupported nbformat version 99"),
}


def _hand_in(incoming: Path, student: str, content: str | bytes, name: str = "lab.ipynb") -> Path:
    folder = incoming / student / "lab"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def test_every_malformed_notebook_is_reported_and_the_batch_goes_on(tmp_path):
    incoming, submitted = tmp_path / "in", tmp_path / "sub"
    for student, (content, _) in MALFORMED.items():
        _hand_in(incoming, student, content)
    _hand_in(incoming, "zoe", GOOD)
    with open(_hand_in(incoming, "too_large", b""), "r+b") as fh:
        fh.truncate(MAX_BYTES + 1)  # sparse: 20 MB + 1 byte of zeros, no outputs to drop
    students = [*MALFORMED, "too_large", "zoe"]
    records = {r.student: r for r in take_in(incoming, submitted, students, {"lab": ["lab"]})}
    for student, (_, words) in MALFORMED.items():
        assert records[student].status == "unreadable", (student, records[student])
        assert not records[student].gradable
        assert records[student].note.startswith("lab.ipynb is ") and words in records[student].note, records[student]
    assert records["too_large"].status == "unreadable"
    assert records["too_large"].note == ("lab.ipynb is too large even without its outputs (20.0 MB; the limit is "
                                         "20.0 MB), not graded")
    assert records["zoe"].status == "ok" and records["zoe"].gradable
    assert sorted(p.name for p in submitted.iterdir()) == ["zoe"]  # only what intake accepted reaches nbgrader
    assert (submitted / "zoe" / "lab" / "lab.ipynb").read_text() == GOOD
    # A TA's course checked in place: the same verdicts, nothing changed, only zoe is gradable.
    checked = inspect(incoming, students, {"lab": ["lab"]})
    assert [r.student for r in checked if r.gradable] == ["zoe"]
    assert {r.student: r.note for r in checked} == {s: r.note for s, r in records.items()}


def _notebook_with_output(text: str, answer: str = "x = 1") -> str:
    cells = [nbformat.v4.new_markdown_cell("# Lab"),
             nbformat.v4.new_code_cell(answer, outputs=[nbformat.v4.new_output("stream", text=text)]),
             nbformat.v4.new_code_cell("print('}{\\\"outputs\\\": [')", outputs=[
                 nbformat.v4.new_output("stream", text='"outputs": [{"nested": [1, 2]}] \\ " ]')])]
    return nbformat.writes(nbformat.v4.new_notebook(cells=cells))


def test_a_notebook_too_large_for_its_outputs_is_graded_without_them(tmp_path):
    """A student printed a 30 MB array: the hand-in is graded with every output dropped, byte for byte otherwise,
    and the report says so; the same in a TA's own course, where a copy is graded and submitted/ is not touched."""
    big = _notebook_with_output("9" * (21 * 2**20), answer="%%writefile k.py\ndef k(a):\n    return a  # }]{[")
    incoming, submitted = tmp_path / "in", tmp_path / "sub"
    _hand_in(incoming, "pat", big)
    [rec] = take_in(incoming, submitted, ["pat"], {"lab": ["lab"]})
    assert rec.status == "ok" and rec.stripped and rec.folder == "submitted"
    assert rec.note == f"lab.ipynb was {STRIPPED_NOTE}"
    kept = json.loads((submitted / "pat" / "lab" / "lab.ipynb").read_text())
    expected = json.loads(big)
    for cell in expected["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
    assert kept == expected  # the answers and everything else as handed in, only the outputs gone
    course = tmp_path / "course"
    _hand_in(course / "submitted", "pat", big)
    [rec] = inspect(course / "submitted", ["pat"], {"lab": ["lab"]})
    assert rec.status == "ok" and rec.folder == "nkilab-stripped"
    assert json.loads((course / "nkilab-stripped" / "pat" / "lab" / "lab.ipynb").read_text()) == expected
    assert (course / "submitted" / "pat" / "lab" / "lab.ipynb").read_text() == big


def test_drop_outputs_touches_only_the_cells_outputs():
    nb = _notebook_with_output("tail")
    dropped = drop_outputs(nb.encode())
    assert dropped is not None and dropped.count(b'"outputs": []') == 2
    assert json.loads(dropped)["cells"][2]["source"] == json.loads(nb)["cells"][2]["source"]
    assert drop_outputs(b'{"cells": [{"outputs": [') is None and drop_outputs(b"]]") is None
    # "outputs" anywhere but a cell (metadata) stays
    meta = json.dumps({"cells": [], "metadata": {"outputs": [1]}, "nbformat": 4, "nbformat_minor": 5}).encode()
    assert drop_outputs(meta) == meta


def test_a_notebook_too_large_to_read_or_to_shrink_gets_a_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(intake, "MAX_STRIP_BYTES", 25 * 2**20)
    incoming, submitted = tmp_path / "in", tmp_path / "sub"
    _hand_in(incoming, "huge", _notebook_with_output("9" * (26 * 2**20)))
    pasted = nbformat.v4.new_markdown_cell("![x](attachment:x.png)", attachments={"x.png": {"image/png": "A" * (21 * 2**20)}})
    _hand_in(incoming, "pasted", nbformat.writes(nbformat.v4.new_notebook(cells=[pasted])))
    records = {r.student: r for r in take_in(incoming, submitted, ["huge", "pasted"], {"lab": ["lab"]})}
    assert records["huge"].status == "unreadable" and "the limit is 25.0 MB" in records["huge"].note
    assert records["pasted"].status == "unreadable" and "too large even without its outputs" in records["pasted"].note


def test_links_fifos_and_bad_time_stamps_are_not_graded(tmp_path):
    incoming, submitted = tmp_path / "in", tmp_path / "sub"
    secret = tmp_path / "solution.ipynb"
    secret.write_text(GOOD)
    (incoming / "lee" / "lab").mkdir(parents=True)
    (incoming / "lee" / "lab" / "lab.ipynb").symlink_to(secret)  # would copy the instructor's file
    (incoming / "mo" / "lab").mkdir(parents=True)
    os.mkfifo(incoming / "mo" / "lab" / "lab.ipynb")  # opening it for reading would block for ever
    _hand_in(incoming, "ned", GOOD)
    (incoming / "ned" / "lab" / "timestamp.txt").write_text("2030-01-15 17:00:00 ../../../etc/passwd")
    _hand_in(incoming, "ola", GOOD)
    os.mkfifo(incoming / "ola" / "lab" / "timestamp.txt")  # nbgrader would hang reading it
    _hand_in(incoming, "pat", GOOD)
    (incoming / "pat" / "lab" / "timestamp.txt").write_text("2030-01-15 17:00:00.000000 UTC\n")
    records = {r.student: r for r in take_in(incoming, submitted, ["lee", "mo", "ned", "ola", "pat"],
                                             {"lab": ["lab"]})}
    assert records["lee"].note == "lab.ipynb is a symbolic link, not the notebook itself"
    assert records["mo"].note == "lab.ipynb is not a regular file"
    assert records["ned"].status == "unreadable" and "timestamp.txt is not a date and time" in records["ned"].note
    assert records["ola"].status == "unreadable" and "timestamp.txt is not a regular file" in records["ola"].note
    assert records["pat"].status == "ok"
    assert sorted(p.name for p in submitted.iterdir()) == ["pat"]
    assert (submitted / "pat" / "lab" / "timestamp.txt").read_text().startswith("2030-01-15")


def test_student_ids_nbgrader_would_read_as_lists_or_patterns_are_not_graded(tmp_path):
    for sid in ("zoe", "a,zoe", "b*", "c?", "d[x]"):
        _hand_in(tmp_path, sid, GOOD)
    records = {r.student: r for r in inspect(tmp_path, ["zoe", "a,zoe", "b*", "c?", "d[x]"], {"lab": ["lab"]})}
    assert records["zoe"].gradable
    for sid in ("a,zoe", "b*", "c?", "d[x]"):
        assert records[sid].status == "unreadable" and "rename the folder" in records[sid].note, sid


def test_file_names_in_notes_cannot_drive_the_terminal(tmp_path):
    _hand_in(tmp_path / "in", "q", GOOD)
    _hand_in(tmp_path / "in", "q", "", name="\x1b[2Jevil\nname.py")
    for i in range(30):
        _hand_in(tmp_path / "in", "q", "", name=f"junk{i:02}.txt")
    [record] = take_in(tmp_path / "in", tmp_path / "sub", ["q"], {"lab": ["lab"]})
    assert "\x1b" not in record.note and "\n" not in record.note and "?[2Jevil?name.py" in record.note
    assert record.note.endswith("and 21 more")


def test_nesting_is_measured_outside_strings_and_the_limit_is_safe_downstream(tmp_path):
    assert nesting_depth('{"a": [1, {"b": []}]}') == 4
    assert nesting_depth(json.dumps({"s": "[[[[{{{{", "t": ["\\", '"[', "\\\"[["]})) == 2
    assert nesting_depth('["unterminated [[[[') == 1
    # Brackets inside strings (a student's code) are not nesting: a notebook full of them is fine.
    code = nbformat.v4.new_code_cell("x = " + "[" * 5000 + "]" * 5000)
    path = tmp_path / "code.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[code]), path)
    assert readable(path) is None
    # At the limit a notebook is accepted, and what nbgrader then does to it recursively still works.
    deep: object = 1
    for _ in range(MAX_DEPTH - 2):  # the notebook object and its metadata are two levels
        deep = [deep]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")], metadata={"deep": deep})
    nbformat.write(nb, path)
    assert nesting_depth(path.read_text()) == MAX_DEPTH and readable(path) is None
    nbformat.writes(copy.deepcopy(nbformat.read(path, as_version=4)))
    nb.metadata["deep"] = [deep]
    nbformat.write(nb, path)
    assert readable(path) == f"nested {MAX_DEPTH + 1} levels deep (the limit is {MAX_DEPTH}), not parsed"


# --------------------------------------------------------------------------- feedback

ANSWER = ("My answer: <script>alert('xss1')</script> <img src=x onerror=alert(1)> "
          "[click](javascript:alert('xss3')) <a href='JaVaScRiPt:alert(1)'>b</a> "
          "<a href='data:text/html,<script>alert(2)</script>'>d</a> <svg onload=alert(3)></svg> "
          "<details open ontoggle=alert(4)>x</details> <iframe src=https://evil.example></iframe> "
          "[docs](https://example.com) `a < b && c`\n\n> quoted\n\n$a<b$")
LONG = "report\n" + "E" * 1_000_000 + "\n  Correctness: 0/8 cases -> 0/2 points\n"
LONG_CUT = f"[... {len(LONG) - TruncateOutputs().max_chars:,} characters truncated]"


#: a grade record as a hostile kernel can shape it: an error message with markup on a public case, a hidden case
#: whose inputs (a TA's private shape) and message must not reach the student
HOSTILE_RECORD = GradeRecord(
    "q1", "Vector add", 0.0, 2.0, 0.0, 2.0, 0.0, 0.0, cases=(
        CaseRecord(1, False, "a, b: float32 [128, 512]", Outcome.ERROR,
                   "your kernel raised ValueError at lab.py line 3: <script>alert(8)</script>",
                   ErrorFacts("ValueError", "<script>alert(8)</script>", None, 3, "x = 1")),
        CaseRecord(2, True, "a, b: float16 [4099, 77]", Outcome.WRONG_SHAPE,
                   "output shape (4099, 77) but expected (4099, 78)")))


def hostile_feedback_notebook() -> nbformat.NotebookNode:
    """What an autograded notebook can carry into feedback: a written answer and outputs with markup, 1 MB text."""
    written = nbformat.v4.new_markdown_cell(ANSWER, metadata={"nbgrader": {
        "solution": True, "grade": True, "grade_id": "w1", "points": 1, "score": 1,
        "comment": "<script>alert('comment')</script>Nice."}})
    noisy = nbformat.v4.new_code_cell("print(report)", outputs=[
        nbformat.v4.new_output("stream", text=LONG),
        nbformat.v4.new_output("display_data", data={
            "text/html": "<b onclick=alert(5)>x</b><script>alert(6)</script>",
            "application/javascript": "alert(7)", "text/plain": "x"}),
        nbformat.v4.new_output("error", ename="ValueError", evalue="v" * 100_000, traceback=["tb " * 100_000])])
    graded = nbformat.v4.new_code_cell("grade('q1')", metadata={"nbgrader": {
        "grade": True, "grade_id": "q1", "points": 2, "score": 0}}, outputs=[
        nbformat.v4.new_output("stream", text=HOSTILE_RECORD.render_text(Audience.TA)),
        nbformat.v4.new_output("display_data", data={MIME: HOSTILE_RECORD.to_json(), "text/plain": ""}),
        nbformat.v4.new_output("execute_result", data={"text/plain": "0.0"}, execution_count=2)])
    pasted = nbformat.v4.new_markdown_cell("![sketch](attachment:sketch.png)", attachments={
        "sketch.png": {"image/png": "iVBORw0KGgo="}})  # an image pasted into an answer must survive
    return nbformat.v4.new_notebook(cells=[written, noisy, graded, pasted])


def assert_inert(html: str) -> BeautifulSoup:
    """Nothing in the page runs student text: no script of theirs, no handler, no javascript:/data: link."""
    assert "<script>alert" not in html
    soup = BeautifulSoup(html, "html.parser")
    for script in soup.find_all("script"):
        assert "alert" not in script.get_text(), script
    for tag in soup.find_all(True):
        assert not any(name.lower().startswith("on") for name in tag.attrs), tag
        for attr in ("href", "src", "action", "formaction"):
            value = str(tag.get(attr, "")).strip().lower()
            assert not value.startswith(("javascript:", "vbscript:", "data:text")), tag
    assert not soup.find_all(["iframe", "svg", "object", "embed", "form"])
    return soup


def test_feedback_flags_install_the_sanitiser_after_hiding_and_truncating():
    flags = feedback_flags()
    assert f"--GenerateFeedback.exporter_class={FEEDBACK_EXPORTER}" in flags
    names = [n.rsplit(".", 1)[1] for n in FEEDBACK]
    assert names.index("RenderGradeRecords") < names.index("TruncateOutputs") < names.index("SanitizeStudentHTML")


def test_feedback_html_has_no_active_markup_and_long_outputs_are_cut():
    """nbgrader's own feedback set-up (template, CSS) with our exporter and preprocessors, without a course."""
    converter = GenerateFeedback(coursedir=CourseDirectory())
    exporter = FeedbackHTMLExporter(parent=converter, config=converter.config)
    for pp in (RenderGradeRecords, TruncateOutputs, SanitizeStudentHTML):
        exporter.register_preprocessor(pp, enabled=True)
    html, _ = exporter.from_notebook_node(hostile_feedback_notebook(), resources={
        "nbgrader": {"notebook": "lab", "score": 1, "max_score": 3, "late_penalty": 0}})
    assert "onerror=" not in html and "<script>alert" not in html
    soup = assert_inert(html)
    answer = soup.find("div", class_="text_cell_render").decode_contents()
    assert '<img alt="' in answer and 'src="x"' in answer  # the image stays, its handler does not
    assert '<a href="https://example.com">docs</a>' in answer  # ordinary links and markdown still work
    assert "<code>a &lt; b &amp;&amp; c</code>" in answer and "<blockquote>" in answer and "$a&lt;b$" in answer
    assert "&lt;script&gt;alert('xss1')&lt;/script&gt;" in answer  # shown as the text the student wrote
    assert LONG_CUT in html and "Correctness: 0/2 cases -&gt; 0/2 points" in html
    assert "hidden case 2: wrong dtype or shape" in html and "4099" not in html  # the category, never the sizes
    assert html.count("characters truncated]") == 2  # the stream and the traceback
    assert len(html) < 200_000 and "Nice." in html and 'src="data:image/png;base64,iVBORw0KGgo="' in html


def test_truncate_text_keeps_head_and_tail():
    assert truncate_text("short", 10) == "short"
    cut = truncate_text("a" * 50 + "b" * 50, 20)
    assert cut == "a" * 15 + "\n[... 80 characters truncated]\n" + "b" * 5


def _feedback_course(root: Path) -> tuple[Path, str]:
    """A minimal nbgrader course with one autograded submission, as ``nbgrader autograde`` leaves it."""
    (root / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'integrity'\n")
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    with Gradebook(db_url, "integrity") as gb:
        gb.add_student("ada")
        gb.add_assignment("lab")
        gb.add_notebook("lab", "lab")
        gb.add_grade_cell("w1", "lab", "lab", max_score=1, cell_type="markdown")
        gb.add_solution_cell("w1", "lab", "lab")
        gb.add_grade_cell("q1", "lab", "lab", max_score=2, cell_type="code")
        gb.add_source_cell("q1", "lab", "lab", cell_type="code", source="grade('q1')", locked=True)
        gb.add_submission("lab", "ada")
        gb.find_grade("w1", "lab", "lab", "ada").manual_score = 1.0
        gb.find_comment("w1", "lab", "lab", "ada").manual_comment = "<script>alert('comment')</script>Nice."
        gb.find_grade("q1", "lab", "lab", "ada").auto_score = 0.0
        gb.db.commit()
    folder = root / "autograded" / "ada" / "lab"
    folder.mkdir(parents=True)
    nbformat.write(hostile_feedback_notebook(), folder / "lab.ipynb")
    return root, db_url


@pytest.mark.processes
def test_real_nbgrader_generate_feedback_is_inert(tmp_path):
    """``nbgrader generate_feedback`` with ``feedback_flags()``, as classgrade runs it (about 5 s)."""
    course, _ = _feedback_course(tmp_path)
    env = {**os.environ, "JUPYTER_PLATFORM_DIRS": "1"}
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", "lab", "--force", *feedback_flags()],
                          cwd=course, env=env, capture_output=True, text=True, timeout=300)
    page = course / "feedback" / "ada" / "lab" / "lab.html"
    assert proc.returncode == 0 and page.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    html = page.read_text()
    assert "onerror=" not in html and "<script>alert" not in html
    assert_inert(html)
    assert LONG_CUT in html and "Nice." in html and len(html) < 200_000
    assert "4099" not in html and "hidden case 2: wrong dtype or shape" in html


# --------------------------------------------------------------------------- gradebook audit


@pytest.fixture(scope="module")
def audit_template(tmp_path_factory) -> Path:
    """Two students, one notebook with a code and a written grade cell; ada has a manual score, extra credit and
    a comment.  Built once (creating a gradebook runs alembic) and copied by each test."""
    path = tmp_path_factory.mktemp("audit") / "gradebook.db"
    with Gradebook(f"sqlite:///{path}") as gb:
        for student in ("ada", "ben"):
            gb.add_student(student)
        gb.add_assignment("lab")
        gb.add_notebook("nb", "lab")
        gb.add_grade_cell("q1", "nb", "lab", max_score=4, cell_type="code")
        gb.add_grade_cell("w1", "nb", "lab", max_score=2, cell_type="markdown")
        gb.add_solution_cell("w1", "nb", "lab")
        gb.add_submission("lab", "ada")
        gb.find_grade("q1", "nb", "lab", "ada").manual_score = 3.0
        gb.find_grade("w1", "nb", "lab", "ada").extra_credit = 0.5
        gb.find_comment("w1", "nb", "lab", "ada").manual_comment = "see me"
        gb.db.commit()
    return path


def _gradebook(template: Path, root: Path) -> str:
    shutil.copyfile(template, root / "gradebook.db")
    return f"sqlite:///{root / 'gradebook.db'}"


def _sql(db_url: str, statement: str, *args) -> None:
    """Write to the database file directly, as a process that merely opens gradebook.db would."""
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        conn.execute(statement, args)


@pytest.mark.processes
def test_a_manual_score_rewritten_during_grading_is_reported_exactly(audit_template, tmp_path):
    db_url = _gradebook(audit_template, tmp_path)
    before = gradebook_audit.snapshot(db_url)
    assert gradebook_audit.changes(before, gradebook_audit.snapshot(db_url)) == []
    _sql(db_url, "UPDATE grade SET manual_score = 10.0 WHERE manual_score = 3.0")
    found = gradebook_audit.changes(before, gradebook_audit.snapshot(db_url))
    assert found == [Change("ada", "lab", "nb", "q1", "manual_score", 3.0, 10.0)]
    assert str(found[0]) == "ada / lab / nb / q1: manual_score changed from 3.0 to 10.0"


@pytest.mark.processes
def test_extra_credit_comments_and_deletions_are_reported_auto_scores_are_not(audit_template, tmp_path):
    db_url = _gradebook(audit_template, tmp_path)
    before = gradebook_audit.snapshot(db_url)
    with Gradebook(db_url) as gb:  # what grading legitimately does: auto scores, a new empty submission
        gb.find_grade("q1", "nb", "lab", "ada").auto_score = 4.0
        gb.add_submission("lab", "ben")
        gb.db.commit()
    assert gradebook_audit.changes(before, gradebook_audit.snapshot(db_url)) == []
    _sql(db_url, "UPDATE grade SET extra_credit = 5.0 WHERE extra_credit = 0.5")
    _sql(db_url, "UPDATE comment SET manual_comment = NULL WHERE manual_comment = 'see me'")
    with Gradebook(db_url) as gb:
        gb.find_grade("w1", "nb", "lab", "ben").manual_score = 2.0  # ben's new row arrives already graded
        gb.db.commit()
    after = gradebook_audit.snapshot(db_url)
    assert gradebook_audit.changes(before, after) == [
        Change("ada", "lab", "nb", "w1", "extra_credit", 0.5, 5.0),
        Change("ada", "lab", "nb", "w1", "manual_comment", "see me", None),
        Change("ben", "lab", "nb", "w1", "manual_score", None, 2.0)]
    assert gradebook_audit.restore(db_url, gradebook_audit.changes(before, after)) == 3
    assert gradebook_audit.changes(before, gradebook_audit.snapshot(db_url)) == []
    with Gradebook(db_url) as gb:
        gb.remove_submission("lab", "ada")
    gone = gradebook_audit.changes(before, gradebook_audit.snapshot(db_url))
    assert [(c.cell, c.field, c.old, c.removed) for c in gone] == [
        ("q1", "manual_score", 3.0, True), ("w1", "extra_credit", 0.5, True), ("w1", "manual_comment", "see me", True)]
    assert "was deleted" in str(gone[0])


def test_snapshot_of_a_course_without_a_gradebook_creates_none(tmp_path):
    assert gradebook_audit.snapshot(f"sqlite:///{tmp_path / 'gradebook.db'}").values == {}
    assert not (tmp_path / "gradebook.db").exists()
