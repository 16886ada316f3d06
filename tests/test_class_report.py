"""The class report (``nkilab.lms.report``) and similarity of hand-ins (``nkilab.kernels.similarity``), on small in-process
records and programs traced here: no class is graded (``tests/test_grade_class.py`` checks the report the example
class's one shared grading writes, and opens it in Chromium).

Similarity compares what a kernel does: the instruction program the grader's executor parsed, fingerprinted with
names, constants of shape and the order of independent instructions left out, and the source text through
copydetect; what the reference solution, the stub and most of the class share is common ground."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nkilab.course.questions import QUESTIONS
from nkilab.isolate import replies, runner
from nkilab.judge import evaluate
from nkilab.judge.results import (
    CaseRecord,
    ErrorFacts,
    GradeRecord,
    Outcome,
    Problem,
    ProblemKind,
    SpeedFacts,
    SpeedRecord,
)
from nkilab.kernels import similarity
from nkilab.kernels.modules import load_kernel
from nkilab.lms import report
from nkilab.lms.grade_table import CellGrade, Submission

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "autograder" / "example_class" / "kernels"


def traced(path: Path, qid: str) -> tuple[int, ...]:
    """The fingerprints of ``path``'s program for the question's timed case, traced as the grader's child does."""
    return evaluate.traced_program(path, QUESTIONS[qid])


# --------------------------------------------------------------------------- programs


def test_a_disguised_copy_has_the_same_program_and_an_honest_twin_shares_only_the_reference():
    ben = traced(KERNELS / "ben_stream_one_chunk_at_a_time.py", "vector_add_stream")
    quinn = traced(KERNELS / "quinn_stream_copied_and_disguised.py", "vector_add_stream")
    assert ben == quinn  # renamed, independent allocations and loads swapped, comments: the same program
    reference = set(evaluate.reference_programs(QUESTIONS["vector_add_stream"]))
    assert set(ben) - reference  # ben's kernel is not the reference's
    pair = similarity.side(ben, quinn, reference)
    assert pair.score >= similarity.THRESHOLD and pair.shared >= similarity.MIN_SHARED
    rosa = traced(KERNELS / "rosa_vector_add_in_one_line.py", "vector_add_naive")
    sam = traced(KERNELS / "sam_vector_add_step_by_step.py", "vector_add_naive")
    assert rosa == sam  # the same program, written differently
    reference1 = set(evaluate.reference_programs(QUESTIONS["vector_add_naive"]))
    assert set(rosa) <= reference1 and similarity.side(rosa, sam, reference1).score == 0.0
    assert similarity.side(rosa, sam, set()).score == 1.0  # without the common ground they would look copied
    assert set(rosa) != set(ben)
    # what make grade traces while nbgrader grades: the same common ground, for the course's questions only
    assert report.reference_fingerprints(["vector_add_naive", "not_a_question"]) == {
        "vector_add_naive": tuple(sorted(reference1))}


def test_the_executor_sends_the_timed_programs_fingerprints_and_the_parent_checks_them():
    q = QUESTIONS["vector_add_naive"]
    args = list(evaluate.case_data(q, q.speed_case, 0, evaluate.TIMED_INDEX).args)
    fn = load_kernel(KERNELS / "sam_vector_add_step_by_step.py", q.function)
    run = runner.run_inprocess(fn, q.function, [args, args], timed=1, target="trn2")
    assert run.program == traced(KERNELS / "sam_vector_add_step_by_step.py", "vector_add_naive")
    for bad in ([3, 2, 1], [1, 1], [-1], [1 << 48], [1.5], [True], "1,2", list(range(similarity.MAX_FEATURES + 1))):
        result = replies.RunResult()
        replies.read_cases([  # a forged message, as the executor's channel could carry one
            ({"kind": "case", "index": 0, "status": "error", "program": bad}, [])], 1, result)
        assert result.program is None, bad
    assert similarity.checked_features([1, 5, 9]) == (1, 5, 9)


def test_a_grade_record_keeps_its_program_and_refuses_a_forged_one():
    rec = GradeRecord("q", "t", 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, program=(2, 7, 11))
    assert GradeRecord.from_json(json.loads(rec.dumps())).program == (2, 7, 11)
    for forged in ([7, 2], ["x"], [1 << 60], [2.0]):
        data = rec.to_json() | {"program": forged}
        with pytest.raises(ValueError):
            GradeRecord.from_json(data)


