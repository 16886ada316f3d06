"""Keeping one ``make grade`` run in hand: a lock per course, and SIGINT/SIGTERM ending every process it started.

nbgrader runs in its own process group (so a hand-in cannot signal the grader's group), which also means a
Ctrl-C or a ``kill`` aimed at ``make grade`` would not reach it: it would go on grading, orphaned, next to the
re-run the TA starts.  ``Children`` remembers each group started and ``on_signals`` ends them all before exiting.
Two runs on one course would interleave writes to one gradebook; ``course_lock`` refuses the second.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from nkilab.isolate.processes import kill_group


class CourseBusy(RuntimeError):
    """Another grading run holds the course's lock."""


@contextlib.contextmanager
def course_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the whole run; refuse if it is held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            raise CourseBusy(f"another grading run (pid {holder}) is working on this course; wait for it or stop it "
                             f"(lock: {path})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class Children:
    """The process groups this run started and has not seen end."""

    def __init__(self) -> None:
        self.running: dict[int, subprocess.Popen] = {}

    def started(self, proc: subprocess.Popen) -> None:
        self.running[proc.pid] = proc

    def ended(self, proc: subprocess.Popen) -> None:
        self.running.pop(proc.pid, None)

    def kill_all(self) -> None:
        for pid, proc in list(self.running.items()):
            kill_group(proc)
            self.running.pop(pid, None)


CHILDREN = Children()


def on_signals(children: Children = CHILDREN) -> None:
    """SIGINT, SIGTERM and SIGHUP end every group in ``children`` and then this process (exit 128 + signal)."""

    def stop(signum: int, _frame: object) -> None:
        children.kill_all()
        print(f"\nmake grade: stopped by {signal.Signals(signum).name}; every grading process it started has "
              "ended.  Run it again to grade from the start.", file=sys.stderr, flush=True)
        os._exit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
