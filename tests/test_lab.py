"""``make lab``: a real JupyterLab, started headless through make (as root where the tests run as root), serves
the student notebooks to a client holding its token, with none of nbgrader's instructor tools; and the lab
warns when a lesson changed after the student's copy was made."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from course_testing import REPO

from nkilab.authoring import lab


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:  # noqa: S310 - our own local server
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.mark.timeout(180)
@pytest.mark.processes
def test_make_lab_serves_the_notebooks_headless_without_instructor_tools(tmp_path: Path) -> None:
    port, token = free_port(), secrets.token_hex(16)
    work = tmp_path / "work"
    args = f"--no-browser --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token} --ip=127.0.0.1"
    proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_DIR={work}", f"LAB_ARGS={args}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                status, _ = get(f"{base}/api/status?token={token}")
                if status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "make lab did not start serving within 120 s"
            time.sleep(0.5)
        released = sorted(p.name for p in (REPO / "assignments").glob("*.ipynb"))
        assert sorted(p.name for p in work.glob("*.ipynb")) == released
        # a notebook, fetched over HTTP with the token, is the student copy of the release
        status, body = get(f"{base}/api/contents/01_vector_add.ipynb?token={token}")
        assert status == 200
        served = json.loads(body)["content"]
        release = json.loads((REPO / "assignments" / "01_vector_add.ipynb").read_text())
        assert [c["source"] for c in served["cells"]] == ["".join(c["source"]) if isinstance(c["source"], list)
                                                          else c["source"] for c in release["cells"]]
        assert get(f"{base}/api/contents/01_vector_add.ipynb")[0] == 403  # and only with the token
        # nbgrader: no server handlers (formgrader, create-assignment lives in it; assignment/course lists) ...
        for path in ("/formgrader", "/formgrader/manage_assignments", "/assignments", "/courses"):
            assert get(f"{base}{path}?token={token}")[0] == 404, path
        # ... and its JupyterLab extension (Formgrader, Create Assignment menus) is switched off
        status, body = get(f"{base}/lab/api/extensions?token={token}")
        assert status == 200
        states = {e["name"]: e["enabled"] for e in json.loads(body)}
        assert states.get("jupyter-nbgrader") is False and states.get("jupyterlab-jupytext") is True
        status, page = get(f"{base}/lab?token={token}")
        assert status == 200 and '"disabledExtensions": ["@jupyter/nbgrader"]' in page.decode()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the lab's process group: make, and Jupyter it became
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    assert "Running as root is not recommended" not in out and "No nbgrader_config.py" not in out
    if os.geteuid() == 0:
        assert "--allow-root" in out  # the command make ran (as root Jupyter refuses to start without it)


def test_copies_are_kept_and_a_changed_lesson_is_reported(tmp_path: Path) -> None:
    assignments, work = tmp_path / "assignments", tmp_path / "work"
    assignments.mkdir()
    (assignments / "01_a.ipynb").write_text('{"v": 1}')
    (assignments / "02_b.ipynb").write_text('{"v": 1}')
    copied, stale = lab.prepare_copies(assignments, work)
    assert [p.name for p in copied] == ["01_a.ipynb", "02_b.ipynb"] and stale == []
    (work / "01_a.ipynb").write_text('{"v": 1, "answers": "mine"}')  # the student works in the copy
    copied, stale = lab.prepare_copies(assignments, work)
    assert copied == [] and stale == []  # editing one's copy is not a stale copy
    (assignments / "02_b.ipynb").write_text('{"v": 2}')  # the lesson changes (git pull, make release)
    copied, stale = lab.prepare_copies(assignments, work)
    assert copied == [] and [s.copy.name for s in stale] == ["02_b.ipynb"]
    assert (work / "02_b.ipynb").read_text() == '{"v": 1}' and (work / "01_a.ipynb").read_text().endswith('"mine"}')
    assert "copied from an older" in stale[0].warning() and "rename your copy" in stale[0].warning()
    # a copy made before copies were recorded: the release file being newer is the sign
    (work / lab.COPIES_RECORD).unlink()
    old = time.time() - 3600
    os.utime(work / "01_a.ipynb", (old, old))
    _copied, stale = lab.prepare_copies(assignments, work)
    assert sorted(s.copy.name for s in stale) == ["01_a.ipynb", "02_b.ipynb"]


@pytest.mark.processes
def test_make_lab_prints_the_warning(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "03_free_dim_streaming.ipynb").write_text("{}")
    (work / lab.COPIES_RECORD).write_text(json.dumps({"03_free_dim_streaming.ipynb": "an older release"}))
    proc = subprocess.run(["make", "--no-print-directory", "lab", f"LAB_DIR={work}", "LAB_ARGS=--prepare-only"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"make lab: {work / '03_free_dim_streaming.ipynb'} was copied from an older" in proc.stderr
    assert (work / "03_free_dim_streaming.ipynb").read_text() == "{}"  # never overwritten
    assert "copied 01_vector_add.ipynb" in proc.stdout


def test_config_switches_off_every_nbgrader_extension(tmp_path: Path) -> None:
    import sysconfig

    cfg = lab.write_config(tmp_path / "cfg")
    server = json.loads((cfg / "jupyter_server_config.json").read_text())["ServerApp"]["jpserver_extensions"]
    enabled_by_pip = Path(sysconfig.get_paths()["data"]) / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    if enabled_by_pip.exists():  # whatever nbgrader's installation enables, the lab switches off
        assert set(json.loads(enabled_by_pip.read_text())["ServerApp"]["jpserver_extensions"]) <= set(server)
    assert not any(server.values())
    cmd = lab.command(tmp_path, ["--no-browser"], "jupyter")
    assert cmd[:3] == ["jupyter", "lab", f"--notebook-dir={tmp_path}"] and cmd[-1] == "--no-browser"
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)


@pytest.mark.parametrize("euid,expected", [(0, True), (1000, False)])
def test_allow_root_is_added_exactly_when_running_as_root(monkeypatch, tmp_path: Path, euid: int,
                                                          expected: bool) -> None:
    """Jupyter refuses to start as root without --allow-root (a container, a cloud VM); a user never needs it."""
    monkeypatch.setattr(lab.os, "geteuid", lambda: euid)
    cmd = lab.command(tmp_path, ["--no-browser"], "jupyter")
    assert ("--allow-root" in cmd) == expected and cmd[-1] == "--no-browser"
    # said once, even when the user passed it too
    assert lab.command(tmp_path, ["--allow-root"], "jupyter").count("--allow-root") == 1


@pytest.mark.processes
@pytest.mark.parametrize("dialect", ["", "nki", "legacy"])
def test_make_lab_dialect_picks_the_notebooks_in_one_word(tmp_path: Path, dialect: str) -> None:
    """``make lab`` opens the NKI 0.6 notebooks (the course's dialect); ``make lab DIALECT=legacy`` their legacy twins,
    by default in a folder of their own (``work/legacy/``: the two sets share notebook names)."""
    work = tmp_path / "work"
    args = ["make", "--no-print-directory", "lab", f"LAB_DIR={work}", "LAB_ARGS=--prepare-only"]
    proc = subprocess.run(args + ([f"DIALECT={dialect}"] if dialect else []), cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    legacy = dialect == "legacy"
    which = "legacy (import neuronxcc.nki)" if legacy else "NKI 0.6 (import nki)"
    assert f"make lab: the {which} notebooks of {'assignments/legacy' if legacy else 'assignments'}" in proc.stdout
    assert f"--notebook-dir={work}" in proc.stdout
    for name in ("01_vector_add.ipynb", "05_multicore_spmd.ipynb"):
        stub = next(c for c in json.loads((work / name).read_text())["cells"]
                    if "".join(c["source"]).startswith("%%writefile"))
        assert ("import neuronxcc.nki" in "".join(stub["source"])) == legacy, name
    assert lab.lab_dir_for(dialect or "nki") == ("work/legacy" if legacy else "work")
