"""Demo outputs that echo reference code get those lines hidden: the guard between the authored lessons (which
run with the reference solutions in place) and anything published from their outputs (the course site).

A demo that profiles a kernel prints its source lines; run on the authored lesson, that kernel is the reference
solution.  Rather than trust every demo to print nothing of it, every output line is compared with the
release's fingerprints (``nkilab.release.reference_fingerprints``) and the part that is reference code is
replaced, whole lines and lines a table cut short alike.
"""

from __future__ import annotations

import copy
import re

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: what a demo output shows instead of a line of reference code it printed
HIDDEN = "[hidden: reference solution code]"
#: the shortest start (or end) of a reference line that identifies it when an output cuts the line off
MIN_FRAGMENT = 24
_ELLIPSIS = ".\u2026 "


def hide_reference_code(text: str, prints: set[str]) -> tuple[str, int]:
    """``text`` with every line of reference code it echoes replaced by ``HIDDEN``, and how many lines
    were hit.  ``prints`` are the release's fingerprints (``nkilab.release.reference_fingerprints``: the
    lines of the solution regions that no student notebook shows, trivial ones left out), so boilerplate
    the stubs share stays.  A line is hit if it holds a fingerprint, holds one with its spacing changed, or
    ends with the first ``MIN_FRAGMENT``+ characters of one (a column cut at its width, as the profiler's
    per-line table cuts its source column) or starts with the last ones, or goes on with them after an
    ellipsis (cut on the left).  Only that part of the line is replaced, so the rest of a table row (line
    number, time, engines) stays."""
    lines = text.split("\n")
    hit = 0
    prepared = _prepared(prints)
    for k, line in enumerate(lines):
        span = _reference_span(line, prepared)
        if span is not None:
            lines[k] = line[:span[0]] + HIDDEN + line[span[1]:]
            hit += 1
    return "\n".join(lines), hit


def _prepared(prints: set[str]) -> tuple[list[str], list[str], list[tuple[str, str, str]]]:
    """The fingerprints as ``_reference_span`` compares them, worked out once per text rather than once per line:
    as they are, re-spaced, and (those long enough to be recognised when cut) with their first and last
    ``MIN_FRAGMENT`` characters."""
    whole = list(prints)
    return (whole, [" ".join(fp.split()) for fp in whole],
            [(fp, fp[:MIN_FRAGMENT], fp[-MIN_FRAGMENT:]) for fp in whole if len(fp) > MIN_FRAGMENT])


def _reference_span(line: str, prepared: tuple[list[str], list[str], list[tuple[str, str, str]]]
                    ) -> tuple[int, int] | None:
    """Where in ``line`` reference code is (start, end), or None."""
    whole, respaced, cuttable = prepared
    if not line.strip():  # (half the lines of a page's text: a fingerprint is never blank)
        return None
    for fp in whole:
        at = line.find(fp)
        if at >= 0:
            return at, at + len(fp)
    squeezed = " ".join(line.split())
    for fp in respaced:
        if fp in squeezed:  # re-spaced: hide all but the indentation
            return len(line) - len(line.lstrip()), len(line)
    if len(line) < MIN_FRAGMENT:  # too short to hold the start or end of a cut one
        return None
    body = line.rstrip()
    cut = body.rstrip(_ELLIPSIS)  # the kept start of a line cut on the right, without its "..." if any
    for fp, head, tail in cuttable:  # (a shorter one cannot be cut and still recognised; whole, it was found above)
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
