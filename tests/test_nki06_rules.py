"""Issue 29 scopes 1 and 6: every refusal of the NKI 0.6 front end has a table entry with its source.

``nkisim/frontend/v06/rules.py`` is the table; every ``raise`` under ``nkisim/frontend/v06`` names a rule of it in a
``# rule:`` comment.  Here: a raise without one, or naming a rule the table lacks, fails; every rule is raised (or
warned) somewhere; documented rules cite a line of AWS's docs, checked against the docs source where its mirror is
on the machine; version rules say in their message which NKI release dropped the feature; and
``docs/nki06-refusals.md`` is the table as the code renders it now.
"""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

from nkisim.frontend.v06 import rules

ROOT = Path(__file__).resolve().parent.parent
MIRROR = os.environ.get("NKILAB_AWS_SDK_MIRROR", "/work/.mirror/aws-neuron+aws-neuron-sdk/repo")


def test_every_raise_names_a_rule_of_the_table() -> None:
    missing = [f"{s.path}:{s.line} ({s.function})" for s in rules.sites() if s.key not in rules.BY_KEY]
    assert not missing, f"raises with no '# rule: <key>' naming a rule of nkisim/frontend/v06/rules.py: {missing}"


def test_the_check_sees_an_unannotated_raise(tmp_path: Path) -> None:
    """The scan is not vacuous: a raise added without a rule comment is reported."""
    pkg = tmp_path / "nkisim" / "frontend" / "v06"
    pkg.mkdir(parents=True)
    (pkg / "extra.py").write_text("def f(x):\n    if x:\n        raise ValueError('no')\n    # rule: view.bounds\n"
                                  "    raise IndexError('yes')\n", encoding="utf-8")
    found = [(s.path, s.line, s.key) for s in rules.sites(str(pkg))]
    assert found == [("nkisim/frontend/v06/extra.py", 3, ""), ("nkisim/frontend/v06/extra.py", 5, "view.bounds")]


def test_every_rule_is_raised_or_warned_somewhere() -> None:
    used = {s.key for s in rules.sites()}
    assert not [r.key for r in rules.RULES if r.key not in used]


def test_each_kind_carries_what_it_needs() -> None:
    for r in rules.RULES:
        assert r.kind in rules.KINDS, r
        if r.kind in ("documented", "version", "warning"):
            assert r.source is not None and r.source.line > 0 and r.source.quote, r.key
        else:
            assert r.source is None, r.key
        if r.kind == "version":
            assert r.dropped_in.startswith("NKI 0.") and r.replacement, r.key
    assert len(rules.BY_KEY) == len(rules.RULES)


def _raise_text(path: Path, line: int) -> str:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.Raise) and n.lineno == line)
    return " ".join(c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str))


def test_version_refusals_say_which_release_dropped_the_feature() -> None:
    """The words ``bench/conformance.py --nkilib`` counts version differences by (``nkilib_suite.VERSION_DIFFERENCE``)."""
    import re

    pattern = re.compile(r"NKI \d+\.\d+ dropped")
    for s in rules.sites():
        r = rules.BY_KEY[s.key]
        if r.kind == "version":
            text = _raise_text(ROOT / s.path, s.line)
            assert pattern.search(text) and r.dropped_in in text, (s, text)


@pytest.mark.processes  # git show, on the local mirror of AWS's docs source
def test_documented_sources_quote_aws_docs_at_the_line_they_cite() -> None:
    if not os.path.isdir(MIRROR):
        pytest.skip(f"no local mirror of aws-neuron-sdk at {MIRROR}")
    cache: dict[str, list[str]] = {}
    wrong = []
    for r in rules.RULES:
        if r.source is None:
            continue
        if r.source.path not in cache:
            text = subprocess.run(["git", "-C", MIRROR, "show", f"HEAD:{r.source.path}"], capture_output=True,
                                  text=True, check=True).stdout
            cache[r.source.path] = text.split("\n")
        lines = cache[r.source.path]
        near = " ".join(lines[max(0, r.source.line - 3):r.source.line + 2])
        if " ".join(r.source.quote.split()) not in " ".join(near.split()):
            wrong.append(f"{r.key}: {r.source}")
    assert not wrong, wrong


def test_the_docs_page_is_the_table_the_code_renders() -> None:
    page = ROOT / "docs" / "nki06-refusals.md"
    assert page.read_text(encoding="utf-8") == rules.markdown(), \
        "regenerate: python -m nkisim.frontend.v06.rules > docs/nki06-refusals.md"
