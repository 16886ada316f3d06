"""Legacy launch styles of ``neuronxcc.nki``: ``nki.trace`` / ``nki.jit(mode='trace')`` kernels.

Before kernels returned their outputs, a traced kernel received every output as a parameter and
wrote it in place: ``simulate_kernel(k, a, b)`` then finds the result in ``b``.  The simulator's
launch treats array arguments as read-only inputs, so a trace-mode kernel runs a wrapper of the
kernel instead: every parameter is annotated mutable (the launch then works on a copy), the wrapper
returns the mutable parameters, and once the launch is over their final values are copied back
into the caller's arrays.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from nkisim.core import context
from nkisim.core.tensor import Tensor
from nkisim.runtime import arguments
from nkisim.runtime import grid as gridmod
from nkisim.runtime.kernel import GridLaunch, Kernel, launch


def _writeback_func(func: Callable) -> Callable:
    """``func`` with every parameter mutable, returning ``(its result, the mutable parameters)``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = func(*args, **kwargs)
        params = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor) and not a.param]
        return out, tuple(params)

    wrapper.__annotations__ = {name: arguments.Mutable for name in inspect.signature(func).parameters}
    wrapper.__signature__ = inspect.signature(func)  # type: ignore[attr-defined]
    return wrapper


class TraceKernel(Kernel):
    """A kernel of ``nki.trace``: it may write its array arguments, which the caller then sees.

    ``func`` is the write-back wrapper, so every launch path (a call, ``kernel[grid]``, ``simulate_kernel``,
    ``nki.benchmark``) lets the kernel write its parameters; ``original`` is the user's function.
    """

    def __init__(self, func: Callable, **options: Any) -> None:
        super().__init__(_writeback_func(func), "auto", **options)
        self.original = self.inlined = func  # called from another kernel, it runs as written

    def __getitem__(self, grid: Any) -> GridLaunch:
        gridmod.check_nonempty(grid)
        return _TraceGridLaunch(self, grid)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if context.active() is not None:  # called from another kernel: inlined
            return super().__call__(*args, **kwargs)
        return self.launch_and_write_back(None, args, kwargs)

    def launch_and_write_back(self, grid: Any, args: tuple, kwargs: dict) -> Any:
        """Run the kernel, copy the parameters' final values into the caller's arrays, return its result."""
        out, finals = launch(self, grid, args, kwargs)
        bound = arguments.bind(self.original, args, kwargs)
        originals = [v for v in bound.arguments.values() if isinstance(v, np.ndarray) or _is_torch(v)]
        for orig, final in zip(originals, finals):
            _copy_into(orig, final)
        return out


class _TraceGridLaunch(GridLaunch):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if context.active() is not None:
            return super().__call__(*args, **kwargs)
        assert isinstance(self.kernel, TraceKernel)
        return self.kernel.launch_and_write_back(self.grid, args, kwargs)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "copy_")


def _copy_into(orig: Any, final: Any) -> None:
    """Write a parameter's final value into the caller's array (NumPy or torch), in place."""
    if final is None:
        return
    if isinstance(orig, np.ndarray):
        if orig.flags.writeable:
            np.copyto(orig, np.asarray(final).reshape(orig.shape), casting="unsafe")
        return
    orig.copy_(final.reshape(orig.shape) if hasattr(final, "reshape") else final)


def trace_kernel(func: Callable | None = None, **options: Any) -> Any:
    """``nki.trace`` / ``nki.jit(mode='trace')``: a TraceKernel (decorator with or without options)."""
    if func is None:
        return lambda f: trace_kernel(f, **options)
    if isinstance(func, TraceKernel):
        func = func.original
    elif isinstance(func, Kernel):
        func = func.func
    return TraceKernel(func, **options)
