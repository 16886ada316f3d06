"""nkilab spells no hardware number: it asks ``nkisim.api`` for the target (issue 32 scope 1).

The same scan as ``test_target_constants`` (which covers nkisim), over nkilab's source: a literal equal to a number a
target file gives as a hardware fact is a second home for it (the course's 128-row tiles were a literal in the
registry, the diagnosis and the bounds), unless it is listed below as something else.  Two differences, both because
nkilab's numbers are mostly budgets and sizes of its own: only numbers of 100 and more are looked for (16, 32 and 64
are process, byte and character budgets everywhere here, and no hardware number under 100 is one nkilab computes
with), and the sizes of a question's cases (the arguments of ``Case(...)`` and of a stage's functions that return
one) are not looked at: they are inputs chosen around the hardware (exactly one tile of rows, one row more), which
the kinds of case then name.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from test_target_constants import _hardware_numbers

NKILAB = Path(__file__).resolve().parents[1] / "autograder" / "nkilab"

#: nkilab looks for hardware numbers from this size up (see the module's docstring)
SMALLEST = 100


#: (module, value): literals equal to a hardware number that are something else there, and what
NOT_HARDWARE = {
    ("batch/batch_control.py", 128): "the shell's exit status of a process ended by a signal (128 + signum)",
    ("intake/handins.py", 512): "the most bytes of a hand-in's outputs stripped (512 MiB)",
    ("judge/evaluate.py", 512): "the memo of cases' inputs and answers (512 MiB)",
    ("kernels/similarity.py", 2048): "the most fingerprints kept per program",
    ("course/figures.py", 128): "the lesson's example array: 128 rows (one full tile on every target)",
    ("course/figures.py", 512): "the lessons' example sizes: a 512-column array, a [128, 512] fp32 accumulator",
    ("course/stages/s06_tensor_engine.py", 2048): "the largest K the question allows (its rules), a kind of case",
    ("course/stages/s07_fused_rmsnorm_linear.py", 2048): "the largest C the question allows (its rules), a kind of case",
}


def _case_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside the arguments of a call that makes a case: ``Case(...)``, or a function of the module
    annotated to return a ``Case``."""
    makers = {"Case"} | {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.returns is not None
                         and ast.unparse(f.returns).strip("'\"") == "Case"}
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in makers:
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                inside.update(id(n) for n in ast.walk(arg))
    return inside


@functools.cache
def _literals() -> tuple[tuple[str, int, str, float], ...]:
    out = []
    for path in sorted(NKILAB.rglob("*.py")):
        rel = path.relative_to(NKILAB).as_posix()
        source = path.read_text()
        lines = source.splitlines()
        tree = ast.parse(source)
        skip = _case_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                    and not isinstance(node.value, bool) and id(node) not in skip:
                out.append((rel, node.lineno, lines[node.lineno - 1].strip(), node.value))
    return tuple(out)


def stray(literals: tuple[tuple[str, int, str, float], ...]) -> list[str]:
    numbers = {v for v in _hardware_numbers() if v >= SMALLEST}
    return [f"{rel}:{line}: {value} in `{text}`" for rel, line, text, value in literals
            if value in numbers and (rel, value) not in NOT_HARDWARE]


def test_no_nkilab_module_spells_a_hardware_number():
    found = stray(_literals())
    assert not found, "hardware numbers in nkilab (ask nkisim.api.target, e.g. questions.hardware()):\n" + \
        "\n".join(found)


def test_the_scan_finds_a_partition_count():
    """The registry's old ``ROW_TILE = 128`` is found; the same number in a case list is not."""
    tree = ast.parse("ROW_TILE = 128\nQ = Question(public=(Case((128, 4)),), hidden=(Case((129, 4)),))\n"
                     "def _case(r: int) -> Case:\n    return Case((r, 4))\nSPEED = _case(128)\n")
    skip = _case_nodes(tree)
    literals = tuple(("course/questions.py", n.lineno, "", n.value) for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and isinstance(n.value, int) and id(n) not in skip)
    assert stray(literals) == ["course/questions.py:1: 128 in ``"]


def test_every_exception_is_still_there():
    """An entry of NOT_HARDWARE whose literal went away must go (or be re-justified)."""
    present = {(rel, value) for rel, _line, _text, value in _literals()}
    assert not [key for key in NOT_HARDWARE if key not in present]
