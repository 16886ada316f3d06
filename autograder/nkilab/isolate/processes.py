"""The processes grading starts, and the pipes between them: a one-shot child (``spawn``: a job in, messages out,
killed at its deadline with everything it started) and the executor's fork server (``ExecutorServer``: one
sandboxed process kept while one notebook is graded, a forked worker per job).

Every byte a child sends is hostile: messages are read within a budget of bytes and messages, a malformed stream
stops the child at once, and nothing a child writes anywhere else is read.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from nkilab.isolate import sandbox
from nkilab.isolate._io import ProtocolError, read_message, write_message

TAIL = 2000  # characters of the child's stdout/stderr kept for messages
GRACE_S = 5.0  # after the child is gone, how long its results may still take to drain


def clean_text(value: object, limit: int) -> str:
    """A string that came from a child, made safe to show: one line, no control characters, at most ``limit``
    characters.  (Renderers escape markup; this keeps a message from faking lines of a report.)"""
    text = "" if value is None else str(value)
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass
class ChildRun:
    """One child process's messages and how it ended."""

    messages: list[tuple[dict, list[np.ndarray]]] = field(default_factory=list)
    timed_out: bool = False
    returncode: int | None = None
    garbled: str | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    #: how many messages had arrived when the follow-up job was sent (None: never sent)
    phase_at: int | None = None


@dataclass
class Budget:
    """What one child may send back: bytes (headers and arrays) and messages."""

    bytes: int
    messages: int


def spawn(cmd: sandbox.Command, cwd: str | None, env: dict[str, str] | None, job: dict, arrays: list[np.ndarray],
          deadline: float, limits: sandbox.Limits, budget: Budget,
          followup: tuple[dict, list[np.ndarray]] | None = None) -> ChildRun:
    """Start ``cmd`` with the job on stdin and a results pipe (its fd in ``job["channel"]``), collect every
    message until it exits or the ``deadline`` (``time.monotonic()``) passes, then kill its whole process group.
    ``followup`` is written to its stdin once it sends a ``phase`` message (and then stdin is closed)."""
    run = ChildRun()
    read_end, write_end = os.pipe()
    job = dict(job, channel=write_end)
    phase = threading.Event()
    with tempfile.TemporaryDirectory(prefix="nkilab-") as tmp:  # the parent's own: stdout/stderr captures
        folder = Path(tmp)
        start = time.monotonic()
        with open(folder / "stdout.txt", "wb") as out_f, open(folder / "stderr.txt", "wb") as err_f, \
                os.fdopen(read_end, "rb") as results:
            proc = _start(cmd, cwd, env, limits, write_end, out_f, err_f)

            def stop() -> None:  # a malformed or oversized stream: nothing more from this child is read
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

            reader = threading.Thread(target=read_all, args=(results, run, budget, phase if followup else None,
                                                             stop), daemon=True)
            reader.start()
            threading.Thread(target=send_job, args=(proc, job, arrays, followup, phase), daemon=True).start()
            try:
                run.returncode = proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                run.timed_out = True
            phase.set()  # the sender thread stops waiting
            kill_group(proc)  # whatever it left behind goes too (in the sandbox: every process in it)
            reader.join(GRACE_S)
        run.seconds = time.monotonic() - start
        run.stdout = (folder / "stdout.txt").read_text(errors="replace")[-TAIL:]
        run.stderr = (folder / "stderr.txt").read_text(errors="replace")[-TAIL:]
    return run


def _start(cmd: sandbox.Command, cwd: str | None, env: dict[str, str] | None, limits: sandbox.Limits, channel: int,
           stdout: Any, stderr: Any) -> subprocess.Popen:
    """``cmd`` under ``limits`` in a session of its own (so its whole group can be killed), job on a stdin pipe,
    the results pipe's write end ``channel`` passed to it and closed here."""
    try:
        proc = subprocess.Popen(cmd.argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=stdout, stderr=stderr,
                                pass_fds=(channel, *cmd.fds), start_new_session=True,
                                preexec_fn=sandbox.preexec(limits, cmd))
    finally:
        os.close(channel)
    cmd.started()
    return proc


def send_job(proc: subprocess.Popen, job: dict, arrays: list[np.ndarray],
             followup: tuple[dict, list[np.ndarray]] | None, phase: threading.Event) -> None:
    try:
        assert proc.stdin is not None
        write_message(proc.stdin, job, arrays)
        if followup is not None:
            phase.wait()
            if proc.poll() is None:
                write_message(proc.stdin, *followup)
        proc.stdin.close()
    except (OSError, ValueError):  # the child died before reading its job: reported as a crash
        pass


