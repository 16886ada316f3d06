"""Stand-in for nki-library's unpublished ``test/utils/scripts/remote_lock_scripts.py`` (locking NeuronCores on
remote hosts): the two record types its harness imports.  Simulation mode never locks a host, so nothing here is
called; the exit codes are this stand-in's own."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any


class LockStatus(enum.Enum):
    ALLOCATED = 0
    RELEASED = 1
    DRAINING = 2
    DRAINED = 3
    UNDRAINED = 4
    NO_CORES = 5
    FLOCK_TIMEOUT = 6
    ERROR = 7

    @property
    def exit_code(self) -> int:
        return int(self.value)

    @classmethod
    def from_exit_code(cls, code: int) -> LockStatus:
        return next((m for m in cls if m.value == code), cls.ERROR)


@dataclass
class LockResult:
    status: LockStatus
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str) -> LockResult:
        data = json.loads(text)
        return cls(status=LockStatus[data.pop("status")], data=data)
