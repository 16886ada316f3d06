"""``neuronxcc.nki`` on the simulator: kernels, launch modes and the submodules."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from nkisim.frontend import compiler, isa, language, typing  # noqa: F401
from nkisim.frontend import legacy as _legacy
from nkisim.frontend.typing import tensor  # noqa: F401
from nkisim.runtime import kernel as _kernel
from nkisim.runtime.kernel import baremetal, simulate_kernel  # noqa: F401
from nkisim.runtime.timing import benchmark, profile  # noqa: F401

__path__: list[str] = []  # makes ``neuronxcc.nki.<submodule>`` importable through the finder
SIMULATED = True

#: The real package registers a logging level above CRITICAL named OFF, and harnesses written for it
#: (CS149's) silence the compiler with ``logging.disable(logging.OFF)``; without it they stop with an
#: AttributeError before running anything.
if not hasattr(logging, "OFF"):
    logging.OFF = logging.CRITICAL + 10  # type: ignore[attr-defined]
    logging.addLevelName(logging.OFF, "OFF")  # type: ignore[attr-defined]


def jit(func: Callable | None = None, mode: str = "auto", **options: Any) -> Any:
    """``@nki.jit`` / ``nki.jit(f, mode=...)``.

    ``mode='trace'`` (legacy) makes a kernel that writes its outputs into its array parameters, as
    kernels did before they returned results (see ``frontend.legacy``).
    """
    if mode == "trace":
        made = _legacy.trace_kernel(func, **options)
    else:
        made = _kernel.jit(func, mode=mode, **options)
    if func is None:
        return lambda f: _not_a_test(made(f))
    return _not_a_test(made)


def _not_a_test(k: Any) -> Any:
    """A kernel named ``test_*`` is not a pytest test: the launch object exposes ``__wrapped__``, by
    which pytest would collect the kernel function and fail asking for fixtures named like its
    parameters (AWS's own test files name kernels so).  ``__test__ = False`` tells pytest to skip it."""
    k.__test__ = False
    return k


def trace(func: Callable | None = None, **options: Any) -> Any:
    """``nki.trace`` (legacy): the same as ``nki.jit(mode='trace')``."""
    options.pop("mode", None)
    return jit(func, mode="trace", **options)
