"""No rule of the cost model restated in nkilab (issue 32 scope 1): the lessons' figures, facts and bounds ask
``nkisim.api`` how many DMA queues a transfer uses and which peak a matmul's input dtype runs at, and the numbers
they report are the model's own -- the queues a profile's timeline shows, the peak the model's profile reports."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import neuronxcc.nki as nki  # noqa: E402
import neuronxcc.nki.language as nl  # noqa: E402
import neuronxcc.nki.typing as nt  # noqa: E402
import pytest  # noqa: E402

from nkilab.course import bounds, facts, figures  # noqa: E402
from nkilab.course.questions import QUESTIONS, REPO  # noqa: E402
from nkisim import api  # noqa: E402
from nkisim.cost import timeline  # noqa: E402

COURSE = REPO / "autograder" / "nkilab" / "course"


@nki.jit
def rows_copy(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out


@nki.jit
def one_matmul(x, y):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.matmul(nl.load(x), nl.load(y), transpose_x=True))
    return out


def _texts(fig) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


@pytest.mark.parametrize("target", ["trn1", "trn2"])
@pytest.mark.parametrize("rows", [1, 9, 128])
def test_the_dma_queue_figure_shows_the_queues_the_models_timeline_uses(target: str, rows: int) -> None:
    used = api.dma_queues_used(target, rows)
    prof = api.profile_kernel(rows_copy, nt.tensor[[rows, 256], nl.float32], target=target)
    assert len([lane for lane in timeline.lanes(prof, 0) if lane.engine == "queue" and lane.slices]) == used
    queues = api.target(target).params.dma.queues
    assert f"a {rows}-row tile:\n{used} of {queues} queues\nmove data" in _texts(figures.dma_queues((rows,), target))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_peak_nkilab_reports_is_the_one_the_models_profile_reports(dtype: str) -> None:
    """The profile's summary prices a matmul's inputs at a peak; the lessons' ``peak()``, the roofline and the
    bounds report the same one for that dtype."""
    a = nt.tensor[[128, 128], getattr(nl, dtype)]
    b = nt.tensor[[128, 512], getattr(nl, dtype)]
    model = api.profile_kernel(one_matmul, a, b, target="trn2").summary()["peak_tflops"]
    assert api.pe_peak_tflops("trn2", dtype) == model
    assert facts.peak("trn2").pe_tflops_for(dtype) == model
    assert f"Tensor Engine peak {model:g} TFLOPS ({dtype})" in _texts(figures.roofline([], "trn2", dtype))


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_every_dtype_the_course_asks_for_gets_the_same_peak_everywhere(target: str) -> None:
    for dtype in ("float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"):
        assert facts.peak(target).pe_tflops_for(dtype) == api.pe_peak_tflops(target, dtype) > 0
    for q in QUESTIONS.values():
        work = bounds.work_of(q, q.speed_case)
        if work.pe_flops:
            b = bounds.bound(q, target)
            assert b.pe_tflops == api.pe_peak_tflops(target, work.pe_dtype) * bounds.launch_cores(q), q.qid


def test_no_cost_rule_is_restated_in_the_course_modules() -> None:
    """The DMA-queue rule (a queue per so many partitions, at most so many) and the dtype-to-peak map live in the cost model and its target
    files; the course modules ask ``nkisim.api`` for them."""
    for name in ("figures.py", "facts.py", "bounds.py"):
        text = (COURSE / name).read_text()
        assert not re.search(r"ceil\([^)]*/\s*(per|d\[\"partitions_per_queue\"\])", text), name  # ceil(rows / per)
        assert not re.search(r"\"pe_tflops_\w+\"\s+if\b", text), name  # a dtype's key chosen
        assert not re.search(r"\{\s*\"float(16|32|8_e4m3)\"\s*:\s*\"(bfloat16|fp8|pe_tflops)", text), name  # a map
        assert "api.pe_peak_tflops(" in text, name
    assert "api.dma_queues_used(" in (COURSE / "figures.py").read_text()
