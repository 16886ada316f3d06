"""Every speed-graded reference kernel at its graded shape against the cost model's lower bound (``nkilab.course.bounds``).

    .venv/bin/python bench/course_speed.py            # the table
    .venv/bin/python bench/course_speed.py --json     # the same rows as JSON

Per question: the speed case, the reference's estimated latency (nkisim cost model, on the question's target), the
bound and what sets it (launch + DMA, PE or engines), the share (bound / estimate; 1.0 is a kernel at the limit),
and the MFU (matmul flops over the estimate at the PE peak) or the bandwidth share (the least HBM traffic over the
estimate at the peak DMA rate). Every number is an estimate, not a measurement. A question graded on correctness
only (no speed points: a lesson's prescribed first version) has no graded shape and is listed by name below the table.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "autograder"))

import numpy as np  # noqa: E402

from nkilab.course.bounds import bound  # noqa: E402
from nkilab.course.questions import QUESTIONS, Question  # noqa: E402
from nkilab.isolate._child import make_grid  # noqa: E402
from nkilab.judge.evaluate import grading_target  # noqa: E402
from nkilab.kernels.modules import load_kernel  # noqa: E402

#: the share every reference kernel should reach at its graded shape (issue 21: at least 80% of the bound)
TARGET_SHARE = 0.8


@dataclass
class Row:
    qid: str
    case: str
    target: str
    estimate_us: float
    bound_us: float
    limit: str
    share: float
    mfu: float | None
    bandwidth_share: float


def estimate_us(q: Question, target: str) -> float:
    """The reference's estimated latency on its speed case (traced from shapes and dtypes: no values computed)."""
    from nkisim import api

    n = len(q.arg_names)
    args = [np.zeros(s, dtype=np.dtype(d)) for s, d in zip(q.speed_case.shapes(n), q.speed_case.dtypes(n))]
    program = api.trace(load_kernel(q.solution_path, q.function), args, grid=make_grid(q.grid), target=target)
    return api.estimate(program, target=target).total_us


def row(q: Question) -> Row:
    target = grading_target(q)
    est = estimate_us(q, target)
    b = bound(q, target)
    return Row(q.qid, q.speed_case.describe(q.arg_names), target, est, b.total_us, b.limit, b.share(est), b.mfu(est),
               b.bandwidth_share(est))


def table(rows: list[Row]) -> str:
    head = (f"{'question':22s} {'estimate us':>11s} {'bound us':>9s} {'set by':>8s} {'share':>6s} {'MFU':>5s} "
            f"{'HBM':>5s}  graded shape (estimates: nkisim cost model)")
    lines = [head, "-" * len(head)]
    for r in rows:
        mfu = f"{r.mfu:5.2f}" if r.mfu is not None else "    -"
        flag = "" if r.share >= TARGET_SHARE else "  < 0.8"
        lines.append(f"{r.qid:22s} {r.estimate_us:11.1f} {r.bound_us:9.1f} {r.limit:>8s} {r.share:6.2f} {mfu} "
                     f"{r.bandwidth_share:5.2f}  {r.target}: {r.case}{flag}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("questions", nargs="*", help="question ids (default: all)")
    args = ap.parse_args(argv)
    qids = args.questions or list(QUESTIONS)
    rows = [row(QUESTIONS[qid]) for qid in qids if speed_graded(QUESTIONS[qid])]
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
        return 0
    print(table(rows))
    ungraded = [qid for qid in qids if not speed_graded(QUESTIONS[qid])]
    if ungraded:
        print(f"graded on correctness only (no speed points, no graded shape): {', '.join(ungraded)}")
    return 0


def speed_graded(q: Question) -> bool:
    """Whether ``q`` has speed points, i.e. a graded shape its reference must be fast at."""
    return q.speed_points > 0


if __name__ == "__main__":
    sys.exit(main())
