"""AWS's nki-library on nkisim: its own integration tests in ``--test-mode simulation`` (issue 29).

nki-library (github.com/aws-neuron/nki-library) ships AWS's production NKI 0.6 kernels with integration tests that
parametrise each kernel over the shapes AWS validates, compute a torch (or NumPy) reference and compare at a
tolerance per test.  Its harness can run every test on a CPU simulator instead of a Trainium
(``pytest test/integration --test-mode simulation``, which calls ``nki.cpu_simulate(kernel)[lnc](**inputs)``).
This module runs exactly that, unmodified, with nkisim as the simulator:

1. the clone's ``src/``, ``test/`` and ``pyproject.toml`` are copied (or ``git archive``d at a branch) into a
   temporary directory, so nothing is ever written into the clone;
2. the modules its tree imports but AWS does not publish are supplied from ``bench/nkilib_support`` (see its
   README), and the published packages its harness needs are installed from PyPI into ``build/nkilib-deps``;
3. a source file that does not even parse is patched on the copy, only where the fault is a known kind (a
   docstring's closing lines repeated after it closed, as ``core/mlp/mlp.py`` at d2ad3a5), and the output says so;
4. every test file runs in its own pytest process (``NKILIB_SIMULATION_RUN_ALL=1`` unless ``aws_skips``: AWS's
   harness skips shapes with a dimension of 4096 or more as too slow for its simulator; nkisim runs them), with a
   per-case time limit, and the JUnit report gives each case's outcome, time and message.

A skipped case always carries its reason (pytest's skip message, or the harness's: a test file importing a module
the public tree lacks).  A failure whose message says which NKI version dropped a feature (nkisim's
version-difference refusals say "NKI 0.N dropped") is counted apart from the others.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUPPORT = os.path.join(HERE, "nkilib_support")
REQUIREMENTS = os.path.join(HERE, "nkilib-requirements.txt")
DEPS = os.path.join(ROOT, "build", "nkilib-deps")
PYTHON = sys.executable
#: a case taking longer than this is stopped and counted as failed (issue 29 asks for <= 10 s per shape)
CASE_TIMEOUT_S = 300
#: nkisim's version-difference refusals say which NKI version dropped the feature, in these words
VERSION_DIFFERENCE = re.compile(r"NKI \d+\.\d+ dropped")
#: an import error of a module the public tree does not contain
_MISSING = re.compile(r"No module named '((?:nkilib_src|test)\.[\w.]+)'")
#: a case that needs the Neuron compiler's own tracer (``test/utils/kernel_tracer.py`` imports it): AWS's trace-only
#: tests (``@pytest.mark.trace_only``) compile instead of simulating, and the compiler is not published
_COMPILER_ONLY = re.compile(r"No module named 'nki\.compiler\.frontend'")


@dataclass
class Case:
    """One test case of nki-library: its file, pytest id, outcome, seconds and the message that explains it."""

    file: str
    name: str
    outcome: str  # passed | failed | skipped
    seconds: float = 0.0
    message: str = ""
    #: the simulator's own seconds in the case (its ``nki.cpu_simulate`` launches, values included), and the cost
    #: model's latency estimate of those launches in microseconds, with its target; None when it launched nothing
    sim_seconds: float | None = None
    latency_us: float | None = None
    target: str = ""

    @property
    def version_difference(self) -> bool:
        return self.outcome == "failed" and bool(VERSION_DIFFERENCE.search(self.message))


@dataclass
class NkilibResult:
    label: str
    notes: list[str] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        c = Counter(k.outcome for k in self.cases)
        return {"passed": c["passed"], "failed": c["failed"], "skipped": c["skipped"],
                "version_differences": sum(k.version_difference for k in self.cases)}


def ensure_deps() -> str:
    """The published packages of nki-library's harness, installed once (per requirements file) into
    ``build/nkilib-deps``; returns that directory.  Two runs started together (one per branch) take turns on a lock
    file: without it the second removed the first's half-made install, whose every test file then failed to import
    its harness (``No module named 'pytest_html'``)."""
    os.makedirs(os.path.dirname(DEPS), exist_ok=True)
    with open(DEPS + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install_deps()


def _install_deps() -> str:
    with open(REQUIREMENTS, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    stamp = os.path.join(DEPS, ".requirements-sha256")
    if os.path.isfile(stamp) and open(stamp, encoding="utf-8").read() == digest:
        return DEPS
    tmp = DEPS + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    proc = subprocess.run([PYTHON, "-m", "pip", "install", "-q", "--no-deps", "--target", tmp, "-r", REQUIREMENTS],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"installing bench/nkilib-requirements.txt failed:\n{proc.stdout}{proc.stderr}")
    with open(os.path.join(tmp, ".requirements-sha256"), "w", encoding="utf-8") as fh:
        fh.write(digest)
    shutil.rmtree(DEPS, ignore_errors=True)
    os.replace(tmp, DEPS)
    return DEPS


def repeated_docstring(text: str) -> tuple[str, int, int] | None:
    """``text`` with a docstring's tail removed where it was pasted again after the docstring closed (the closing
    quotes, then the same lines and quotes once more), and the 1-based first and last line removed; None when the
    fault is not that."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() != '"""':
            continue
        for k in range(1, 200):  # the repeated block: lines[i+1 .. i+k], ending with the closing quotes again
            j = i + k
            if j >= len(lines) or i - k + 1 < 0:
                break
            if lines[j].strip() == '"""' and lines[i + 1:j + 1] == lines[i - k + 1:i + 1]:
                candidate = "\n".join(lines[:i + 1] + lines[j + 1:])
                try:
                    ast.parse(candidate)
                except SyntaxError:
                    break
                return candidate, i + 2, j + 1
    return None


