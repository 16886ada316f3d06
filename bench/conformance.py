"""Run third-party legacy-NKI suites on the simulator and count what passes (issue 12).

Nothing of those suites lives in this repository: each is run from a local clone whose path is
given on the command line, after copying the files it needs into a temporary directory (so a run
never writes ``__pycache__``, profiles or NEFF files into the clone).  Every test file runs in its own
pytest process with ``NKI_SIMULATOR=1`` (the import hook then maps ``neuronxcc.nki`` onto nkisim),
because several of AWS's files run their test at import time and one import error would otherwise
stop the whole collection.

    python bench/conformance.py --aws ~/src/aws-neuron-sdk          # checkout of tag v2.27.1
    python bench/conformance.py --samples ~/src/nki-samples          # a commit before c4b806e
    python bench/conformance.py --cs149 ~/src/asst4-trainium --cs149 ~/src/asst4-trainium2
    python bench/conformance.py --aws-examples ~/src/aws-neuron-sdk  # HEAD: nki/examples, NKI 0.6 (import nki)
    python bench/conformance.py --nkilib ~/src/nki-library [--nkilib-ref 2.29_release ...]  # NKI 0.6 production

The NKI 0.6 examples are kernels, not test files: ``bench/aws_examples06.py`` holds a NumPy driver and reference
for each (or runs the example as its own NumPy script), one process per case.  When the clone is the whole docs
source, ``--aws-examples`` also runs its MX deep dive (``nki/deep-dives/src/mxfp-matmul``, trn3 only) through
``bench/aws_mx06.py``, checked against AWS's own goldens, as a second suite (``aws-nki06-mx``).

``--nkilib`` runs nki-library's own integration tests in its ``--test-mode simulation`` with nkisim as the
simulator (``bench/nkilib_suite.py``): every kernel at its tests' shapes against their torch references, ending
with ``N passed, M failed, K skipped`` (a reason for every skip; version-difference refusals counted apart).

Prints a text table per suite and one JSON object with the counts (``--json FILE`` also writes it to FILE); with
``--nkilib`` the closing line is nki-library's counts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field

import nkilib_suite

PYTHON = sys.executable
FILE_TIMEOUT_S = 600


@dataclass
class FileResult:
    """Outcome of one test file (or script): test counts from pytest's JUnit XML, or the exit code."""

    name: str
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    ok: bool = False
    seconds: float = 0.0
    first_error: str = ""


@dataclass
class SuiteResult:
    suite: str
    files: list[FileResult] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        """Counts over the suite: files that passed, and tests passed / failed (failures + errors)."""
        return {
            "files": len(self.files),
            "files_passed": sum(f.ok for f in self.files),
            "tests_passed": sum(f.passed for f in self.files),
            "tests_failed": sum(f.failed + f.errors for f in self.files),
            "tests_skipped": sum(f.skipped for f in self.files),
        }


def _env(extra_path: str | None = None) -> dict[str, str]:
    # NKISIM_STRICT_REGISTRY: an op issuing an instruction its registry entry does not declare fails the file
    env = dict(os.environ, NKI_SIMULATOR="1", NKISIM_STRICT_REGISTRY="1", PYTHONDONTWRITEBYTECODE="1",
               MPLBACKEND="Agg")
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, env.get("PYTHONPATH", "")) if p)
    return env


