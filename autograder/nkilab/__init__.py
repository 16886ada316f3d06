"""nkilab: the NKI Kernel Lab's checking and grading library.

``check(question_id, kernel)`` is the student's self-check (public cases, plain-word diagnosis,
modelled latency vs the speed tiers).  ``grade(question_id, module_path)`` is what nbgrader grade
cells call: it runs the student's module in a subprocess with a timeout and compares in this process.
``latency_us(kernel, *arrays, target=...)`` is the lessons' latency helper for demos and sweeps (a cost-model
estimate on the simulator, labelled by ``latency_label(target)``), and ``load_kernel(path, name)`` imports the
kernel a ``%%writefile`` cell saved, for demos that profile or benchmark it; ``peak(target)`` is the target's
peak TensorE and DMA rates (the lessons' bounds), read from the simulator's target file.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> the module that defines it.  Loaded on first use (PEP 562), not when the package is imported:
#: the sandboxed grading child and executor import ``nkilab._child`` / ``nkilab._execute``, which need none of
#: these, and each of those processes starts once per graded question (the eager imports were a third of their
#: start-up: course manifest, grading, comparison and report modules)
_EXPORTS = {
    "CheckResult": "nkilab.check", "check": "nkilab.check", "peak": "nkilab.facts",
    "GradeReport": "nkilab.grade", "grade": "nkilab.grade", "grade_report": "nkilab.grade",
    "latency_label": "nkilab.latency", "latency_us": "nkilab.latency", "load_kernel": "nkilab.modules",
    "QUESTIONS": "nkilab.questions",
}

if TYPE_CHECKING:
    from nkilab.check import CheckResult, check
    from nkilab.facts import peak
    from nkilab.grade import GradeReport, grade, grade_report
    from nkilab.latency import latency_label, latency_us
    from nkilab.modules import load_kernel
    from nkilab.questions import QUESTIONS


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nkilab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = ["QUESTIONS", "CheckResult", "GradeReport", "check", "grade", "grade_report", "latency_label", "latency_us",
           "load_kernel", "peak"]
