"""Both dialects, every stage (issue 21 scope 3): each lesson authors every kernel cell twice -- legacy
(``import neuronxcc.nki``, ``dialect="legacy"``) and NKI 0.6 (``import nki``, ``dialect="nki"``) -- and the release
writes both references (``solutions/<stage>/<kernel>.py`` and ``solutions/<stage>/nki/<kernel>.py``) and the
students' stubs in the course's ``stub_dialect``.  Here, for every question of the manifest:

* the manifest names a reference in each dialect, and it is the file the release writes from the lesson;
* the 0.6 reference earns full marks from the grader (correctness and full speed points), as the legacy one does;
* the two references issue the same instructions (engine, partitions, elements, bytes, in order) on the speed case
  and get the same estimate -- one algorithm, one program, one cost, whichever dialect spells it;
* either dialect's student notebook has the same cells (grade ids) and only its own dialect's kernel stubs.
"""

from __future__ import annotations

import dataclasses
import linecache

import numpy as np
import pytest
from course_testing import grade_in_process

from nkilab.authoring import lesson_runs
from nkilab.authoring.release import REPO, cell_dialect, load_source, solution_files, stages
from nkilab.course import manifest
from nkilab.course.questions import QUESTIONS, SOLUTIONS
from nkilab.isolate._child import make_grid
from nkilab.judge.results import MIME, GradeRecord, Outcome
from nkilab.kernels.modules import kernel_dialect, load_kernel
from nkisim import api
from nkisim.api import Dialect
from nkisim.cost import costs

SPECS = manifest.course().questions()
SEED = 2611


@pytest.mark.parametrize("qid", sorted(SPECS))
def test_every_question_has_a_reference_in_each_dialect_written_by_the_release(qid):
    spec = SPECS[qid]
    assert set(spec.solutions) == set(manifest.DIALECTS), (qid, spec.solutions)
    stage = spec.solutions[Dialect.LEGACY].split("/")[0]
    written = solution_files(load_source(REPO / "notebooks" / f"{stage}.py"))
    for dialect, rel in spec.solutions.items():
        assert rel.split("/", 1)[1] in written, (qid, dialect, rel, sorted(written))
        text = (SOLUTIONS / rel).read_text()
        assert ("import nki\n" in text) == (dialect is Dialect.NKI) and ("neuronxcc" in text) == (dialect is Dialect.LEGACY), rel


@pytest.mark.processes  # the lesson runs under a Jupyter kernel when this test run has not run it yet
@pytest.mark.parametrize("qid", sorted(SPECS))
def test_the_06_reference_earns_full_marks(qid):
    """The 0.6 reference earns full marks from the grader: correctness and speed, every case passed.  With the
    course's stub dialect 0.6 (this repository's), the lesson grades it, in the sandbox as a student's hand-in is,
    in the run of it the stage tests and the docs build share (``nkilab.authoring.lesson_runs``: once per test run);
    its grade record is read here rather than grading the reference a second time in process (30 CPU-s of the
    suite).  Under a legacy stub dialect the lessons grade the legacy twins, so the 0.6 reference is graded here."""
    q = QUESTIONS[qid]
    path = SOLUTIONS / SPECS[qid].solutions[Dialect.NKI]
    if manifest.course().stub_dialect is not Dialect.NKI:
        report = grade_in_process(qid, path, SEED)
        ev = report.evaluation
        assert ev is not None and ev.problem is None, ev
        assert [cr.verdict.message for cr in ev.cases if not cr.verdict.ok] == []
        record = report.record
    else:
        stage = SPECS[qid].solutions[Dialect.NKI].split("/")[0]
        records = [GradeRecord.from_json(out["data"][MIME]) for cell in lesson_runs.run(stage).notebook.cells
                   if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")
                   for out in cell.outputs if MIME in out.get("data", {})]
        record = next(r for r in records if r.question == qid)
        # the lesson graded the very file the release writes as the 0.6 reference (see the test above)
        assert record.sandboxed and record.problem is None, record.problem
        assert [c.number for c in record.cases if c.outcome is not Outcome.PASSED] == [], record.cases
    assert record.correctness == pytest.approx(q.correctness_points)
    assert record.speed == pytest.approx(q.speed_points), record.timing


