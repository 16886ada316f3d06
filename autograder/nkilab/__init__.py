"""nkilab: the NKI Kernel Lab's checking and grading library.

``check(question_id, kernel)`` is the student's self-check (public cases, plain-word diagnosis,
modelled latency vs the speed tiers).  ``grade(question_id, module_path)`` is what nbgrader grade
cells call: it runs the student's module in a subprocess with a timeout and compares in this process.
"""

from nkilab.check import CheckResult, check
from nkilab.grade import GradeReport, grade, grade_report
from nkilab.questions import QUESTIONS

__all__ = ["QUESTIONS", "CheckResult", "GradeReport", "check", "grade", "grade_report"]
