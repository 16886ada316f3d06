"""No import cycle in nkilab, imports inside functions included.

``lint-imports`` (pyproject.toml) keeps the sub-packages in their order, but a layers contract says nothing about
two modules of one layer importing each other, and a cycle closed by a function-level import is still a cycle: the
two modules cannot be read, tested or moved apart.  This reads every module's source with ``ast`` (every ``import``
and ``from ... import`` anywhere in it, except under ``if TYPE_CHECKING:``, which never runs) and looks for strongly
connected components in the resulting graph, so the test needs no import of the code it checks.

nkisim is checked the same way (issue 32's nkisim half removed its two cycles: the op registry importing the
catalog of every op module, and the 0.6 adapters binding / control / tensor).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"nkilab": REPO / "autograder" / "nkilab", "nkisim": REPO / "nkisim"}


def modules(package: str, root: Path | None = None) -> dict[str, Path]:
    """Every module of ``package`` (in ``root``, by default the repository's) by dotted name (a package by its own
    name, for its ``__init__.py``)."""
    root = root or PACKAGES[package]
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that ``name`` imports anywhere in its source (functions included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def target(module: str) -> None:
        while module and module not in known:  # `import a.b.c` of a name defined in a.b: the module a.b
            module = module.rpartition(".")[0]
        if module and module != name:
            found.add(module)

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                target(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target(sub if sub in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


def cycles(package: str, root: Path | None = None) -> list[list[str]]:
    """The import cycles of ``package``: each strongly connected component of more than one module (Tarjan)."""
    known = modules(package, root)
    graph = {name: sorted(imported(name, path, known)) for name, path in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:  # recursive: the graphs here are a few hundred modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            connect(v)
    return sorted(out)


def test_the_graph_sees_imports_inside_functions():
    """The reader is what the cycle tests rest on: it must find a function-level import (runner imports _child
    only inside functions) and a ``from package import module``, and skip ``if TYPE_CHECKING:``."""
    known = modules("nkilab")
    runner = imported("nkilab.isolate.runner", known["nkilab.isolate.runner"], known)
    assert {"nkilab.isolate._child", "nkilab.isolate._execute", "nkilab.isolate.sandbox"} <= runner
    assert imported("nkilab", known["nkilab"], known) == set()  # its imports are all under TYPE_CHECKING


def test_a_function_level_import_that_closes_a_cycle_is_found(tmp_path):
    """The mutant: the manifest reaching back into the registry that reads it, from inside a function."""
    root = tmp_path / "nkilab"
    shutil.copytree(PACKAGES["nkilab"], root, ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "course" / "manifest.py", "a") as fh:
        fh.write("\n\ndef _peek():\n    from nkilab.course import questions\n    return questions\n")
    assert cycles("nkilab", root) == [["nkilab.course.manifest", "nkilab.course.questions"]]


def test_nkilab_has_no_import_cycle():
    assert cycles("nkilab") == []


def test_nkisim_has_no_import_cycle():
    assert cycles("nkisim") == []


def test_the_registry_reaching_back_into_the_catalog_is_a_cycle(tmp_path):
    """The mutant of the cycle issue 32 removed: the registry importing the catalog (which imports every op module,
    each importing the registry) from inside a function, as ``registry.namespace`` did."""
    root = tmp_path / "nkisim"
    shutil.copytree(PACKAGES["nkisim"], root, ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "ops" / "registry.py", "a") as fh:
        fh.write("\n\ndef _every_op():\n    from nkisim.ops import catalog\n    return catalog\n")
    (found,) = cycles("nkisim", root)
    assert {"nkisim.ops.registry", "nkisim.ops.catalog", "nkisim.ops.alu", "nkisim.ops.base"} <= set(found)
