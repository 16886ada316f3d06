"""``make bench``, grading throughput: seconds per hand-in on a synthetic class, and the projection to a course.

A synthetic class is generated from the example class's own material: N students, each handing in every
released stage, with the lesson's reference answers or one of ben's slow-but-correct kernels in turn (so both
the full-marks and the lost-speed-points paths run).  It is graded exactly as ``make grade`` grades (real
nbgrader, the sandbox, ``--jobs`` nbgrader processes side by side), and the wall time of nbgrader's autograde
runs is taken (not the course build: sources, release, roster).  Two class sizes are graded, because part of
that time is per assignment (nbgrader's start-up, the reference latencies) and part per hand-in: the line
through the two points gives seconds per hand-in (its slope) and the projection to 100 students x every stage of
the course manifest.
It is a measurement of this machine, not a promise.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]
CLASS = REPO / "autograder" / "example_class"
GOAL_S = 15 * 60  # a class of 100 students x every stage within 15 minutes
COURSE_STUDENTS = 100
COURSE_STAGES = len(tomllib.loads((REPO / "autograder" / "nkilab" / "course.toml").read_text())["stage"])


def synthetic_class(folder: Path, students: int) -> list[str]:
    """Write roster.csv and submissions.json for ``students`` students handing in every released stage."""
    stages = sorted(p.stem for p in (REPO / "assignments").glob("[0-9][0-9]_*.ipynb"))
    ben = json.loads((CLASS / "submissions.json").read_text())["students"]["ben"]
    ids = [f"s{i:03d}" for i in range(students)]
    with open(folder / "roster.csv", "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["id", "first_name", "last_name", "email"])
        out.writerows([sid, "Student", sid, f"{sid}@example.edu"] for sid in ids)
    recipes = {sid: {stage: (ben.get(stage, {}) if i % 2 else {}) for stage in stages} for i, sid in enumerate(ids)}
    (folder / "submissions.json").write_text(json.dumps({"students": recipes}))
    for sub in ("kernels", "answers", "cells"):
        (folder / sub).symlink_to(CLASS / sub)
    return stages


def grade_synthetic(students: int, jobs: int) -> tuple[int, float, int]:
    """(hand-ins, seconds of nbgrader autograde, hand-ins nbgrader graded) for a synthetic class of ``students``."""
    with tempfile.TemporaryDirectory(prefix="nkilab-bench-") as tmp:
        class_dir = Path(tmp) / "class"
        class_dir.mkdir()
        stages = synthetic_class(class_dir, students)
        proc = subprocess.run([sys.executable, "-m", "nkilab.batch.classgrade", "--class-dir", str(class_dir),
                               "--workdir", str(Path(tmp) / "course"), "--jobs", str(jobs), "--seed", "1"],
                              cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout[-3000:] + proc.stderr[-3000:])
    graded = sum(int(m) for m in re.findall(r"autograde \S+: (\d+) graded", proc.stdout))
    seconds = sum(float(m) for m in re.findall(r"autograde \S+: .* in (\d+) s", proc.stdout))
    return students * len(stages), seconds, graded


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", default=os.environ.get("NKILAB_BENCH_STUDENTS", "4,10"),
                    help="two class sizes, comma-separated")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    small, large = sorted(int(n) for n in args.students.split(","))
    runs = [grade_synthetic(n, args.jobs) for n in (small, large)]
    (h1, t1, g1), (h2, t2, g2) = runs
    per = (t2 - t1) / (h2 - h1)
    fixed = t1 - per * h1
    projected = fixed + per * COURSE_STUDENTS * COURSE_STAGES
    print(f"grading throughput ({os.cpu_count()} cores, {args.jobs} nbgrader processes side by side, sandboxed):")
    for n, (h, t, g) in zip((small, large), runs):
        print(f"  {n} students: {h} hand-ins ({g} graded by nbgrader) in {t:.0f} s of nbgrader autograde "
              f"= {t / h:.2f} s per hand-in")
    print(f"  marginal cost {per:.2f} s per hand-in, {fixed:.0f} s per run (all stages) on top")
    verdict = "PASS" if projected <= GOAL_S else "MISS"
    print(f"  projected {COURSE_STUDENTS} students x {COURSE_STAGES} stages: {projected / 60:.1f} min "
          f"(goal <= {GOAL_S // 60} min) {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
