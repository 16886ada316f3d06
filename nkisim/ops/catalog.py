"""Every op module, imported so that every NKI call is registered, and the front-end namespaces built from them.

The op modules import ``ops.registry`` to register (``@op``); the registry imports none of them.  This module is the
one that imports them all, so a front end asking for its namespace (``namespace("nl")``) asks here, and nothing the
op modules import reaches back: no import cycle.

Core registers three calls of its own (``t.reshape``, ``t.view``, ``t.assert_shape``: views, no
instruction); their entries are declared here, since core cannot import ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nkisim.ops import (  # noqa: F401
    activation,
    alu,
    composite,
    creation,
    dma,
    elementwise,
    lnc,
    matmul,
    memory,
    movement,
    mx,
    reduce,
    registers,
    rng,
    scan,
    select,
    statistics,
    topk,
    transpose,
)
from nkisim.ops.registry import OPS, declare

for _call in ("tile.reshape", "tile.view", "tile.assert_shape"):
    declare(_call, spaces="hbm|psum|sbuf")


def namespace(prefix: str) -> dict[str, Callable[..., Any]]:
    """The functions a front-end module exports for the calls under ``prefix`` (``nl``, ``nisa``)."""
    head = prefix + "."
    return {e.name: e.function for e in OPS.values() if e.call.startswith(head)}
