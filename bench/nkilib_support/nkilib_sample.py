"""A pytest plugin of ``bench/conformance.py --nkilib``: keep some of a file's collected cases, in the same collection
that runs them (listing a file's cases first would collect it twice, and some of nki-library's files parametrise
thousands of cases).

``--nkilib-per-file N`` keeps N cases, evenly spaced in collection order.  ``--nkilib-largest N`` keeps the N cases
of the largest shapes (issue 29, "full size"): nki-library names each case by its parameters (``64_1024_3_4_bfloat16``,
``batch_128-hidden_8192``), so a case's size is the product of the numbers standing alone in its id (a number
glued to letters, such as the 16 of ``bfloat16``, is a name, not a dimension); ties keep collection order.  Cases
nki-library's coverage generator names ``boundary_`` or ``invalid_`` (values outside what the kernel accepts, whose
test expects the kernel to refuse them) come after every other case: they launch nothing at full size."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

#: a number that is not part of a word: ``4096`` in ``x_4096_y`` or ``seq-4096``, not ``32`` in ``float32``
_DIMENSION = re.compile(r"(?<![A-Za-z0-9.])\d+(?![A-Za-z0-9.])")


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--nkilib-per-file", type=int, default=0, help="keep this many cases, evenly spaced (0: all)")
    parser.addoption("--nkilib-largest", type=int, default=0,
                     help="keep this many cases, those of the largest shapes (0: all)")


def case_size(case_id: str) -> int:
    """The size of a case named ``case_id``: the product of the numbers standing alone in it (1 if none)."""
    params = case_id[case_id.find("[") + 1:case_id.rfind("]")] if "[" in case_id else case_id
    return math.prod(int(n) for n in _DIMENSION.findall(params.replace("_", " ")))


def _refused(case_id: str) -> bool:
    """A case of values the kernel is expected to refuse (nki-library's ``boundary_`` / ``invalid_`` cases)."""
    params = case_id[case_id.find("[") + 1:] if "[" in case_id else ""
    return params.startswith(("boundary_", "invalid_"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: Any, items: list) -> None:
    n = config.getoption("--nkilib-per-file")
    largest = config.getoption("--nkilib-largest")
    if largest > 0 and len(items) > largest:
        order = sorted(range(len(items)), key=lambda i: (_refused(items[i].name), -case_size(items[i].name), i))
        keep = set(order[:largest])
    elif n > 0 and len(items) > n:
        step = len(items) / n
        keep = {int(i * step) for i in range(n)}
    else:
        return
    config.hook.pytest_deselected(items=[it for i, it in enumerate(items) if i not in keep])
    items[:] = [it for i, it in enumerate(items) if i in keep]
