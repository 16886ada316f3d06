"""Demo outputs that echo reference code get those lines hidden: the guard between the authored lessons (which
run with the reference solutions in place) and anything published from their outputs (the course site).

A demo that profiles a kernel prints its source lines; run on the authored lesson, that kernel is the reference
solution.  Rather than trust every demo to print nothing of it, every output line is compared with the
release's fingerprints (``nkilab.authoring.release.reference_fingerprints``) and the part that is reference code is
replaced, whole lines and lines a table cut short alike.
"""

from __future__ import annotations

import copy
import functools
import re

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: what a demo output shows instead of a line of reference code it printed
HIDDEN = "[hidden: reference solution code]"
#: the shortest start (or end) of a reference line that identifies it when an output cuts the line off
MIN_FRAGMENT = 24
_ELLIPSIS = ".\u2026 "
_SPACES = re.compile(r"\s{2,}")


def hide_reference_code(text: str, prints: set[str]) -> tuple[str, int]:
    """``text`` with every line of reference code it echoes replaced by ``HIDDEN``, and how many lines
    were hit.  ``prints`` are the release's fingerprints (``nkilab.authoring.release.reference_fingerprints``: the
    lines of the solution regions that no student notebook shows, trivial ones left out), so boilerplate
    the stubs share stays.  A line is hit if it holds a fingerprint, holds one with its spacing changed, or
    ends with the first ``MIN_FRAGMENT``+ characters of one (a column cut at its width, as the profiler's
    per-line table cuts its source column) or starts with the last ones, or goes on with them after an
    ellipsis (cut on the left).  Only that part of the line is replaced, so the rest of a table row (line
    number, time, engines) stays."""
    lines = text.split("\n")
    hit = 0
    prepared = _prepared(frozenset(prints))
    for k, line in enumerate(lines):
        span = _reference_span(line, prepared)
        if span is not None:
            lines[k] = line[:span[0]] + HIDDEN + line[span[1]:]
            hit += 1
    return "\n".join(lines), hit


@functools.lru_cache(maxsize=4)
def _prepared(prints: frozenset[str]) -> _Prepared:
    """The index of ``prints``, built once: a docs build scrubs hundreds of demo outputs with the same fingerprints,
    and building it (~7 ms) would otherwise cost more than searching a short output."""
    return _Prepared(prints)


class _Prepared:
    """The fingerprints as ``_reference_span`` compares them, worked out once per text rather than once per line:
    as they are, re-spaced, and (those long enough to be recognised when cut) with their first and last
    ``MIN_FRAGMENT`` characters; and for each form an index naming the few fingerprints a line may hold (most lines
    hold none: a page has thousands of lines and the release hundreds of fingerprints)."""

    def __init__(self, prints: set[str] | frozenset[str]) -> None:
        self.whole = sorted(prints)  # one order in every process (a set's follows the hash seed)
        self.respaced = [" ".join(fp.split()) for fp in self.whole]
        # a line holding a fingerprint holds its head too; one cut on either side holds its head or its tail
        self.pieces = Grams([(fp,) if len(fp) <= MIN_FRAGMENT else (fp[:MIN_FRAGMENT], fp[-MIN_FRAGMENT:])
                              for fp in self.whole])
        self.spaced = Grams([(fp,) for fp in self.respaced])


class Grams:
    """Which of some strings a text may hold, by k-grams: a string of length m >= 2k - 1 found in a text covers a
    text position that is a multiple of k and the k characters from it, which are one of the string's k-grams
    starting at offsets 0..k-1.  So those k-grams name their string in a table (one per k, chosen from each
    string's length, up to 8), and a text is looked up at every k-th position only: a few lookups per line instead
    of a search per string.  Each string is indexed by its longest piece between runs of spaces (a text holding a
    string holds each of its pieces), so that indentation and aligned columns, which most lines have, name
    nothing.  A string named may still be absent (the exact search decides); one not named is certainly absent."""

    def __init__(self, forms: list[tuple[str, ...]]) -> None:
        self.every: set[int] = set()  # strings with an empty piece: in every text
        self.grams: dict[int, dict[str, set[int]]] = {}
        for i, texts in enumerate(forms):
            for text in texts:
                piece = max(_SPACES.split(text.strip()), key=len)
                if not piece:
                    self.every.add(i)
                    continue
                k = min(8, (len(piece) + 1) // 2)
                table = self.grams.setdefault(k, {})
                for at in range(k):
                    table.setdefault(piece[at:at + k], set()).add(i)

    def named(self, text: str) -> set[int]:
        """The indexes of the strings ``text`` may hold."""
        found = set(self.every)
        for k, table in self.grams.items():
            for j in range(0, len(text) - k + 1, k):
                hit = table.get(text[j:j + k])
                if hit:
                    found |= hit
        return found


def _reference_span(line: str, prepared: _Prepared) -> tuple[int, int] | None:
    """Where in ``line`` reference code is (start, end), or None."""
    squeezed = " ".join(line.split())
    maybe, maybe_spaced = prepared.pieces.named(line), prepared.spaced.named(squeezed)
    if not maybe and not maybe_spaced:
        return None
    whole = prepared.whole
    candidates = [whole[i] for i in sorted(maybe)]  # in the fingerprints' order, as a search of them all would meet them
    for fp in candidates:
        at = line.find(fp)
        if at >= 0:
            return at, at + len(fp)
    for i in sorted(maybe_spaced):
        if prepared.respaced[i] in squeezed:  # re-spaced: hide all but the indentation
            return len(line) - len(line.lstrip()), len(line)
    body = line.rstrip()
    cut = body.rstrip(_ELLIPSIS)  # the kept start of a line cut on the right, without its "..." if any
    for fp in candidates:
        if len(fp) <= MIN_FRAGMENT:  # too short to be recognised when cut; whole, it was found above
            continue
        head, tail = fp[:MIN_FRAGMENT], fp[-MIN_FRAGMENT:]
        at = cut.find(head)
        while at >= 0:  # cut on the right: the line ends with the start of the reference line
            if fp.startswith(cut[at:]):
                return at, len(body)
            at = cut.find(head, at + 1)
        at = line.find(tail)
        while at >= 0:  # cut on the left: the line starts (or goes on after "...") with its end
            start, end = at, at + MIN_FRAGMENT
            while start > 0 and fp.endswith(line[start - 1:end]):
                start -= 1
            lead = line[:start].rstrip(" ")
            for mark in ("...", "\u2026"):
                if lead.endswith(mark):
                    return len(lead) - len(mark), end
            if not lead.strip():
                return start, end
            at = line.find(tail, at + 1)
    return None


def scrub_outputs(outputs: list, prints: set[str]) -> tuple[list, int]:
    """A copy of a cell's outputs with ``hide_reference_code`` applied to all their text (printed text,
    text results, error messages and tracebacks, ANSI colours removed), and how many lines it hid."""
    outputs = copy.deepcopy(outputs)
    hidden = 0

    def scrub(text: str) -> str:
        nonlocal hidden
        text, n = hide_reference_code(ANSI.sub("", text), prints)
        hidden += n
        return text

    for out in outputs:
        if "text" in out:
            out["text"] = scrub(out["text"])
        for mime, value in out.get("data", {}).items():
            if mime.startswith("text/") and isinstance(value, str):
                out["data"][mime] = scrub(value)
        if "evalue" in out:
            out["evalue"] = scrub(out["evalue"])
        if "traceback" in out:
            out["traceback"] = [scrub(t) for t in out["traceback"]]
    return outputs, hidden
