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


@pytest.fixture(autouse=True, scope="module")
def _stop_executor_servers():
    """A grading process keeps one executor server (``nkilab.processes``) for its life; in a test session that life
    is the whole session, so each module's servers are stopped at its end, and "nothing outlives grading" checks
    see only the grading run they look at."""
    yield
    from nkilab import processes

    processes.stop_servers()
