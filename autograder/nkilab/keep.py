"""What course code computed, kept on disk under a key of everything it depends on, so it is computed once.

Two things the course computes are expensive and depend only on the course's own code: a lesson run (a Jupyter
kernel executing ``notebooks/NN_*.py`` with the reference answers in place, ``nkilab.lesson_runs``) and a
reference solution's estimated latency (``nkilab.evaluate.reference_latency``, about a second each on the
simulator).  Both are kept in ``$NKIDOCS_CACHE`` (default ``build/docs-cache``) under a key of their own input and
of every file their result can depend on (``INPUTS``: the simulator, the grader, the reference solutions, the pinned
requirements, Python's version), so an edit to any of them computes afresh.  A lock file per entry lets processes
that ask at once (the docs build, ``make grade``, pytest-xdist's workers) wait for one computation.

Only course code's results are kept here, never anything a student's code produced; a test run keeps its own in a
fresh folder (``tests/conftest.py``), so nothing outlives it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE_ENV = "NKIDOCS_CACHE"
#: what a run of course code depends on besides its own input
INPUTS = ("nkisim", "autograder/nkilab", "solutions", "requirements.txt", "requirements-torch.txt", "pyproject.toml")

_INPUTS_DIGEST: bytes | None = None


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or REPO / "build" / "docs-cache")


def inputs_digest() -> bytes:
    """A digest of everything a run of course code depends on besides its own input (read once per process)."""
    global _INPUTS_DIGEST
    if _INPUTS_DIGEST is None:
        digest = hashlib.sha256(f"{sys.version_info[:2]}\n".encode())
        for path in sorted(p for part in INPUTS for p in _files(REPO / part)):
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
        _INPUTS_DIGEST = digest.digest()
    return _INPUTS_DIGEST


def cache_key(content: bytes) -> str:
    """A short key for ``content`` run with the course code as it is now."""
    return hashlib.sha256(inputs_digest() + content).hexdigest()[:16]


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return [p for p in path.rglob("*") if p.suffix in (".py", ".toml") and "__pycache__" not in p.parts]


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` (created if missing) until the block ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