def _arrays(outputs) -> list[np.ndarray]:
    return [np.asarray(o) for o in (outputs if isinstance(outputs, (tuple, list)) else [outputs])]


def _instructions(launch: api.Launch) -> list[tuple]:
    return [(i.engine, i.p, i.n, i.nbytes) for i in launch.record.ctx.trace]


def _estimate(launch: api.Launch):
    """The estimate: total latency, each engine's busy time, DMA transfers and bytes, spills, instructions.  Its
    time per source line is left out: the two files spell the kernel in other lines, and the share of a wait each
    line is charged depends on how many buffers a loop's tiles rotate over, which differs where the legacy kernel
    keeps a loop rolled (over the compiler's unroll budget) and the 0.6 one, whose Python loops are unrolled, does
    not -- without moving the total (rmsnorm_linear: the same 175.8 us either way)."""
    est = launch.estimate()  # (each reason without its file and line, for the same reason)
    return dataclasses.replace(est, line_us={}, reasons=tuple(dataclasses.replace(r, file="", line=0)
                                                              for r in est.reasons if r.mechanism not in LEGACY_ONLY))


#: Why: lines of the legacy compiler's own allocation, which the 0.6 twin's tiles do not go through: a tile nothing
#: reads holds no SBUF beyond its write ("unread", cost/scheduler.py Buffers).  Every number of the estimate is still
#: compared: the rule frees room the twins' rotations do not need.  And the software DGE's line ("swdge") of the
#: legacy twin's gathers of row 0, where the 0.6 twin loads a broadcast view (_drop_gather_indices): its GpSimd time
#: is checked apart, below.
LEGACY_ONLY = frozenset({"unread", "swdge"})


#: questions whose two references do not yet get the same estimate: the legacy-only mechanism that separates them,
#: the most they may differ (a share of the 0.6 twin's total) and why.  The outputs and the instructions are still
#: compared as for every question, the mechanism must show in the legacy twin's reasons and the totals must differ
#: (one that starts agreeing fails here, so the list cannot go stale).  Stage 8's fast conv (legacy filter-transpose PSUM tiles made by a Python loop
#: inside ``affine_range`` rotated over 6 banks, the 0.6 twin's over 2) left when the cost model started counting a
#: site's tiles per iteration as the most of them live at once in both dialects; stage 7's rmsnorm_linear (116.3 us in
#: 0.6, 124.5 legacy) when the unroll budget rose to the top of its fitted range (799 instructions): its legacy
#: 617-instruction row loop had stayed rolled, its tiles on two rotating buffers, where 0.6 unrolls every loop
ESTIMATES_DIFFER: dict[str, tuple[str, float, str]] = {
    "rmsnorm_backward": ("unread", 0.005, "the legacy allocator's 'unread' rule (LEGACY_ONLY): the [n, C] copy activation_reduce must "
                        "write, which nothing reads, holds no SBUF in the legacy twin, where the 0.6 twin's allocated "
                        "qw_copy does; since w is a plain [128, C] tile loaded by one DMA that room lets the legacy "
                        "twin's loads start earlier: 343.8 against 344.5 us (0.2%; equal with the rule turned off)"),
}


