"""Every byte of a notebook runs sandboxed (issue 28): a notebook whose grading needs a Jupyter kernel -- a teacher's
own course, with a plain-Python answer and its test -- gets that kernel in the sandbox (``nkilab.isolate.kernel_sandbox``),
and its grade cells' verdicts are computed by the grader outside it (``nkilab.autograde.cells``, ``nkilab.autograde.direct_grade``).

The thief of the example class (``theo``, stage 3 under the class teacher's version of the lesson) is graded here
the way nbgrader's execute step grades it, in a course laid out on disk with everything worth stealing in place
(the seed file, the grading environment, a gradebook, a classmate's hand-in, the reference solution): it earns what
its kernel earns, and nothing leaks or changes.  (``tests/test_grade_class.py`` grades it in the whole class.)
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest
import zmq

from nkilab.autograde.direct_grade import KERNEL_DIED, DirectGrade
from nkilab.batch import example_class
from nkilab.batch.salvage import KERNEL_NOT_RUN, salvage
from nkilab.intake.sanitize import grade_id, restore
from nkilab.isolate import processes
from nkilab.isolate.kernel_sandbox import MAX_MESSAGE_BYTES, SandboxedKernelClient, SandboxedKernelManager
from nkilab.judge.results import MIME

REPO = Path(__file__).resolve().parents[1]
STAGE = "03_free_dim_streaming"
SECRET_SEED = "8675309"

def test_the_kernels_client_connects_once_and_never_follows_the_path_again():
    """The client of a sandboxed kernel (what nbclient gets from the manager): its sockets never reconnect (a cell
    could replace a socket in the sandbox with a link to one of the host's), take no message over 64 MiB, and it
    starts no heartbeat channel (which reconnects by design).  No kernel is started here."""
    km = SandboxedKernelManager(kernel_name="python3")
    kc = km.client()
    assert isinstance(kc, SandboxedKernelClient)
    kc.start_channels()
    try:
        assert kc._hb_channel is None  # noqa: SLF001  (the channel jupyter_client creates on first use)
        for channel in (kc.shell_channel, kc.iopub_channel, kc.stdin_channel, kc.control_channel):
            assert channel.socket.getsockopt(zmq.RECONNECT_IVL) == -1
            assert channel.socket.getsockopt(zmq.MAXMSGSIZE) == MAX_MESSAGE_BYTES
    finally:
        kc.stop_channels()
    assert km.kernel_spec.interrupt_mode == "message" and km.transport == "ipc"


def teachers_release(stage: str = STAGE) -> nbformat.NotebookNode:
    """The class teacher's version of the lesson as released (what ``nbgrader generate_assignment`` makes of it):
    the lesson's release with the teacher's cells, each answer a stub."""
    version = example_class.teacher_versions()[stage]
    release = nbformat.read(REPO / "assignments" / f"{stage}.ipynb", as_version=4)
    nb = example_class.teacher_source(release, version)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code" and "BEGIN SOLUTION" in \
                cell.source:
            cell.source = cell.source.split("    ### BEGIN SOLUTION")[0] + "    raise NotImplementedError()"
    return nb


def handed_in(student: str, release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    recipe = example_class.recipes()[student][STAGE]
    reference = example_class.reference_answers(STAGE)
    reference.update(example_class.teacher_answers(example_class.teacher_versions()[STAGE]))
    return restore(example_class.build_notebook(release, recipe, reference), release).notebook


@pytest.fixture
def course(tmp_path, monkeypatch) -> dict:
    """A course on disk as ``make grade`` leaves it while grading theo: his notebook's folder under ``autograded/``,
    the gradebook, a later classmate's hand-in, the TA's seed file named in the grading environment."""
    root = tmp_path / "course"
    folder = root / "autograded" / "theo" / STAGE
    folder.mkdir(parents=True)
    victim = root / "submitted" / "trudy" / STAGE / f"{STAGE}.ipynb"
    victim.parent.mkdir(parents=True)
    victim.write_text('{"trudy": "her hand-in"}')
    (root / "gradebook.db").write_text("GRADEBOOK ada 65/65 trudy 0/4")
    seed_file = tmp_path / "ta-state" / "seed-course"
    seed_file.parent.mkdir()
    seed_file.write_text(SECRET_SEED)
    monkeypatch.setenv("NKILAB_SEED_FILE", str(seed_file))
    monkeypatch.setenv("NKILAB_GRADING", "1")
    monkeypatch.setenv("NKILAB_TIMEOUT_S", "60")
    monkeypatch.setenv("NKILAB_TA_TOKEN", "hunter2")
    return {"root": root, "folder": folder, "victim": victim}


def outputs_text(cell: nbformat.NotebookNode) -> str:
    return json.dumps(cell.get("outputs", []))


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
@pytest.mark.timeout(600)
def test_the_thief_earns_its_kernels_honest_grade_and_nothing_leaks_or_changes(course):
    release = teachers_release()
    nb = handed_in("theo", release)
    graded, _ = DirectGrade(timeout=300, notebook_timeout=600).preprocess(
        nb, {"metadata": {"path": str(course["folder"])}})
    cells = {grade_id(c): c for c in graded.cells}
    # the thief's cell ran -- in the sandbox, where there was nothing to take
    theft = outputs_text(cells["tiles_answer"])
    assert "THEFT environment" in theft and "'HOME': '/tmp'" in theft
    for secret in (SECRET_SEED, "hunter2", "NKILAB_GRADING", "NKILAB_TIMEOUT_S", str(course["root"]), "GRADEBOOK",
                   "her hand-in"):
        assert secret not in json.dumps(graded), secret
    reference = (REPO / "solutions" / STAGE / "stream_add_1d.py").read_text()
    assert not [ln for ln in reference.splitlines() if len(ln.strip()) > 30 and ln.strip() in theft]
    assert "THEFT overwrote" not in theft and course["victim"].read_text() == '{"trudy": "her hand-in"}'
    assert sorted(p.name for p in course["folder"].iterdir()) == ["stream_add_1d.py"]  # only the grader's copy
    # nkilab.grade replaced in the kernel and a grade record forged on every later cell: the grader's cell is its own
    result = [o for o in cells["q1_grade"].outputs if o.output_type == "execute_result"]
    assert [o["data"]["text/plain"] for o in result] == ["2.0"]  # the slow kernel's honest 2 of 4
    assert "stream_add_1d: 2 of 4 points" in outputs_text(cells["q1_grade"])
    assert [json.loads(json.dumps(o["data"][MIME]))["points"] for o in cells["q1_grade"].outputs
            if MIME in o.get("data", {})] == [2.0]
    kernel_cells = [c for c in graded.cells if c.cell_type == "code" and grade_id(c) != "q1_grade"]
    assert not [c for c in kernel_cells if MIME in outputs_text(c)]  # the forged records are gone
    assert "tiles(): right" in outputs_text(cells["tiles_check"])  # and the teacher's check ran in his kernel
    assert processes.running_servers() == []  # the notebook's executor server ended with it


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_a_kernel_that_floods_or_dies_costs_only_the_cells_it_would_have_run(course):
    """A plain-Python answer that prints 20 MB (the grader keeps the first 4 MiB), another that kills its kernel:
    the teacher's kernel test after them is not run (0), the grade cell after them is the grader's and scores the
    kernel question in full."""
    release = nbformat.read(REPO / "assignments" / "01_vector_add.ipynb", as_version=4)
    nb = restore(example_class.build_notebook(release, {}, example_class.reference_answers("01_vector_add")),
                 release).notebook
    q1 = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "q1_grade")
    flood = nbformat.v4.new_code_cell("for _ in range(200):\n    print('x' * 100_000)")
    flood.metadata["nbgrader"] = {"solution": True, "grade": False, "locked": False, "grade_id": "floods"}
    answer = nbformat.v4.new_code_cell("import os\nos._exit(3)")
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "locked": False, "grade_id": "dies"}
    check = nbformat.v4.new_code_cell("print('never')")
    check.metadata["nbgrader"] = {"solution": False, "grade": True, "locked": True, "grade_id": "check", "points": 1}
    nb.cells[q1:q1] = [flood, answer, check]
    graded, _ = DirectGrade(timeout=120).preprocess(copy.deepcopy(nb), {"metadata": {"path": str(course["folder"])}})
    cells = {grade_id(c): c for c in graded.cells}
    printed = outputs_text(cells["floods"])
    assert 3 << 20 <= len(printed) < 5 << 20 and "the grader kept the first 4 MiB" in printed
    assert [o["ename"] for o in cells["dies"].outputs if o.output_type == "error"]
    assert KERNEL_DIED in outputs_text(cells["check"]) and "never" not in outputs_text(cells["check"])
    assert [o["data"]["text/plain"] for o in cells["q1_grade"].outputs if o.output_type == "execute_result"] == ["3.0"]


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_salvage_runs_no_code_of_the_students(course, tmp_path):
    """A submission whose grading process died is replayed by the plan: answers written, grade cells run by the
    grader, nothing of the student's run (a teacher's kernel test scores 0, said so)."""
    release = teachers_release()
    nb = handed_in("theo", release)
    outcomes = salvage(nb, course["folder"], timeout=300)
    assert outcomes["q1_grade"].points == 2.0 and outcomes["tiles_check"].points == 0.0
    assert KERNEL_NOT_RUN in outcomes["tiles_check"].text
    assert "THEFT" not in json.dumps([o.text for o in outcomes.values()])
    assert course["victim"].read_text() == '{"trudy": "her hand-in"}'
