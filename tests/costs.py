"""What each test costs, measured: ``tests/costs.txt`` lists every test that took a second of CPU or more in a
whole run (a module's shared set-up counted in its first test).  conftest reads it twice:

- such a test is marked ``slow``, so ``make test-fast`` (the edit loop) leaves it to ``make test`` and CI;
- the test files are handed to pytest-xdist's workers costliest first (``make test`` passes
  ``--no-loadscope-reorder``, else xdist orders files by their number of tests), so the class grading and the
  site build start at once, side by side, instead of one of them starting late and running on alone at the end.

Refresh it after a change that moves the costs (the numbers rank; they need not be exact)::

    NKILAB_TEST_CPU=/tmp/cpu.tsv make test && .venv/bin/python tests/costs.py /tmp/cpu.tsv

(several measurement files may be concatenated: each test keeps its largest figure, so a test that only looks
cheap because another one computed a shared figure first stays slow for make test-fast)
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

FILE = Path(__file__).with_name("costs.txt")
SLOW_S = 1.0  # CPU seconds from which a test is left out of make test-fast
HEADER = ("# CPU seconds per test, for those at 1 s or more in a whole run (see tests/costs.py, which writes this file\n"
          "# from NKILAB_TEST_CPU's output; a module's shared set-up is counted in its first test).\n")


def load(path: Path = FILE) -> dict[str, float]:
    """node id -> CPU seconds."""
    costs = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            nodeid, seconds = line.split("\t")
            costs[nodeid] = float(seconds)
    return costs


def file_costs(costs: dict[str, float]) -> Counter[str]:
    """test file -> the CPU seconds of its listed tests."""
    total: Counter[str] = Counter()
    for nodeid, seconds in costs.items():
        total[nodeid.split("::")[0]] += seconds
    return total


def main(measured: str) -> int:
    """Rewrite costs.txt from a ``NKILAB_TEST_CPU`` file (``seconds<TAB>node id`` per line)."""
    rows = {}
    for line in Path(measured).read_text().splitlines():
        seconds, nodeid = line.split("\t", 1)
        rows[nodeid] = max(rows.get(nodeid, 0.0), float(seconds))
    kept = sorted((n, s) for n, s in rows.items() if s >= SLOW_S)
    FILE.write_text(HEADER + "".join(f"{n}\t{s:.1f}\n" for n, s in kept))
    print(f"{FILE}: {len(kept)} tests at {SLOW_S} s or more, {sum(s for _, s in kept):.0f} s of CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
