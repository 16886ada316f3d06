"""Latency of a kernel for the lessons' demos and sweeps, labelled as what it is.

On the nkisim simulator a latency is a **cost-model estimate** for a named target (trn1, trn2), never a
measurement; on a Neuron device it is ``nki.benchmark``'s measured p99.  ``latency_label`` says which, so
every printed table or plot title names it::

    from nkilab import latency_label, latency_us

    us = latency_us(kernel, a, b, target="trn2")
    print(f"{us:.1f} us ({latency_label('trn2')})")   # 12.3 us (estimate: nkisim cost model, trn2)
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import numpy as np


def on_simulator() -> bool:
    """True when ``neuronxcc.nki`` is provided by the nkisim CPU simulator rather than the Neuron compiler."""
    try:
        import nkisim
    except ImportError:  # a Neuron machine without the course simulator installed
        return False
    return nkisim.using_simulator()


def latency_label(target: str) -> str:
    """What ``latency_us(..., target=target)`` returns, in words: an estimate for ``target`` on the
    simulator, a measurement on a Neuron device."""
    return f"estimate: nkisim cost model, {target}" if on_simulator() else "measured on this device"


def latency_us(kernel: Callable[..., Any], *arrays: np.ndarray, target: str) -> float:
    """p99 latency of ``kernel(*arrays)`` in microseconds.

    On the simulator: a cost-model estimate for ``target`` (``"trn1"`` or ``"trn2"``), traced from the arrays'
    shapes and dtypes only, without numerics, so big shapes are cheap.  On a Neuron device: ``nki.benchmark``'s
    measurement on that device (``target`` is then the device itself and is ignored).  Label printed numbers
    with ``latency_label(target)``.
    """
    import neuronxcc.nki as nki

    if on_simulator():
        import neuronxcc.nki.typing as nt

        args: tuple[Any, ...] = tuple(nt.tensor[list(x.shape), x.dtype] for x in arrays)  # shape/dtype placeholders
        bench = nki.benchmark(kernel, platform_target=target)
    else:
        args, bench = arrays, nki.benchmark(kernel)
    with contextlib.redirect_stdout(io.StringIO()):  # the benchmark's own banner
        bench(*args)
    return float(bench.benchmark_result.nc_latency.get_latency_percentile(99))
