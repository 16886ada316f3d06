"""A static screen of a kernel file before any run: only what an NKI kernel needs, nothing that reaches past it.

Defence in depth, not the boundary (that is ``nkilab.isolate.sandbox``): a kernel that imports ``os``, reads a private
attribute of a simulator object, or calls ``open``/``exec``/``getattr`` is refused before it runs, with the line
and a sentence a student can act on, instead of being left to try its luck against the sandbox.  What an NKI
kernel legitimately uses -- ``neuronxcc.nki`` (or ``nki``), NumPy for dtypes and host-side constants, ``math``,
``warnings`` and typing helpers -- passes untouched.
"""

from __future__ import annotations

import ast
import codecs
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

#: top-level modules a kernel file may import (``neuronxcc`` only for its ``nki`` package)
ALLOWED_MODULES = frozenset({"neuronxcc", "nki", "numpy", "math", "warnings", "__future__"})
#: standard-library module names that NKI, NumPy or a tensor also use as attribute names of their own
KERNEL_ATTRIBUTE_NAMES = frozenset({"array", "copy", "math", "profile", "random", "select", "trace"})
#: an attribute with a standard-library module's name reaches that module wherever an object re-exports it
MODULE_ATTRIBUTES = frozenset(n for n in sys.stdlib_module_names if not n.startswith("_")) - KERNEL_ATTRIBUTE_NAMES
#: builtins that reach past the kernel: code from strings, files, attribute access by name, frames
FORBIDDEN_NAMES = frozenset({"exec", "eval", "compile", "open", "getattr", "setattr", "delattr", "__import__",
                             "globals", "locals", "vars", "breakpoint", "input", "memoryview", "help",
                             "__builtins__", "exit", "quit"})
#: attributes that reach the file system, raw memory or the interpreter through NumPy objects
FORBIDDEN_ATTRIBUTES = frozenset({"tofile", "fromfile", "dump", "dumps", "ctypes", "ctypeslib", "memmap",
                                  "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt",
                                  "fromregex", "DataSource", "lib", "f2py", "distutils", "testing", "os", "sys",
                                  "gi_frame", "f_back", "f_globals", "f_locals", "cr_frame", "tb_frame", "ag_frame",
                                  "ma"})  # numpy.ma's modules re-export builtins, inspect and operator
NUMPY_FILE_FUNCTIONS = frozenset({"load"})  # np.load reads files; nl.load is NKI's, so only numpy's is refused
HINT = "kernel files may import only neuronxcc.nki (or nki), numpy and math, and use no private names, files or exec"


@dataclass(frozen=True)
class Refusal:
    """Why a kernel file is refused: its line, the code there, and what is not allowed."""

    line: int
    code: str
    reason: str

    def message(self, file_name: str) -> str:
        where = f"{file_name} line {self.line} (`{self.code}`)" if self.line else file_name  # 0: the whole file
        return f"{where}: {self.reason} ({HINT})"


def _module_allowed(name: str, imported: tuple[str, ...] = ()) -> bool:
    top = name.split(".")[0]
    if top not in ALLOWED_MODULES:
        return False
    if top == "neuronxcc":
        rest = name.split(".")[1:]
        return rest[:1] == ["nki"] or (not rest and bool(imported) and all(n == "nki" for n in imported))
    return True


