"""Every op module, imported so that every NKI call is registered (``ops.registry.namespace`` imports this).

Core registers three calls of its own (``t.reshape``, ``t.view``, ``t.assert_shape``: views, no
instruction); their entries are declared here, since core cannot import ops.
"""

from __future__ import annotations

from nkisim.ops import (  # noqa: F401
    activation,
    alu,
    composite,
    creation,
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
from nkisim.ops.registry import declare

for _call in ("tile.reshape", "tile.view", "tile.assert_shape"):
    declare(_call, spaces="hbm|psum|sbuf")
