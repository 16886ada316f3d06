"""What a kernel's source shows, for feedback whose advice depends on it.

A hint is only given when its premise holds in the kernel it is given to: "allocate each tile inside the loop body"
told a kernel that already did so was noise.  The grader reads the student's file as text (its own copy, never
run here) with ``ast``; nothing in it is executed or imported.
"""

from __future__ import annotations

import ast

#: calls that make a tile (nl.ndarray and its shorthands), as an attribute of any module alias
ALLOCATORS = frozenset({"ndarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
                        "empty_like", "rand", "random"})
#: buffers that are not a tile on chip shared by a loop's iterations (HBM tensors; PSUM accumulators, which a
#: loop is meant to carry from one iteration to the next)
NOT_SHARED = frozenset({"shared_hbm", "hbm", "private_hbm", "psum"})
#: keyword arguments through which an instruction writes its result
DESTINATIONS = frozenset({"dst", "out"})


def _allocation(value: ast.expr) -> bool:
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ALLOCATORS):
        return False
    for kw in value.keywords:
        if kw.arg == "buffer":
            name = kw.value.attr if isinstance(kw.value, ast.Attribute) else getattr(kw.value, "id", "")
            return name not in NOT_SHARED
    return True


def _outside_loops(body: list[ast.stmt], found: dict[str, int]) -> None:
    """Tiles assigned to a plain name by an allocator in ``body`` and its ``if``/``with`` blocks, loops excluded."""
    for stmt in body:
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and _allocation(stmt.value):
            found.setdefault(stmt.targets[0].id, stmt.lineno)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and not isinstance(stmt, (ast.For, ast.While)):
                _outside_loops(inner, found)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _same_region(node: ast.expr, loop_vars: set[str]) -> str | None:
    """The tile ``node`` writes when it is the same region in every iteration of the loop (the whole tile, or a
    slice that does not move with the loop's variables); None otherwise (each iteration fills its own part)."""
    moves = False
    while isinstance(node, ast.Subscript):
        moves = moves or bool(_names(node.slice) & loop_vars)
        node = node.value
    return node.id if isinstance(node, ast.Name) and not moves else None


def _written_in_loops(fn: ast.AST) -> dict[str, bool]:
    """name -> whether a loop overwrites the same region of it in each iteration and never reads it while writing
    it (False: some write also reads it, an accumulation the loop is meant to carry)."""
    out: dict[str, bool] = {}
    for loop in (n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))):
        loop_vars = _names(loop.target) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
        for node in (n for stmt in loop.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    name = _same_region(kw.value, loop_vars) if kw.arg in DESTINATIONS else None
                    if name is not None:
                        reads = set().union(*(_names(k.value) for k in node.keywords if k.arg not in DESTINATIONS),
                                            *(_names(a) for a in node.args))
                        out[name] = out.get(name, True) and name not in reads
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    name = _same_region(t, loop_vars) if isinstance(t, ast.Subscript) else None
                    if name is not None:
                        overwrite = isinstance(node, ast.Assign) and name not in _names(node.value)
                        out[name] = out.get(name, True) and overwrite
    return out


def shared_tile_lines(source: str) -> list[int]:
    """Lines where a kernel makes an on-chip tile outside its loops that a loop then overwrites in every iteration:
    the iterations share that one buffer, so one iteration's loads wait for the last one's readers.  Tiles a loop
    accumulates into (read and written together) and PSUM tiles are not counted: carrying them is the point."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines: set[int] = set()
    for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        outside: dict[str, int] = {}
        _outside_loops(fn.body, outside)
        written = _written_in_loops(fn)
        lines |= {line for name, line in outside.items() if written.get(name)}
    return sorted(lines)
