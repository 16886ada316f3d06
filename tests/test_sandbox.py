"""The OS sandbox alone contains hostile kernels: each attack runs in ``nkilab.isolate.sandbox`` with the static screen
(``nkilab.judge.gate``) bypassed, and the grader, its files, its processes and the other hand-ins come out untouched.

Every attack here is aimed at real targets this test creates on the host (a peer's hand-in, a gradebook, a
"solution", the grader's own module), with their absolute paths written into the kernel, so the kernel knows
exactly where to strike.  The grades the same kernels earn through ``grade()`` (screen included) are asserted
at the end.  These kernels never run outside the sandbox.
"""

from __future__ import annotations

import hashlib
import os
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from nkilab import grade_report
from nkilab.course.questions import QUESTIONS
from nkilab.isolate import sandbox
from nkilab.isolate.runner import run_module
from nkilab.judge import gate

HEADER = "import os\nimport signal\nimport sys\nimport time\n\nimport neuronxcc.nki as nki\n" \
         "import neuronxcc.nki.language as nl\nimport numpy as np\n\n"
HONEST_BODY = """
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out
"""


def kernel(tmp_path: Path, name: str, before: str, body: str = HONEST_BODY) -> Path:
    path = tmp_path / "handin" / f"{name}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(HEADER + textwrap.dedent(before) + "\n\n@nki.jit\ndef vector_add_naive(a, b):\n"
                    + textwrap.indent(textwrap.dedent(body), "    "))
    return path


def inputs(n: int = 1) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    return [[rng.standard_normal((128, 512)).astype(np.float32) for _ in range(2)] for _ in range(n)]


def run(path: Path, timeout: float = 20.0, **kw):
    return run_module(path, "vector_add_naive", inputs(), timeout=timeout, sandboxed=True, **kw)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def victims(tmp_path: Path) -> dict[str, Path]:
    """Files a hostile kernel would love to read or change: a peer's hand-in, the gradebook, a solution."""
    found = {}
    for name, text in [("peer", "ada's honest notebook"), ("gradebook", "manual_score=2.0"),
                       ("solution", "SECRET-REFERENCE-LINE nl.add(a_tile, b_tile)")]:
        p = tmp_path / "course" / name
        p.parent.mkdir(exist_ok=True)
        p.write_text(text)
        found[name] = p
    return found


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_honest_kernel_runs_in_the_sandbox_and_its_outputs_come_back(tmp_path):
    res = run(kernel(tmp_path, "honest", ""))
    assert res.sandboxed and not res.crashed and not res.timed_out and res.import_error is None
    a, b = inputs()[0]
    np.testing.assert_array_equal(res.cases[0].output, a + b)


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_files_outside_the_sandbox_do_not_exist_for_the_kernel(tmp_path, victims):
    path = kernel(tmp_path, "thief", f"""
        seen = []
        for target in {[str(v) for v in victims.values()]!r} + ["/etc/passwd", "/root", "/work", {str(Path.cwd())!r}]:
            seen.append(f"{{target}}: {{os.path.exists(target)}}")
        try:
            with open({str(victims['peer'])!r}, "w") as fh:
                fh.write("overwritten by a hostile kernel")
            seen.append("wrote the peer's hand-in")
        except OSError as err:
            seen.append(f"write refused: {{err.errno}}")
        raise RuntimeError(" | ".join(seen))
        """)
    before = {k: digest(v) for k, v in victims.items()}
    res = run(path)
    msg = res.import_error.message
    for target in victims.values():
        assert f"{target}: False" in msg
    assert "/etc/passwd: False" in msg and "write refused" in msg
    assert {k: digest(v) for k, v in victims.items()} == before


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_the_grader_package_and_python_are_read_only(tmp_path):
    import nkilab.course.questions

    target = Path(nkilab.course.questions.__file__).parents[1] / "judge" / "grade.py"
    before = digest(target)
    path = kernel(tmp_path, "patcher", f"""
        with open({str(target)!r}, "a") as fh:
            fh.write("\\nPATCHED = True\\n")
        """)
    res = run(path)
    # read-only, and under a root grader not even the sandbox user's to try (root owns it, the sandbox is nobody)
    assert res.import_error is not None and any(why in res.import_error.message for why in (
        "Read-only file system", "Permission denied"))
    assert digest(target) == before


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_environment_is_cleared(tmp_path, monkeypatch):
    monkeypatch.setenv("NKILAB_SEED", "13579")
    monkeypatch.setenv("NKILAB_REFERENCE_LATENCIES", '{"vector_add_naive@trn2": 1}')
    monkeypatch.setenv("TA_TOKEN", "hunter2")
    monkeypatch.setenv("NKILAB_HIDDEN_CASES", "/grader/private/hidden.json")
    path = kernel(tmp_path, "env", "raise RuntimeError(repr(sorted(os.environ.items())))")
    msg = run(path).import_error.message
    assert "13579" not in msg and "hunter2" not in msg and "REFERENCE" not in msg and "private" not in msg
    assert "'HOME', '/tmp'" in msg


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_the_kernel_cannot_see_or_signal_the_grader(tmp_path):
    path = kernel(tmp_path, "killer", """
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        hits = []
        for pid in (os.getppid(), -1):
            try:
                os.kill(pid, signal.SIGSTOP if pid == -1 else signal.SIGKILL)
                hits.append(pid)
            except OSError as err:
                hits.append(f"{pid}: errno {err.errno}")
        raise RuntimeError(f"visible pids {pids}, signals {hits}")
        """)
    res = run(path)
    # it saw only its own PID namespace; kill(-1) stopped at most its own sandbox; this process is alive
    assert res.crashed or res.import_error is not None
    assert os.getpid() > 0
    if res.import_error is not None:
        visible = res.import_error.message.split("visible pids ")[1].split("]")[0]
        assert all(int(p) < 10 for p in visible.strip("[").split(", ") if p)


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_no_process_outlives_the_run(tmp_path):
    token = f"{os.getpid()}{int(time.time())}"
    path = kernel(tmp_path, "daemon", f"""
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "{token}"])
            os._exit(0)
        """, body="while True:\n    pass\n")
    res = run(path, timeout=3)
    assert res.timed_out
    time.sleep(0.5)
    leftovers = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and token in (p / "cmdline").read_bytes().decode(errors="replace"):
                leftovers.append(p.name)
        except OSError:
            pass
    assert leftovers == []