@pytest.mark.parametrize("qid", sorted(SPECS))
def test_both_references_issue_the_same_instructions_and_estimate(qid):
    q = QUESTIONS[qid]
    args = q.inputs(q.speed_case, SEED, 0)
    kernels = {d: load_kernel(SOLUTIONS / rel, q.function) for d, rel in SPECS[qid].solutions.items()}
    # launched as the grader launches them: the question's grid in each kernel's dialect (make_grid)
    launches = {d: api.launch(k, args, grid=make_grid(q.grid, kernel_dialect(api.as_kernel(k))),
                              target=q.target or "trn2") for d, k in kernels.items()}
    old, new = launches[Dialect.LEGACY], launches[Dialect.NKI]
    for a, b in zip(_arrays(old.outputs), _arrays(new.outputs), strict=True):
        np.testing.assert_array_equal(b, a)
    _drop_gather_indices(old, new)  # the one other difference: the legacy twin's index tile for a gather of row 0
    if _rsqrt_moved(old, new):  # the only difference the twins may have: rsqrt's engine (rmsnorm_linear: 3.5%) ...
        for x, y in zip(old.record.ctx.trace, new.record.ctx.trace):
            if x.engine != y.engine:  # ... so, with the legacy's rsqrt on GpSimd too, it must schedule alike
                x.kind, x.engine, x.op, x.extra = y.kind, y.engine, y.op, y.extra
    if qid in ESTIMATES_DIFFER:
        mechanism, share, _why = ESTIMATES_DIFFER[qid]
        a, b = old.estimate(), new.estimate()
        assert mechanism in {r.mechanism for r in a.reasons} - {r.mechanism for r in b.reasons}
        assert a.total_us != b.total_us and abs(a.total_us - b.total_us) <= share * b.total_us
        return
    a, b = _estimate(old), _estimate(new)
    # ... and the legacy twin's gathers have GpSimd make their descriptors (software DGE, cost.costs.swdge_ns; the 0.6
    # twin's broadcast view is a plain DMA): GpSimd busy for that much longer, nothing else moves
    prm = api.target(q.target or "trn2").params
    sw = sum(costs.swdge_ns(x, prm) for x in old.record.ctx.trace) / 1000.0
    assert a.engine_busy_us["pool"] == pytest.approx(b.engine_busy_us["pool"] + sw)
    assert sum(r.us for r in old.estimate().reasons if r.mechanism == "swdge") == pytest.approx(sw)
    assert dataclasses.replace(a, engine_busy_us={**a.engine_busy_us, "pool": 0.0}) == \
        dataclasses.replace(b, engine_busy_us={**b.engine_busy_us, "pool": 0.0})


def _line(loc: tuple[str, int]) -> str:
    return linecache.getline(loc[0], loc[1]).rstrip("\n")


#: the legacy twin's index tile for a gather of row 0 into every partition (``nl.load(v[row0[i_p, 0], i_f])``)
GATHER_INDEX = "row0 = nl.zeros((128, 1), dtype=nl.int32)"


def _drop_gather_indices(old: api.Launch, new: api.Launch) -> int:
    """A ``[1, C]`` vector goes onto every partition in one DMA in both twins, but legacy NKI has no broadcast view of
    an HBM tensor (``nl.broadcast_to``'s source is "a tile in SBUF or PSUM", aws-neuron-sdk v2.26.0
    general/nki/api/nki/language/__init__.py:417; the simulator refuses an HBM one): where the 0.6 reference loads
    ``v.reshape((1, C)).broadcast(0, P)`` (a stride-0 view), the legacy one gathers row 0 into each partition with
    an indirect load (AWS's test_nki_nl_load_store_indirect.py), whose index tile is a memset of zeros.  Removes those
    memsets, each from a ``GATHER_INDEX`` line, from the legacy trace (in place, before its estimate): how many."""
    a, b = old.record.ctx.trace, new.record.ctx.trace
    keep = [x for x in a if not (x.op == "memset" and GATHER_INDEX in _line(x.loc))]
    dropped = len(a) - len(keep)
    assert not any(x.op == "memset" and GATHER_INDEX in _line(x.loc) for x in b)
    a[:] = keep
    return dropped