#: faults of the public test tree that stop every simulation-mode case (or every case of a file), patched on the
#: copy line by line: (file, the lines as AWS has them, the lines as run, why, a text the file must also hold for the
#: patch to apply, "" for none); several lines are joined by "\n" and match only where they follow one another
#: exactly so
LINE_PATCHES = (
    ("test/utils/test_orchestrator.py",
     "        if not self._compiled_kernel or not self._compiled_kernel.output_specs:",
     "        if not getattr(self, '_compiled_kernel', None) or not self._compiled_kernel.output_specs:",
     "_run_compilation returns before setting _compiled_kernel in simulation mode, so every case stopped with "
     "AttributeError in _rename_neff_outputs_to_python_names", ""),
    ("test/integration/nkilib/core/qkv/test_qkv_tkg.py",
     "    LazyGoldenGenerator,\n    ValidationArgs,\n)",
     "    LazyGoldenGenerator,\n    Platforms,\n    ValidationArgs,\n)",
     "the file uses Platforms (@pytest.mark.platforms(exclude=[Platforms.TRN1, ...])) without importing it (main at "
     "d2ad3a5), so collecting it stopped with NameError; 2.29_release imports it on this line", ""),
    ("test/integration/nkilib/core/attention/test_gen_mask_tkg.py",
     '            return {"golden_mask": kernel_input["mask_out_hbm"]}',
     '            return {"golden_mask": kernel_input["mask_out_hbm.must_alias_input"]}',
     "its input generator names the input 'mask_out_hbm.must_alias_input' and UnitTestFramework hands "
     "output_tensor_descriptor the inputs unrenamed, so every case stopped with KeyError: 'mask_out_hbm' before "
     "running the kernel (main at d2ad3a5; 2.29_release names it 'mask_out_hbm')",
     '"mask_out_hbm.must_alias_input": '),
)


def patch_lines(work: str) -> list[str]:
    """Apply ``LINE_PATCHES`` to the copy where the line is there exactly as AWS has it; a note for each."""
    notes = []
    for rel, old, new, why, needs in LINE_PATCHES:
        path = os.path.join(work, rel)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if needs not in text:
            continue
        lines = text.split("\n")
        want, put = old.split("\n"), new.split("\n")
        hits = [i for i in range(len(lines)) if lines[i:i + len(want)] == want]
        for i in reversed(hits):
            lines[i:i + len(want)] = put
        if hits:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines))
            notes.append(f"patched {rel} line {', '.join(str(i + 1) for i in hits)}: {why}")
    return notes


