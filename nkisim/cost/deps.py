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
    """Boxes of one rank overlap when every dimension's ranges do; boxes of different ranks (an alias compared with
    its root, an empty pseudo-region) always do.  A plain loop: the scheduler asks this for every candidate entry
    of every access, and a generator under ``all`` costs several times more per call."""
    if len(a) != len(b):
        return True
    for (alo, ahi), (blo, bhi) in zip(a, b):
        if alo >= bhi or blo >= ahi:
            return False
    return True


def covers(a: Box, b: Box) -> bool:
    """True when box ``a`` contains box ``b``."""
    if len(a) != len(b):
        return False
    for (alo, ahi), (blo, bhi) in zip(a, b):
        if alo > blo or bhi > ahi:
            return False
    return True


class Entry:
    """Last writer (finish time, engine) of a box and the latest finish of each reader engine since."""

    __slots__ = ("box", "w_end", "w_eng", "readers")

    def __init__(self, box: Box, w_end: float, w_eng: str) -> None:
        self.box, self.w_end, self.w_eng = box, w_end, w_eng
        self.readers: dict[str, float] = {}


class Table:
    """Entries of one physical buffer (or HBM tensor view), bucketed by first-dimension range."""

    __slots__ = ("entries", "buckets", "wide", "width", "memo")

    def __init__(self, first: Box) -> None:
        self.entries: dict[Box, Entry] = {}
        self.buckets: dict[int, dict[Box, None]] = {}
        self.wide: dict[Box, None] = {}
        self.width = max(1, first[0][1] - first[0][0]) if first else 1
        #: ``candidates`` of the boxes asked since the entries last changed: an instruction asks for its regions'
        #: ready times, then records them, and only an added or removed entry changes which ones overlap a box
        #: (a reader's finish time changes an entry, not the set)
        self.memo: dict[Box, list[Entry]] = {}

    def overlapping(self, box: Box) -> list[Entry]:
        """``candidates``, remembered until an entry is added or removed."""
        hit = self.memo.get(box)
        if hit is None:
            hit = self.memo[box] = self.candidates(box)
        return hit

    def _span(self, box: Box) -> range | None:
        if not box:
            return None
        lo, hi = box[0][0] // self.width, (max(box[0][1], box[0][0] + 1) - 1) // self.width
        return range(lo, hi + 1) if hi - lo < _MAX_BUCKETS else None

    def candidates(self, box: Box) -> list[Entry]:
        """The entries whose box overlaps ``box`` (each once; the callers take maxima and sets over them, so their
        order does not matter)."""
        entries = self.entries
        if box:
            first = box[0]
            lo = first[0] // self.width
            hi = (max(first[1], first[0] + 1) - 1) // self.width
            if lo == hi and not self.wide:  # the common case: one bucket, no wide entry, nothing to merge
                bucket = self.buckets.get(lo)
                if not bucket:
                    return []
                if len(box) == 2:  # overlaps() written out for the usual (partitions, elements) box
                    (p0, p1), (f0, f1) = box
                    return [entries[k] for k in bucket if len(k) != 2 or (
                        k[0][0] < p1 and p0 < k[0][1] and k[1][0] < f1 and f0 < k[1][1])]
                return [entries[k] for k in bucket if overlaps(k, box)]
            if hi - lo < _MAX_BUCKETS:
                seen: dict[Box, None] = dict(self.wide)
                for b in range(lo, hi + 1):
                    bucket = self.buckets.get(b)
                    if bucket:
                        seen.update(bucket)
                return [entries[k] for k in seen if overlaps(k, box)]
        return [e for e in entries.values() if overlaps(e.box, box)]

    def add(self, entry: Entry) -> None:
        self.memo.clear()
        self.entries[entry.box] = entry
        span = self._span(entry.box)
        if span is None:
            self.wide[entry.box] = None
        else:
            for b in span:
                self.buckets.setdefault(b, {})[entry.box] = None

    def remove(self, box: Box) -> None:
        self.memo.clear()
        del self.entries[box]
        span = self._span(box)
        if span is None:
            self.wide.pop(box, None)
        else:
            for b in span:
                self.buckets[b].pop(box, None)


class _Waits(dict):
    """``sync``'s wait before an access on one engine after an earlier one on each other engine (source engine ->
    ns), asked once per pair: the scoreboard asks it for every overlapping entry of every access."""

    def __init__(self, sync: Any, engine: str, war: bool) -> None:
        super().__init__()
        self.sync, self.engine, self.war = sync, engine, war

    def __missing__(self, src: str) -> float:
        v = self[src] = self.sync(src, self.engine, True) if self.war else self.sync(src, self.engine)
        return v


class Scoreboard:
    """Ready times from data dependencies.  ``sync(a, b)`` gives the wait added between engines."""

    def __init__(self, sync: Any) -> None:
        self.tables: dict[Any, Table] = {}
        self.sync = sync
        self._raw: dict[str, _Waits] = {}
        self._war: dict[str, _Waits] = {}

    def ready(self, key: Any, box: Box, engine: str, write: bool) -> float:
        """Earliest start allowed by earlier accesses: RAW always, plus WAR and WAW for a write."""
        table = self.tables.get(key)
        if table is None:
            return 0.0
        t = 0.0
        raw = self._raw.get(engine)
        if raw is None:
            raw = self._raw[engine] = _Waits(self.sync, engine, False)
        cands = table.memo.get(box)
        if cands is None:
            cands = table.memo[box] = table.candidates(box)
        if not write:
            for e in cands:
                if e.w_eng:
                    v = e.w_end + raw[e.w_eng]
                    if v > t:
                        t = v
            return t
        war = self._war.get(engine)
        if war is None:
            war = self._war[engine] = _Waits(self.sync, engine, True)
        for e in cands:
            if e.w_eng:
                v = e.w_end + raw[e.w_eng]
                if v > t:
                    t = v
            for r_eng, r_end in e.readers.items():
                v = r_end + war[r_eng]
                if v > t:
                    t = v
        return t

    def record(self, key: Any, box: Box, engine: str, end: float, write: bool) -> None:
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = Table(box)
        if write:
            same = False  # an entry of this very box: the new one takes its place, in the same buckets
            for e in table.overlapping(box):
                if e.box == box:
                    same = True
                elif covers(box, e.box):
                    table.remove(e.box)
            if same:
                table.memo.clear()
                table.entries[box] = Entry(box, end, engine)
            else:
                table.add(Entry(box, end, engine))
            return
        hit = table.entries.get(box)
        if hit is None:
            cands = table.overlapping(box)
            if not cands:  # read of never-written data (e.g. an uninitialised tile)
                e = Entry(box, 0.0, "")
                table.add(e)
                cands = [e]
        else:
            cands = [hit]
        for c in cands:
            readers = c.readers
            if readers.get(engine, -1.0) < end:
                readers[engine] = end
