"""Every published figure the cost model is calibrated or checked against (bench/published_latencies.csv, read by
bench/calibrate.py's ``FIGURES``), fit set and held-out set alike: each stays within 1.3x of its published value
except the ones listed in ``OFF`` (issue 31's open misses, each with its ratio: a figure that moves in or out of
1.3x fails the test until the list says so), and every published ranking (``LADDERS``) keeps its order but the
ones in ``MISRANKED`` -- the check ``make bench`` prints, asserted (issue 20 scope 5, issue 31 scope 2).  The held-out
figures were never fitted against; the report names both sets.  Numbers are cost-model estimates, never wall-clock
times.  Rows whose kernel is a student's own need its repository's local mirror; without it they are listed as not
estimated, and left out here."""

from __future__ import annotations

import io

import pytest

from bench import calibrate
from tests.once import figure_value


def _evaluated(quick: bool):
    out = io.StringIO()
    values, misranked = calibrate.evaluate(quick=quick, out=out, model=figure_value)
    return values, misranked, out.getvalue()


#: figures outside 1.3x of their published value today: name -> the model's ratio (rounded to 0.05).  rishic3's
#: 4096x4096 transpose is bound in the model by its load/store chain over the two buffers its in-loop tile rotates
#: over (each step pays the ~1300 ns DMA completion latency twice), not by the DMA transpose's rate nor the DGE: since
#: trn2-0.12 its fp32 load_transpose2d moves at AWS's 90% of the DMA rate (was a 0.25 guess) and, outside the hardware
#: DGE's transpose constraints, queues on no DGE (tests/test_cost_transposes.py): 2.26x -> 1.95x, nothing tuned to it.
#: AWS's RMSNorm-Quant targets (held out, first estimated for issue 31 scope 4; LNC=2) are all within 1.07-1.13x since
#: trn2-0.11 (the 70B ones were 0.68x / 0.73x): its [1, H] gamma load in 4-byte pieces and its unread squares and
#: absolute values holding no SBUF, both from AWS's docs (tests/test_cost_live_data.py); nothing is tuned to them.
OFF: dict[str, float] = {"matrix_transpose_improved 4096x4096 fp32 (rishic3)": 1.95}
#: ladders the model does not order as published today.  robertpare17's filter loops made affine_range ran 20% (fp16)
#: and 2% (fp32) faster on trn1; the model tied them until an affine_range loop's instructions could run ahead in their
#: engine's idle time (nkisim/cost/lanes.py; now fp16 1297 / 1046 us, fp32 3671 / 3498 us, both ordered).  The same
#: mechanism hides his fused max pool's ScalarE/VectorE work in TensorE-bound time: fp32 3496.9 us against 3497.6
#: without the pool, published 3741 / 3681 (1.6% apart; the author notes run-to-run variance); fp16 stays ordered.
#: (trn1-0.12 prices his fp32 weight transposes at the fp32 matmul rate, 2949 -> 3498 us; the copy each needs out of
#: PSUM before its matmul, nl.matmul's lowering, is not traced yet: adding it alone makes the fitted fp16 figure 2.3x
#: slow through the PSUM rotation of two banks per site.)
MISRANKED: list[str] = ["robertpare17 fp32: conv2d+maxpool / conv2d"]


def _check(values, misranked, text, quick: bool) -> None:
    rows = [f for f in calibrate.FIGURES if not (quick and f.slow) and f.available()]
    assert {(f.target, f.name) for f in rows} == set(values)
    off = {f.name: round(values[f.target, f.name] / f.published * 20) / 20 for f in rows
           if not 1 / 1.3 <= values[f.target, f.name] / f.published <= 1.3}
    assert off == {k: v for k, v in OFF.items() if any(f.name == k for f in rows)}
    checked = [name for t, name, order in calibrate.LADDERS if all((t, n) in values for n in order)]
    assert misranked == [m for m in MISRANKED if m in checked]
    assert "fit figures" in text and "held-out figures (nothing fitted or chosen against them)" in text
    assert "within 1.3x" in text and "ladders ordered as published" in text
    assert any(f.held_out for f in rows) and any(not f.held_out for f in rows)


def test_the_split_holds_a_third_out_and_every_row_is_reported():
    """The file's split: at least a third of its rows held out (fixed before fitting, issue 31 scope 2); every row is
    a figure of the report, estimated or listed as unmodelled with the reason."""
    assert len(calibrate.FIGURES) == 59
    assert sum(f.held_out for f in calibrate.FIGURES) * 3 >= len(calibrate.FIGURES)
    assert not [f.name for f in calibrate.FIGURES if f.unmodelled]  # every row has a kernel that runs here
    # AWS's RMSNorm-Quant targets (issue 31 scope 4): held out, estimated on AWS's own reference kernel, as LNC=2
    rmsnorm = [f for f in calibrate.FIGURES if f.name.startswith("RMSNorm-Quant")]
    assert [f.name for f in rmsnorm] == [f"RMSNorm-Quant {m} (LNC=2)" for m in (
        "Llama3.3-70B S=2K H=8192", "Llama3.3-70B S=32K H=8192", "Llama3.1-405B S=2K H=16384",
        "Llama3.1-405B S=32K H=16384")]
    assert all(f.held_out and f.slow and f.lnc == 2 and f.mirror.startswith("aws-neuron/nki-samples@1ee7f1d:")
               for f in rmsnorm)


def test_the_quick_figures_and_their_rankings():
    _check(*_evaluated(quick=True), quick=True)


@pytest.mark.slow
def test_every_figure_and_every_ranking():
    values, misranked, text = _evaluated(quick=False)
    _check(values, misranked, text, quick=False)
    # every ladder was complete, so every one was checked
    assert all(all((t, n) in values for n in order) for t, _, order in calibrate.LADDERS)
