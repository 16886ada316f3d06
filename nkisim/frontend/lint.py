"""Source checks of a kernel file for what the legacy compiler accepts but leaves undefined.

Today one: an ``if`` (``while``, ``x if c else y``, ``assert``) inside an ``nl.affine_range`` loop whose test reads
that loop's variable.  The simulator warns when such a branch runs (``core.indexing.branch_on_affine_loop``), but a
tool that runs kernels in another process with warnings off (the course's ``check()``) reads the file instead.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nkisim.core.indexing import AFFINE_BRANCH_ADVICE

__all__ = ["AFFINE_BRANCH_ADVICE", "AffineBranch", "affine_branches"]


@dataclass(frozen=True)
class AffineBranch:
    """A branch on an ``nl.affine_range`` loop variable: its line, the line's code, and the variable."""

    line: int
    code: str
    variable: str


def _is_affine_range(call: ast.expr) -> bool:
    if not isinstance(call, ast.Call):
        return False
    fn = call.func
    return (isinstance(fn, ast.Attribute) and fn.attr == "affine_range") or \
        (isinstance(fn, ast.Name) and fn.id == "affine_range")


def affine_branches(source: str, first_line: int = 1) -> list[AffineBranch]:
    """Every branch in ``source`` (a module or a function; its first line is line ``first_line``) whose test
    reads the variable of an ``nl.affine_range`` loop it sits in, in line order; none if it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    found: dict[int, AffineBranch] = {}
    for loop in ast.walk(tree):
        if not (isinstance(loop, ast.For) and _is_affine_range(loop.iter) and isinstance(loop.target, ast.Name)):
            continue
        name = loop.target.id
        for node in (n for stmt in loop.body for n in ast.walk(stmt)):
            test = getattr(node, "test", None) if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) \
                else None
            if test is not None and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(test)):
                code = lines[node.lineno - 1].strip() if node.lineno <= len(lines) else ""
                found.setdefault(node.lineno, AffineBranch(node.lineno + first_line - 1, code, name))
    return [found[k] for k in sorted(found)]
