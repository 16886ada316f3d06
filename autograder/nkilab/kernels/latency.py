"""Latency of a kernel for the lessons' demos and sweeps, labelled as what it is.

On the nkisim simulator a latency is a **cost-model estimate** for a named target (trn1, trn2), never a
measurement.  On a Neuron device it is measured: an NKI 0.6 kernel is compiled to a NEFF and timed with nrtpy's
benchmark or ``neuron-explorer`` (``nkilab.kernels.device``, the way AWS documents it for 0.6); a legacy kernel (Neuron SDK
2.29 and earlier) with ``nki.benchmark``'s p99.  ``latency_label`` says which, so every printed table or plot
title names it::

    from nkilab import latency_label, latency_us

    us = latency_us(kernel, a, b, target="trn2")
    print(f"{us:.1f} us ({latency_label('trn2')})")   # 12.3 us (estimate: nkisim cost model, trn2)
"""

from __future__ import annotations

import contextlib
import inspect
import io
from collections.abc import Callable
from typing import Any

import numpy as np

from nkilab.kernels import device
from nkisim.api import Dialect


def simulated(kernel: object) -> bool:
    """Whether ``kernel`` is the simulator's (``nki.jit`` or ``neuronxcc.nki.jit`` served by nkisim)."""
    return type(kernel).__module__.split(".")[0] == "nkisim"


def on_simulator(dialect: Dialect | str = Dialect.NKI) -> bool:
    """True when the ``dialect``'s NKI (a ``Dialect``, or its word: ``nki`` for NKI 0.6, ``legacy`` for
    ``neuronxcc.nki``) is provided by the nkisim CPU simulator rather than AWS's compiler."""
    import nkisim

    return nkisim.provides_nki() if Dialect.named(dialect) is Dialect.NKI else nkisim.using_simulator()


def latency_label(target: str, dialect: Dialect | str = Dialect.NKI) -> str:
    """What ``latency_us(..., target=target)`` returns for a ``dialect`` kernel, in words: an estimate for
    ``target`` on the simulator, a measurement on a Neuron device (the instance named)."""
    if on_simulator(dialect):
        return f"estimate: nkisim cost model, {target}"
    return f"measured on {device.instance_type()}"


def latency_us(kernel: Callable[..., Any], *arrays: np.ndarray, target: str, grid: Any = None) -> float:
    """Latency of ``kernel(*arrays)`` (``kernel[grid](...)`` with a grid) in microseconds.

    On the simulator: the cost model's estimate for ``target`` (``"trn1"`` or ``"trn2"``), traced from the arrays'
    shapes and dtypes only, without numerics, so big shapes are cheap.  On a Neuron device (``target`` is then
    the device itself and is ignored): a 0.6 kernel's NEFF timed with nrtpy or neuron-explorer
    (``nkilab.kernels.device.measure_kernel``), a legacy kernel's ``nki.benchmark`` p99.  Label printed numbers with
    ``latency_label(target)``."""
    if simulated(kernel) or (inspect.isfunction(kernel) and on_simulator()):  # an undecorated function: jitted
        from nkisim import api

        return float(api.profile_kernel(kernel, *arrays, grid=grid, target=target).estimate.total_us)
    if type(kernel).__module__.split(".")[0] == "nki":
        return device.measure_kernel(kernel, list(arrays), grid).latency_us
    import neuronxcc.nki as legacy

    bench = legacy.benchmark(kernel)
    with contextlib.redirect_stdout(io.StringIO()):  # the benchmark's own banner
        (bench[grid] if grid is not None else bench)(*arrays)
    return float(bench.benchmark_result.nc_latency.get_latency_percentile(99))
