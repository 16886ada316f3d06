"""The OS sandbox every graded run of student code goes through: Debian's ``bubblewrap`` (``bwrap``).

A student's kernel is Python, and Python can do anything its process may do: read ``solutions/`` or another
student's hand-in, rewrite the gradebook, kill the grader, fill the disk.  A static screen (``nkilab.judge.gate``)
turns away the obvious attempts, but only the operating system can be the boundary.  Inside the sandbox the
kernel runs

* in new user, PID, network, IPC, UTS and cgroup namespaces (``--unshare-all``), as uid/gid 65534 with every
  capability dropped, in a new session (no terminal to inject into), killed with its parent
  (``--die-with-parent``) -- it cannot see or signal a single process of the grader's.  Under a grader running
  as root, the sandbox's nobody is the host's nobody too, not root (Linux enforces no process limit on root's
  processes): see ``command``;
* with a file system made of read-only binds of only what the run needs -- the system libraries, the Python
  installation, the virtualenv, the simulator and the grading child's own package -- plus the one kernel file
  and a small private tmpfs as scratch space (``/tmp``, also ``HOME``).  ``solutions/``, the course directory,
  the gradebook, other hand-ins and the rest of the checkout do not exist in there.  The kernel file is a
  read-only copy of the bytes the grader read (``--ro-bind-data``), not a view of the file;
* with a cleared environment (no grading seed, no reference latencies, no tokens of the TA's shell);
* under hard resource limits set before ``bwrap`` starts (a hard limit cannot be raised again from inside):
  address space, file size, CPU seconds, open files; and processes (threads included), set by ``prlimit`` as the
  sandbox's first command: Linux counts them per user namespace (since 5.14), so the limit holds for the
  sandbox's own processes alone and a fork bomb inside stops at it without touching anyone else's count.

Where user namespaces are unavailable (or ``bwrap`` is missing) grading refuses to start unless the TA passes
``--no-sandbox``; that mode prints a warning on every report (``NKILAB_NO_SANDBOX=1``).
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: set (to 1) by ``make grade --no-sandbox``: grade without the sandbox, loudly
NO_SANDBOX_ENV = "NKILAB_NO_SANDBOX"
#: where the kernel file appears inside the sandbox (its own name is kept, for messages)
KERNEL_DIR = "/kernel"
SCRATCH = "/tmp"
UNPRIVILEGED = 65534  # nobody/nogroup
#: environment variables passed through from the grader: OpenBLAS needs these on some processors (a wrong
#: core type crashes it); they carry nothing about the course.
PASSED_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

WARNING = ("WARNING: graded WITHOUT the sandbox (--no-sandbox): student code ran as the grader's user and "
           "could read or change anything that user can.")


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run here, and unsandboxed grading was not asked for."""


@dataclass(frozen=True)
class Limits:
    """Hard limits of one sandboxed run (all enforced by the kernel, none by the code inside)."""

    memory_mb: int = 4096  # address space; the course's kernels peak near 250 MiB
    file_mb: int = 64  # largest file it may write (scratch is a tmpfs of scratch_mb anyway)
    scratch_mb: int = 64
    cpu_s: int = 120  # CPU seconds; the wall-clock limit is the parent's and is usually lower
    open_files: int = 256
    #: processes and threads in the sandbox (its init included); a kernel's run needs a few, a Jupyter kernel ~15
    processes: int = 16


@dataclass
class Command:
    """A command ready to start: its argv, the descriptors the child inherits (``pass_fds``), and for a sandbox
    the parent's side of its start-up (``started``).  Descriptors made for this command alone (the kernel file's
    bytes, the start-up pipes) are closed by ``close()``, or once the sandbox is running."""

    argv: list[str]
    fds: tuple[int, ...] = ()
    sandboxed: bool = False
    owned: list[int] = field(default_factory=list, compare=False)  # the child's ends, closed once it started
    info: int | None = field(default=None, compare=False)  # bwrap's --info-fd, read end
    release: int | None = field(default=None, compare=False)  # bwrap's --userns-block-fd, write end (root only)

    def started(self, timeout: float = 30.0) -> int | None:
        """After the child is started: the sandbox's first process id (its init, as this process sees it), and
        for a root grader its user namespace's mapping written and the sandbox let go (it waits for that).  None
        when ``bwrap`` failed before saying (its exit says why); the caller goes on, and the run fails as it would."""
        self.close_child_ends()
        pid = None
        try:
            if self.info is not None:
                pid = _read_child_pid(self.info, timeout)
            if self.release is not None and pid is not None:
                mapping = f"0 0 1\n{UNPRIVILEGED} {UNPRIVILEGED} 1\n"
                for name in ("uid_map", "gid_map"):
                    with open(f"/proc/{pid}/{name}", "w") as fh:
                        fh.write(mapping)
                os.write(self.release, b"1")
        except OSError:
            pid = None
        finally:
            self.close()
        return pid

    def close_child_ends(self) -> None:
        for fd in self.owned:
            _close(fd)
        self.owned = []

    def close(self) -> None:
        self.close_child_ends()
        for fd in (self.info, self.release):
            if fd is not None:
                _close(fd)
        self.info = self.release = None


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _read_child_pid(fd: int, timeout: float) -> int | None:
    """``child-pid`` from bwrap's ``--info-fd`` JSON (None at end of file or after ``timeout``)."""
    import json
    import select

    deadline, text = time.monotonic() + timeout, b""
    while b"}" not in text and len(text) < 4096:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            return None
        text += chunk
    try:
        pid = json.loads(text).get("child-pid")
    except ValueError:
        return None
    return pid if type(pid) is int and pid > 0 else None