class _Screen(ast.NodeVisitor):
    def __init__(self) -> None:
        self.numpy_aliases: set[str] = set()
        self.found: list[tuple[int, str]] = []

    def refuse(self, node: ast.AST, reason: str) -> None:
        self.found.append((getattr(node, "lineno", 0), reason))

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if not _module_allowed(a.name):
                self.refuse(node, f"`import {a.name}` is not allowed")
            elif a.name.split(".")[0] == "numpy":
                self.numpy_aliases.add(a.asname or "numpy")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = tuple(a.name for a in node.names)
        if node.level or not node.module or not _module_allowed(node.module, names):
            self.refuse(node, f"importing from `{'.' * node.level}{node.module or ''}` is not allowed")
        elif node.module.split(".")[0] == "numpy":
            bad = [n for n in names if n in FORBIDDEN_ATTRIBUTES | NUMPY_FILE_FUNCTIONS or n == "*"]
            if bad:
                self.refuse(node, f"importing `{bad[0]}` from NumPy is not allowed")
        for a in node.names:
            if a.name.startswith("_"):
                self.refuse(node, f"importing the private name `{a.name}` is not allowed")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("_"):
            self.refuse(node, f"the private attribute `.{node.attr}` is not allowed")
        elif node.attr in FORBIDDEN_ATTRIBUTES:
            self.refuse(node, f"`.{node.attr}` is not allowed")
        elif node.attr in MODULE_ATTRIBUTES:
            self.refuse(node, f"`.{node.attr}` (a standard-library module's name) is not allowed")
        elif node.attr in NUMPY_FILE_FUNCTIONS and isinstance(node.value, ast.Name) \
                and node.value.id in self.numpy_aliases:
            self.refuse(node, f"`{node.value.id}.{node.attr}` (NumPy file access) is not allowed")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_NAMES:
            self.refuse(node, f"`{node.id}` is not allowed")
        elif node.id.startswith("__") and node.id != "__name__":
            self.refuse(node, f"the special name `{node.id}` is not allowed")

    def _annotation(self, node: ast.AST | None) -> None:
        if node is None:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                self.refuse(sub, "a string annotation is not allowed (annotate with nki.typing objects)")
                return

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if a is not None:
                self._annotation(a.annotation)
        self._annotation(getattr(node, "returns", None))
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815  (ast.NodeVisitor's naming)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.refuse(node, "`global` is not allowed in a kernel file")

    visit_Nonlocal = visit_Global  # type: ignore[assignment]  # noqa: N815  (ast.NodeVisitor's naming; refused alike)


def screen_source(source: str) -> Refusal | None:
    """The first thing in ``source`` a kernel file may not do, or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None  # the child's import reports it, at the student's line, as Python would
    except (ValueError, RecursionError, MemoryError) as err:
        return Refusal(0, "", f"the file cannot be parsed ({type(err).__name__})")
    s = _Screen()
    try:
        s.visit(tree)
    except RecursionError:
        return Refusal(0, "", "the file is nested too deeply to check")
    if not s.found:
        return None
    line, reason = min(s.found)
    return Refusal(line, _line(source, line), reason)


def screen(path: str | Path) -> Refusal | None:
    """Screen the kernel file at ``path`` as Python will compile it (an unreadable or non-UTF-8 file is refused)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        return Refusal(0, "", f"the file cannot be read ({type(err).__name__})")
    source = decode(data)
    return source if isinstance(source, Refusal) else screen_source(source)


#: a source-encoding declaration (PEP 263) anywhere in the first two lines, loosely: Python's own rule needs a
#: comment line, but a looser match can only refuse more, never let a declaration through unseen
_DECLARATION = re.compile(rb"coding[:=][ \t]*([-\w.]+)")


def decode(data: bytes) -> str | Refusal:
    """The text Python compiles from ``data``, or why a kernel file may not be that.

    Python decodes a module by its first two lines: a UTF-8 byte-order mark, or a ``# coding: <name>``
    declaration (``tokenize.detect_encoding`` is that rule).  A kernel file must be UTF-8 (with or without the
    mark): under ``# coding: utf-7`` or ``utf-16`` the text Python runs is not the text a reader, or a screen
    decoding UTF-8, sees (``+AAo-`` in a comment is a new line to UTF-7).  No AWS kernel declares another encoding
    (nki-library and the docs' ``nki/examples`` declare none, or UTF-8)."""
    head = b"\n".join(data.split(b"\n", 2)[:2])
    for match in _DECLARATION.finditer(head):
        name = match.group(1).decode("ascii", "replace")
        if _codec(name) not in ("utf-8", "utf-8-sig"):
            return Refusal(0, "", f"the file declares the source encoding `{name}` (kernel files must be UTF-8)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as err:  # a first line that is not UTF-8, or a mark contradicting a declaration
        return Refusal(0, "", "the file is not UTF-8 text" if not _utf8(data) else
                       f"the file's encoding cannot be read ({err.msg})")
    if _codec(encoding) not in ("utf-8", "utf-8-sig"):
        return Refusal(0, "", f"the file declares the source encoding `{encoding}` (kernel files must be UTF-8)")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return Refusal(0, "", "the file is not UTF-8 text")


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _codec(name: str) -> str | None:
    """The codec's canonical name (``UTF8`` -> ``utf-8``), None for a name Python does not know."""
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _line(source: str, n: int) -> str:
    lines = source.splitlines()
    return lines[n - 1].strip()[:120] if 0 < n <= len(lines) else ""