def patch_unparsable(root: str) -> list[str]:
    """Patch, on the copy, each ``.py`` file under ``root`` that does not parse and whose fault is a repeated
    docstring tail; returns a note per file (patched, or left broken and why)."""
    notes = []
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            try:
                ast.parse(text)
                continue
            except SyntaxError as err:
                fault = f"{type(err).__name__} at line {err.lineno}"
            rel = os.path.relpath(path, root)
            fixed = repeated_docstring(text)
            if fixed is None:
                notes.append(f"left as is: {rel} does not parse ({fault}); tests importing it fail")
                continue
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(fixed[0])
            notes.append(f"patched {rel}: removed lines {fixed[1]}-{fixed[2]} ({fault}: the docstring's closing "
                         f"lines repeated after it closed)")
    return notes


def extract_data(tar: tarfile.TarFile, dest: str) -> None:
    """Extract ``tar`` into ``dest`` with tarfile's ``"data"`` filter where Python has it (3.11.4 and later; Debian
    12's 3.11.2, which ``make`` prefers, does not): before that, the same refusals made here first -- a member that
    is not a plain file, directory or link, or whose path or link leaves ``dest``."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    root = os.path.realpath(dest)

    def inside(path: str) -> bool:
        return os.path.commonpath([root, os.path.realpath(path)]) == root

    for m in tar.getmembers():
        where = os.path.join(root, m.name)
        link_ok = not (m.issym() or m.islnk()) or inside(
            os.path.join(os.path.dirname(where), m.linkname) if m.issym() else os.path.join(root, m.linkname))
        if not (m.isfile() or m.isdir() or m.issym() or m.islnk()) or os.path.isabs(m.name) or not inside(where) \
                or not link_ok:
            raise tarfile.TarError(f"refusing the archive member {m.name!r}: not a plain file, directory or link "
                                   f"inside {dest}")
    tar.extractall(dest)  # every member checked above


def copy_tree(clone: str, ref: str | None, work: str) -> str:
    """The clone's ``src``, ``test`` and ``pyproject.toml`` (at ``ref`` when given) in ``work``; returns a label
    naming the commit."""
    parts = ["src", "test", "pyproject.toml"]
    if ref:
        archive = os.path.join(work, "tree.tar")
        subprocess.run(["git", "-C", clone, "archive", "-o", archive, ref, *parts], check=True)
        with tarfile.open(archive) as tar:
            extract_data(tar, work)
        os.remove(archive)
    else:
        for part in parts:
            src = os.path.join(clone, part)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(work, part))
    rev = subprocess.run(["git", "-C", clone, "rev-parse", "--short", ref or "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    return f"{ref or 'checkout'} at {rev or 'unknown commit'}"


def supply(work: str) -> list[str]:
    """Copy the stand-ins for unpublished modules of the test tree into ``work``; a note for each."""
    notes = []
    overlay = os.path.join(SUPPORT, "overlay")
    for folder, dirs, files in os.walk(overlay):
        dirs[:] = [d for d in dirs if d != "__pycache__"]  # bytecode a local run left there is no stand-in
        for name in files:
            if name == "__init__.py" and folder != overlay:
                continue
            rel = os.path.relpath(os.path.join(folder, name), overlay)
            dest = os.path.join(work, rel)
            if os.path.exists(dest):
                continue  # the clone has its own: never replaced
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy(os.path.join(folder, name), dest)
            init = os.path.join(os.path.dirname(dest), "__init__.py")
            if not os.path.exists(init):
                open(init, "w").close()
            notes.append(f"supplied {rel} (unpublished by AWS; bench/nkilib_support)")
    notes += ["supplied nki_cpu_simulator (AWS's CPU simulator: nkisim's NKI 0.6 front end)",
              "supplied neuron_dtypes (unpublished by AWS; bench/nkilib_support/neuron_dtypes.py)"]
    return notes


def test_files(work: str, only: list[str]) -> list[str]:
    base = os.path.join(work, "test", "integration")
    found = []
    for folder, _, files in os.walk(base):
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), work)
                if not only or any(o in rel for o in only):
                    found.append(rel)
    return sorted(found)


def _env(work: str, deps: str, aws_skips: bool) -> dict[str, str]:
    path = [os.path.join(work, "src"), work, SUPPORT, deps, ROOT]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path + [os.environ.get("PYTHONPATH", "")]),
               PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", NKISIM_FORCE="1", PYTHONHASHSEED="0")
    if not aws_skips:
        env["NKILIB_SIMULATION_RUN_ALL"] = "1"
    return env


def _message(node: ET.Element) -> str:
    text = (node.get("message") or node.text or "").strip()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first[:300]


def add_simulation_times(cases: list[Case], log: str) -> None:
    """The simulator's seconds and latency estimates of each case, from the lines ``nki_cpu_simulator`` appended to
    ``log`` (one per ``nki.cpu_simulate`` call, named by pytest's current test: ``file::Class::name (call)``)."""
    by_name: dict[str, list[dict]] = {}
    try:
        with open(log, encoding="utf-8") as fh:
            for line in fh:
                entry = json.loads(line)
                name = entry.get("case", "").split("::")[-1].rsplit(" (", 1)[0]
                by_name.setdefault(name, []).append(entry)
    except (OSError, ValueError):
        return
    for case in cases:
        entries = by_name.get(case.name)
        if entries:
            case.sim_seconds = sum(e["sim_s"] for e in entries)
            estimates = [e["estimate_us"] for e in entries if "estimate_us" in e]
            case.latency_us = sum(estimates) if estimates else None
            case.target = next((e["target"] for e in entries if "target" in e), "")


def classify(rel: str, node: ET.Element) -> Case | None:
    """The case one JUnit ``testcase`` element of test file ``rel`` reports (None for nothing to count)."""
    name = node.get("name") or "?"
    seconds = float(node.get("time") or 0.0)
    kids = {child.tag: child for child in node}
    if "failure" in kids or "error" in kids:
        msg = _message(kids.get("failure", kids.get("error")))  # type: ignore[arg-type]
        missing = _MISSING.search(ET.tostring(node, encoding="unicode"))
        if name in ("", rel) or node.get("classname", "") == "":  # a collection error: the whole file
            if missing:
                return Case(rel, "(collection)", "skipped", seconds,
                            f"imports {missing.group(1)}, which AWS's public tree does not contain")
        if _COMPILER_ONLY.search(msg):
            return Case(rel, name, "skipped", seconds, "needs the Neuron compiler's own tracer "
                        "(nki.compiler.frontend, imported by test/utils/kernel_tracer.py): a trace-only test, which "
                        "compiles instead of simulating; the compiler is not published")
        return Case(rel, name, "failed", seconds, msg)
    if "skipped" in kids:
        return Case(rel, name, "skipped", seconds, _message(kids["skipped"]) or "skipped (no reason)")
    return Case(rel, name, "passed", seconds)


def run_file(work: str, rel: str, env: dict[str, str], case_timeout: float, extra: list[str],
             per_file: int = 0, largest: int = 0) -> list[Case]:
    """One pytest process of nki-library's harness on ``rel`` (``per_file`` of its cases if > 0, else the
    ``largest`` of the largest shapes if > 0); every case it reports."""
    sample = ["-p", "nkilib_sample", f"--nkilib-per-file={per_file}", f"--nkilib-largest={largest}"] \
        if per_file > 0 or largest > 0 else []
    xml = os.path.join(tempfile.mkdtemp(prefix="junit"), "r.xml")
    sim_log = os.path.join(os.path.dirname(xml), "sim.jsonl")
    env = dict(env, NKILIB_SIM_LOG=sim_log)
    out_dir = tempfile.mkdtemp(prefix="nkilib-out")
    cmd = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", f"--junitxml={xml}",
           "--test-mode", "simulation", "--output-directory", out_dir, "--force-local-cleanup",
           "--disable-no-tests-failure", f"--timeout={case_timeout}", *sample, rel, *extra]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                              timeout=max(1800.0, case_timeout * 400))
        log, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired:
        log, code = "the whole file timed out", -1
    wall = time.perf_counter() - t0
    cases: list[Case] = []
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError):
        root = None
    for node in root.iter("testcase") if root is not None else ():
        case = classify(rel, node)
        if case is not None:
            cases.append(case)
    add_simulation_times(cases, sim_log)
    shutil.rmtree(os.path.dirname(xml), ignore_errors=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    if not cases:
        missing = _MISSING.search(log)
        if missing:
            cases.append(Case(rel, "(collection)", "skipped", wall,
                              f"imports {missing.group(1)}, which AWS's public tree does not contain"))
        elif code in (0, 5):
            cases.append(Case(rel, "(collection)", "skipped", wall, "the file parametrises no case"))
        else:
            tail = [ln for ln in log.splitlines() if ln.strip()]
            errs = [ln for ln in tail if ln.startswith("E ")]
            cases.append(Case(rel, "(collection)", "failed", wall, (errs or tail or ["no output"])[-1][:300]))
    return cases


def run(clone: str, ref: str | None = None, only: list[str] | None = None, aws_skips: bool = False,
        case_timeout: float = CASE_TIMEOUT_S, extra: list[str] | None = None, progress: bool = True,
        per_file: int = 0, largest: int = 0) -> NkilibResult:
    """Every integration test file of the clone (those whose path contains one of ``only``, if given); with
    ``per_file`` > 0 that many cases of each file, evenly spaced (the whole library has about 8,600 cases); with
    ``largest`` > 0 (and no ``per_file``) the cases of each file's largest shapes (``nkilib_sample.case_size``)."""
    deps = ensure_deps()
    work = tempfile.mkdtemp(prefix="conf-nkilib")
    try:
        label = copy_tree(clone, ref, work)
        result = NkilibResult(f"nki-library {label}")
        result.notes += patch_unparsable(os.path.join(work, "src")) + patch_unparsable(os.path.join(work, "test"))
        result.notes += patch_lines(work) + supply(work)
        if not aws_skips:
            result.notes.append("NKILIB_SIMULATION_RUN_ALL=1: the shapes AWS's harness skips as slow on its CPU "
                                "simulator run too")
        env = _env(work, deps, aws_skips)
        if per_file > 0:
            result.notes.append(f"sampled: at most {per_file} cases of each test file, evenly spaced")
        elif largest > 0:
            result.notes.append(f"sampled: the {largest} case(s) of each test file with the largest shapes")
        for rel in test_files(work, only or []):
            cases = run_file(work, rel, env, case_timeout, extra or [], per_file, largest)
            result.cases += cases
            if progress:
                c = Counter(k.outcome for k in cases)
                print(f"  {rel.removeprefix('test/integration/nkilib/'):62s} {c['passed']:4d} passed "
                      f"{c['failed']:4d} failed {c['skipped']:4d} skipped", flush=True)
                for k in cases:
                    if k.outcome != "passed":
                        print(f"      {k.outcome:7s} {k.name[:70]}: {k.message[:160]}", flush=True)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(result: NkilibResult, show: int = 40) -> None:
    """The notes, failures grouped by message, skips grouped by reason, the slowest cases, and the closing line."""
    print(f"== {result.label}")
    for note in result.notes:
        print(f"  note: {note}")
    failed = [c for c in result.cases if c.outcome == "failed"]
    by_msg = Counter(re.sub(r"\d+", "N", c.message)[:160] for c in failed)
    if failed:
        print(f"  failures by message ({len(failed)}):")
        for msg, n in by_msg.most_common(show):
            print(f"    {n:5d}  {msg}")
    skipped = Counter(c.message for c in result.cases if c.outcome == "skipped")
    if skipped:
        print(f"  skips by reason ({sum(skipped.values())}):")
        for msg, n in skipped.most_common():
            print(f"    {n:5d}  {msg}")
    ran = sorted((c for c in result.cases if c.outcome != "skipped"), key=lambda c: -c.seconds)
    if ran:
        print("  slowest cases:")
        for c in ran[:5]:
            print(f"    {c.seconds:7.2f}s  {c.outcome:6s} {c.file.removeprefix('test/integration/nkilib/')}::{c.name}")
    n = result.counts()
    print(f"  version-difference refusals among the failures: {n['version_differences']}")
    print(f"{n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped")


#: issue 29, "full size": every nki-library test shape within this many seconds on one core
FULL_SIZE_TARGET_S = 10.0


def full_size_report(result: NkilibResult, target: float = FULL_SIZE_TARGET_S, show: int = 10) -> None:
    """``make bench``'s nki-library row: how many of the cases run passed within ``target`` seconds, and the ``show``
    slowest, each with its time (pytest's, on one core: BLAS and OpenMP are pinned to one thread), its outcome
    (``passed``: values equal to the test's own torch reference at its tolerance) and, for a case that passed, its
    verdict against the target."""
    ran = sorted((c for c in result.cases if c.outcome != "skipped"), key=lambda c: -c.seconds)
    passed = [c for c in ran if c.outcome == "passed"]
    within = sum(c.seconds <= target for c in passed)
    print(f"(f) nki-library at full size, {result.label}: {within} of {len(ran)} cases passed within {target:.0f} s "
          f"on one core ({len(passed)} passed: values equal to the test's reference at its tolerance; "
          f"{len(ran) - len(passed)} failed; {len(result.cases) - len(ran)} skipped)")
    for note in result.notes:
        if note.startswith("sampled"):
            print(f"    {note}")
    print(f"    {'case s':>8s} {'sim s':>7s} {'est. us':>9s} result outcome case")
    for c in ran[:show]:
        verdict = "-" if c.outcome != "passed" else "PASS" if c.seconds <= target else "MISS"
        why = f"  ({c.message[:100]})" if c.outcome != "passed" else ""
        sim = f"{c.sim_seconds:7.2f}" if c.sim_seconds is not None else f"{'-':>7s}"
        est = f"{c.latency_us:9.1f}" if c.latency_us is not None else f"{'-':>9s}"
        print(f"    {c.seconds:8.2f} {sim} {est} {verdict:6s} {c.outcome:7s} "
              f"{c.file.removeprefix('test/integration/nkilib/')}::{c.name}{why}")
    print("    (case s: the whole test case on one core, its torch reference and input generation included; sim s: "
          "nkisim's launches alone; est. us: the cost model's latency estimate of those launches, an estimate for "
          f"{next((c.target for c in ran if c.target), 'the launch target')}, not a measurement)")


def main(argv: list[str] | None = None) -> int:
    """``python bench/nkilib_suite.py [--clone DIR] [--ref main] [--largest 1]``: the full-size row of ``make
    bench`` (the largest shapes of each of nki-library's test files, AWS's own skips of large shapes lifted)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--clone", default=os.environ.get("NKILIB", ""), help="clone of aws-neuron/nki-library "
                    "(default: $NKILIB)")
    ap.add_argument("--ref", default="main", help="branch or commit of the clone to run (default: main)")
    ap.add_argument("--largest", type=int, default=1, help="cases of each test file, those of the largest shapes")
    ap.add_argument("--only", action="append", default=[], help="run only files whose name contains this")
    ap.add_argument("--case-timeout", type=float, default=60.0, help="seconds a case may take before it fails")
    ap.add_argument("--show", type=int, default=10, help="how many of the slowest cases to print")
    args = ap.parse_args(argv)
    if not args.clone:
        print("(f) nki-library at full size: skipped (no clone; run `make bench NKILIB=<clone of "
              "aws-neuron/nki-library>`)")
        return 0
    result = run(args.clone, args.ref, args.only, case_timeout=args.case_timeout, progress=False,
                 largest=args.largest)
    full_size_report(result, show=args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
