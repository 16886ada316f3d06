"""Course tests share helpers in tests/course_testing.py: let pytest rewrite its asserts too (the mutant test)."""

import os
import tempfile

import pytest

# a grading run keeps its seed in the TA's private state folder (nkilab.seeds): the tests' own, not the home's
os.environ.setdefault("NKILAB_STATE_DIR", tempfile.mkdtemp(prefix="nkilab-state-"))
# each lesson runs once per test run (nkilab.lesson_runs), kept here for the stage tests and the docs build alike;
# set when pytest starts, before pytest-xdist starts its workers, so they share it (they inherit the environment)
os.environ.setdefault("NKIDOCS_CACHE", tempfile.mkdtemp(prefix="nkilab-test-run-"))
# an op issuing an instruction its registry entry does not declare fails the test (users get a warning)
os.environ.setdefault("NKISIM_STRICT_REGISTRY", "1")

pytest.register_assert_rewrite("course_testing")

import costs  # noqa: E402  (measured costs: the slow mark and the order files run in)
import program_check  # noqa: E402,F401  (NKISIM_CHECK_PROGRAMS=1: every launch is also checked as a program)


@pytest.fixture(autouse=True, scope="module")
def _stop_executor_servers():
    """A grading process keeps one executor server (``nkilab.processes``) for its life; in a test session that life
    is the whole session, so each module's servers are stopped at its end, and "nothing outlives grading" checks
    see only the grading run they look at."""
    yield
    from nkilab import processes

    processes.stop_servers()


@pytest.fixture
def needs_sandbox():
    """Skip a test that grades through the sandbox where bubblewrap cannot run (asked when the test starts, not
    when its module is collected: ``make test-fast`` collects sandbox tests it never runs)."""
    from nkilab import sandbox

    why = sandbox.probe()
    if why is not None:
        pytest.skip(f"no sandbox here: {why}")


@pytest.fixture(autouse=True, scope="session")
def _no_processes_in_test_fast():
    """``make test-fast`` is the edit loop: no test in it may start a process. One that does fails, naming the
    marker that moves it to ``make test`` (a sandbox, a Jupyter kernel, a server and a command are all processes).
    (A fixture, not import-time code: it must hold where tests run, not in pytest-xdist's controller.)"""
    if os.environ.get("NKILAB_TEST_FAST") != "1":
        yield
        return
    import subprocess

    def no_process(*args, **kwargs):
        raise RuntimeError("make test-fast starts no processes, and this test does: mark it "
                           "@pytest.mark.processes (or slow) so it runs in make test")

    saved = subprocess.Popen.__init__, os.fork, os.posix_spawn
    subprocess.Popen.__init__, os.fork, os.posix_spawn = no_process, no_process, no_process
    yield
    subprocess.Popen.__init__, os.fork, os.posix_spawn = saved


if os.environ.get("NKILAB_TEST_CPU") or os.environ.get("NKILAB_TEST_TIMELINE"):
    # NKILAB_TEST_CPU=cpu.tsv pytest ...: each test's CPU seconds (this process and the children it reaped: sandboxes,
    # kernels, commands) appended to that file, for ranking the suite's cost on a machine other work keeps busy,
    # where --durations' wall-clock seconds mislead.  NKILAB_TEST_TIMELINE=t.tsv pytest -n 2 ...: per test, the
    # worker, its wall-clock start and end and its CPU seconds, for seeing where a parallel run's wall time goes
    # (which worker ran what when, and how long one sat idle at the end).
    import resource
    import time

    def _cpu() -> float:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        cpu, start = _cpu(), time.time()
        yield
        cpu, end = _cpu() - cpu, time.time()
        if os.environ.get("NKILAB_TEST_CPU"):
            with open(os.environ["NKILAB_TEST_CPU"], "a") as fh:
                fh.write(f"{cpu:.2f}\t{item.nodeid}\n")
        if os.environ.get("NKILAB_TEST_TIMELINE"):
            with open(os.environ["NKILAB_TEST_TIMELINE"], "a") as fh:
                worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
                fh.write(f"{worker}\t{start:.2f}\t{end:.2f}\t{cpu:.2f}\t{item.nodeid}\n")


if os.environ.get("NKILAB_TEST_PROFILE"):
    # NKILAB_TEST_PROFILE=dir pytest ...: each worker's Python profile (cProfile) for the whole run, written to
    # dir/<worker>.prof at its end: which functions the suite's in-process time goes to (children not included).
    import cProfile

    _profile = cProfile.Profile()

    def pytest_sessionstart(session):
        _profile.enable()

    def pytest_sessionfinish(session, exitstatus):
        _profile.disable()
        folder = os.environ["NKILAB_TEST_PROFILE"]
        os.makedirs(folder, exist_ok=True)
        _profile.dump_stats(os.path.join(folder, f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.prof"))


#: CPU seconds of each test measured at a second or more (tests/costs.txt, see tests/costs.py)
MEASURED = costs.load()
FILE_COSTS = costs.file_costs(MEASURED)


def pytest_collection_modifyitems(config, items):
    """Measured-slow tests are marked ``slow``; files run costliest first (tests/costs.py says why)."""
    for item in items:
        if MEASURED.get(item.nodeid, 0.0) >= costs.SLOW_S:
            item.add_marker(pytest.mark.slow)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (-FILE_COSTS.get(item.nodeid.split("::")[0], 0.0), order[id(item)]))
