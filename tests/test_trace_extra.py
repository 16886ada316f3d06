"""Every key of an instruction's ``extra`` facts is declared in ``nkisim.cost.trace.Extra`` (issue 32 scope 2).

``extra`` is how an op tells the cost model what only the op knows (a matmul's sizes, a DMA's read-modify-write...).
It stays a plain dict at run time (the trace is the executor's hot path), so nothing checks a key when it runs: a key
misspelt where an op writes it or where the cost model reads it (``"stride_byte"``) silently prices the instruction
as if the fact were absent.  This reads nkisim's source and lists every key written into or read from an ``extra``:
subscripts and ``.get``/``in`` on ``<x>.extra`` or a name ``extra``; the keys of dict literals and ``dict(...,
key=...)`` calls assigned to one or passed as ``extra=``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from nkisim.cost.trace import Extra

REPO = Path(__file__).resolve().parents[1]
#: where ops write extra facts and the cost model reads them (the front ends' ``extra`` are other things)
ROOTS = [REPO / "nkisim" / "ops", REPO / "nkisim" / "cost", REPO / "nkisim" / "runtime", REPO / "nkisim" / "program"]


def _is_extra(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "extra") or (isinstance(node, ast.Name)
                                                                            and node.id == "extra")


def _literal_keys(value: ast.AST) -> list[tuple[str, int]]:
    """The string keys of every dict literal and ``dict(..., key=...)`` call inside ``value``."""
    out = []
    for node in ast.walk(value):
        if isinstance(node, ast.Dict):
            out += [(k.value, k.lineno) for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            out += [(kw.arg, node.lineno) for kw in node.keywords if kw.arg]
    return out


def extra_keys(source: str) -> list[tuple[str, int]]:
    """(key, line) for every key ``source`` writes into or reads from an ``extra``."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _is_extra(node.value):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                found.append((node.slice.value, node.lineno))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_extra(node.func.value) \
                and node.func.attr in ("get", "setdefault", "pop") and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append((node.args[0].value, node.lineno))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn) \
                and _is_extra(node.comparators[0]) and isinstance(node.left, ast.Constant):
            found.append((node.left.value, node.lineno))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_extra(t) for t in targets):
                found += _literal_keys(node.value)
        elif isinstance(node, ast.keyword) and node.arg == "extra":
            found += _literal_keys(node.value)
    return found


def sources() -> list[Path]:
    return sorted(p for root in ROOTS for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def undeclared(paths: list[Path]) -> list[str]:
    declared = set(Extra.__annotations__)
    return sorted(f"{p.relative_to(REPO)}:{line}: {key!r}" for p in paths for key, line in extra_keys(p.read_text())
                  if key not in declared)


def test_the_scan_finds_writes_and_reads_of_every_form():
    src = ('extra = {"a": 1}\nextra: dict = {"b": 2}\nx.extra = dict(x.extra or {}, c=3)\nemit(extra={"d": 4})\n'
           'extra["e"] = 5\ny = ins.extra.get("f", 0)\nz = ins.extra["g"]\nw = "h" in ins.extra\n'
           'v = f(extra=None if q else {"i": 1})\nother = {"not_extra": 1}\n')
    assert sorted(k for k, _ in extra_keys(src)) == list("abcdefghi")


def test_an_undeclared_key_is_found(tmp_path):
    mutant = REPO / "nkisim" / "ops" / "_mutant_extra.py"  # under REPO, so it is named as the others are
    try:
        mutant.write_text('def f(ins):\n    return ins.extra.get("stride_byte", 0)\n')
        assert undeclared([mutant]) == ["nkisim/ops/_mutant_extra.py:2: 'stride_byte'"]
    finally:
        mutant.unlink()


def test_every_extra_key_in_nkisim_is_declared():
    assert undeclared(sources()) == []


def test_every_declared_key_is_written_by_an_op():
    """The other way round: a declared key no op writes is a fact the cost model waits for in vain (and the scan
    above would be vacuous if it found none)."""
    written = {k for p in (REPO / "nkisim" / "ops").rglob("*.py") for k, _ in extra_keys(p.read_text())}
    assert set(Extra.__annotations__) - written == set()