def _rsqrt_moved(old: api.Launch, new: api.Launch) -> int:
    """The two traces are the same instruction for instruction, but for the 0.6 twin's ``nl.rsqrt``, which AWS runs
    on the GpSimd Engine since NKI 0.5.0 (aws-neuron-sdk nki/migration/index.rst, "nki.language.rsqrt -- PSUM
    inputs no longer supported": "now runs on the GpSimd Engine for higher numerical precision") where the legacy
    ``nl.rsqrt`` is a Scalar Engine activation: how many instructions moved so, each from an ``nl.rsqrt`` line of
    both files."""
    a, b = old.record.ctx.trace, new.record.ctx.trace
    assert len(a) == len(b)
    moved = 0
    for x, y in zip(a, b):
        if (x.engine, x.p, x.n, x.nbytes) == (y.engine, y.p, y.n, y.nbytes):
            continue
        assert (x.engine, y.engine, x.p, x.n, x.nbytes) == ("act", "pool", y.p, y.n, y.nbytes), (x, y)
        assert "nl.rsqrt(" in _line(x.loc) and "nl.rsqrt(" in _line(y.loc), (_line(x.loc), _line(y.loc))
        moved += 1
    return moved


@pytest.mark.parametrize("lesson", stages(REPO / "notebooks"), ids=lambda p: p.stem)
def test_each_dialect_gets_the_same_cells_with_its_own_kernel_stubs(lesson):
    views = {d: load_source(lesson, d) for d in manifest.DIALECTS}
    ids = {d: [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells] for d, nb in views.items()}
    assert ids[Dialect.LEGACY] == ids[Dialect.NKI]
    for d, nb in views.items():
        assert all(cell_dialect(c) in (None, d) for c in nb.cells)
        kernels = [c.source for c in nb.cells if c.source.startswith("%%writefile")]
        assert kernels, lesson
        for src in kernels:
            if d is Dialect.NKI:
                assert "import nki\n" in src and "neuronxcc" not in src, src[:200]
            else:
                assert "neuronxcc.nki" in src and "\nimport nki\n" not in src, src[:200]


def test_a_ragged_tile_is_a_smaller_tile_in_06():
    """With a ragged last tile the legacy reference masks a 128-row tile and the 0.6 one loads a smaller one (a
    bounded slice): the same values, and -- a masked instruction covers only the partitions its mask leaves -- the
    same instructions and estimate."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((300, 64), np.float32), rng.standard_normal((300, 64), np.float32)
    old, new = (api.launch(load_kernel(SOLUTIONS / rel, "tiled_add_relu"), [a, b], target="trn2")
                for rel in (SPECS["tiled_add_relu"].solutions[Dialect.LEGACY], SPECS["tiled_add_relu"].solutions[Dialect.NKI]))
    np.testing.assert_array_equal(new.outputs, np.maximum(a + b, 0))
    np.testing.assert_array_equal(new.outputs, old.outputs)
    assert [i.p for i in new.record.ctx.trace][-5:] == [300 - 256] * 5
    assert _instructions(new) == _instructions(old)
    assert _estimate(new) == _estimate(old)


@pytest.mark.parametrize("dialects,ok", [(("legacy", "nki"), True), (("nki", "legacy"), True), ((None, "nki"), False),
                                         (("nki", None), False), (("legacy", "legacy"), False), ((None, None), False)])
def test_a_kernel_file_is_written_by_one_cell_per_dialect(dialects, ok):
    """A shared kernel cell beside a dialect's, or two cells of one dialect, would both run in a student notebook."""
    import nbformat

    from nkilab.authoring.release import ReleaseError

    nb = nbformat.v4.new_notebook()
    for d in dialects:
        cell = nbformat.v4.new_code_cell("%%writefile k.py\nx = 1", metadata={"nbgrader": {"solution": True}})
        if d is not None:
            cell.metadata["dialect"] = d
        nb.cells.append(cell)
    if ok:
        assert sorted(solution_files(nb)) == ["k.py", "nki/k.py"]
    else:
        with pytest.raises(ReleaseError, match="more than one solution cell"):
            solution_files(nb)
