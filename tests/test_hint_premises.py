"""check() and the feedback say what their numbers mean, and give a hint only when its premise holds in the kernel.

Each hint of ``GradeRecord.why_lines`` is checked twice, on facts where its premise holds and on facts where it does
not (in process: the facts are the executor's, as ``nkilab.isolate.replies.speed_facts`` checks them); the premise read from
the kernel's own source -- a tile made outside a loop that the loop overwrites -- on real kernels: ben's (one pair of
tiles for every chunk), the reference solutions (tiles made in the loop body, or filled part by part), accumulators.
"""

from __future__ import annotations

from pathlib import Path

from nkilab.isolate import replies
from nkilab.judge.results import CostlyLine, GradeRecord, Held, SpeedFacts, SpeedRecord
from nkilab.kernels.premises import shared_tile_lines

REPO = Path(__file__).resolve().parents[1]
BEN = REPO / "autograder" / "example_class" / "kernels" / "ben_stream_one_chunk_at_a_time.py"
REFERENCE = REPO / "solutions" / "01_vector_add" / "nki" / "vector_add_stream.py"

ACCUMULATE_IN_SBUF = '''
@nki.jit
def k(a):
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for j in range(8):
        x = nl.load(a[:, j * 512:(j + 1) * 512])
        nisa.tensor_tensor(dst=acc, data1=acc, data2=x, op=nl.add)
    return acc
'''
ACCUMULATE_IN_PSUM = '''
def k(a, b):
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for k in range(4):
        nisa.nc_matmul(dst=res, stationary=a[k], moving=b[k])
'''
SHARED_BY_ASSIGNMENT = '''
def k(a, out):
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for j in range(4):
        t[...] = nl.load(a[:, j * 512:(j + 1) * 512])
        nl.store(out[:, j * 512:(j + 1) * 512], value=t)
'''


def test_a_tile_made_outside_the_loop_and_overwritten_in_it_is_found():
    assert shared_tile_lines(BEN.read_text()) == [13, 14]  # x and y: one pair of SBUF tiles for every chunk
    assert shared_tile_lines(SHARED_BY_ASSIGNMENT) == [3]


def test_tiles_made_in_the_loop_filled_part_by_part_or_accumulated_are_not():
    assert shared_tile_lines(REFERENCE.read_text()) == []  # its tiles are made in the loop body
    for solution in ("07_fused_rmsnorm_linear/nki/rmsnorm_linear_fast.py", "08_conv2d_maxpool/nki/conv2d_maxpool_fast.py"):
        assert shared_tile_lines((REPO / "solutions" / solution).read_text()) == [], solution  # filled by slices
    assert shared_tile_lines(ACCUMULATE_IN_SBUF) == [] and shared_tile_lines(ACCUMULATE_IN_PSUM) == []
    assert shared_tile_lines("def k(:\n") == []  # not Python: no premise, no hint


def test_the_grader_reads_the_premise_from_its_own_copy_of_the_source():
    facts = {"busy_us": {"dma": 10.0}, "dma_queues": 16, "dma_count": 4, "dma_bytes": 1024, "instructions": 9,
             "cores": 1, "lines": [[13, 1.0]], "held": [], "shared": [99]}  # the child's "shared" is not read
    got = replies.speed_facts(facts, BEN.read_text().splitlines(keepends=True))
    assert got is not None and got.shared == (13, 14)
    assert replies.speed_facts(facts, REFERENCE.read_text().splitlines(keepends=True)).shared == ()
    assert got.without_code().shared == () and got.without_code().lines == ()


def facts(**kw) -> SpeedFacts:
    base = dict(busy_us=(("dma", 16 * 50.0), ("dve", 40.0)), dma_queues=16, dma_count=48, dma_bytes=1 << 20,
                instructions=100)
    return SpeedFacts(**{**base, **kw})


def why(kernel: SpeedFacts, latency: float = 200.0, reference: SpeedFacts | None = None) -> str:
    timing = SpeedRecord("a: float32 [128, 8192]", "estimate (nkisim cost model, trn2)", latency, 100.0, "none",
                         kernel=kernel, reference=reference or facts())
    rec = GradeRecord("q", "Q", 2.0, 4.0, 2.0, 2.0, 0.0, 2.0, timing=timing)
    return "\n".join(rec.why_lines())


def test_each_hint_fires_only_when_its_premise_holds():
    # (hint's words, facts where its premise holds, facts where it does not)
    hints = [
        ("DMA transfers against the reference's", facts(dma_count=200), facts(dma_count=60)),
        ("the reference's bytes through DMA", facts(dma_bytes=3 << 20), facts(dma_bytes=1 << 20)),
        ("instructions against the reference's", facts(instructions=300), facts(instructions=150)),
        ("Your sequential_range loops", facts(held=(Held("sequential_range", 7, 64, 30.0),)),
         facts(held=(Held("sequential_range", 7, 1, 1.0),))),  # 1 us of 200: nothing to speak of
        ("allocate it inside the loop body", facts(shared=(13, 14)), facts()),
        ("the engines wait on each other", facts(), facts(busy_us=(("dma", 16 * 150.0),))),
        ("DMA queues is the bottleneck", facts(busy_us=(("dma", 16 * 150.0),)), facts()),
    ]
    for words, holds, lacks in hints:
        assert words in why(holds), (words, why(holds))
        assert words not in why(lacks), (words, why(lacks))


def test_a_kernel_that_allocates_in_the_loop_body_is_not_told_to():
    text = why(facts())  # the engines idle, and no tile shared by the iterations
    assert "the engines wait on each other" in text and "inside the loop body" not in text
    told = why(facts(shared=(13, 14)))
    assert "the tile made outside the loop (line 13, line 14) is overwritten in every iteration" in told


def test_line_times_are_labelled_as_busy_time_that_overlaps():
    lines = (CostlyLine(18, "nl.store(out, value=nl.add(x, y))", 273.9), CostlyLine(17, "nisa.dma_copy(dst=y)", 226.2),
             CostlyLine(16, "nisa.dma_copy(dst=x)", 135.3))
    text = why(facts(lines=lines), latency=299.7)
    assert sum(c.us for c in lines) > 299.7  # the numbers: more than the kernel, as busy times overlap
    line = next(x for x in text.splitlines() if "Your costliest lines: line 18" in x)
    assert "these overlap and may add up to more than the kernel's 299.7 us" in line


def test_the_profiles_line_table_says_its_times_overlap():
    """nkisim's own per-line table: ben's kernel, whose lines' busy times add up to more than its latency."""
    import importlib.util

    import numpy as np

    from nkisim import api

    spec = importlib.util.spec_from_file_location("ben_stream", BEN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    a = np.ones((128, 65536), dtype=np.float32)  # the question's timed case
    prof = api.profile_kernel(module.vector_add_stream, a, a)
    total = prof.estimate.total_us
    assert sum(r["engine_time_us"] for r in prof.line_table()) > total
    head = prof.line_table_text().splitlines()[0]
    assert "overlaps and may add up to more than the" in head and f"{total:.2f} us total" in head
