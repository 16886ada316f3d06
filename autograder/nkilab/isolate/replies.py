"""What a grading child sends back, read once at the pipe: each message checked field by field into the records
the grader works with (``RunResult``, one ``CaseRun`` per case with its ``RunStatus``), never trusted as it came.

The child and the executor ran student code (``nkilab.isolate.runner`` starts them); every value here is hostile
until checked: a status outside the four is an error, an error is reduced to facts the parent can vouch for (a class
it knows, the student's line quoted from the parent's own copy of the file), a latency to a finite positive float,
where the time went to bounded numbers.  What comes out is typed records (``nkilab.isolate.facts``): nothing above
this module reads a child's dict.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from nkilab.isolate._execute import MESSAGE_CHARS
from nkilab.isolate.facts import ENGINES, HELD, CostlyLine, ErrorFacts, Held, Latency, SpeedFacts
from nkilab.isolate.processes import clean_text
from nkilab.kernels import premises
from nkilab.kernels.similarity import checked_features


class RunStatus(str, Enum):
    """How one case's run ended, as the parent read it off the pipe (a child's own word is never kept: a status
    it names outside these is an error)."""

    OK = "ok"
    ERROR = "error"
    BAD_RETURN = "bad_return"  # the kernel returned something other than an array (or nothing readable)
    NOT_RUN = "not_run"  # the child stopped (timed out, crashed, garbled) before this case

    def __str__(self) -> str:  # as it reads in a log or a record: "not_run"
        return self.value


@dataclass
class CaseRun:
    status: RunStatus
    output: np.ndarray | None = None
    error: ErrorFacts | None = None
    returned: str | None = None
    seconds: float = 0.0
    timing: Latency | None = None  # the timed case's latency (on the simulator), from that very launch


@dataclass
class RunResult:
    import_error: ErrorFacts | None = None
    cases: list[CaseRun] = field(default_factory=list)
    bench: Latency | None = None  # a device's measurement: nki.benchmark's (legacy) or the NEFF timed here (NKI 0.6)
    timed_out: bool = False
    crashed: bool = False
    garbled: str | None = None  # the results stream was malformed (a forged or interleaved write)
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    sandboxed: bool = False
    #: the fingerprints of the program the executor parsed and validated for the timed case (else the first):
    #: ``nkilab.kernels.similarity``, checked when they arrived
    program: tuple[int, ...] | None = None


def read_cases(messages: list[tuple[dict, list[np.ndarray]]], n_cases: int, result: RunResult,
               source: list[str] | None = None) -> bool:
    """Fill ``result`` from the child's messages (checked, never trusted); True when it said ``done``."""
    done = False
    runs: dict[int, CaseRun] = {}
    for head, arrays in messages:
        kind = head.get("kind")
        if kind == "import" and head.get("status") == "error":
            result.import_error = reported_error(head.get("error"), source)
        elif kind == "case":
            i = head.get("index")
            if type(i) is not int or not 0 <= i < n_cases or i in runs or len(arrays) > 1:
                result.garbled = "a malformed case message"
                break
            said = head.get("status")
            status = RunStatus(said) if said in ("ok", "error", "bad_return") else RunStatus.ERROR
            error = None
            if said == "error":
                error = reported_error(head.get("error"), source)
            elif status is RunStatus.ERROR:  # a word outside the four: the report, not the kernel, is wrong
                error = ErrorFacts(UNNAMED, "the run's report named no status the grader knows")
            run = CaseRun(status, error=error,
                          returned=_text(head.get("returned"), 40) if status is RunStatus.BAD_RETURN else None,
                          seconds=_seconds(head.get("seconds")), timing=_timing(head.get("timing"), source))
            if status is RunStatus.OK:
                if arrays:
                    run.output = arrays[0]
                else:
                    run.status, run.returned = RunStatus.BAD_RETURN, "nothing readable"
            runs[i] = run
            if "program" in head and result.program is None:
                result.program = checked_features(head.get("program"))
        elif kind == "bench":
            result.bench = _bench(head)
        elif kind == "done":
            done = True
    result.cases = [runs.get(i, CaseRun(RunStatus.NOT_RUN)) for i in range(n_cases)]
    return done


