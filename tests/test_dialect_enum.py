"""One ``Dialect`` (issue 32 scope 1): ``nkisim.api.Dialect`` is the dialect everywhere -- the simulator's program
and kernel, the manifest's ``stub_dialect`` and references, a loaded kernel's dialect, the release's cells -- and
the two spellings (the simulator's ``0.6``, the course files' ``nki``) meet only in the enum."""

from __future__ import annotations

import re

import pytest

from nkilab.authoring import release
from nkilab.course import manifest
from nkilab.course.questions import REPO, SOLUTIONS
from nkilab.isolate._child import make_grid
from nkilab.kernels import latency
from nkilab.kernels.modules import kernel_dialect, load_kernel
from nkisim import api
from nkisim.api import Dialect

NKILAB = REPO / "autograder" / "nkilab"


def test_the_enum_names_each_dialect_by_the_simulators_word_and_the_courses():
    assert list(Dialect) == [Dialect.LEGACY, Dialect.NKI]
    assert [d.value for d in Dialect] == ["legacy", "0.6"] and [d.word for d in Dialect] == ["legacy", "nki"]
    for d in Dialect:
        assert Dialect.named(d.value) is Dialect.named(d.word) is Dialect.named(d) is d
        assert str(d) == f"{d}" == d.word  # paths and messages print the course's word
    for bad in ("0.5", "NKI", "", None, 6):
        with pytest.raises(ValueError, match="is not an NKI dialect"):
            Dialect.named(bad)


def test_the_manifest_and_the_release_read_dialects_into_the_enum():
    course = manifest.course()
    assert manifest.DIALECTS == tuple(Dialect) and course.stub_dialect is Dialect.NKI
    assert all(set(q.solutions) == set(Dialect) and all(type(d) is Dialect for d in q.solutions)
               for q in course.questions().values())
    assert release.release_dialects() == [Dialect.NKI, Dialect.LEGACY]
    assert release.assignments_dir(REPO, Dialect.LEGACY) == release.assignments_dir(REPO, "legacy") == \
        REPO / "assignments" / "legacy"
    assert release.assignments_dir(REPO, Dialect.NKI) == REPO / "assignments"
    with pytest.raises(manifest.ManifestError, match="not one of the dialects: legacy, nki"):
        manifest.parse(manifest.MANIFEST.read_text().replace('stub_dialect = "nki"', 'stub_dialect = "0.6"'))


def test_a_kernels_dialect_is_its_programs():
    """The grader's reading of a kernel (``kernel_dialect``) and the simulator's program name one enum member."""
    for rel, want in (("05_multicore_spmd/nki/rmsnorm_2core.py", Dialect.NKI),
                      ("05_multicore_spmd/rmsnorm_2core.py", Dialect.LEGACY)):
        kernel = api.as_kernel(load_kernel(SOLUTIONS / rel, "rmsnorm_2core"))
        assert kernel_dialect(kernel) is want and Dialect.named(kernel.dialect) is want
    assert make_grid([{"nc": 2}], Dialect.NKI) == make_grid([{"nc": 2}], "0.6") == 2  # a program's own word
    assert latency.on_simulator(Dialect.LEGACY) == latency.on_simulator("legacy")


def test_no_module_of_nkilab_translates_between_the_spellings():
    """The 0.6 dialect was ``"0.6"`` in some modules and ``"nki"`` in others, compared against either; now a
    dialect is a ``Dialect`` and a literal spelling of one is met only where a file or command line is read."""
    spelled = re.compile(r"""(==|!=|\bin\b|:)\s*\(?\s*["'](0\.6|nki)["']\s*[,)]?(?!\s*for\b)|["']0\.6["']""")
    found = []
    for path in sorted(NKILAB.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if spelled.search(code) and "__module__" not in code and "find_spec" not in code \
                    and "ALLOWED_MODULES" not in code and "imported" not in code:
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
