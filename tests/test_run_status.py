"""A case's status is read off the pipe once, into ``RunStatus`` (issue 32 scope 2): the child's word is hostile data,
so a status it names outside the four becomes an error, an "ok" without an array is a bad return, and a case it never
answered did not run.  In process: the parent's reading of the messages, no child started."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from nkilab.isolate.facts import CostlyLine, ErrorFacts, Held, Latency, SpeedFacts
from nkilab.isolate.replies import UNNAMED, CaseRun, RunResult, RunStatus, read_cases
from nkilab.judge.compare import describe_error, diagnose
from nkilab.judge.evaluate import timed_latency
from nkilab.judge.results import Outcome


def _read(*messages: tuple[dict, list[np.ndarray]], n: int) -> RunResult:
    result = RunResult()
    read_cases(list(messages), n, result)
    return result


def test_each_status_the_child_may_send_and_what_it_becomes():
    out = np.ones((2, 2), np.float32)
    result = _read(({"kind": "case", "index": 0, "status": "ok"}, [out]),
                   ({"kind": "case", "index": 1, "status": "ok"}, []),
                   ({"kind": "case", "index": 2, "status": "bad_return", "returned": "NoneType"}, []),
                   ({"kind": "case", "index": 3, "status": "error", "error": {"type": "ValueError", "message": "x"}}, []),
                   ({"kind": "case", "index": 4, "status": "passed with honours"}, []), n=6)
    assert [c.status for c in result.cases] == [RunStatus.OK, RunStatus.BAD_RETURN, RunStatus.BAD_RETURN,
                                                RunStatus.ERROR, RunStatus.ERROR, RunStatus.NOT_RUN]
    assert all(type(c.status) is RunStatus for c in result.cases)
    assert result.cases[0].output is out and result.cases[1].returned == "nothing readable"
    assert result.cases[3].error == ErrorFacts("ValueError", "x")
    assert result.cases[4].error == ErrorFacts(UNNAMED, "the run's report named no status the grader knows")


def test_a_status_reads_as_its_word():
    """Logs, records and the tests' own subprocesses print it: ``not_run``, never ``RunStatus.NOT_RUN``."""
    assert str(RunStatus.NOT_RUN) == "not_run" and f"{RunStatus.OK}" == "ok" and RunStatus.ERROR == "error"


# ---------------------------------------------------------------------------------------------------------------------
# What arrives is parsed once, at the pipe, into typed records (nkilab.isolate.facts): nothing above reads a dict, and
# every field is checked against what the grader asked for (type, range, length).

SOURCE = ["import nki", "def k(a):", "    return nl.load(a[0:4099])"]


def _case(n: int = 1, source: list[str] | None = SOURCE, **head: object) -> CaseRun:
    result = RunResult()
    read_cases([({"kind": "case", "index": 0, **head}, [])], n, result, source)
    return result.cases[0]


def test_an_error_report_becomes_error_facts_checked_field_by_field():
    run = _case(status="error", error={"type": "ValueError", "message": "bad\x1b[31m\n" + "x" * 10_000,
                                       "error_id": "err_partition_oob", "line": 3, "file": "/etc/passwd",
                                       "code": "forged code"})
    assert type(run.error) is ErrorFacts and run.status is RunStatus.ERROR
    assert run.error.type == "ValueError" and run.error.error_id == "err_partition_oob"
    assert run.error.line == 3 and run.error.code == "return nl.load(a[0:4099])"  # the parent's copy, not the child's
    assert "\x1b" not in run.error.message and "\n" not in run.error.message and len(run.error.message) <= 2000
    forged = _case(status="error", error={"type": "Spelled_Hidden_Shape_128x96", "message": 7, "error_id": "a b",
                                          "line": 99})
    assert forged.error == ErrorFacts(UNNAMED, "", None, None, None)  # unknown class, no such line, no id
    assert _case(status="error", error=True).error == ErrorFacts(UNNAMED, "the error report was unreadable")
    assert _case(status="error", error={"type": "ValueError", "line": True}).error.line is None  # a bool is no line
    for seconds, kept in ((1.5, 1.5), (3, 3.0), (True, 0.0), (-1.0, 0.0), (float("nan"), 0.0), (1e9, 0.0), ("2", 0.0)):
        assert _case(status="ok", seconds=seconds).seconds == kept, seconds


def test_a_case_error_is_a_verdict_in_words_never_a_crash():
    run = _case(status="error", error=["not", "a", "dict"])
    verdict = diagnose(run, np.zeros(2), [np.zeros(2)], 1e-5, 1e-5, "k.py")
    assert verdict.outcome is Outcome.ERROR and verdict.error is run.error
    assert verdict.message == f"your kernel raised {UNNAMED}: the error report was unreadable"
    assert describe_error(ErrorFacts("NKIValueError", "partition 4099 > 128", None, 3, "t = nl.load(a)"), "k.py") == \
        "your kernel raised NKIValueError at k.py line 3 (`t = nl.load(a)`): partition 4099 > 128"


def test_an_import_error_is_error_facts_even_when_its_report_is_not_one():
    result = RunResult()
    read_cases([({"kind": "import", "status": "error", "error": "rm -rf /"}, [])], 1, result)
    assert result.import_error == ErrorFacts(UNNAMED, "the error report was unreadable")  # still a failed import


