"""Cost model vs the NKI matmul tutorial on trn1 ([4096,8192]@[8192,8192] bf16, nki.benchmark p99).

Published: 51.80 / 42.96 / 22.07 / 6.97 ms.  Runs in cost-only mode with nt.tensor placeholders
(about a minute in total); asserts the model numbers, never wall-clock time.
"""


import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import pytest

from tests.cost_kernels import matmul
from tests.once import figure, figure_value, is_figure_of

pytestmark = pytest.mark.slow

PUBLISHED_US = {"tiled": 51800, "hoist_load": 42960, "block_free_dimension": 22070, "fully_optimized": 6970}


@pytest.fixture(scope="module")
def ladder():
    """The tutorial's four kernels on its shapes (bench/calibrate.py's matmul figures: the same kernels and
    placeholders, nki.benchmark p99 on trn1), each estimated once per test run and shared with test_calibration."""
    out = {name: figure_value(figure("trn1", f"matmul {name}")) for name in PUBLISHED_US}
    a, b = nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16]
    for name in PUBLISHED_US:  # the figures' own kernels and arguments are the tutorial's
        fig = figure("trn1", f"matmul {name}")
        assert is_figure_of(fig, getattr(matmul, name)(), (a, b)), fig
    return out


def test_matmul_ladder_order(ladder):
    assert ladder["tiled"] > ladder["hoist_load"] > ladder["block_free_dimension"] > ladder["fully_optimized"]


@pytest.mark.parametrize("name", list(PUBLISHED_US))
def test_matmul_within_1_2x(ladder, name):
    ratio = ladder[name] / PUBLISHED_US[name]
    assert 1 / 1.2 <= ratio <= 1.2, (name, ladder[name])
