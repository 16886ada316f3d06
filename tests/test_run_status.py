"""A case's status is read off the pipe once, into ``RunStatus`` (issue 32 scope 2): the child's word is hostile data,
so a status it names outside the four becomes an error, an "ok" without an array is a bad return, and a case it never
answered did not run.  In process: the parent's reading of the messages, no child started."""

from __future__ import annotations

import numpy as np

from nkilab.isolate.replies import RunResult, RunStatus, read_cases


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
    assert result.cases[3].error == {"type": "ValueError", "message": "x"} and result.cases[4].error is None


def test_a_status_reads_as_its_word():
    """Logs, records and the tests' own subprocesses print it: ``not_run``, never ``RunStatus.NOT_RUN``."""
    assert str(RunStatus.NOT_RUN) == "not_run" and f"{RunStatus.OK}" == "ok" and RunStatus.ERROR == "error"
