"""The OS sandbox every graded run of student code goes through: Debian's ``bubblewrap`` (``bwrap``).

A student's kernel is Python, and Python can do anything its process may do: read ``solutions/`` or another
student's hand-in, rewrite the gradebook, kill the grader, fill the disk.  A static screen (``nkilab.gate``)
turns away the obvious attempts, but only the operating system can be the boundary.  Inside the sandbox the
kernel runs

* in new user, PID, network, IPC, UTS and cgroup namespaces (``--unshare-all``), as uid/gid 65534 with every
  capability dropped, in a new session (no terminal to inject into), killed with its parent
  (``--die-with-parent``) -- it cannot see or signal a single process of the grader's;
* with a file system made of read-only binds of only what the run needs -- the system libraries, the Python
  installation, the virtualenv, the simulator and the grading child's own package -- plus the one kernel file
  and a small private tmpfs as scratch space (``/tmp``, also ``HOME``).  ``solutions/``, the course directory,
  the gradebook, other hand-ins and the rest of the checkout do not exist in there;
* with a cleared environment (no grading seed, no reference latencies, no tokens of the TA's shell);
* under hard resource limits set before ``bwrap`` starts (a hard limit cannot be raised again from inside):
  address space, file size, CPU seconds, open files, and processes.

Where user namespaces are unavailable (or ``bwrap`` is missing) grading refuses to start unless the TA passes
``--no-sandbox``; that mode prints a warning on every report (``NKILAB_NO_SANDBOX=1``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
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
    processes: int = 64  # per uid; enforced by the kernel only when the grader is not root (see README)


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


def command(argv: list[str], kernel_file: Path | None, env: dict[str, str], limits: Limits) -> list[str]:
    """``bwrap ... argv``: ``argv`` run in the sandbox, ``kernel_file`` (if any) visible at ``/kernel/<name>``.
    The executor's sandbox has no kernel file: it holds the simulator's code and nothing else."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--uid", str(UNPRIVILEGED),
            "--gid", str(UNPRIVILEGED), "--cap-drop", "ALL", "--clearenv", *_system_binds(),
            "--proc", "/proc", "--dev", "/dev", "--size", str(limits.scratch_mb * 2**20), "--tmpfs", SCRATCH]
    for root in read_only_roots():  # after the scratch tmpfs, which would hide a root under /tmp
        args += ["--ro-bind", str(root), str(root)]
    if kernel_file is not None:
        args += ["--ro-bind", str(kernel_file), f"{KERNEL_DIR}/{kernel_file.name}"]
    args += ["--chdir", SCRATCH]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return [*args, "--", *argv]


def rlimits(limits: Limits) -> Callable[[], None]:
    """A ``preexec_fn`` setting hard limits (soft = hard) in the forked child, before ``bwrap`` runs."""

    def apply() -> None:
        import resource

        def cap(which: int, value: int) -> None:
            resource.setrlimit(which, (value, value))

        cap(resource.RLIMIT_AS, limits.memory_mb * 2**20)
        cap(resource.RLIMIT_FSIZE, limits.file_mb * 2**20)
        cap(resource.RLIMIT_CPU, limits.cpu_s)
        cap(resource.RLIMIT_NOFILE, limits.open_files)
        cap(resource.RLIMIT_CORE, 0)
        if os.getuid() != 0:  # root is exempt from RLIMIT_NPROC, and it counts all of root's processes
            cap(resource.RLIMIT_NPROC, limits.processes + _processes_of_this_user())

    return apply


def _processes_of_this_user() -> int:
    uid, n = os.getuid(), 0
    for p in Path("/proc").iterdir():
        try:
            n += p.name.isdigit() and p.stat().st_uid == uid
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
    argv = [sys.executable, "-c", "import nkisim, nkilab._child; print('sandbox-ok')"]
    try:
        proc = subprocess.run(command(argv, probe_file, environment({}), Limits()), capture_output=True, text=True,
                              timeout=60, preexec_fn=rlimits(Limits()), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError, SandboxUnavailable) as err:
        return f"bubblewrap failed to start: {err}"
    if proc.returncode != 0 or "sandbox-ok" not in proc.stdout:
        why = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return f"bubblewrap could not run Python (user namespaces disabled?): {why[0]}"
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
