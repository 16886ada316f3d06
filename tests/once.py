"""Compute an expensive, deterministic value once per test run and share it with every pytest-xdist worker.

The suite runs on two workers; a cost-model figure that two test files assert on (the calibration report and the
ladder tests) would otherwise be computed by each.  The first caller computes it under a lock; the others wait for
it and read the pickle.  The folder is the test run's own (``conftest`` makes a fresh one per run, in
``NKIDOCS_CACHE``), so nothing outlives the run and no value can come from older code.  Only values the tests
themselves compute go here (never anything a student's code produced)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def _folder() -> Path:
    folder = Path(os.environ.get("NKIDOCS_CACHE") or tempfile.gettempdir()) / "once"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def once(key: str, compute: Callable[[], T]) -> T:
    """``compute()``, or the value it returned earlier in this test run for ``key``."""
    name = hashlib.sha256(key.encode()).hexdigest()[:24]
    folder = _folder()
    path = folder / f"{name}.pickle"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            with open(path, "rb") as fh:
                return pickle.load(fh)
        value = compute()
        partial = path.with_suffix(".partial")
        with open(partial, "wb") as fh:
            pickle.dump(value, fh)
        partial.replace(path)
        return value


def figure_value(fig) -> float:
    """The cost model's value for one of ``bench/calibrate.py``'s figures, computed once per test run."""
    return once(f"calibrate figure {fig.target} {fig.name}", fig.model)


def figure(target: str, name: str):
    from bench import calibrate

    return next(f for f in calibrate.FIGURES if f.target == target and f.name == name)


def is_figure_of(fig, kernel, args) -> bool:
    """Whether ``fig`` estimates ``kernel`` (the same code, made with the same parameters: ``tiled(1)`` is not
    ``tiled(128)``) on ``args`` (the same placeholders): what a test reading a shared figure checks, so that it
    still asserts on its own kernel."""
    mine, theirs = (getattr(k, "func", k) for k in (kernel, fig.kernel))
    made = [[c.cell_contents for c in f.__closure__ or ()] for f in (mine, theirs)]
    return mine.__code__ is theirs.__code__ and made[0] == made[1] and \
        list(map(repr, fig.args)) == list(map(repr, args))
