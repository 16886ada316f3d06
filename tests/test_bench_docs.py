"""Issue 29: docs/simulator.md's "How fast it is" quotes one measured ``make bench`` run and nothing else.

Its figures had gone stale (rows measured at different times, by hand).  Now the block between the markers is
rendered from ``bench/measured.json`` (a run saved by ``bench/run.py --record``) by ``bench/bench_record.py``; these
checks fail when the block and the file differ, when the file holds a row ``bench/run.py`` no longer makes, or when
a time or ratio is written into the section by hand.  Nothing here runs the benchmark.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_record  # noqa: E402
from bench_record import Row, Run  # noqa: E402


def _section() -> str:
    text = (ROOT / "docs" / "simulator.md").read_text()
    start = text.index("## How fast it is\n")
    return text[start:text.index("\n## ", start + 1)]


def test_the_docs_block_is_the_measured_run_rendered() -> None:
    run = bench_record.load()
    assert bench_record.block(_section()) == bench_record.render(run)


def test_every_measured_row_is_one_bench_run_makes() -> None:
    source = (ROOT / "bench" / "run.py").read_text()
    labels = [r.label for r in bench_record.load().rows]
    assert len(labels) == len(set(labels))
    for label in labels:
        assert f'"{label}"' in source, label
    assert {lab.split(" ", 1)[0] for lab in labels} >= {"(a)", "(a*)", "(b)", "(b')", "(b*)", "(c)", "(c*)"}


#: a wall time or a ratio written as a figure (a dimension such as 4096×8192 is neither)
_FIGURE = re.compile(r"\d[\d,.]*\s?(?:ms|µs|us)\b|\d(?:\.\d+)?×(?!\d)")


def test_no_figure_in_the_section_is_written_by_hand() -> None:
    section = _section()
    generated = bench_record.block(section)
    by_hand = section.replace(generated, "")
    assert generated and _FIGURE.search(generated)
    assert not _FIGURE.findall(by_hand), _FIGURE.findall(by_hand)


def test_a_row_is_judged_against_its_goal_as_a_ratio_or_per_instruction() -> None:
    slow = Row("(b*) x", 300.0, "ms", 100.0, 2.0)
    fast = Row("(c*) y", 4.5, "us", None, 5.0, "2004 instructions")
    shown = Row("(e) z", 9.0, "us")
    assert (slow.ratio, slow.result, fast.ratio, fast.result, shown.result) == (3.0, "MISS", None, "PASS", "info")
    assert slow.line().split()[-3:] == ["3.00x", "2.0x", "MISS"]
    assert fast.line().split()[3:6] == ["5us", "PASS", "2004"]
    text = bench_record.render(Run("x86_64 2 CPUs", (1.0, 2.0, 3.0), 3, "2026-11-29 18:00 UTC", [slow, fast, shown]))
    assert "| (b*) x | 300 ms | 100 ms | 3.00× | 2.0× | MISS |" in text
    assert "| (c*) y | 4.5 µs |  |  | 5 µs | PASS |" in text
    assert "- (c*) 2004 instructions" in text and "load average 1.00 2.00 3.00" in text


def test_a_saved_run_loads_as_it_was(tmp_path: Path) -> None:
    run = Run("m", (0.5, 0.25, 0.125), 3, "d", [Row("(a) r", 1.5, "ms", 1.25, 3.0, "max abs err 0")])
    bench_record.save(run, str(tmp_path / "r.json"))
    assert bench_record.load(str(tmp_path / "r.json")) == run


def test_the_block_says_the_machine_was_shared_only_when_its_load_says_so() -> None:
    def said(load: float, cores: int) -> str:
        return bench_record.render(Run("x86_64 2 CPUs", (load, load, load), 5, "2026-11-29 19:47 UTC", [], cores))

    assert "shared with other work" in said(6.0, 2)
    assert "shared with other work" not in said(0.8, 2) and "no more work than the machine's cores" in said(0.8, 2)
    assert "shared" not in said(6.0, 0) and "other processes inflate wall times" in said(6.0, 0)  # cores not recorded
