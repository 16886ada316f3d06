"""``make bench``, grading throughput: seconds per hand-in on a synthetic class, and the projection to a course.

The synthetic class is generated from the example class's own material: ``--students`` students, each handing
in every released stage, with the lesson's reference answers or one of ben's slow-but-correct kernels in turn
(so both the full-marks and the lost-speed-points paths run).  It is graded exactly as ``make grade`` grades
(real nbgrader, the sandbox, ``--jobs`` nbgrader processes side by side), and the wall time of the grading
itself (after the course is built: sources, release, roster) is divided by the number of hand-ins.  The
projection multiplies that by 100 students x 7 stages; it is a measurement of this machine, not a promise.
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLASS = REPO / "autograder" / "example_class"
GOAL_S = 15 * 60  # 100 students x 7 stages within 15 minutes
COURSE_STUDENTS, COURSE_STAGES = 100, 7


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=int(os.environ.get("NKILAB_BENCH_STUDENTS", "6")))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nkilab-bench-") as tmp:
        class_dir = Path(tmp) / "class"
        class_dir.mkdir()
        stages = synthetic_class(class_dir, args.students)
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "nkilab.classgrade", "--class-dir", str(class_dir),
                               "--workdir", str(Path(tmp) / "course"), "--jobs", str(args.jobs), "--seed", "1"],
                              cwd=REPO, capture_output=True, text=True)
        wall = time.monotonic() - start
    if proc.returncode != 0:
        print(proc.stdout[-3000:] + proc.stderr[-3000:])
        return 1
    graded = sum(int(m) for m in re.findall(r"autograde \S+: (\d+) graded", proc.stdout))
    grading = sum(int(m) for m in re.findall(r"autograde \S+: .* in (\d+) s", proc.stdout))
    hand_ins = args.students * len(stages)
    per = grading / hand_ins
    projected = per * COURSE_STUDENTS * COURSE_STAGES
    print(f"grading throughput ({os.cpu_count()} cores, {args.jobs} nbgrader processes side by side, sandboxed):")
    print(f"  synthetic class: {args.students} students x {len(stages)} stages = {hand_ins} hand-ins "
          f"({graded} graded by nbgrader)")
    print(f"  nbgrader autograde time {grading} s -> {per:.2f} s per hand-in "
          f"(whole run {wall:.0f} s, with the course build and feedback)")
    verdict = "PASS" if projected <= GOAL_S else "MISS"
    print(f"  projected {COURSE_STUDENTS} students x {COURSE_STAGES} stages: {projected / 60:.1f} min "
          f"(goal <= {GOAL_S // 60} min) {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
