"""Course tests share helpers in tests/course_testing.py: let pytest rewrite its asserts too (the mutant test)."""

import os
import tempfile

import pytest

# a grading run keeps its seed in the TA's private state folder (nkilab.seeds): the tests' own, not the home's
os.environ.setdefault("NKILAB_STATE_DIR", tempfile.mkdtemp(prefix="nkilab-state-"))
# an op issuing an instruction its registry entry does not declare fails the test (users get a warning)
os.environ.setdefault("NKISIM_STRICT_REGISTRY", "1")

pytest.register_assert_rewrite("course_testing")

import program_check  # noqa: E402,F401  (NKISIM_CHECK_PROGRAMS=1: every launch is also checked as a program)