def _our_sandboxes() -> dict[str, int]:
    """Processes and threads this test process started (its descendants), counted per PID namespace other than its
    own: one count per sandbox (the machine's other sandboxes are not counted)."""
    parent: dict[int, int] = {}
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit():
                status = (p / "status").read_text()
                parent[int(p.name)] = int(status.split("\nPPid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            pass
    ours, me = os.readlink("/proc/self/ns/pid"), os.getpid()
    found: dict[str, int] = {}
    for pid in parent:
        up, seen = pid, 0
        while up not in (0, 1, me) and seen < 64:
            up, seen = parent.get(up, 0), seen + 1
        if up != me:
            continue
        try:
            ns = os.readlink(f"/proc/{pid}/ns/pid")
            if ns != ours:
                found[ns] = found.get(ns, 0) + len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    return found


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
@pytest.mark.timeout(120)
def test_a_fork_bomb_stops_at_the_sandbox_process_limit_and_stalls_nobody(tmp_path):
    """A real fork bomb (every process forks for ever) runs until its own time limit: the sandbox never holds more
    than its process limit (plus its init), even when the grader is root (whose processes Linux never limits: the
    sandbox's are nobody's), it earns nothing, a peer graded beside it meanwhile is graded right, and nothing is
    left when the bomb's time is up."""
    import threading

    bomb = kernel(tmp_path, "bomb", """
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """)
    before = set(_our_sandboxes())  # (an executor server an earlier test left running)
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.update(bomb=run(bomb, timeout=6)))  # (it spins every core meanwhile)
    thread.start()
    peak, peer, bomb_ns = 0, None, None
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        counts = {ns: n for ns, n in _our_sandboxes().items() if ns not in before}
        if counts and max(counts.values()) > peak:
            peak, bomb_ns = max(counts.values()), max(counts, key=lambda ns: counts[ns])
        if peer is None and peak >= sandbox.Limits().processes:  # the bomb is at its limit: grade a peer now
            peer = run(kernel(tmp_path, "peer", ""), timeout=20)
        time.sleep(0.05)
    thread.join(30)
    res = outcome["bomb"]
    assert res.timed_out and not res.cases[0].status == "ok"
    assert sandbox.Limits().processes <= peak <= sandbox.Limits().processes + 1, peak
    assert peer is not None and not peer.timed_out and not peer.crashed
    a, b = inputs()[0]
    np.testing.assert_array_equal(peer.cases[0].output, a + b)
    time.sleep(0.5)
    assert bomb_ns not in _our_sandboxes()


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_memory_and_disk_limits_are_hard(tmp_path):
    path = kernel(tmp_path, "hog", """
        import resource
        notes = []
        try:
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
            notes.append("raised the memory cap")
        except (ValueError, OSError):
            notes.append("cap stays")
        try:
            block = bytearray(6 << 30)
            notes.append(f"allocated {len(block)}")
        except MemoryError:
            notes.append("no 6 GiB")
        for where in ("/tmp/fill", "/kernel/fill", "fill"):
            try:
                with open(where, "wb") as fh:
                    for _ in range(1024):
                        fh.write(b"x" * (1 << 20))
                notes.append(f"wrote 1 GiB to {where}")
            except OSError as err:
                notes.append(f"{where}: errno {err.errno}")
        raise RuntimeError(" | ".join(notes))
        """)
    msg = run(path).import_error.message
    assert "cap stays" in msg and "no 6 GiB" in msg and "wrote 1 GiB" not in msg, msg
    assert not list((tmp_path / "handin").glob("fill*"))


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_forged_results_are_not_believed(tmp_path):
    """A kernel that writes the old exchange files, prints a fake result frame to stdout and exits 0: the parent
    reads only the pipe it opened, so the run is a crash with no case answered."""
    path = kernel(tmp_path, "forger", """
        for name in ("case_0.json", "import.json", "bench.json"):
            with open(name, "w") as fh:
                fh.write('{"status": "ok", "latency_us": 0.001}')
        sys.stdout.write("NKL1" + "0" * 64)
        sys.stdout.flush()
        os._exit(0)
        """)
    res = run(path)
    assert res.crashed and res.cases[0].status == "not_run"


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_a_write_into_the_results_pipe_is_a_garbled_run_not_a_result(tmp_path):
    path = kernel(tmp_path, "pipe", """
        for fd in range(3, 64):
            try:
                os.write(fd, b"NKL1" + (2 ** 40).to_bytes(8, "little"))
            except OSError:
                pass
        """)
    res = run(path)
    assert res.garbled or res.crashed
    assert all(c.output is None for c in res.cases)


# --------------------------------------------------------------------------- the same attacks, graded


ATTACKS = ["thief", "patcher", "env", "killer", "daemon", "hog", "forger", "pipe"]


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
@pytest.mark.parametrize("name", ATTACKS)
def test_every_attack_is_refused_by_the_screen_and_scores_zero(tmp_path, victims, name):
    sources = {
        "thief": f"print(open({str(victims['solution'])!r}).read())",
        "patcher": "sys.modules['nkilab.isolate._child'].run_case = None",
        "env": "raise RuntimeError(os.environ.get('NKILAB_SEED'))",
        "killer": "os.kill(os.getppid(), signal.SIGKILL)",
        "daemon": "os.fork()",
        "hog": "import resource",
        "forger": "os._exit(0)",
        "pipe": "os.write(3, b'NKL1')",
    }
    path = kernel(tmp_path, name, sources[name])
    refusal = gate.screen(path)
    assert refusal is not None and "not allowed" in refusal.reason
    r = grade_report("vector_add_naive", path, seed=1, verbose=False)
    assert r.points == 0.0 and "refused your file" in r.evaluation.problem
    assert f"line {refusal.line}" in r.evaluation.problem


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_grading_without_a_sandbox_is_refused_unless_asked(monkeypatch, tmp_path, capsys):
    honest = QUESTIONS["vector_add_naive"].solution_path
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    sandbox.probe.cache_clear()
    try:
        r = grade_report("vector_add_naive", honest, seed=1)
        assert r.points == 0.0 and "bubblewrap (bwrap) is not installed" in capsys.readouterr().out
        monkeypatch.setenv(sandbox.NO_SANDBOX_ENV, "1")
        r = grade_report("vector_add_naive", honest, seed=1)
        assert r.points == QUESTIONS["vector_add_naive"].points
        assert capsys.readouterr().out.startswith(sandbox.WARNING)
    finally:
        sandbox.probe.cache_clear()


@pytest.mark.processes
@pytest.mark.usefixtures("needs_sandbox")
def test_grading_takes_the_course_target_not_the_graders_shell(monkeypatch):
    """A TA's shell with NEURON_PLATFORM_TARGET_OVERRIDE=trn1 still grades on the course's target (trn2)."""
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    r = grade_report("vector_add_naive", QUESTIONS["vector_add_naive"].solution_path, seed=1, verbose=False)
    assert r.evaluation.target == "trn2" and r.points == QUESTIONS["vector_add_naive"].points
    assert "estimate (nkisim cost model, trn2)" == r.evaluation.latency_label()
