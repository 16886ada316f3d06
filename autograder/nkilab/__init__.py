"""nkilab: the NKI Kernel Lab's checking and grading library.

``check(question_id, kernel)`` is the student's self-check (public cases, plain-word diagnosis,
modelled latency vs the speed tiers).  ``grade(question_id, module_path)`` is what nbgrader grade
cells call: it runs the student's module in a subprocess with a timeout and compares in this process.
``latency_us(kernel, *arrays, target=...)`` is the lessons' latency helper for demos and sweeps (a cost-model
estimate on the simulator, labelled by ``latency_label(target)``), and ``load_kernel(path, name)`` imports the
kernel a ``%%writefile`` cell saved, for demos that profile or benchmark it; ``peak(target)`` is the target's
peak TensorE and DMA rates (the lessons' bounds), read from the simulator's target file; ``figures`` draws the
lessons' diagrams.  The rest of the library is in sub-packages named for what they hold, in the order a hand-in
flows through them: course, authoring, intake, autograde, judge, isolate, kernels, batch, lms (autograder/README.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> the module that defines it.  Loaded on first use (PEP 562), not when the package is imported:
#: the sandboxed grading child and executor import ``nkilab.isolate._child`` / ``nkilab.isolate._execute``, which need none of
#: these, and each of those processes starts once per graded question (the eager imports were a third of their
#: start-up: course manifest, grading, comparison and report modules)
_EXPORTS = {
    "CheckResult": "nkilab.judge.check", "check": "nkilab.judge.check", "peak": "nkilab.course.facts",
    "GradeReport": "nkilab.judge.grade", "grade": "nkilab.judge.grade", "grade_report": "nkilab.judge.grade",
    "latency_label": "nkilab.kernels.latency", "latency_us": "nkilab.kernels.latency", "load_kernel": "nkilab.kernels.modules",
    "QUESTIONS": "nkilab.course.questions",
}
#: modules the lessons use by name (``from nkilab import figures``), loaded on first use like the names above
_MODULES = {"figures": "nkilab.course.figures"}

if TYPE_CHECKING:
    from nkilab.course import figures
    from nkilab.course.facts import peak
    from nkilab.course.questions import QUESTIONS
    from nkilab.judge.check import CheckResult, check
    from nkilab.judge.grade import GradeReport, grade, grade_report
    from nkilab.kernels.latency import latency_label, latency_us
    from nkilab.kernels.modules import load_kernel


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
        globals()[name] = value
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nkilab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_MODULES})


__all__ = ["QUESTIONS", "CheckResult", "GradeReport", "check", "figures", "grade", "grade_report", "latency_label",
           "latency_us", "load_kernel", "peak"]