GOOD_FACTS = {"busy_us": {"dve": 5.0, "dma": 40.0, "rogue": 1e9}, "dma_queues": 16, "dma_count": 4, "dma_bytes": 4096,
              "instructions": 9, "cores": 1, "lines": [[3, 2.5]], "held": [["sequential_range", 3, 2, 0.5]]}


def test_a_timed_case_becomes_a_latency_record_with_speed_facts():
    run = _case(status="ok", timing={"latency_us": 12.5, "target": "trn2" + "x" * 100, "facts": GOOD_FACTS})
    t = run.timing
    assert type(t) is Latency and t.ok and t.latency_us == 12.5 and t.simulator and len(t.target) <= 16
    assert type(t.facts) is SpeedFacts
    assert t.facts.busy_us == (("pe", 0.0), ("act", 0.0), ("dve", 5.0), ("pool", 0.0), ("dma", 40.0))  # no "rogue"
    assert t.facts.lines == (CostlyLine(3, "return nl.load(a[0:4099])", 2.5),)
    assert t.facts.held == (Held("sequential_range", 3, 2, 0.5),)


@pytest.mark.parametrize("latency", [0.0, -1.0, float("nan"), float("inf"), 1e12, 12, "12.5", True, None])
def test_a_latency_out_of_range_is_no_latency(latency):
    run = _case(status="ok", timing={"latency_us": latency, "target": "trn2", "facts": GOOD_FACTS})
    assert run.timing == Latency.failed("no latency was reported")


@pytest.mark.parametrize("hostile", [
    {"lines": 5}, {"held": 7}, {"lines": {"3": 2.5}}, {"held": "sequential_range"}, {"lines": [[3]] * 10_000},
    {"busy_us": [1, 2]}, {"dma_queues": -1}, {"dma_count": True}, {"instructions": 1e30}, {"cores": "64"},
    {"lines": [[True, 1.0], [3, float("nan")], [3, -1.0], ["3", 1.0]]},
])
def test_hostile_speed_facts_are_dropped_or_cut_never_a_crash(hostile):
    """Each of these once reached ``for item in value.get(...)`` or a count unchecked: now a field that is not what the
    grader asked for drops the facts (they only explain a latency) or the one item, and the latency stands."""
    run = _case(status="ok", timing={"latency_us": 12.5, "target": "trn2", "facts": {**GOOD_FACTS, **hostile}})
    assert run.timing is not None and run.timing.latency_us == 12.5
    facts = run.timing.facts
    assert facts is None or (len(facts.lines) <= 5 and all(type(c.line) is int and c.us >= 0 for c in facts.lines)
                             and all(type(h.count) is int for h in facts.held))


def test_a_malformed_case_message_fails_the_run_clearly_and_the_rest_did_not_run():
    out = np.ones(2, np.float32)
    for bad in ({"index": "0"}, {"index": 5}, {"index": -1}, {"index": True}):
        result = RunResult()
        read_cases([({"kind": "case", "index": 0, "status": "ok"}, [out]), ({"kind": "case", **bad, "status": "ok"},
                                                                            [out])], 2, result)
        assert result.garbled == "a malformed case message", bad
        assert [c.status for c in result.cases] == [RunStatus.OK, RunStatus.NOT_RUN]
    result = RunResult()  # one case answered twice, or with two arrays
    read_cases([({"kind": "case", "index": 0, "status": "ok"}, [out, out])], 1, result)
    assert result.garbled and result.cases[0].status is RunStatus.NOT_RUN


def test_the_timed_latency_above_the_pipe_is_the_record_or_the_reason():
    ok = Latency(3.0, "trn2", True, None, None)
    result = RunResult(cases=[CaseRun(RunStatus.OK, timing=ok)])
    assert timed_latency(result, 0) is ok
    err = ErrorFacts("ProgramError", "refused")
    failed = timed_latency(RunResult(cases=[CaseRun(RunStatus.ERROR, error=err)]), 0)
    assert failed == Latency(error=err) and not failed.ok
    assert timed_latency(RunResult(), 3) == Latency(error=ErrorFacts("RuntimeError", "the timed run did not finish"))


def test_a_latency_record_round_trips_and_a_forged_one_is_refused():
    """Reference latencies travel as JSON (kept on disk, handed to a class run's graders, in a Gradescope bundle):
    read back field by field."""
    facts = SpeedFacts((("pe", 1.0), ("dma", 2.0)), 16, 3, 4096, 7, (CostlyLine(3, "x", 1.0),), 2,
                       (Held("sequential_order", 4, 5, 0.25),), (9,))
    lat = Latency(12.5, "trn2", True, None, facts)
    assert Latency.from_json(json.loads(json.dumps(lat.to_json()))) == lat
    assert Latency.from_json(Latency.failed("gone").to_json()) == Latency.failed("gone")
    for forged in ({}, {"latency_us": "fast"}, {"latency_us": -1.0}, {"latency_us": 2.0, "target": 5},
                   {"latency_us": 2.0, "facts": {"busy_us": 3}}, [], "x", None):
        with pytest.raises(ValueError):
            Latency.from_json(forged)
    assert dataclasses.replace(lat, facts=facts.without_code()).facts.lines == ()
