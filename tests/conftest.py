"""Course tests share helpers in tests/course_testing.py: let pytest rewrite its asserts too (the mutant test)."""

import os
import tempfile

import pytest

# a grading run keeps its seed in the TA's private state folder (nkilab.judge.seeds): the tests' own, not the home's
os.environ.setdefault("NKILAB_STATE_DIR", tempfile.mkdtemp(prefix="nkilab-state-"))
# each lesson runs once per test run (nkilab.authoring.lesson_runs), kept here for the stage tests and the docs build alike;
# set when pytest starts, before pytest-xdist starts its workers, so they share it (they inherit the environment)
os.environ.setdefault("NKIDOCS_CACHE", tempfile.mkdtemp(prefix="nkilab-test-run-"))
# an op issuing an instruction its registry entry does not declare fails the test (users get a warning)
os.environ.setdefault("NKISIM_STRICT_REGISTRY", "1")

pytest.register_assert_rewrite("course_testing")

import costs  # noqa: E402  (measured costs: the slow mark and the order files run in)
import program_check  # noqa: E402,F401  (NKISIM_CHECK_PROGRAMS=1: every launch is also checked as a program)


@pytest.fixture(autouse=True, scope="module")
def _stop_executor_servers():
    """A grading process keeps one executor server (``nkilab.isolate.processes``) for its life; in a test session that life
    is the whole session, so each module's servers are stopped at its end, and "nothing outlives grading" checks
    see only the grading run they look at."""
    yield
    from nkilab.isolate import processes

    processes.stop_servers()


@pytest.fixture
def needs_sandbox():
    """Skip a test that grades through the sandbox where bubblewrap cannot run (asked when the test starts, not
    when its module is collected: ``make test-fast`` collects sandbox tests it never runs)."""
    from nkilab.isolate import sandbox

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


if os.environ.get("NKILAB_TEST_CPU"):
    # NKILAB_TEST_CPU=cpu.tsv pytest ...: each test's CPU seconds (this process and the children it reaped: sandboxes,
    # kernels, commands) appended to that file, for ranking the suite's cost on a machine other work keeps busy,
    # where --durations' wall-clock seconds mislead.
    import resource

    def _cpu() -> float:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        start = _cpu()
        yield
        with open(os.environ["NKILAB_TEST_CPU"], "a") as fh:
            fh.write(f"{_cpu() - start:.2f}\t{item.nodeid}\n")


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
