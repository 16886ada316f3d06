"""The static screen of kernel files (``nkilab.gate``): every honest kernel of the course passes it untouched,
and each construct that reaches past a kernel is refused at its own line with a sentence saying what."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nkilab import gate

REPO = Path(__file__).resolve().parents[1]
HONEST = sorted((REPO / "solutions").glob("*/*.py")) + sorted((REPO / "tests" / "kernels").glob("*.py"))


@pytest.mark.parametrize("path", HONEST, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_reference_and_tutorial_kernel_passes(path):
    assert gate.screen(path) is None


ALLOWED = [
    "import neuronxcc.nki as nki",
    "from neuronxcc import nki",
    "import neuronxcc.nki.isa as nisa",
    "from neuronxcc.nki.typing import tensor",
    "import nki.language as nl",
    "import numpy as np\nx = np.float32(1.0) + np.zeros((2, 2)).sum()",
    "import math\nx = math.ceil(3 / 2)",
    "import warnings\nwarnings.warn('tracing')",
    "from __future__ import annotations",
    "import neuronxcc.nki.language as nl\nt = nl.load(a)",  # NKI's load is not NumPy's
    "print(__name__)",
    "def f():\n    raise SystemExit(1)",
]


@pytest.mark.parametrize("source", ALLOWED)
def test_what_kernels_use_is_allowed(source):
    assert gate.screen_source(source) is None


REFUSED = [  # (source, line, words in the reason)
    ("import os", 1, "`import os` is not allowed"),
    ("import neuronxcc.nki as nki\nimport subprocess", 2, "`import subprocess`"),
    ("import neuronxcc", 1, "`import neuronxcc`"),
    ("from neuronxcc import starfish", 1, "importing from `neuronxcc`"),
    ("from . import helper", 1, "importing from `.`"),
    ("import nkilab", 1, "`import nkilab`"),
    ("import importlib.util", 1, "`import importlib.util`"),
    ("from numpy import load", 1, "importing `load` from NumPy"),
    ("from numpy import *", 1, "importing `*` from NumPy"),
    ("import numpy as np\nx = np.load('/etc/passwd')", 2, "`np.load` (NumPy file access)"),
    ("import numpy as np\nnp.zeros(3).tofile('out_0.bin')", 2, "`.tofile`"),
    ("import numpy as np\np = np.zeros(3).ctypes", 2, "`.ctypes`"),
    ("x = out._array", 1, "private attribute `._array`"),
    ("x = t.__class__", 1, "private attribute `.__class__`"),
    ("x = open('/work/solutions/a.py').read()", 1, "`open` is not allowed"),
    ("exec('1')", 1, "`exec`"),
    ("eval('1')", 1, "`eval`"),
    ("f = getattr(nl, 'load')", 1, "`getattr`"),
    ("m = __import__('os')", 1, "`__import__`"),
    ("b = __builtins__", 1, "`__builtins__`"),
    ("g = globals()", 1, "`globals`"),
    ("v = vars(nl)", 1, "`vars`"),
    ("def f():\n    global counter\n    counter = 1", 2, "`global`"),
    ("x = 1\ny = __spec__", 2, "special name `__spec__`"),
]


@pytest.mark.parametrize("source,line,words", REFUSED, ids=[r[0].splitlines()[-1][:40] for r in REFUSED])
def test_reaching_past_the_kernel_is_refused_at_its_line(source, line, words):
    refusal = gate.screen_source(source)
    assert refusal is not None and refusal.line == line and words in refusal.reason, refusal
    assert refusal.code == source.splitlines()[line - 1].strip()


def test_the_message_names_the_file_line_and_code(tmp_path):
    path = tmp_path / "vector_add.py"
    path.write_text(textwrap.dedent("""\
        import neuronxcc.nki as nki
        import neuronxcc.nki.language as nl
        import os
        """))
    msg = gate.screen(path).message(path.name)
    assert msg.startswith("vector_add.py line 3 (`import os`): `import os` is not allowed")
    assert "may import only neuronxcc.nki" in msg and msg.endswith(")")


def test_unparseable_or_binary_files(tmp_path):
    path = tmp_path / "k.py"
    path.write_bytes(b"\xff\xfe not utf-8")
    assert "not UTF-8" in gate.screen(path).reason
    path.write_text("def broken(:\n")
    assert gate.screen(path) is None  # a syntax error is the import's to report, at the student's line
    path.write_text("x = " + "(" * 100_000 + ")" * 100_000)
    assert gate.screen(path) is None  # Python's own parser refuses it (too many nested parentheses) at import
    path.write_text("x = " + "1 + " * 100_000 + "1")
    refusal = gate.screen(path)
    assert refusal is not None and ("too deeply" in refusal.reason or "cannot be parsed" in refusal.reason)