def _first_error(text: str) -> str:
    """The most telling line of a failure log: the last ``E   ...`` line, else the last non-empty one."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("E ")]
    pick = errs[-1] if errs else (lines[-1] if lines else "")
    return pick[:200]


def _parse_junit(path: str, res: FileResult) -> None:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            res.failed += 1
        elif "error" in kinds:
            res.errors += 1
        elif "skipped" in kinds:
            res.skipped += 1
        else:
            res.passed += 1
        for child in case:
            if child.tag in ("failure", "error") and not res.first_error:
                res.first_error = (child.get("message") or "")[:200]


def run_pytest_file(cwd: str, target: str, extra_args: list[str], env: dict[str, str], name: str) -> FileResult:
    """One pytest process on ``target``; a file whose collection fails counts as one error."""
    res = FileResult(name)
    xml = os.path.join(tempfile.mkdtemp(prefix="junit"), "r.xml")
    cmd = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", f"--junitxml={xml}", target,
           *extra_args]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=FILE_TIMEOUT_S)
        out, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired:
        out, code = f"timeout after {FILE_TIMEOUT_S}s", -1
    res.seconds = time.perf_counter() - t0
    _parse_junit(xml, res)
    shutil.rmtree(os.path.dirname(xml), ignore_errors=True)
    res.ok = code in (0, 5) and res.failed == res.errors == 0  # 5: nothing selected (e.g. no simulation cases)
    if code not in (0, 5) and res.failed == res.errors == 0:  # crashed or timed out before any test result
        res.errors = 1
        res.ok = False
    if not res.ok and not res.first_error:
        res.first_error = f"killed by signal {-code}" if code < -1 else _first_error(out)
    return res


def run_script(cwd: str, argv: list[str], env: dict[str, str], name: str) -> FileResult:
    """A harness script counted as one test: it passes when it exits 0."""
    res = FileResult(name)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([PYTHON, *argv], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=FILE_TIMEOUT_S)
        out, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired:
        out, code = f"timeout after {FILE_TIMEOUT_S}s", -1
    res.seconds = time.perf_counter() - t0
    res.ok = code == 0
    res.passed, res.failed = (1, 0) if res.ok else (0, 1)
    if not res.ok:
        res.first_error = _first_error(out)
    return res


def aws_suite(clone: str, only: list[str]) -> SuiteResult:
    """AWS's legacy API tests, ``nki/test/test_*.py`` of aws-neuron-sdk (one pytest process per file)."""
    src = os.path.join(clone, "nki", "test") if os.path.isdir(os.path.join(clone, "nki", "test")) else clone
    work = tempfile.mkdtemp(prefix="conf-aws")
    try:
        shutil.copytree(src, os.path.join(work, "t"))
        tdir = os.path.join(work, "t")
        out = SuiteResult("aws-nki-test")
        for f in sorted(os.listdir(tdir)):
            if f.startswith("test_") and f.endswith(".py") and (not only or any(o in f for o in only)):
                out.files.append(run_pytest_file(tdir, f, [], _env(), f))
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def samples_suite(clone: str, only: list[str]) -> SuiteResult:
    """nki-samples: ``PYTHONPATH=src pytest test/unit --simulation-only``, one process per file."""
    work = tempfile.mkdtemp(prefix="conf-samples")
    try:
        for part in ("src", "test"):
            shutil.copytree(os.path.join(clone, part), os.path.join(work, part))
        udir = os.path.join(work, "test", "unit")
        out = SuiteResult("nki-samples-unit")
        env = _env(os.path.join(work, "src"))
        for f in sorted(os.listdir(udir)):
            if f.startswith("test_") and f.endswith(".py") and (not only or any(o in f for o in only)):
                out.files.append(run_pytest_file(work, os.path.join("test", "unit", f), ["--simulation-only"], env, f))
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: CS149 part 1 runs, as the handouts' READMEs give them (the student TODO kernels left out).
CS149_PART1 = {
    "vec_add.py": [["--kernel", "naive", "--size", "128"], ["--kernel", "tiled", "--size", "25600"],
                   ["--kernel", "stream", "--size", "256000"]],
    "run_benchmark.py": [["--kernel", "naive", "-n", "128"], ["--kernel", "tiled", "-n", "25600"],
                         ["--kernel", "stream", "-n", "256000"],
                         ["--kernel", "stream", "-n", "256000", "--profile_name", "stream_256k"]],
}


