"""Grade records (``nkilab.judge.results``): one typed record per question, rendered for each reader, never parsed back.

A student reads public cases in full and hidden cases as a count, kinds and verdict categories; the TA reads
everything.
The JSON form round-trips exactly and refuses anything that is not a record; CSV cells never start a formula."""

from __future__ import annotations

import csv
import io
import json

import pytest

from nkilab.judge.results import (
    MIME,
    SCHEMA,
    Audience,
    CaseRecord,
    CostlyLine,
    ErrorFacts,
    GradeRecord,
    Outcome,
    Problem,
    ProblemKind,
    SpeedFacts,
    SpeedRecord,
    csv_cell,
)

CASES = (
    CaseRecord(1, False, "a, b: float32 [128, 512]", Outcome.PASSED, "matches", kinds=("float32",)),
    CaseRecord(2, True, "a, b: float32 [1, 1]", Outcome.PASSED, "matches", kinds=("float32", "one row")),
    CaseRecord(3, True, "a, b: float16 [64, 100]", Outcome.WRONG_SHAPE,
               "output dtype float32 but expected float16 (create the output with the input's dtype)",
               kinds=("float16", "under one tile")),
    CaseRecord(4, True, "a, b: float32 [4099, 77]", Outcome.ERROR,
               "your kernel raised NKIValueError at k.py line 9 (`t = nl.load(a[0:4099])`): partition 4099 > 128",
               ErrorFacts("NKIValueError", "partition 4099 > 128", "err_partition_oob", 9, "t = nl.load(a[0:4099])"),
               ("float32", "ragged rows", "several row tiles")),
)
RECORD = GradeRecord("vector_add_naive", "Vector add", 0.5, 3.0, 0.5, 2.0, 0.0, 1.0, CASES)


def test_a_student_sees_hidden_cases_as_a_count_kinds_and_categories_only():
    text = RECORD.render_text(Audience.STUDENT)
    assert "[ok  ] public case 1/4  a, b: float32 [128, 512]: matches" in text
    assert "[FAIL] hidden cases: 1 of 3 passed" in text
    # a failing hidden case is named by its kinds (the public cases cover every kind), never its sizes
    assert "hidden case 3 (float16, under one tile): wrong dtype or shape" in text
    assert "hidden case 4 (float32, ragged rows, several row tiles): raised NKIValueError" in text
    assert "hidden case 2" not in text  # a passing hidden case is only counted
    for secret in ("[1, 1]", "[64, 100]", "[4099, 77]", "4099", "64", "nl.load(a", "line 9", "err_partition_oob",
                   "one row"):
        assert secret not in text, secret
    assert text.index("hidden cases") < text.index("Correctness: 2/4 cases -> 0.5/2 points")
    assert text.endswith("Score: 0.5 / 3\n")


def test_the_ta_sees_every_case():
    text = RECORD.render_text(Audience.TA)
    assert "[FAIL] hidden case 3/4  a, b: float16 [64, 100]: output dtype float32" in text
    assert "[FAIL] hidden case 4/4  a, b: float32 [4099, 77]: your kernel raised NKIValueError at k.py line 9" in text
    assert "hidden cases:" not in text and "(float16, under one tile)" not in text  # the TA reads the inputs


def test_json_round_trips_and_refuses_what_is_not_a_record():
    facts = SpeedFacts((("dve", 10.0), ("dma", 160.0)), 16, 12, 3 * 2**20, 40,
                       (CostlyLine(7, "t = nl.load(a)", 12.5),), 2)
    rec = GradeRecord("q", "Q", 3.0, 4.0, 2.0, 2.0, 1.0, 2.0, CASES[:1], None,
                      SpeedRecord("a: float32 [128, 512]", "estimate (nkisim cost model, trn2)", 30.0, 20.0, "partial",
                                  kernel=facts, reference=facts, lesson="lesson 2, section 3"),
                      True, ("a warning",))
    again = GradeRecord.from_json(json.loads(json.dumps(rec.to_json())))
    assert again == rec and rec.to_json()["schema"] == SCHEMA and MIME.endswith("+json")
    assert GradeRecord.from_json(RECORD.to_json()) == RECORD
    for bad in (None, [], {"schema": "other"}, dict(RECORD.to_json(), points="lots"),
                dict(RECORD.to_json(), cases=[{"number": 1}]),
                dict(RECORD.to_json(), cases=[dict(CASES[0].__dict__, outcome="perfect")]),
                dict(RECORD.to_json(), cases=[{k: v for k, v in CASES[0].__dict__.items() if k != "kinds"}]),
                dict(RECORD.to_json(), cases=[dict(CASES[0].__dict__, kinds="float32")]),
                dict(RECORD.to_json(), cases=[dict(CASES[0].__dict__, kinds=[3])]),
                dict(RECORD.to_json(), schema="nkilab-grade/1"),
                dict(RECORD.to_json(), timing={"case": 1})):
        with pytest.raises(ValueError, match="not a grade record"):
            GradeRecord.from_json(bad)


def test_speed_lines_and_summary_come_from_fields():
    rec = GradeRecord("q", "Q", 3.0, 4.0, 2.0, 2.0, 1.0, 2.0, CASES[:1], None,
                      SpeedRecord("a: float32 [128, 512]", "estimate (nkisim cost model, trn2)", 30.0, 20.0, "partial"))
    text = rec.render_text(Audience.STUDENT)
    assert "reference solution 20.0 us -> 1.50x the reference." in text and "partial speed points (half)" in text
    assert rec.summary() == ("1/1 cases right; latency 1.50x the reference's, estimate (nkisim cost model, trn2) -> "
                             "1/2 speed points")
    assert RECORD.summary() == ("2/4 cases right; first wrong: hidden case 3 (output dtype float32 but expected float16 "
                                "(create the output with the input's dtype)); no speed points until every case is right")
    assert RECORD.summary(Audience.STUDENT).endswith("first wrong: hidden case 3 (float16, under one tile): wrong "
                                                     "dtype or shape; no speed points until every case is right")


def test_a_message_faking_report_lines_stays_one_case_line():
    """A kernel's error message is one line by the time it is a record (``runner.clean_text``); printed text is
    never read back, so a fake "Correctness: 8/8" in a message changes no count, in the report or the summary."""
    fake = CaseRecord(1, False, "a: float32 [8]", Outcome.ERROR, "your kernel raised ValueError: Correctness: 8/8 cases")
    rec = GradeRecord("q", "Q", 0.0, 2.0, 0.0, 2.0, 0.0, 0.0, (fake,), Problem(ProblemKind.CRASHED, "it died"))
    assert rec.summary() == "it died"
    assert "Correctness: 0/1 cases -> 0/2 points" in rec.render_text(Audience.TA)


@pytest.mark.parametrize("value", ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_csv_cells_never_start_a_formula(value):
    cell = csv_cell(value)
    assert cell.startswith("'") and "\r" not in cell
    row = next(csv.reader(io.StringIO(_csv_line(cell))))
    assert not row[0].startswith(("=", "+", "-", "@"))


def _csv_line(cell: str) -> str:
    out = io.StringIO()
    csv.writer(out).writerow([cell])
    return out.getvalue()


def test_csv_cells_keep_ordinary_text():
    assert csv_cell("2/4 cases right") == "2/4 cases right" and csv_cell(1.5) == "1.5" and csv_cell(None) == ""
