"""Importing a kernel that a lesson's ``%%writefile`` cell saved, for the lessons' demos.

A demo that profiles or benchmarks the student's kernel needs the function, not the file. Importing it
by path, under a fresh module name every time, picks up the latest version of the file after the student
edits and re-runs the ``%%writefile`` cell (a plain ``import`` would keep serving the first version).
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

_fresh = itertools.count()


def load_kernel(path: str | Path, name: str) -> Any:
    """The object ``name`` (a kernel) from the Python file at ``path``, imported afresh."""
    spec = importlib.util.spec_from_file_location(f"{name}_lesson_{next(_fresh)}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"{Path(path).name} defines no {name!r} -- is the function named as the question asks?") \
            from None
