"""What every Python process of the course venv pays before it runs a line: the .pth hooks stay light.

A class's grading starts thousands of Python processes (each sandboxed child, executor server, notebook kernel and
nbgrader process), and the venv's .pth files run in every one of them.  ``nkisim.activation`` is one: it must make
``import nki`` / ``import neuronxcc.nki`` resolve to the simulator without importing ``importlib.abc`` (which pulls
in ``importlib.resources``, about 20 ms of start-up a process).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.processes

HEAVY = ("importlib.abc", "importlib.resources", "numpy", "nkisim.api", "nkisim.frontend")


def test_a_bare_interpreter_has_the_hook_and_nothing_heavy():
    out = subprocess.run([sys.executable, "-c", "import sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert "nkisim.activation" in loaded  # the hook is installed in this venv (make setup)
    assert not [m for m in HEAVY if m in loaded or any(n.startswith(m + ".") for n in loaded)]


def test_the_hook_still_resolves_both_dialects_in_a_fresh_process():
    code = ("import nki, nki.language as nl, neuronxcc.nki as legacy, neuronxcc.nki.isa as nisa; "
            "print(nki.__name__, nl.__name__, legacy.__name__, nisa.__name__, nki.__spec__.loader.__class__.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["nkisim.frontend.v06.nki", "nkisim.frontend.v06.language", "nkisim.frontend.nki",
                   "nkisim.frontend.isa", "_Loader"]