def test_text_similarity_ignores_names_and_comments_and_marks_what_the_pair_shares():
    base = ("def f(a, b):\n    out = alloc(a.shape)\n    for i in range(n):\n        t = load(a[i])\n"
            "        u = mul(t, scale(b[i], 3))\n        store(out[i], u)\n    return out\n")
    renamed = base.replace("out", "result").replace("t =", "tile =").replace("(t,", "(tile,") + "# mine\n"
    a, b = similarity.text_fingerprint(base), similarity.text_fingerprint(renamed)
    assert a.hashes == b.hashes
    spans = similarity.shared_spans(b, a.hashes)
    assert spans and all(0 <= x < y <= len(renamed) for x, y in spans)
    other = similarity.text_fingerprint("def g(x):\n    return [v * v for v in x if v > 0]\n")
    assert similarity.side(a.hashes, other.hashes, set()).score < 0.2
    # common ground: what the stub gave both is not counted
    assert similarity.side(a.hashes, b.hashes, set(a.hashes)).score == 0.0


def test_ranking_puts_the_copied_pair_first_and_flags_only_it():
    common = (1, 2, 3, 4)
    programs = {"ann": (1, 2, 3, 4), "bob": (1, 2, 3, 4), "cat": (1, 2, 3, 4, 50, 51, 52, 53, 54),
                "dan": (1, 2, 3, 4, 50, 51, 52, 53, 54), "eve": (1, 2, 60)}
    pairs = similarity.rank("q", programs, {}, common)
    assert (pairs[0].first, pairs[0].second) == ("cat", "dan") and pairs[0].flagged
    assert [p for p in pairs if p.flagged] == [pairs[0]]
    assert not next(p for p in pairs if {p.first, p.second} == {"ann", "bob"}).flagged


# --------------------------------------------------------------------------- the report


def _speed(ratio: float, tier: str, dma_busy: float = 90.0) -> SpeedRecord:
    facts = SpeedFacts((("dma", dma_busy * 16), ("dve", 10.0)), 16, 8, 1 << 20, 40)
    return SpeedRecord("a, b: float32 [128, 4096]", "estimate (nkisim cost model, trn2)", 100.0 * ratio, 100.0,
                       tier, kernel=facts)


def _rec(points: float, cases: tuple[CaseRecord, ...], problem: Problem | None = None,
         timing: SpeedRecord | None = None, program: tuple[int, ...] = ()) -> GradeRecord:
    return GradeRecord("vector_add_stream", "Vector add, streamed", points, 4.0, min(points, 2.0), 2.0,
                       max(points - 2.0, 0.0), 2.0, cases, problem, timing, program=program)


OK = CaseRecord(1, False, "a, b: float32 [128, 4096]", Outcome.PASSED, "matches")
RAGGED = CaseRecord(2, True, "a, b: float32 [77, 2048]", Outcome.WRONG_VALUES, "wrong values", kinds=("ragged rows",))
CAPACITY = CaseRecord(3, True, "a, b: float32 [128, 65536]", Outcome.ERROR, "raised",
                      ErrorFacts("SbufCapacityError", "too big", "err_sbuf_capacity"), ("float32",))
HOSTILE = "<script>alert('x')</script>"


def _class() -> tuple[list[Submission], list[str]]:
    def sub(student: str, status: str, rec: GradeRecord | None, points: float | None = None) -> Submission:
        cell = CellGrade("01_vector_add", "q2_grade", "vector_add_stream", "kernel",
                         points if points is not None else (rec.points if rec else 0.0), 4.0, "", rec)
        return Submission(student, "01_vector_add", status, [cell] if status in ("graded", "salvaged") else [])

    copied = (1, 2, 3, 9, 10, 11, 12)
    subs = [sub("ada", "graded", _rec(4.0, (OK, OK), timing=_speed(1.0, "full"), program=(1, 2, 3))),
            sub("ben", "graded", _rec(3.0, (OK, OK), timing=_speed(1.6, "partial"), program=copied)),
            sub("quinn", "graded", _rec(3.0, (OK, OK), timing=_speed(1.6, "partial"), program=copied)),
            sub("cleo", "graded", _rec(1.0, (OK, RAGGED))),
            sub("dev", "graded", _rec(0.0, (), Problem(ProblemKind.TIMEOUT, "timed out after 40 s"))),
            sub("eve", "graded", _rec(1.0, (OK, CAPACITY))),
            sub("kai", "unreadable", None),
            sub("gus", "salvaged", _rec(2.0, (OK, OK))),
            sub(HOSTILE, "graded", None, 0.0)]
    # a teacher's own plain-Python check (a code grade cell of no course question) leaves no record, and no alarm
    subs[0].cells.append(CellGrade("01_vector_add", "tiles_check", "tiles_check", "kernel", 0.0, 0.0))
    return subs, [s.student for s in subs]


