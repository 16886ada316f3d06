"""The static screen of kernel files (``nkilab.judge.gate``): every honest kernel of the course passes it untouched,
and each construct that reaches past a kernel is refused at its own line with a sentence saying what."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nkilab.judge import gate

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
    "from __future__ import annotations",  # annotations kept as the text of code the screen has read
    "import numpy as np\nx = np.random.default_rng(0).standard_normal(3).copy()",  # NumPy's own random, copy
    "import neuronxcc.nki.typing as nt\nimport neuronxcc.nki.language as nl\ndef k(a: nt.tensor[[128, 512], nl.float32]): pass",
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
    # the class of bypass, not the instance: code in strings, modules re-exported under their names
    ("import typing", 1, "`import typing`"),
    ("from typing import get_type_hints", 1, "importing from `typing`"),
    ("def k(a: 'nki.typing.tensor'): pass", 1, "a string annotation"),
    ("def k(a) -> '__import__(\"os\")': pass", 1, "a string annotation"),
    ("def k(a):\n    x: 'eval(1)' = a", 2, "a string annotation"),
    ("def k(a: nt.tensor['os.system(1)']): pass", 1, "a string annotation"),
    ("import numpy as np\nb = np.ma.MaskedArray", 2, "`.ma` is not allowed"),
    ("import numpy as np\nm = np.random.bit_generator.abc", 2, "`.abc` (a standard-library module's name)"),
    ("import neuronxcc.nki as nki\nlog = nki.logging", 2, "`.logging` (a standard-library module's name)"),
    ("import neuronxcc.nki.isa as nisa\ne = nisa.enum", 2, "`.enum` (a standard-library module's name)"),
    ("x = t.operator.attrgetter", 1, "`.operator`"),
    ("x = t.inspect.currentframe()", 1, "`.inspect`"),
    ("x = t.builtins.eval", 1, "`.builtins`"),
    ("x = t.gc.get_objects()", 1, "`.gc`"),
    ("g = (i for i in ())\nf = g.ag_frame", 2, "`.ag_frame`"),
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


#: kernel files whose bytes Python decodes otherwise than as UTF-8 would: (bytes, what Python compiles from them)
ENCODINGS = {
    # UTF-7 reads "+AAo-" as a new line: the comment hides a line Python runs (issue 28's fork bomb started so)
    "utf-7 declaration": b"# coding: utf-7\nimport numpy as np\n# +AAo-import os\n",
    "utf-7 on line 2": b"#!/usr/bin/env python\n# -*- coding: utf-7 -*-\nimport numpy as np\n# +AAo-import os\n",
    "latin-1 declaration": b"# vim: set fileencoding=latin-1 :\nimport numpy as np\n",
    "utf-16 with its mark": "# coding: utf-16\nimport os\n".encode("utf-16"),
    "utf-16 declaration": b"# coding: utf-16\nimport os\n",
    "unknown encoding": b"# coding: klingon\nimport os\n",
}


@pytest.mark.parametrize("name", ENCODINGS)
def test_a_file_python_would_decode_otherwise_is_refused(tmp_path, name):
    path = tmp_path / "k.py"
    path.write_bytes(ENCODINGS[name])
    refusal = gate.screen(path)
    assert refusal is not None, name
    assert "encoding" in refusal.reason or "not UTF-8" in refusal.reason, refusal.reason


def test_the_utf7_fixture_is_a_real_bypass():
    """What the screen refuses above is what Python runs: the hidden ``import os`` compiles."""
    assert "os" in compile(ENCODINGS["utf-7 declaration"], "k.py", "exec").co_names
    assert "os" not in compile(b"import numpy as np\n# +AAo-import os\n", "k.py", "exec").co_names


def test_a_byte_order_mark_is_read_as_python_reads_it(tmp_path):
    """Python runs a file that starts with UTF-8's byte-order mark; the screen reads the same text (it once saw
    a syntax error there, left the file to the import, and the import ran ``import os``)."""
    path = tmp_path / "k.py"
    path.write_bytes(b"\xef\xbb\xbfimport neuronxcc.nki as nki\nimport os\n")
    assert "os" in compile(path.read_bytes(), "k.py", "exec").co_names
    refusal = gate.screen(path)
    assert refusal is not None and refusal.line == 2 and "`import os`" in refusal.reason
    path.write_bytes(b"\xef\xbb\xbf# -*- coding: utf-8 -*-\nimport neuronxcc.nki as nki\n")
    assert gate.screen(path) is None  # a UTF-8 declaration, with or without the mark, is fine
    path.write_bytes(b"# coding=utf8\nimport numpy as np\n")
    assert gate.screen(path) is None


# --------------------------------------------------------------------------- the class of bypass, closed

#: modules a kernel may reach by name through allowed objects: they hold no way to files, frames or code in strings
SAFE_MODULES = ("numpy", "math", "warnings", "neuronxcc", "nki", "ml_dtypes")
#: builtins that run strings, open files, reach attributes by name or read frames and globals
DANGEROUS_BUILTINS = ("eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "__import__", "globals",
                      "locals", "vars", "breakpoint", "input")


def _kernel_values() -> list[tuple[str, object]]:
    """What a kernel holds while it runs: its input tensors, a tile, an index, a loop variable, a mask."""
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl
    import numpy as np

    held: list[tuple[str, object]] = []

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(1):
            ix = nl.arange(128)[:, None]
            t = nl.load(a[ix, nl.arange(4)[None, :]])
            held.extend([("tensor", a), ("tile", t), ("index", ix), ("loop", i), ("mask", ix < 3), ("out", out)])
            nl.store(out[ix, nl.arange(4)[None, :]], value=t)
        return out

    kernel(np.zeros((128, 4), np.float32))
    return held


def test_nothing_reachable_through_allowed_names_leaves_the_kernel():
    assert not _leaks()


def test_the_walk_finds_the_leaks_the_name_rules_close(monkeypatch):
    """The mutant: without the standard-library-name rule and the ``.ma`` refusal, the walk finds
    ``np.ma.core.builtins`` (whose ``eval`` any kernel could then call) and the front ends' re-exports."""
    monkeypatch.setattr(gate, "MODULE_ATTRIBUTES", frozenset())
    monkeypatch.setattr(gate, "FORBIDDEN_ATTRIBUTES", gate.FORBIDDEN_ATTRIBUTES - {"ma"})
    leaks = _leaks()
    assert "np.ma.core.builtins -> module builtins" in leaks and "np.ma.core.inspect -> module inspect" in leaks
    assert "nki.logging -> module logging" in leaks


