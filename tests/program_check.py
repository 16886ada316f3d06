"""Every launch compiled, serialised, executed and compared: the executor against the eager reference.

``NKISIM_CHECK_PROGRAMS=1 python -m pytest tests/...`` makes every launch of the suite record its program,
round-trip it through JSON, validate it and execute it on the same inputs, and fails the launch unless the
executor's outputs are bit-identical to the eager ones and the cost model's estimate of the executed trace
equals the eager trace's.  ``tests/test_program.py`` runs the same check on the course's and the tests'
kernels in every ``make test``; this switch is how the whole suite is held to it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from nkisim import api
from nkisim.core import location
from nkisim.runtime import arguments
from nkisim.runtime import kernel as kernel_mod

ENV = "NKISIM_CHECK_PROGRAMS"

#: for tests that count how often a kernel's Python runs, or whose kernel only works traced once: the check
#: also runs every launch unrolled, as its reference
counts_python_runs = pytest.mark.skipif(bool(os.environ.get(ENV)), reason="the program check runs each launch "
                                        "a second time, unrolled, as its reference")


def same(a: Any, b: Any) -> bool:
    """Bit-identical outputs (NaNs at the same places count as equal), through tuples and lists."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    a, b = (arguments.torch_to_numpy(x) if hasattr(x, "detach") else np.asarray(x) for x in (a, b))
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return a.tobytes() == b.tobytes()


def _us(result: Any) -> float:
    from nkisim.cost import model

    return model.estimate(result.ctx.trace, result.ctx.target, cores=result.ctx.cores).total_us


def check_launch(kernel: Any, result: kernel_mod.LaunchResult, reference: kernel_mod.LaunchResult, args: tuple,
                 kwargs: dict) -> None:
    """``result`` (a recorded launch, loop bodies traced once) and the execution of its program on the launch's
    own inputs, against ``reference``, the launch with every iteration's Python run (unrolled)."""
    program = api.program_from_json(result.program.to_json())
    bound = arguments.bind(kernel.func, args, kwargs)
    inputs = [bound.arguments[i.name] for i in program.inputs]
    done = api.execute(program, inputs, numerics=result.ctx.numerics)
    if result.ctx.numerics and not same(result.outputs, reference.outputs):
        raise AssertionError(f"{program.kernel} with its loop bodies traced once differs from the unrolled launch")
    if result.ctx.numerics and not same(done.outputs, reference.outputs):
        raise AssertionError(f"executed program of {program.kernel} differs from the eager launch")
    want, traced, got = _us(reference), _us(result), _us(done.record)
    if not want == traced == got:
        raise AssertionError(f"{program.kernel} costs {want} us unrolled, {traced} us traced once and {got} us "
                             "executed")


def _copy(x: Any) -> Any:
    return x.copy() if isinstance(x, np.ndarray) else x.clone() if hasattr(x, "clone") else x


def install() -> None:
    """Wrap the launch so that every launch is also checked as a program (see the module docstring)."""
    original = kernel_mod.run
    if getattr(original, "__checks_programs__", False):
        return

    def run(kernel: Any, grid: Any, args: tuple, kwargs: dict, **kw: Any) -> kernel_mod.LaunchResult:
        if kw.get("record") is False:
            return original(kernel, grid, args, kwargs, **kw)
        if getattr(kernel, "dialect", "legacy") != "legacy":  # NKI 0.6 kernels may write their inputs in place:
            # the reference and the program each get the inputs as they were, the launch itself the caller's arrays
            snapshot = lambda: (tuple(_copy(a) for a in args), {k: _copy(v) for k, v in kwargs.items()})  # noqa: E731
            ref_args, ref_kwargs = snapshot()
            prog_args, prog_kwargs = snapshot()
        else:
            ref_args, ref_kwargs, prog_args, prog_kwargs = args, kwargs, args, kwargs
        reference = original(kernel, grid, ref_args, ref_kwargs, **{**kw, "record": False})
        result = original(kernel, grid, args, kwargs, **{**kw, "record": True})
        check_launch(kernel, result, reference, prog_args, prog_kwargs)
        return result

    run.__checks_programs__ = True  # type: ignore[attr-defined]
    location.mark_internal(__file__)
    kernel_mod.run = run


if os.environ.get(ENV):
    install()
