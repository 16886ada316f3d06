"""Scoreboard of tensor regions: who last wrote a box and who read it since (RAW/WAR/WAW).

Regions are indexed by physical buffer key and bucketed on their first dimension, so a kernel that
touches thousands of distinct tiles of one tensor stays O(n) instead of comparing every pair.
A write that covers an older entry replaces it: anything later must wait for the new write anyway.
"""

from __future__ import annotations

from typing import Any

Box = tuple[tuple[int, int], ...]
_MAX_BUCKETS = 64


def overlaps(a: Box, b: Box) -> bool:
    return len(a) != len(b) or all(alo < bhi and blo < ahi for (alo, ahi), (blo, bhi) in zip(a, b))


def covers(a: Box, b: Box) -> bool:
    """True when box ``a`` contains box ``b``."""
    return len(a) == len(b) and all(alo <= blo and bhi <= ahi for (alo, ahi), (blo, bhi) in zip(a, b))


class Entry:
    """Last writer (finish time, engine) of a box and the latest finish of each reader engine since."""

    __slots__ = ("box", "w_end", "w_eng", "readers")

    def __init__(self, box: Box, w_end: float, w_eng: str) -> None:
        self.box, self.w_end, self.w_eng = box, w_end, w_eng
        self.readers: dict[str, float] = {}


class Table:
    """Entries of one physical buffer (or HBM tensor view), bucketed by first-dimension range."""

    __slots__ = ("entries", "buckets", "wide", "width")

    def __init__(self, first: Box) -> None:
        self.entries: dict[Box, Entry] = {}
        self.buckets: dict[int, dict[Box, None]] = {}
        self.wide: dict[Box, None] = {}
        self.width = max(1, first[0][1] - first[0][0]) if first else 1

    def _span(self, box: Box) -> range | None:
        if not box:
            return None
        lo, hi = box[0][0] // self.width, (max(box[0][1], box[0][0] + 1) - 1) // self.width
        return range(lo, hi + 1) if hi - lo < _MAX_BUCKETS else None

    def candidates(self, box: Box) -> list[Entry]:
        span = self._span(box)
        if span is None:
            return [e for e in self.entries.values() if overlaps(e.box, box)]
        seen: dict[Box, None] = dict(self.wide)
        for b in span:
            bucket = self.buckets.get(b)
            if bucket:
                seen.update(bucket)
        return [self.entries[k] for k in seen if overlaps(k, box)]

    def add(self, entry: Entry) -> None:
        self.entries[entry.box] = entry
        span = self._span(entry.box)
        if span is None:
            self.wide[entry.box] = None
        else:
            for b in span:
                self.buckets.setdefault(b, {})[entry.box] = None

    def remove(self, box: Box) -> None:
        del self.entries[box]
        span = self._span(box)
        if span is None:
            self.wide.pop(box, None)
        else:
            for b in span:
                self.buckets[b].pop(box, None)


class Scoreboard:
    """Ready times from data dependencies.  ``sync(a, b)`` gives the wait added between engines."""

    def __init__(self, sync: Any) -> None:
        self.tables: dict[Any, Table] = {}
        self.sync = sync

    def ready(self, key: Any, box: Box, engine: str, write: bool) -> float:
        """Earliest start allowed by earlier accesses: RAW always, plus WAR and WAW for a write."""
        table = self.tables.get(key)
        if table is None:
            return 0.0
        t = 0.0
        for e in table.candidates(box):
            if e.w_eng:
                t = max(t, e.w_end + self.sync(e.w_eng, engine))
            if write:
                for r_eng, r_end in e.readers.items():
                    t = max(t, r_end + self.sync(r_eng, engine, war=True))
        return t

    def record(self, key: Any, box: Box, engine: str, end: float, write: bool) -> None:
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = Table(box)
        if write:
            for e in table.candidates(box):
                if covers(box, e.box):
                    table.remove(e.box)
            table.add(Entry(box, end, engine))
            return
        e = table.entries.get(box)
        if e is None:
            cands = table.candidates(box)
            if not cands:  # read of never-written data (e.g. an uninitialised tile)
                e = Entry(box, 0.0, "")
                table.add(e)
                cands = [e]
        else:
            cands = [e]
        for c in cands:
            if c.readers.get(engine, -1.0) < end:
                c.readers[engine] = end