def _leaks() -> list[str]:
    """Every object reachable from the allowed modules and from a running kernel's values through attribute
    names the screen lets through: no module outside ``SAFE_MODULES`` and no dangerous builtin is reachable.  A
    new re-export anywhere (a front end importing ``logging``, a NumPy submodule importing ``builtins``) fails
    the test above until its name is refused or the module vetted."""
    import builtins
    import math
    import types
    import warnings
    from collections import deque

    import neuronxcc.nki as nki
    import neuronxcc.nki.compiler as ncc
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl
    import neuronxcc.nki.typing as nt
    import numpy as np

    danger = {id(getattr(builtins, n)): n for n in DANGEROUS_BUILTINS}
    roots = [("np", np), ("math", math), ("warnings", warnings), ("nki", nki), ("nl", nl), ("nisa", nisa),
             ("nt", nt), ("ncc", ncc), *_kernel_values()]
    try:
        import nki as nki06  # the NKI 0.6 front end, where this checkout has it

        roots.append(("nki06", nki06))
    except ImportError:
        pass
    seen: set[int] = set()
    queue = deque((path, obj, 0) for path, obj in roots)
    leaks = []
    while queue:
        path, obj, depth = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, types.ModuleType) and not obj.__name__.startswith(SAFE_MODULES):
            leaks.append(f"{path} -> module {obj.__name__}")
            continue
        if id(obj) in danger:
            leaks.append(f"{path} -> builtin {danger[id(obj)]}")
            continue
        if depth >= 5 or isinstance(obj, (str, bytes, int, float, bool, type(None))):
            continue
        try:
            names = dir(obj)
        except Exception:  # noqa: BLE001  (an object that refuses dir() offers no names)
            continue
        for name in names:
            if name.startswith("_") or gate.screen_source(f"x = y.{name}") is not None:
                continue  # a name the screen refuses cannot be written in a kernel
            try:
                value = getattr(obj, name)
            except Exception:  # noqa: BLE001  (a property that raises gives nothing)
                continue
            if callable(value) and not isinstance(value, type) and id(value) not in danger:
                continue  # functions and methods: their only ways further are dunder names
            queue.append((f"{path}.{name}", value, depth + 1))
    assert len(seen) > 200  # the walk did reach into NumPy and the front end
    return leaks
