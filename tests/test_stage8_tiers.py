"""Stage 8's speed tiers beside CS149's published thresholds (issue 31 scope 3): the lesson quotes what
bench/stage8_tiers.py computes -- our two references' estimates at CS149's shape times the course's tiers -- and
CS149's thresholds as its harness has them (read from the local mirror of stanford-cs149/asst4-trainium2 when it is
here).  Cost-model estimates, never wall-clock times."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import stage8_tiers  # noqa: E402

LESSON = ROOT / "notebooks" / "08_conv2d_maxpool.py"
HARNESS = Path("/work/.mirror/stanford-cs149+asst4-trainium2/repo")


@pytest.mark.processes  # reads the harness from the mirror with git
def test_cs149_thresholds_are_the_harness_s():
    """The thresholds the script and the lesson quote are CS149 2025's harness's (224-pixel images)."""
    if not HARNESS.is_dir():
        pytest.skip("the CS149 mirror is not here")
    text = subprocess.run(["git", "--git-dir", str(HARNESS), "show", "67a1f8b:part2/test_harness.py"],
                          capture_output=True, text=True, check=True).stdout
    for dtype, (relaxed, optimised) in stage8_tiers.CS149_2025.items():
        assert re.search(rf"\(np\.{dtype}, 224\): \[{relaxed:g}, {optimised:g}\]", text), dtype


@pytest.mark.slow
def test_the_lesson_quotes_the_tiers_the_model_gives_at_cs149s_shape():
    lesson = " ".join(LESSON.read_text(encoding="utf-8").replace("#", " ").split())
    rows = {dtype: (half, full, cs_half, cs_full) for dtype, half, full, cs_half, cs_full in stage8_tiers.rows()}
    f16, f32 = rows["float16"], rows["float32"]
    assert (f"≤ {f16[1]:.1f} µs (all) and ≤ {f16[0]:.1f} µs (half) in float16, where CS149 2025 asks ≤ {f16[3]:g} and "
            f"≤ {f16[2]:g} µs") in lesson
    assert f"≤ {f32[1]:.1f} and ≤ {f32[0]:.1f} µs in float32, where it asks ≤ {f32[3]:g} and ≤ {f32[2]:g} µs" in lesson