def test_the_report_holds_the_class_per_question(tmp_path):
    subs, students = _class()
    facts = report.build(subs, students, ["01_vector_add"])
    [q] = facts.questions  # (the teacher's check is no question of the report)
    assert q.distribution() == [(0.0, 2), (1.0, 2), (2.0, 1), (3.0, 2), (4.0, 1)]
    assert q.verdicts["every case right"] == ["ada", "ben", "quinn", "gus"]
    assert q.verdicts["wrong values"] == ["cleo"] and q.verdict_cases["wrong values"] == ["ragged rows"]
    assert q.verdicts["raised err_sbuf_capacity"] == ["eve"]
    assert q.verdict_cases["raised err_sbuf_capacity"] == ["float32"]
    assert q.verdicts["timed out"] == ["dev"] and q.verdicts["no grade record"] == [HOSTILE]
    assert [(s.student, s.tier, s.bottleneck) for s in q.slowest()][:2] == [("ben", "partial", "DMA queues"),
                                                                            ("quinn", "partial", "DMA queues")]
    assert q.bottlenecks() == [("DMA queues", 3)]
    looks = {(x.student, x.why) for x in facts.looks}
    assert ("kai", report.LOOK["unreadable"]) in looks and ("gus", report.LOOK["salvaged"]) in looks
    assert ("dev", "timed out after 40 s") in looks
    assert any(x.student == HOSTILE and "no grade record" in x.why for x in facts.looks)
    assert not any(x.question == "tiles_check" for x in facts.looks)
    top = facts.pairs[0].pair
    assert {top.first, top.second} == {"ben", "quinn"} and top.flagged
    assert not any(v.pair.flagged for v in facts.pairs[1:])


def test_the_page_escapes_every_student_string_and_the_json_says_the_same(tmp_path):
    subs, students = _class()
    sources = {"vector_add_stream": report.Sources({"ben": "x = 1  # " + HOSTILE + "\n" * 3 + "y = x + 2\n",
                                                    "quinn": "z = 1\n" + HOSTILE + "\nw = z + 2\n"})}
    facts = report.build(subs, students, ["01_vector_add"], sources)
    page = report.write(facts, tmp_path / "report")
    text = page.read_text()
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert similarity.LEAD in text
    plot = (tmp_path / "report" / "speed.svg").read_text()
    assert "<svg" in plot and HOSTILE not in plot and "vector_add_stream" in plot
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    assert data["lead"] == similarity.LEAD
    [q] = data["questions"]
    assert q["scores"] == {s.student: s.cells[0].points for s in subs if s.cells}
    assert data["pairs"][0]["pair"]["first"] == "ben" and data["pairs"][0]["pair"]["flagged"]
    assert [x["student"] for x in data["looks"]] == [x.student for x in facts.looks]


def test_a_large_class_keeps_the_top_pairs_of_each_question_and_shows_few_side_by_side():
    subs = [Submission(f"s{n}", "01_vector_add", "graded", [CellGrade(
        "01_vector_add", "q2_grade", "vector_add_stream", "kernel", 4.0, 4.0, "",
        _rec(4.0, (OK,), program=(1, 2, 3, 100 + n, 200 + n % 2)))]) for n in range(9)]
    sources = {"vector_add_stream": report.Sources({s.student: f"x_{s.student} = load({s.student!r})\n" * 5
                                                    for s in subs})}
    facts = report.build(subs, [s.student for s in subs], ["01_vector_add"], sources)
    assert len(facts.pairs) == report.PAIRS_KEPT < 9 * 8 // 2
    assert sum(bool(v.first_source) for v in facts.pairs) == report.SIDE_BY_SIDE
