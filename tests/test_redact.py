"""nkilab.authoring.redact finds echoed reference code through a k-gram index (most lines are ruled out in a few lookups):
it must hide exactly what a plain search of every fingerprint in every line hides, written here from the rules in
``hide_reference_code``'s docstring."""

from __future__ import annotations

import random

import pytest

from nkilab.authoring import redact

PRINTS = {
    "out_tile = nl.add(a_tile, b_tile)",
    "for i in nl.affine_range(n_tiles):",
    "rows = nl.arange(128)[:, None]",
    "acc = nisa.activation(op=nl.exp, data=x_tile, bias=b, scale=1.0)",
    "nl.store(out[i * 128 + rows, cols], value=res, mask=(i * 128 + rows < n))",
    "x_sq  =  nl.square(x_tile)          # aligned comment",
    "(Vector)",
    "s = nl.sum(x_sq, axis=[1], keepdims=True)",
}
MIN = redact.MIN_FRAGMENT


def naive_span(line: str, prints: list[str]) -> tuple[int, int] | None:
    """The rules, searched fingerprint by fingerprint."""
    for fp in prints:
        if fp in line:
            return line.index(fp), line.index(fp) + len(fp)
    squeezed = " ".join(line.split())
    for fp in prints:
        if " ".join(fp.split()) in squeezed:
            return len(line) - len(line.lstrip()), len(line)
    body = line.rstrip()
    cut = body.rstrip(".\u2026 ")
    for fp in (fp for fp in prints if len(fp) > MIN):
        for at in range(len(cut)):  # cut on the right: the line ends with the start of the fingerprint
            if cut[at:].startswith(fp[:MIN]) and fp.startswith(cut[at:]):
                return at, len(body)
        for at in range(len(line)):  # cut on the left: the line starts, or goes on after "...", with its end
            if not line.startswith(fp[-MIN:], at):
                continue
            start, end = at, at + MIN
            while start > 0 and fp.endswith(line[start - 1:end]):
                start -= 1
            lead = line[:start].rstrip(" ")
            for mark in ("...", "\u2026"):
                if lead.endswith(mark):
                    return len(lead) - len(mark), end
            if not lead.strip():
                return start, end
    return None


def naive(text: str, prints: set[str]) -> tuple[str, int]:
    order = sorted(prints)  # the order hide_reference_code meets them in
    lines, hit = text.split("\n"), 0
    for k, line in enumerate(lines):
        span = naive_span(line, order)
        if span is not None:
            lines[k], hit = line[:span[0]] + redact.HIDDEN + line[span[1]:], hit + 1
    return "\n".join(lines), hit


def echoes(prints: set[str], n: int, seed: int) -> str:
    """Lines as demos print them: whole fingerprints, cut on either side, re-spaced, in table rows, and noise."""
    rng = random.Random(seed)
    ordered = sorted(prints)
    lines = []
    for _ in range(n):
        fp = rng.choice(ordered)
        a = rng.randint(0, len(fp) // 2)
        b = rng.randint(a, len(fp))
        piece = rng.choice([fp, fp, fp[a:], fp[:b], fp[a:b], "".join(rng.sample(fp, len(fp)))])
        if rng.random() < 0.3:
            piece = piece.replace(" ", "   ")
        lead = rng.choice(["", "    ", "  12 |  3.1 us | ", "...", "\u2026 ", "x = "])
        tail = rng.choice(["", "...", "\u2026", "  # note", "   "])
        lines.append(lead + piece + tail)
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(4))
def test_the_index_hides_what_searching_every_fingerprint_hides(seed: int) -> None:
    text = echoes(PRINTS, 1500, seed)
    got = redact.hide_reference_code(text, PRINTS)
    assert got == naive(text, PRINTS)
    assert got[1] > 500  # most lines echo a fingerprint, whole or cut
    assert redact.hide_reference_code("plain prose, no code\n    indented too", PRINTS) == \
        ("plain prose, no code\n    indented too", 0)


@pytest.mark.parametrize("prints", [set(), {""}, {"   "}, {"a"}, {"ab  c"}, {"abcdefghijklmnopqrstuvwxyz0123456789"}])
def test_degenerate_fingerprints_behave_as_a_plain_search(prints: set[str]) -> None:
    text = echoes(PRINTS | {"abcdefghijklmnopqrstuvwxyz0123456789"}, 300, 7)
    assert redact.hide_reference_code(text, prints) == naive(text, prints)


def test_the_index_names_every_string_a_text_holds() -> None:
    rng = random.Random(3)
    strings = ["".join(rng.choice("ab c.") for _ in range(rng.randint(1, 40))) for _ in range(200)]
    grams = redact.Grams([(s,) for s in strings])
    for _ in range(2000):
        text = "".join(rng.choice("ab c.xy") for _ in range(rng.randint(0, 80)))
        named = grams.named(text)
        assert {i for i, s in enumerate(strings) if s in text} <= named
