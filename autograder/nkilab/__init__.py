"""nkilab: the NKI Kernel Lab's checking and grading library.

``check(question_id, kernel)`` is the student's self-check (public cases, plain-word diagnosis,
modelled latency vs the speed tiers).  ``grade(question_id, module_path)`` is what nbgrader grade
cells call: it runs the student's module in a subprocess with a timeout and compares in this process.
``latency_us(kernel, *arrays, target=...)`` is the lessons' latency helper for demos and sweeps (a cost-model
estimate on the simulator, labelled by ``latency_label(target)``), and ``load_kernel(path, name)`` imports the
kernel a ``%%writefile`` cell saved, for demos that profile or benchmark it; ``peak(target)`` is the target's
peak TensorE and DMA rates (the lessons' bounds), read from the simulator's target file.
"""

from nkilab.check import CheckResult, check
from nkilab.facts import peak
from nkilab.grade import GradeReport, grade, grade_report
from nkilab.latency import latency_label, latency_us
from nkilab.modules import load_kernel
from nkilab.questions import QUESTIONS

__all__ = ["QUESTIONS", "CheckResult", "GradeReport", "check", "grade", "grade_report", "latency_label", "latency_us",
           "load_kernel", "peak"]
