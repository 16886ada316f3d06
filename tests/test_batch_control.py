"""One ``make grade`` per course, and a signal to ``make grade`` ends every process it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from course_testing import processes_under

from nkilab.batch import class_course
from nkilab.batch.batch_control import CourseBusy, course_lock

REPO = Path(__file__).resolve().parents[1]


def test_a_second_run_on_the_same_course_is_refused(tmp_path):
    lock = tmp_path / "course" / ".nkilab-grade.lock"
    with course_lock(lock):
        with pytest.raises(CourseBusy, match=rf"pid {os.getpid()}"):
            with course_lock(lock):
                pass
    with course_lock(lock):  # released when the first run ends
        pass


@pytest.mark.processes
def test_the_lock_is_released_when_the_holder_dies(tmp_path):
    lock = tmp_path / "lock"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from nkilab.batch.batch_control import course_lock\n"
                               f"with course_lock(Path({str(lock)!r})):\n    print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(CourseBusy):
        with course_lock(lock):
            pass
    holder.kill()
    holder.wait()
    with course_lock(lock):
        pass


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_make_grade_and_everything_it_started(tmp_path, sig):
    course = tmp_path / "example_class"
    proc = subprocess.Popen([sys.executable, "-m", "nkilab.batch.classgrade", "--workdir", str(course), "--assignment",
                             "01_vector_add", "--seed", "1"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600

    def grading() -> bool:  # an nbgrader autograde process has started on a notebook (one log per shard)
        return any("Sanitizing" in log.read_text(errors="replace")
                   for log in (course / "logs").glob("autograde-01_vector_add*.log"))

    while not grading():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
    assert processes_under(course)  # nbgrader and its notebook kernel are at work
    # a run of one stage releases and takes in that stage alone
    assert sorted(p.name for p in (course / "release").iterdir()) == ["01_vector_add"]
    assert {p.name for p in (course / "submitted").glob("*/*")} == {"01_vector_add"}
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, (out[-2000:], err[-2000:])
    assert f"stopped by {signal.Signals(sig).name}" in err
    deadline = time.monotonic() + 15  # a notebook kernel notices its parent's end within a second or two
    while processes_under(course) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_under(course) == []


def test_a_second_nbgrader_process_only_for_a_class_sized_stage():
    """A stage a few students handed in goes to one nbgrader process (a second would cost more to start than it
    saves); a class-sized one is dealt out across --jobs, every student to exactly one process."""
    few = [f"s{i}" for i in range(class_course.MIN_PER_SHARD * 2 - 1)]
    assert class_course.shard(few, 4) == [few]
    many = [f"s{i}" for i in range(class_course.MIN_PER_SHARD * 2 + 1)]
    dealt = class_course.shard(many, 2)
    assert len(dealt) == 2 and sorted(sum(dealt, [])) == sorted(many)
    assert min(len(s) for s in dealt) >= class_course.MIN_PER_SHARD
    assert class_course.shard(many, 1) == [many]
    assert len(class_course.shard(many * 10, 3)) == 3
    assert class_course.shard([], 2) == []
