"""The course tells the NKI 0.6 story first (issue 30 scopes 1 and 3), checked on the sources without running anything:

* no code cell of a 0.6 student notebook (``assignments/*.ipynb``) and no code block of its markdown, and no code
  block of a 0.6 doc page (every page but the legacy ones: the legacy compiler's error catalogue, ``errors/``, and
  the API's legacy section, ``api/legacy/``) imports or calls ``neuronxcc``; the legacy twins
  (``assignments/legacy/``) are legacy through and through;
* ``python -m nkisim --help``, the README and the NKI 0.6 guide give the same table of how each dialect picks the
  simulator (``nkisim.activation.SWITCHES``);
* the adapter table the migration page and the API pages are rendered from names, for each 0.6 call, the registry
  entry that call's adapter really calls.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from nkisim import api
from nkisim.activation import SWITCHES
from nkisim.frontend import migration

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(`{3,}|~{3,})([^\n]*)\n(.*?)^\1\s*$", re.M | re.S)
#: doc pages written in the legacy dialect: the legacy compiler's error catalogue and the API's legacy section
LEGACY_PAGES = ("errors/", "api/legacy/")
NEURONXCC = re.compile(r"\bneuronxcc\b")


def fences(markdown: str) -> list[tuple[str, str]]:
    """(info string, body) of every fenced code block."""
    return [(m.group(2).strip(), m.group(3)) for m in FENCE.finditer(markdown)]


def code_of_notebook(path: Path) -> list[tuple[str, str]]:
    """(where, code) of every code cell and every fenced block of every markdown cell."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            found.append((f"{path.name} cell {cell.get('id')}", cell.source))
        elif cell.cell_type == "markdown":
            found += [(f"{path.name} cell {cell.get('id')} ({info or 'text'} block)", body)
                      for info, body in fences(cell.source)]
    return found


STUDENT_NOTEBOOKS = sorted((REPO / "assignments").glob("[0-9][0-9]_*.ipynb"))
DOC_PAGES = sorted(p for p in (REPO / "docs").rglob("*.md")
                   if p.name != "README.md" and "_ext" not in p.parts and "lessons" not in p.parts)


def test_no_06_notebook_or_page_imports_or_calls_neuronxcc():
    assert len(STUDENT_NOTEBOOKS) == 9
    bad = [where for nb in STUDENT_NOTEBOOKS for where, code in code_of_notebook(nb) if NEURONXCC.search(code)]
    assert bad == [], bad
    pages = [p for p in DOC_PAGES if not str(p.relative_to(REPO / "docs")).startswith(LEGACY_PAGES)]
    assert {"index.md", "nki06.md", "migration.md", "cost-model.md", "api/nisa.md"} <= \
        {str(p.relative_to(REPO / "docs")) for p in pages}
    bad = [f"{p.relative_to(REPO)} ({info or 'text'} block)" for p in pages for info, body in fences(p.read_text())
           if re.search(r"\b(import|from)\s+neuronxcc|neuronxcc\.nki\.\w+\(", body)]
    assert bad == [], bad
    # every code cell of the 0.6 notebooks that imports NKI imports NKI 0.6
    imports = [code for nb in STUDENT_NOTEBOOKS for _, code in code_of_notebook(nb) if re.search(r"^import nki", code, re.M)]
    assert len(imports) >= 9 + 17  # each lesson's set-up and each kernel stub


def test_the_legacy_twins_are_legacy():
    twins = sorted((REPO / "assignments" / "legacy").glob("[0-9][0-9]_*.ipynb"))
    assert [p.name for p in twins] == [p.name for p in STUDENT_NOTEBOOKS]
    for path in twins:
        code = [c for _, c in code_of_notebook(path)]
        assert not any(re.search(r"^import nki\b", c, re.M) for c in code), path.name
        assert any("import neuronxcc.nki as nki" in c for c in code), path.name


def switch_rows(markdown: str) -> list[tuple[str, str]]:
    return [(m.group(1).strip("`"), m.group(2)) for m in re.finditer(r"^\| (\S[^|]*?) \| (.+?) \|$", markdown, re.M)
            if m.group(1).strip("`") in {s.setting for s in SWITCHES}]


@pytest.mark.parametrize("page", ["README.md", "docs/nki06.md"])
def test_readme_help_and_docs_say_one_thing_about_forcing_the_simulator(page):
    assert switch_rows((REPO / page).read_text()) == [(s.setting, s.effect) for s in SWITCHES], page


@pytest.mark.processes
def test_the_help_gives_the_same_table():
    shown = subprocess.run([sys.executable, "-m", "nkisim", "--help"], capture_output=True, text=True, timeout=60,
                           env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"}).stdout
    flat = " ".join(shown.split())
    for s in SWITCHES:
        assert f"{s.setting} {s.effect.replace('`', '')}" in flat, s
    assert "NKI 0.6 (`import nki`" in shown or "NKI 0.6 (import nki" in flat


def _called_entries(fn) -> set[str]:
    """The registry entries an adapter's own source passes to ``call(...)`` (string literals)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "call" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.add(node.args[0].value)
    return found


def test_the_adapter_table_names_the_entry_each_adapter_calls():
    rows = api.adapters()
    assert len(rows) > 150 and len({r.name for r in rows}) == len(rows)
    checked = 0
    for row in rows:
        module = importlib.import_module(migration.MODULES[row.name.rsplit(".", 1)[0]][0])
        called = _called_entries(getattr(module, row.name.rsplit(".", 1)[1]))
        if row.entry is not None and called:
            assert row.entry in called, (row.name, row.entry, called)
            checked += 1
    assert checked > 40
    mm = next(r for r in rows if r.name == "nki.isa.nc_matmul")
    assert mm.entry == "nisa.nc_matmul" and mm.params[:3] == ("dst", "stationary", "moving")
    assert mm.changes()[0].startswith("writes into `dst`") and "no `mask=`" in " ".join(mm.changes())
    copy = next(r for r in rows if r.name == "nki.language.copy")
    assert copy.entry == "nisa.tensor_copy" and "Vector engine" in copy.note
    assert next(r for r in rows if r.name == "nki.isa.topk").changes() == ["new in NKI 0.6"]
