"""nkilab's exports load on first use, and the sandboxed grading processes import none of them.

The trace child and the executor start once per graded question, so what they import is paid hundreds of times in a
class's ``make grade``.  The package's exports (check, grade, the manifest, the latency helpers) are loaded lazily;
these tests hold both halves of that: the processes stay lean, and every export is still the documented object,
whatever order its modules were imported in (``nkilab.judge.grade`` is a module, ``nkilab.grade`` the function it
defines; ``nkilab.figures`` is the lessons' module)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes  # every test here starts a process (a command, a sandbox)
REPO = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "autograder")]))
HEAVY = ("nkilab.judge.grade", "nkilab.judge.check", "nkilab.judge.evaluate", "nkilab.judge.compare", "nkilab.course.questions", "nkilab.course.manifest")


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("process", ["nkilab.isolate._child", "nkilab.isolate._execute"])
def test_the_sandboxed_processes_import_no_grading_module(process):
    loaded = _run(f"import sys, {process}; print(' '.join(sorted(sys.modules)))").split()
    assert not [m for m in HEAVY if m in loaded], process


@pytest.mark.parametrize("first", ["import nkilab.judge.grade, nkilab.judge.check", "from nkilab.judge.grade import grading_seed",
                                   "import nkilab", "from nkilab import grade_report"])
def test_every_export_is_the_documented_object_whatever_was_imported_first(first):
    out = _run(f"""{first}
import inspect, nkilab
from nkilab import grade, check, QUESTIONS, load_kernel, peak, latency_us
from nkilab.judge.grade import grade as grade_fn
from nkilab.judge.check import check as check_fn
assert grade is grade_fn and nkilab.grade is grade_fn and inspect.isfunction(grade), grade
assert check is check_fn and nkilab.check is check_fn, check
from nkilab import figures
assert figures.__name__ == "nkilab.course.figures" and nkilab.figures is figures, figures
assert "vector_add_naive" in QUESTIONS and callable(load_kernel) and callable(peak) and callable(latency_us)
print(sorted(set(nkilab.__all__) - set(dir(nkilab))))
""")
    assert out.strip() == "[]"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(subprocess.CalledProcessError) as info:
        subprocess.run([sys.executable, "-c", "import nkilab; nkilab.no_such_thing"], env=ENV, capture_output=True,
                       text=True, check=True)
    assert "has no attribute 'no_such_thing'" in info.value.stderr
