"""Course tests share helpers in tests/course_testing.py: let pytest rewrite its asserts too (the mutant test)."""

import pytest

pytest.register_assert_rewrite("course_testing")