def plain(argv: list[str]) -> Command:
    """An unsandboxed command (``--no-sandbox``, a student's own ``check()``)."""
    return Command(list(argv))


def unsandboxed_requested() -> bool:
    return os.environ.get(NO_SANDBOX_ENV, "") not in ("", "0")


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _system_binds() -> list[str]:
    """/usr plus the merged-/usr symlinks (or real directories on older layouts)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/lib", "/lib32", "/lib64", "/sbin"):
        p = Path(top)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            args += ["--ro-bind", top, top]
    return args


def _package_dir(name: str) -> Path:
    """Where an importable package lives, without importing it (nkisim's import has side effects)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SandboxUnavailable(f"cannot locate the package {name!r} to bind into the sandbox")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def read_only_roots() -> list[Path]:
    """The directories bound read-only: Python, the virtualenv, and the two packages the child imports."""
    roots = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), _package_dir("nkisim"),
             _package_dir("nkilab")]
    out: list[Path] = []
    for r in roots:  # drop roots inside another root (bound already)
        if not any(r != o and o in r.parents for o in roots) and r not in out:
            out.append(r)
    return out


def environment(extra: dict[str, str]) -> dict[str, str]:
    """The child's whole environment: nothing from the grader's but the OpenBLAS workarounds.  ``PYTHONPATH``
    names the folders holding the very ``nkisim`` and ``nkilab`` this process uses (and binds)."""
    path = dict.fromkeys(str(_package_dir(name).parent) for name in ("nkilab", "nkisim"))
    env = {"PATH": "/usr/bin:/bin", "HOME": SCRATCH, "TMPDIR": SCRATCH, "LANG": "C.UTF-8",
           "PYTHONPATH": os.pathsep.join(path),
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "PYTHONWARNINGS": "ignore",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.update({k: os.environ[k] for k in PASSED_THROUGH if k in os.environ})
    env.update(extra)
    return env


def command(argv: list[str], kernel_file: Path | None, env: dict[str, str], limits: Limits, *,
            files: dict[str, bytes] | None = None) -> Command:
    """``bwrap ... prlimit ... argv``: ``argv`` run in the sandbox under its process limit, ``kernel_file`` (if
    any) visible read-only at ``/kernel/<name>``, each of ``files`` (sandbox path -> bytes) a read-only file.
    The executor's sandbox has no kernel file: it holds the simulator's code and nothing else.  Start it with
    ``pass_fds=cmd.fds`` and ``preexec_fn=preexec(limits, cmd)``, then call ``cmd.started()``.

    Run by root, ``bwrap`` maps the sandbox's nobody to the host's nobody (it waits for this process to write the
    mapping: ``--userns-block-fd``), and its first command, ``setpriv``, becomes nobody and drops every
    capability before the real command runs: Linux exempts root's processes from ``RLIMIT_NPROC``, and the
    sandbox's were root's outside it."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    data = dict(files or {})
    if kernel_file is not None:
        data[f"{KERNEL_DIR}/{kernel_file.name}"] = kernel_file.read_bytes()
    info_r, info_w = os.pipe()
    cmd = Command([], sandboxed=True, owned=[info_w], info=info_r)
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--info-fd", str(info_w)]
    inner = ["prlimit", f"--nproc={process_limit(limits)}", "--"]
    if os.getuid() == 0:
        block_r, block_w = os.pipe()
        cmd.owned.append(block_r)
        cmd.release = block_w
        args += ["--unshare-user", "--userns-block-fd", str(block_r), "--cap-drop", "ALL"]
        args += [x for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP") for x in ("--cap-add", cap)]
        inner += ["setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups",
                  "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    else:
        args += ["--uid", str(UNPRIVILEGED), "--gid", str(UNPRIVILEGED), "--cap-drop", "ALL"]
    args += [*_system_binds(), "--proc", "/proc", "--dev", "/dev", "--size", str(limits.scratch_mb * 2**20),
             "--perms", "1777", "--tmpfs", SCRATCH]
    roots = read_only_roots()
    made: set[str] = {"/", "/usr", SCRATCH}
    for dest in [*map(str, roots), *data]:  # every folder on the way open to the sandbox's user (bwrap: 0700)
        for parent in reversed(Path(dest).parents):
            if str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
    for root in roots:  # after the scratch tmpfs, which would hide a root under /tmp
        args += ["--ro-bind", str(root), str(root)]
    for dest, content in data.items():
        fd = _memory_file(content)
        cmd.owned.append(fd)
        args += ["--perms", "0444", "--ro-bind-data", str(fd), dest]
    args += ["--chdir", SCRATCH]
    for k, v in env.items():
        args += ["--setenv", k, v]
    cmd.argv = [*args, "--", *inner, *argv]
    cmd.fds = tuple(cmd.owned)
    return cmd


def _memory_file(content: bytes) -> int:
    """A descriptor holding ``content`` (an anonymous memory file), positioned at its start, for ``bwrap`` to copy."""
    fd = os.memfd_create("nkilab-sandbox-file", os.MFD_CLOEXEC)
    view = memoryview(content)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def process_limit(limits: Limits) -> int:
    """The sandbox's ``RLIMIT_NPROC``.  Linux 5.14 and later count a process against it in its own user namespace
    (the sandbox's: its processes alone); older kernels count every process of the user, so there the limit is
    what the sandbox's user already runs plus the sandbox's allowance."""
    if _kernel_version() >= (5, 14):
        return limits.processes
    return limits.processes + _tasks_of(UNPRIVILEGED if os.getuid() == 0 else os.getuid())


def _kernel_version() -> tuple[int, int]:
    try:
        major, minor = platform.release().split(".")[:2]
        return int(major), int("".join(c for c in minor if c.isdigit()) or 0)
    except ValueError:
        return (0, 0)


def preexec(limits: Limits, command: Command) -> Callable[[], None]:
    """A ``preexec_fn`` for the forked child: hard limits (soft = hard) set before ``bwrap`` runs (the process limit
    is the sandbox's own first command's, see ``command``).  An unsandboxed run by another user than root keeps
    the per-user process limit (root has none)."""
    plain_limit = 0 if command.sandboxed or os.getuid() == 0 else limits.processes + _tasks_of(os.getuid())

    def apply() -> None:
        import resource

        def cap(which: int, value: int) -> None:
            resource.setrlimit(which, (value, value))

        cap(resource.RLIMIT_AS, limits.memory_mb * 2**20)
        cap(resource.RLIMIT_FSIZE, limits.file_mb * 2**20)
        cap(resource.RLIMIT_CPU, limits.cpu_s)
        cap(resource.RLIMIT_NOFILE, limits.open_files)
        cap(resource.RLIMIT_CORE, 0)
        if plain_limit:
            cap(resource.RLIMIT_NPROC, plain_limit)

    return apply


def _tasks_of(uid: int) -> int:
    """The processes and threads ``uid`` runs now (what ``RLIMIT_NPROC`` counts on a kernel without namespaces)."""
    n = 0
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and p.stat().st_uid == uid:
                n += len(os.listdir(p / "task"))
        except OSError:
            pass
    return n


def compile_packages() -> None:
    """Write the bytecode of the packages the sandbox binds read-only (the simulator and the grading children).

    Inside the sandbox nothing can be written there, so without it every sandboxed process compiles the simulator
    from source again: about 120 ms of each start-up (``bench/grading.py``). Up to date, this only compares
    timestamps; a tree that cannot be written (a read-only install) just goes on without."""
    import compileall

    for name in ("nkisim", "nkilab"):
        try:
            compileall.compile_dir(str(_package_dir(name)), quiet=2, workers=1)
        except (OSError, SandboxUnavailable):
            pass


@functools.lru_cache(maxsize=1)
def probe() -> str | None:
    """None when the sandbox works here, else why not (checked once per process, by running Python in it).
    The packages it binds are compiled first (``compile_packages``)."""
    if sys.platform != "linux":
        return f"bubblewrap needs Linux; this is {sys.platform}"
    if bwrap_path() is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    compile_packages()
    probe_file = Path(__file__)
    argv = [sys.executable, "-c", "import nkisim, nkilab.isolate._child; print('sandbox-ok')"]
    try:
        cmd = command(argv, probe_file, environment({}), Limits())
    except (OSError, SandboxUnavailable) as err:
        return f"bubblewrap failed to start: {err}"
    try:
        with subprocess.Popen(cmd.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=cmd.fds,
                              preexec_fn=preexec(Limits(), cmd), stdin=subprocess.DEVNULL) as proc:
            cmd.started()
            try:
                out, said = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                return "bubblewrap did not finish starting Python in 60 s"
    except OSError as err:
        return f"bubblewrap failed to start: {err}"
    finally:
        cmd.close()
    if proc.returncode != 0 or "sandbox-ok" not in out:
        why = (said or out).strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return f"bubblewrap could not run Python as nobody (user namespaces disabled? Python or the checkout " \
               f"not readable by all?): {why[0]}"
    return None


def require() -> bool:
    """True when runs must be sandboxed; raises SandboxUnavailable when they must be and cannot be."""
    if unsandboxed_requested():
        return False
    why = probe()
    if why is not None:
        raise SandboxUnavailable(f"cannot sandbox student code: {why}.  Fix that, or grade without the sandbox "
                                 f"with --no-sandbox ({NO_SANDBOX_ENV}=1) on a machine you can lose.")
    return True
