"""The typed records a grading run's replies become at the pipe (``nkilab.isolate.replies``), and everything above reads.

An error becomes ``ErrorFacts``, where a timed run's time went ``SpeedFacts``, a latency (an estimate, a device's
measurement, or why there is none) a ``Latency``.  They are built only from checked values, so code above the pipe
(verdicts, grade records, feedback) never looks a key up in a child's dict.  Each has a JSON form (grade records in
a notebook's outputs, a reference latency kept on disk or handed to a class run), read back field by field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

#: the engines a timed run's facts name (the cost model's own keys), in the order feedback lists them
ENGINES = ("pe", "act", "dve", "pool", "dma")
#: the cost model's mechanisms that hold instructions back, or add work the student did not write, and that feedback
#: explains (nkisim/cost/reasons.py)
HELD = ("sequential_range", "sequential_order", "inserted_transpose")


@dataclass(frozen=True)
class ErrorFacts:
    """An exception as the grader reports it: class, NKI error id, the student's line and its code, message."""

    type: str
    message: str = ""
    error_id: str | None = None
    line: int | None = None
    code: str | None = None

    @classmethod
    def from_json(cls, value: Any) -> ErrorFacts | None:
        """From ``dataclasses.asdict`` form; ``TypeError``/``ValueError`` for anything else."""
        if value is None:
            return None
        line = value.get("line")
        return cls(_s(value["type"]), _s(value.get("message") or ""),
                   _s(value["error_id"]) if value.get("error_id") else None,
                   int(line) if line is not None else None, _s(value["code"]) if value.get("code") else None)


@dataclass(frozen=True)
class CostlyLine:
    line: int
    code: str
    us: float


@dataclass(frozen=True)
class Held:
    """A compiler behaviour the cost model applied that held the kernel's instructions back (nkisim's
    ``Estimate.reasons``): at which line, how many times, and the time (µs) it held them in all."""

    mechanism: str
    line: int
    count: int
    us: float


@dataclass(frozen=True)
class SpeedFacts:
    """Where one timed run's time went (cost-model estimates): each engine's busy time (summed over the DMA queues
    and the launch's cores), the number of DMA queues and cores, DMA transfers and bytes, instructions, and the
    costliest lines of the kernel."""

    busy_us: tuple[tuple[str, float], ...]
    dma_queues: int
    dma_count: int
    dma_bytes: int
    instructions: int
    lines: tuple[CostlyLine, ...] = ()
    cores: int = 1
    held: tuple[Held, ...] = ()
    #: lines where the kernel makes a tile outside a loop that the loop overwrites in every iteration
    #: (``nkilab.kernels.premises``): the premise of the advice to allocate it in the loop body
    shared: tuple[int, ...] = ()

    def without_code(self) -> SpeedFacts:
        """These facts without the kernel's lines: a reference's lines are solution code, never shown or kept."""
        return dataclasses.replace(self, lines=(), shared=())

    def share(self, engine: str, total_us: float) -> float:
        """The fraction of the kernel's span ``engine`` was busy, on average per core (and per DMA queue)."""
        us = dict(self.busy_us).get(engine, 0.0) / max(self.cores, 1)
        if engine == "dma":
            us /= max(self.dma_queues, 1)
        return us / total_us if total_us > 0 else 0.0

    def bottleneck(self, total_us: float) -> str:
        """The engine busy the largest share of the kernel's span."""
        return max(ENGINES, key=lambda e: (self.share(e, total_us), e))

    @classmethod
    def from_json(cls, value: Any) -> SpeedFacts | None:
        """From ``dataclasses.asdict`` form; ``TypeError``/``ValueError``/``KeyError`` for anything else."""
        if value is None:
            return None
        return cls(tuple((_s(e), float(us)) for e, us in value["busy_us"]), int(value["dma_queues"]),
                   int(value["dma_count"]), int(value["dma_bytes"]), int(value["instructions"]),
                   tuple(CostlyLine(int(c["line"]), _s(c["code"]), float(c["us"])) for c in value.get("lines") or ()),
                   int(value.get("cores") or 1),
                   tuple(Held(_s(h["mechanism"]), int(h["line"]), int(h["count"]), float(h["us"]))
                         for h in value.get("held") or ()),
                   tuple(int(n) for n in value.get("shared") or ()))


@dataclass(frozen=True)
class Latency:
    """A timed run's latency on ``target`` -- the simulator's estimate (``simulator``) or a device's measurement (how
    it was taken: ``how``) -- with where its time went; or, with ``latency_us`` None, why there is none (``error``)."""

    latency_us: float | None = None
    target: str = ""
    simulator: bool = True
    how: str | None = None
    facts: SpeedFacts | None = None
    error: ErrorFacts | None = None

    @property
    def ok(self) -> bool:
        return self.latency_us is not None

    @classmethod
    def failed(cls, message: str, kind: str = "RuntimeError") -> Latency:
        """No latency, for a reason the grader states (``kind``: the class it names it by)."""
        return cls(error=ErrorFacts(kind, message))

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, value: Any) -> Latency:
        """From ``to_json``'s form; ``ValueError`` for anything that is not one (checked field by field)."""
        try:
            lat = value.get("latency_us")
            if lat is not None and (type(lat) is not float or not 0.0 < lat < 1e9):
                raise ValueError("not a latency")
            how = value.get("how")
            found = cls(lat, _s(value.get("target") or "")[:32], bool(value.get("simulator", True)),
                        _s(how) if how is not None else None, SpeedFacts.from_json(value.get("facts")),
                        ErrorFacts.from_json(value.get("error")))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise ValueError(f"not a latency record ({type(err).__name__})") from None
        if found.latency_us is None and found.error is None:
            raise ValueError("not a latency record (neither a latency nor an error)")
        return found


def _s(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value

