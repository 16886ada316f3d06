"""Where a grading run's hidden-case seed lives: with the TA, never in the course or the grading environment.

The seed decides every hidden case's inputs.  A student who learns it can recompute the timed case's inputs
inside the sandbox and return the answer as a constant, so it is kept where no hand-in's process can look and
no report can echo it: a file only the TA's user can read, outside the course directory (``$NKILAB_STATE_DIR``,
else ``$XDG_STATE_HOME/nkilab``, else ``~/.local/state/nkilab``), named by a hash of the course's path.  The
grading processes are told the file's *path* (``NKILAB_SEED_FILE``), not the seed; the sandboxed children see
neither.  Each ``make grade`` run draws a fresh seed unless the TA pins one (``--seed``); ``--resume`` reads the
stopped run's seed back from this file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: the environment variable naming the seed file a grading run reads its seed from
SEED_FILE_ENV = "NKILAB_SEED_FILE"
STATE_ENV = "NKILAB_STATE_DIR"


def state_dir() -> Path:
    """The TA's private state folder for nkilab (created 0700 on first write)."""
    given = os.environ.get(STATE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "nkilab"


def seed_file(course: Path) -> Path:
    """The seed file of the course at ``course`` (one per course directory)."""
    key = hashlib.sha256(str(course.resolve()).encode()).hexdigest()[:16]
    return state_dir() / f"seed-{key}"


def write_seed(path: Path, seed: int) -> None:
    """Record ``seed`` where only this user can read it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{int(seed)}\n")
    os.chmod(path, 0o600)


def read_seed(path: Path | str | None) -> int | None:
    """The seed recorded in ``path``, or None when there is none (or it is not a number)."""
    if not path:
        return None
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None
