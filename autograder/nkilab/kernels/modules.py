"""Importing a kernel from a Python file by path: the grader's child process and the lessons' demos.

Both need the function, not the file: the child grades the file a student handed in, and a demo profiles or
benchmarks the kernel a lesson's ``%%writefile`` cell saved. Importing by path, under a fresh module name
every time, picks up the latest version of the file after the student edits and re-runs the cell (a plain
``import`` would keep serving the first version).
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any

from nkisim.api import Dialect

_fresh = itertools.count()


def load_kernel(path: str | Path, name: str) -> Any:
    """The object ``name`` (a kernel) from the Python file at ``path``, imported afresh.  The module is
    registered in ``sys.modules`` while it runs, as a normal import would (dataclasses and pickling in
    the student's file look it up there)."""
    spec = importlib.util.spec_from_file_location(f"kernel_module_{next(_fresh)}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None:
        raise AttributeError(f"{Path(path).name} defines no function named '{name}'")
    return fn


def kernel_dialect(fn: Any) -> Dialect:
    """The NKI dialect a loaded kernel is written in: ``Dialect.NKI`` for an ``import nki`` kernel, else
    ``Dialect.LEGACY`` (it decides how a question's launch grid is spelled for it, ``nkilab.isolate._child.make_grid``)."""
    dialect = getattr(fn, "dialect", None)
    if dialect is None:  # a device's own kernel object: NKI 0.6's lives in the ``nki`` package
        return Dialect.NKI if type(fn).__module__.split(".")[0] == "nki" else Dialect.LEGACY
    return Dialect.named(dialect)
