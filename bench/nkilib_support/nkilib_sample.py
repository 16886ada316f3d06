"""A pytest plugin of ``bench/conformance.py --nkilib --per-file N``: keep N of a file's collected cases, evenly
spaced in collection order, in the same collection that runs them (listing a file's cases first would collect it
twice, and some of nki-library's files parametrise thousands of cases)."""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--nkilib-per-file", type=int, default=0, help="keep this many cases, evenly spaced (0: all)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: Any, items: list) -> None:
    n = config.getoption("--nkilib-per-file")
    if n <= 0 or len(items) <= n:
        return
    step = len(items) / n
    keep = {int(i * step) for i in range(n)}
    config.hook.pytest_deselected(items=[it for i, it in enumerate(items) if i not in keep])
    items[:] = [it for i, it in enumerate(items) if i in keep]