def read_all(results: BinaryIO, run: ChildRun, budget: Budget, phase: threading.Event | None,
             stop: Callable[[], None], end: list[dict] | None = None) -> None:
    """Every message of ``results`` into ``run``, within ``budget``; past it, or at a malformed message, the
    child is stopped at once (``stop``) rather than left writing into a pipe nobody reads until the deadline.
    Given ``end``, reading stops at the fork server's ``ended`` message, which goes there (not into ``run``)."""
    left = [budget.bytes]
    try:
        while (msg := read_message(results, left)) is not None:
            if end is not None and msg[0].get("kind") == "ended":
                end.append(msg[0])
                return
            if len(run.messages) >= budget.messages:
                run.garbled = "more messages than the job calls for"
                stop()
                return
            run.messages.append(msg)
            if msg[0].get("kind") == "phase" and phase is not None and run.phase_at is None:
                run.phase_at = len(run.messages)
                phase.set()
    except ProtocolError as err:
        run.garbled = clean_text(err, 120)
        stop()
    except (OSError, ValueError):
        pass


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group ``proc`` leads (it was started with ``start_new_session``), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


class ExecutorServer:
    """The executor (``nkilab.isolate._execute``) as a fork server: started on first use, in its own sandbox holding only the
    simulator, and kept until ``stop_servers`` (the grading of a notebook ends, or this process does); each job runs
    in a worker it forks, so a question pays a fork instead of a Python start-up and the simulator's import. Under
    nbgrader (``nkilab.autograde.direct_grade``) a notebook's grading ends by stopping it: one student's questions share a
    server, never two students'.

    A job's answer ends with the server's ``ended`` message (the worker's exit code). Any trouble -- the deadline, a
    budget exceeded, a malformed stream, a dead server -- kills the server and its workers, and the next job starts
    a fresh one: a job never inherits a damaged process. ``make`` builds the command each start runs (a sandbox's
    start-up descriptors serve one start)."""

    def __init__(self, make: Callable[[], sandbox.Command], cwd: str | None, env: dict[str, str] | None,
                 limits: sandbox.Limits) -> None:
        self.make, self.cwd, self.env, self.limits = make, cwd, env, limits
        self.proc: subprocess.Popen | None = None
        self.results: Any = None
        self.lock = threading.Lock()

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        cmd = self.make()
        try:
            self.proc = _start(cmd, self.cwd, self.env, self.limits, write_end, subprocess.DEVNULL, subprocess.DEVNULL)
        finally:
            cmd.close()
        self.results = os.fdopen(read_end, "rb")
        assert self.proc.stdin is not None
        write_message(self.proc.stdin, {"channel": write_end}, [])

    def stop(self) -> None:
        if self.proc is not None:
            kill_group(self.proc)
            for fh in (self.proc.stdin, self.results):
                try:
                    if fh is not None:
                        fh.close()
                except OSError:
                    pass
        self.proc, self.results = None, None

    def run(self, job: dict, arrays: list[np.ndarray], deadline: float, budget: Budget) -> ChildRun:
        """One job: its messages (the final ``ended`` one taken off) and how its worker ended."""
        with self.lock:
            run = ChildRun()
            start = time.monotonic()
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self.stop()
                    self._start()
            except (OSError, ValueError):  # the server could not start: reported as a crash
                self.stop()
                run.seconds = time.monotonic() - start
                return run
            assert self.proc is not None and self.proc.stdin is not None
            if time.monotonic() >= deadline:  # out of time before it starts: not sent (a quick server could answer
                run.timed_out = True  # before the reader's zero-second join looked), and the server replaced
                self.stop()
                run.seconds = time.monotonic() - start
                return run

            def send(stdin: Any) -> None:  # a server that never reads must not hold this process past the deadline
                try:
                    write_message(stdin, job, arrays)
                except (OSError, ValueError):
                    pass

            threading.Thread(target=send, args=(self.proc.stdin,), daemon=True).start()
            ended: list[dict] = []  # trouble (garbled, over budget) is the run's; the server is stopped below
            reader = threading.Thread(target=read_all, args=(self.results, run, budget, None, lambda: None, ended),
                                      daemon=True)
            reader.start()
            reader.join(max(deadline - time.monotonic(), 0.0))
            if reader.is_alive():
                run.timed_out = True
            if reader.is_alive() or not ended or run.garbled:
                self.stop()  # its pipes close, so the reader and the sender end
                reader.join(GRACE_S)
            if ended:
                code = ended[0].get("code")
                run.returncode = code if type(code) is int else None
            run.seconds = time.monotonic() - start
            return run


_SERVERS: dict[tuple, ExecutorServer] = {}
_SERVERS_LOCK = threading.Lock()


def executor_server(key: tuple, make: Callable[[], sandbox.Command], cwd: str | None, env: dict[str, str] | None,
                    limits: sandbox.Limits) -> ExecutorServer:
    """This process's server for ``key`` (what its command runs: argv, environment, sandboxed or not), started on
    first use."""
    key = (key, cwd, tuple(sorted((env or {}).items())), limits)
    with _SERVERS_LOCK:
        if key not in _SERVERS:
            _SERVERS[key] = ExecutorServer(make, cwd, env, limits)
        return _SERVERS[key]


def running_servers() -> list[ExecutorServer]:
    """The servers of this process that are alive now."""
    return [s for s in _SERVERS.values() if s.proc is not None and s.proc.poll() is None]


@atexit.register
def stop_servers() -> None:
    """Stop every server of this process (at its exit; a test suite after each module, since a server may
    otherwise outlive the tests that started it by the whole session)."""
    for server in list(_SERVERS.values()):
        server.stop()