def cs149_suite(clone: str, only: list[str]) -> SuiteResult:
    """CS149 asst4: the ``part1`` benchmark script with the READMEs' arguments, and
    ``part2/test_harness.py``, each run from its own folder as the handout does; a run passes when it
    exits 0."""
    work = tempfile.mkdtemp(prefix="conf-cs149")
    try:
        name = os.path.basename(os.path.normpath(clone))
        out = SuiteResult(f"cs149-{name}")
        for part in ("part1", "part2"):
            if os.path.isdir(os.path.join(clone, part)):
                shutil.copytree(os.path.join(clone, part), os.path.join(work, part))
        runs: list[tuple[str, list[str]]] = []
        for script, arg_sets in CS149_PART1.items():
            if os.path.isfile(os.path.join(work, "part1", script)):
                runs += [("part1", [script, *args]) for args in arg_sets]
        if os.path.isfile(os.path.join(work, "part2", "test_harness.py")):
            runs.append(("part2", ["test_harness.py"]))
        for folder, argv in runs:
            label = f"{folder}/{' '.join(argv)}"
            if not only or any(o in label for o in only):
                out.files.append(run_script(os.path.join(work, folder), argv, _env(), label))
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def aws_examples_suite(clone: str, only: list[str]) -> SuiteResult:
    """AWS's NKI 0.6 example kernels (``nki/examples`` at the docs source's HEAD), each case of
    ``bench/aws_examples06.py`` in its own process on a copy of the folder, checked against NumPy."""
    src = os.path.join(clone, "nki", "examples") if os.path.isdir(os.path.join(clone, "nki", "examples")) else clone
    driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aws_examples06.py")
    listing = subprocess.run([PYTHON, driver, "--list"], capture_output=True, text=True, check=True).stdout
    cases = [ln for ln in listing.splitlines() if ln and not ln.startswith("(left out)")]
    work = tempfile.mkdtemp(prefix="conf-aws06")
    try:
        shutil.copytree(src, os.path.join(work, "examples"))
        out = SuiteResult("aws-nki06-examples")
        for case in cases:
            if not only or any(o in case for o in only):
                out.files.append(run_script(work, [driver, os.path.join(work, "examples"), case], _env(), case))
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def aws_mx_suite(clone: str, only: list[str]) -> SuiteResult | None:
    """AWS's MX deep-dive kernels (``nki/deep-dives/src/mxfp-matmul``; None when the clone has none), each case of
    ``bench/aws_mx06.py`` in its own process on a copy of the folder, against AWS's goldens on the trn3 target."""
    src = os.path.join(clone, "nki", "deep-dives", "src", "mxfp-matmul")
    if not os.path.isdir(src):
        return None
    driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aws_mx06.py")
    listing = subprocess.run([PYTHON, driver, "--list"], capture_output=True, text=True, check=True).stdout
    work = tempfile.mkdtemp(prefix="conf-awsmx")
    try:
        shutil.copytree(src, os.path.join(work, "mxfp-matmul"))
        out = SuiteResult("aws-nki06-mx")
        for case in (ln for ln in listing.splitlines() if ln):
            if not only or any(o in case for o in only):
                out.files.append(run_script(work, [driver, os.path.join(work, "mxfp-matmul"), case], _env(), case))
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(suites: list[SuiteResult]) -> dict:
    """Print one table per suite; return the JSON summary."""
    summary: dict = {}
    for s in suites:
        print(f"== {s.suite}")
        for f in s.files:
            mark = "PASS" if f.ok else "FAIL"
            tail = "" if f.ok else f"  {f.first_error}"
            print(f"  {mark} {f.name[:60]:60s} {f.passed:3d} passed {f.failed + f.errors:3d} failed {f.seconds:6.1f}s{tail}")
        t = s.totals()
        print(f"  -> files {t['files_passed']}/{t['files']} pass; tests {t['tests_passed']} passed, "
              f"{t['tests_failed']} failed/errors, {t['tests_skipped']} skipped")
        summary[s.suite] = {"totals": t, "files": [asdict(f) for f in s.files]}
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aws", help="clone of aws-neuron-sdk at v2.27.1 (or its nki/test folder)")
    ap.add_argument("--samples", help="clone of nki-samples at a commit before c4b806e")
    ap.add_argument("--cs149", action="append", default=[], help="clone of stanford-cs149/asst4-trainium[2]")
    ap.add_argument("--aws-examples", help="clone of aws-neuron-sdk at HEAD (or its nki/examples folder): NKI 0.6")
    ap.add_argument("--nkilib", help="clone of aws-neuron/nki-library: its integration tests in simulation mode")
    ap.add_argument("--nkilib-ref", action="append", default=[],
                    help="branch or commit of the --nkilib clone to run (repeatable; default: its checkout)")
    ap.add_argument("--aws-skips", action="store_true",
                    help="--nkilib: skip the shapes AWS's harness skips as slow on its CPU simulator")
    ap.add_argument("--case-timeout", type=float, default=nkilib_suite.CASE_TIMEOUT_S,
                    help="--nkilib: seconds one test case may take before it counts as failed")
    ap.add_argument("--per-file", type=int, default=0,
                    help="--nkilib: run at most this many cases of each test file, evenly spaced (0: all)")
    ap.add_argument("--only", action="append", default=[], help="run only files whose name contains this")
    ap.add_argument("--pytest-arg", action="append", default=[],
                    help="--nkilib: an argument for the harness's pytest, e.g. --pytest-arg=-knot 2048 (repeatable)")
    ap.add_argument("--json", help="also write the JSON summary to this file")
    args = ap.parse_args(argv)
    suites: list[SuiteResult] = []
    if args.aws:
        suites.append(aws_suite(args.aws, args.only))
    if args.samples:
        suites.append(samples_suite(args.samples, args.only))
    for clone in args.cs149:
        suites.append(cs149_suite(clone, args.only))
    if args.aws_examples:
        suites.append(aws_examples_suite(args.aws_examples, args.only))
        mx = aws_mx_suite(args.aws_examples, args.only)
        if mx is not None:
            suites.append(mx)
    nkilib: list[nkilib_suite.NkilibResult] = []
    for ref in (args.nkilib_ref or [None]) if args.nkilib else []:
        nkilib.append(nkilib_suite.run(args.nkilib, ref, args.only, args.aws_skips, args.case_timeout,
                                         extra=args.pytest_arg, per_file=args.per_file))
    if not suites and not nkilib:
        ap.error("give at least one of --aws, --samples, --cs149, --aws-examples, --nkilib")
    summary = report(suites)
    for res in nkilib:
        summary[res.label] = {"totals": res.counts(), "notes": res.notes, "cases": [asdict(c) for c in res.cases]}
    text = json.dumps({k: v["totals"] for k, v in summary.items()}, indent=2)
    print(text)
    for res in nkilib:
        nkilib_suite.report(res)
    if len(nkilib) > 1:
        total = {k: sum(r.counts()[k] for r in nkilib) for k in ("passed", "failed", "skipped")}
        print(f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