def error_facts(value: object, source: list[str] | None) -> ErrorFacts | None:
    """A child's error report reduced to facts the parent can vouch for: the exception's class name, the NKI
    error id and the message (cleaned), and the line -- shown with the code at that line of the student's file
    as the parent holds it (``source``), never read from anywhere the child names.  A line outside the file is
    dropped, and so is any file name.  None when the report is not a dict at all."""
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    error_id = value.get("error_id")
    line = value.get("line")
    shown: tuple[int | None, str | None] = (None, None)
    if source is not None and type(line) is int and 0 < line <= len(source):
        shown = line, source[line - 1].strip()[:160]
    return ErrorFacts(kind if isinstance(kind, str) and kind in reported_errors() else UNNAMED,
                      _text(value.get("message"), MESSAGE_CHARS),
                      error_id[:80] if isinstance(error_id, str) and _IDENTIFIER.fullmatch(error_id[:80]) else None,
                      *shown)


def reported_error(value: object, source: list[str] | None) -> ErrorFacts:
    """``error_facts`` for a message that said it failed: a report that is not one still fails the case, by a name
    the grader gives it."""
    return error_facts(value, source) or ErrorFacts(UNNAMED, "the error report was unreadable")


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")

#: how an error is named when its class is not one the grader knows: a class the kernel defined (``type("...",
#: (Exception,), {})``) is named by the kernel, which could spell a hidden case's shape into feedback with it
UNNAMED = "an exception"


@functools.cache
def reported_errors() -> frozenset[str]:
    """The exception classes a report may name: Python's built-in ones and the simulator's (NKI's errors)."""
    import builtins

    import nkisim.api

    own = {name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)}
    return frozenset(own) | nkisim.api.error_class_names()


def _seconds(value: object) -> float:
    """A case's run time in seconds (a log's figure, never graded): a number in range, else 0 (a bool is no time)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value) if 0 <= value < 1e6 else 0.0


def _timing(value: object, source: list[str] | None = None) -> Latency | None:
    """The timed case's latency as the executor reported it: a positive finite float, its target's name."""
    if not isinstance(value, dict):
        return None
    lat = value.get("latency_us")
    if type(lat) is not float or not 0.0 < lat < 1e9:
        return Latency.failed("no latency was reported")
    return Latency(lat, _text(value.get("target"), 16), True, None, speed_facts(value.get("facts"), source))


def speed_facts(value: object, source: list[str] | None = None) -> SpeedFacts | None:
    """Where a timed run's time went, as the executor reported it, reduced to checked numbers (or None); each
    costly line is quoted from the parent's own copy of the student's file (``source``), if it has that line."""
    if not isinstance(value, dict):
        return None

    def num(x: object) -> float | None:
        return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1e12 else None

    busy = value.get("busy_us")
    counts: list[Any] = [value.get(k) for k in ("dma_queues", "dma_count", "dma_bytes", "instructions", "cores")]
    if not isinstance(busy, dict) or not all(type(c) is int and 0 <= c < 10**15 for c in counts):
        return None
    lines: list[CostlyLine] = []
    for item in _items(value.get("lines")):
        if isinstance(item, list) and len(item) == 2 and type(item[0]) is int and (us := num(item[1])) is not None:
            code = source[item[0] - 1].strip()[:120] if source is not None and 0 < item[0] <= len(source) else ""
            lines.append(CostlyLine(item[0], code, us))
    held: list[Held] = []
    for item in _items(value.get("held")):  # the model's mechanisms that held instructions back (a fixed list)
        if isinstance(item, list) and len(item) == 4 and item[0] in HELD and type(item[1]) is int and \
                type(item[2]) is int and 0 <= item[2] < 10**12 and (us := num(item[3])) is not None:
            held.append(Held(item[0], item[1], item[2], us))
    q, n, b, ins, cores = counts
    shared = premises.shared_tile_lines("".join(source)) if source is not None else []  # the parent's own copy
    return SpeedFacts(tuple((e, num(busy.get(e)) or 0.0) for e in ENGINES), max(q, 1), n, b, ins, tuple(lines[:5]),
                      max(min(cores, 64), 1), tuple(held[:5]), tuple(shared[:5]))


def _text(value: object, limit: int) -> str:
    """A string field, cleaned and capped (``clean_text``); anything that is not a string is no text."""
    return clean_text(value, limit) if isinstance(value, str) else ""


def _items(value: object) -> list:
    """A list the report should hold, or nothing: whatever else it holds is dropped, never iterated."""
    return value[:64] if isinstance(value, list) else []


def _bench(head: dict) -> Latency:
    """A device's benchmark message, reduced to what evaluate reads."""
    lat = head.get("latency_us")
    if head.get("status") == "ok" and isinstance(lat, float) and 0.0 < lat < 1e9:
        return Latency(lat, _text(head.get("target"), 16), simulator=False)
    return Latency(error=error_facts(head.get("error"), None) or ErrorFacts("RuntimeError", "no benchmark"))
