"""Course tests share helpers in tests/course_testing.py: let pytest rewrite its asserts too (the mutant test)."""

import os

import pytest

# an op issuing an instruction its registry entry does not declare fails the test (users get a warning)
os.environ.setdefault("NKISIM_STRICT_REGISTRY", "1")

pytest.register_assert_rewrite("course_testing")

import program_check  # noqa: E402,F401  (NKISIM_CHECK_PROGRAMS=1: every launch is also checked as a program)
