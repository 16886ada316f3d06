"""Speed feedback that teaches (issue 22 scope 2): a slow kernel is told where its time goes beside the reference
(DMA transfers, bytes, instructions, each engine's share of the span), what its bottleneck is and what usually
fixes it, and its own costliest lines -- built from the executor's facts, never parsed from text.  Each stage's
slow kernel (the example class's, or the lesson's plain kernel run as the fast question) must name the right
cause; the reference names none."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from course_testing import HEADER, solution_variant

from nkilab import check, load_kernel
from nkilab.course.questions import QUESTIONS
from nkilab.judge.results import Audience

pytestmark = pytest.mark.slow  # about 90 s: each case times a stage's graded shape and the reference's

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "autograder" / "example_class" / "kernels"
SOLUTIONS = REPO / "solutions"

SLOW = [  # (question, kernel file, function, a sentence the feedback must hold)
    ("vector_add_stream", KERNELS / "ben_stream_one_chunk_at_a_time.py", "vector_add_stream",
     "The same work as the reference, spread over more time: the engines wait on each other"),
    ("tiled_add", KERNELS / "ben_tiled_add_short_tiles.py", "tiled_add",
     "192 DMA transfers against the reference's 48"),
    ("stream_add_1d", KERNELS / "ben_stream_1d_small_free_dim.py", "stream_add_1d",
     "1,280 instructions against the reference's 32"),
    ("rmsnorm_fast", KERNELS / "cleo_rmsnorm_fast_is_plain.py", "rmsnorm_fast",
     "VectorE is the bottleneck: give VectorE fewer, larger instructions (bigger tiles), or move elementwise work "
     "to ScalarE's activation"),
    ("rmsnorm_2core", KERNELS / "cleo_rmsnorm_2core_one_core.py", "rmsnorm_2core",
     "2.0x the reference's bytes through DMA: load each input once"),
    ("matmul_fast", SOLUTIONS / "06_tensor_engine_matmul" / "matmul_tiled.py", "matmul_tiled",
     "2.1x the reference's bytes through DMA: load each input once"),
    ("rmsnorm_linear_fast", SOLUTIONS / "07_fused_rmsnorm_linear" / "rmsnorm_linear.py", "rmsnorm_linear",
     "5.1x the reference's bytes through DMA"),
    ("conv2d_maxpool_fast", KERNELS / "ben_conv2d_fast_one_row_per_matmul.py", "conv2d_maxpool_fast",
     "2,956 instructions against the reference's 854: larger tiles mean fewer instructions"),
    ("rmsnorm_backward", KERNELS / "ben_rmsnorm_backward_on_the_vector_engine.py", "rmsnorm_backward",
     "VectorE is the bottleneck: give VectorE fewer, larger instructions (bigger tiles), or move elementwise work "
     "to ScalarE's activation"),
]


def _why_lines(held: list, busy_us: dict[str, float], case: str, target: str, latency_us: float,
               reference_us: float, tier: str) -> str:
    """The Why: lines a grade record renders from executor facts holding ``held`` (its [mechanism, line, count, us]
    rows, read at the pipe as the grader reads them) for a timed run of ``case``."""
    from nkilab.isolate.replies import speed_facts
    from nkilab.judge.results import GradeRecord, SpeedRecord

    facts = speed_facts({"busy_us": busy_us, "dma_queues": 16, "dma_count": 10, "dma_bytes": 4096,
                         "instructions": 400, "cores": 1, "held": held})
    timing = SpeedRecord(case, f"estimate (nkisim cost model, {target})", latency_us, reference_us, tier, kernel=facts)
    return "\n".join(GradeRecord("q", "t", 1.0, 2.0, 1.0, 1.0, 0.0, 1.0, timing=timing).why_lines())


def _checked(question: str, kernel) -> tuple[str, object]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = check(question, kernel)
    return out.getvalue(), result


@pytest.mark.parametrize("question,path,function,cause", SLOW, ids=[s[0] for s in SLOW])
def test_a_slow_kernel_is_told_why(question, path, function, cause):
    text, result = _checked(question, load_kernel(path, function))
    assert result.passed and result.tier != "full", text
    assert "Where the time goes (estimates): yours vs the reference" in text
    assert cause in text, text
    assert "Your costliest lines: line " in text  # quoted from the student's own file
    lesson = QUESTIONS[question].speed_lesson  # the lesson section that teaches this question's speed
    assert lesson.startswith("stage ") and f"See {lesson}." in text, text
    # the reference's lines are solution code: never quoted
    reference = (SOLUTIONS / next(p for p in SOLUTIONS.glob(f"*/{question}.py")).relative_to(SOLUTIONS)).read_text()
    quoted = [line.strip() for line in reference.splitlines() if len(line.strip()) > 25 and line.strip() in text]
    assert not quoted or all(q in path.read_text() for q in quoted), quoted


def test_the_reference_gets_no_advice():
    path = next(SOLUTIONS.glob("*/matmul_fast.py"))
    text, result = _checked("matmul_fast", load_kernel(path, "matmul_fast"))
    assert result.tier == "full" and "Busiest: " in text and "Why:" not in text, text


def test_the_facts_travel_in_the_record():
    """The same facts render in grading feedback (the record's student text) as in check()."""
    from nkilab import grade_report

    report = grade_report("tiled_add", KERNELS / "ben_tiled_add_short_tiles.py", seed=2, verbose=False)
    text = report.record.render_text(Audience.STUDENT)
    assert "192 DMA transfers against the reference's 48" in text and "Your costliest lines: line 14 (`nl.store(" in text
    assert report.record.timing.kernel.dma_count == 192 and report.record.timing.reference.lines == ()


LEGACY_SEQUENTIAL_STREAM = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    rows, cols = a.shape
    chunk = 2048
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray((rows, chunk), dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray((rows, chunk), dtype=a.dtype, buffer=nl.sbuf)
    for j in nl.sequential_range(cols // chunk):
        x[...] = nl.load(a[:, j * chunk:(j + 1) * chunk])
        y[...] = nl.load(b[:, j * chunk:(j + 1) * chunk])
        nl.store(out[:, j * chunk:(j + 1) * chunk], value=nl.add(x, y))
    return out
"""


def test_sequential_range_is_named_when_it_holds_the_kernel_back(tmp_path):
    """A legacy kernel streaming through tiles made outside a ``sequential_range`` loop: the compiler keeps the loop's
    accesses to them in program order (nkisim/cost/reasons.py quotes AWS), so each chunk's loads wait for the last
    chunk's add; check() says so at the load lines, with the fix, instead of the generic "engines wait" advice."""
    path = tmp_path / "sequential_stream.py"
    path.write_text(LEGACY_SEQUENTIAL_STREAM)
    text, result = _checked("vector_add_stream", load_kernel(path, "vector_add_stream"))
    assert result.passed and result.tier != "full", text
    assert "Why: Your sequential_range loops keep their accesses to a tensor made outside the loop in program order: " \
           "62 instructions (line 13, line 14) waited" in text, text
    assert "use nl.affine_range where iterations do not depend on each other" in text, text
    assert "The same work as the reference, spread over more time" not in text, text


def test_held_facts_from_the_executor_are_checked_and_travel_in_the_record():
    """The executor's ``held`` list is hostile data like the rest: only a known mechanism with an int line and count
    and a finite time is kept (nkilab.isolate.replies.speed_facts), and what is kept survives the record's JSON."""
    from nkilab.isolate.replies import speed_facts
    from nkilab.judge.results import Held, SpeedFacts

    base = {"busy_us": {"dve": 1.0}, "dma_queues": 16, "dma_count": 1, "dma_bytes": 8, "instructions": 2, "cores": 1}
    held = [["sequential_range", 12, 7, 3.5], ["rm -rf", 1, 1, 1.0], ["sequential_range", "12", 7, 3.5],
            ["sequential_range", 12, 7, float("nan")], ["sequential_range", 12, -1, 1.0], "sequential_range"]
    sf = speed_facts({**base, "held": held})
    assert sf is not None and sf.held == (Held("sequential_range", 12, 7, 3.5),)
    import dataclasses

    assert SpeedFacts.from_json(dataclasses.asdict(sf)) == sf


def test_check_names_an_engine_order_kept_by_sequential_range():
    """The cost model's second sequential_range mechanism (nkisim/cost/lanes.py: an affine_range loop's instructions
    may run ahead in their engine's idle time, a sequential_range loop's wait their turn) reaches check()'s "Why:"
    line as the model reported it: the executor's held facts keep it (nkilab.isolate.replies.HELD), and the advice
    names the lines and the fix; an estimate it did not hold back says nothing of it."""
    def why(held: list) -> str:
        return _why_lines(held, {"pe": 80.0, "act": 60.0}, "x: bfloat16 [8, 128, 520]", "trn1", 130.0, 100.0,
                          "partial")

    text = why([["sequential_order", 17, 42, 17.2]])
    assert "Why: Your sequential_range loops keep their instructions in order on each engine: 42 (line 17) waited " \
           "behind earlier work while their engine had idle time they could have used." in text, text
    assert "use nl.affine_range where iterations do not depend on each other" in text, text
    assert "sequential_range" not in why([]), why([])


#: a correct stage-6 matmul_fast: the reference matmul_tiled with its x blocks loaded already transposed ([M, K]) and
#: passed to nl.matmul as written, so the compiler inserts a transpose of each back to K on the partitions
TRANSPOSED_X_MATMUL = HEADER + solution_variant(
    "06_tensor_engine_matmul", "matmul_tiled",
    ("lhsT_tile = nl.load(lhsT[", "lhsT_tile = nl.load_transpose2d(lhsT["),
    ("nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)", "nl.matmul(lhsT_tile, rhs_tile)"), name="matmul_fast")


def test_check_names_the_transposes_nl_matmul_inserts(tmp_path):
    """``nl.matmul(x, y)`` without ``transpose_x=True`` "lowers to nc_matmul(transpose(x), y)" (nl.matmul's docstring,
    nkisim/cost/reasons.py): the cost model charges the inserted transposes' TensorE time, and check() now says so at
    the student's matmul line, with the count and the fix, through the executor's facts like the sequential_range
    lines (nkilab.isolate.facts.HELD)."""
    path = tmp_path / "transposed_x.py"
    path.write_text(TRANSPOSED_X_MATMUL)
    text, result = _checked("matmul_fast", load_kernel(path, "matmul_fast"))
    assert result.passed, text
    line = next(n for n, ln in enumerate(TRANSPOSED_X_MATMUL.splitlines(), 1) if "nl.matmul(" in ln)
    assert f"Why: Your nl.matmul calls without transpose_x=True (line {line}) each get a transpose of x inserted on " \
           "the Tensor Engine: 1,024 transposes, " in text, text
    assert "pass transpose_x=True." in text, text


def test_inserted_transposes_are_named_only_when_they_cost_something():
    """The inserted-transpose line, from the record's facts: said when the transposes take 5% of the kernel's time or
    more (the threshold of the sequential_range lines), not for a few."""
    def why(held: list) -> str:
        return _why_lines(held, {"pe": 80.0, "dma": 60.0}, "x: bfloat16 [512, 512]", "trn2", 100.0, 50.0, "none")

    text = why([["inserted_transpose", 9, 64, 6.0]])
    assert "Why: Your nl.matmul calls without transpose_x=True (line 9) each get a transpose of x inserted on the " \
           "Tensor Engine: 64 transposes, 6.0 us of its time." in text, text
    assert "transpose_x" not in why([["inserted_transpose", 9, 4, 0.4]])


def test_the_executor_hands_over_the_mechanisms_feedback_explains_first():
    """The executor sends at most five of the estimate's reasons (nkilab.isolate._execute.timing_facts); reasons no
    feedback reads (a DMA transpose's added queue time: large, summed over 16 queues) must not crowd out those it
    does (nkilab.isolate.facts.HELD)."""
    from nkilab.isolate._execute import timing_facts
    from nkisim.cost.model import Estimate
    from nkisim.cost.reasons import Reason

    reasons = tuple(Reason("dma_transpose", "k.py", n, 4, 100.0 + n) for n in range(6)) + \
        (Reason("sequential_order", "k.py", 30, 7, 2.5),)

    class Launch:
        target = "trn2"

        def estimate(self):
            return Estimate("trn2", "x", 50.0, {"dma": 40.0}, reasons=reasons)

    assert timing_facts(Launch())["facts"]["held"] == [["sequential_order", 30, 7, 2.5]]
