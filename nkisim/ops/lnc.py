"""The two logical cores of an LNC2 launch talking to each other (NKI 0.6): ``nisa.sendrecv``, ``nisa.core_barrier``.

Each is one rendezvous of both cores (``runtime.lnc``), issued once both have reached it: ``sendrecv`` here is the
pair of transfers (each core's ``src`` tile to the other core's ``dst``, each DMA on its sender's queues), and
``core_barrier`` the semaphore write each core makes to the shared tensor and each core's wait on the engine the
call names, which reads both writes: the scheduler holds that engine of each core until the later core's write has
landed (AWS: "The barrier will block execution on this engine, other engines will not be blocked").
"""

from __future__ import annotations

import math
from typing import Any

from nkisim.core.context import current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read, write
from nkisim.core.tensor import as_access, shape_str
from nkisim.cost.instructions import CORE_BARRIER, DMA_COPY
from nkisim.ops.base import emit, operand
from nkisim.ops.registry import op, spaces_of


def _on_core(ctx: Any, core: int) -> tuple[int, int]:
    before = (ctx.core, ctx.instance)
    ctx.core = ctx.instance = core
    return before


@op("nisa.sendrecv", emits=(DMA_COPY,), spaces="sbuf")
def sendrecv(src0: Any, dst0: Any, src1: Any, dst1: Any, name: str = "") -> None:
    """Both halves of an LNC2 exchange: core 0's ``src0`` lands in core 1's ``dst1`` and core 1's ``src1`` in core
    0's ``dst0`` (each a DMA on the sending core).  A tile and its destination have the same shape and dtype."""
    ctx = current()
    allowed = spaces_of("sendrecv")
    moves = []
    for sname, src, dname, dst, core in (("src", src0, "dst", dst1, 0), ("src", src1, "dst", dst0, 1)):
        s, d = (as_access(operand("sendrecv", n, v, allowed, ctx)) for n, v in ((sname, src), (dname, dst)))
        if s.shape != d.shape or s.dtype != d.dtype:
            raise nki_error("err_param_shape_mismatch",
                            f"Parameter shapes ({shape_str('src', s.shape)} on core {core}, "
                            f"{shape_str('dst', d.shape)} on core {1 - core}) of 'sendrecv' has mismatched shapes: the "
                            f"tile one core sends and the tile the other receives into must match in shape and dtype")
        moves.append((s, d, core, read(s) if ctx.numerics else None))
    before = (ctx.core, ctx.instance)
    try:
        for s, d, core, vals in moves:  # both read before either writes: an exchange, not two copies in a row
            d.check_write()
            write(d, None if vals is None else vals.copy())
            _on_core(ctx, core)
            emit(ctx, DMA_COPY, reads=[s], writes=[d], nbytes=math.prod(d.shape) * d.itemsize)
    finally:
        ctx.core, ctx.instance = before


#: ``nisa.engine`` numbers -> the engine a barrier's wait holds (unknown: the documented default, GpSimd); the Sync
#: engine and the DMA engine are absent: the cost model has no Sync engine sequencer (it only triggers DMAs, "without
#: interfering with compute engine instruction scheduling", trainium_inferentia2_arch.rst), so nothing is held
_BARRIER_ENGINES = {0: "pool", 1: "pe", 2: "act", 3: "pool", 5: "dve"}


@op("nisa.core_barrier", emits=(DMA_COPY, CORE_BARRIER), spaces="hbm|sbuf")
def core_barrier(data: Any, core: int = 0, other: Any = None, engine: int = 3, name: str = "") -> None:
    """An LNC2 barrier through the shared tensor: core ``core``'s semaphore write to ``data`` and, given ``other``
    (the tensor the other core named), the other core's write to it (values unchanged), then each core's wait on
    ``engine`` (``nisa.engine`` number, GpSimd by default) until every write has landed.  AWS's docs: "The barrier
    will block execution on this engine, other engines will not be blocked" (isa core_barrier): the wait holds that
    engine of each core until the later core arrives (``cost.scheduler``), the other engines run on.  ``data`` in
    HBM must be ``shared_hbm`` (isa core_barrier); an SBUF tile (each core's own, which the 0.6 front end warns
    about) is the semaphore write's address, ordered after the tile's last writer."""
    ctx = current()
    sides = [(int(core), data)] + ([(1 - int(core), other)] if other is not None else [])
    accs = []
    for c, t in sides:
        d = as_access(operand("core_barrier", "data", t, spaces_of("core_barrier"), ctx))
        if d.tensor.root.buffer.family == "hbm" and d.tensor.root.buffer.space != "shared_hbm":
            raise nki_error("err_unsupported_memory",
                            f"Expected operand 'data' of 'core_barrier' to be in address space 'shared_hbm', but got a "
                            f"tensor in '{d.tensor.root.buffer.space}' instead.")
        accs.append((c, d))
    held = _BARRIER_ENGINES.get(int(engine))
    before = (ctx.core, ctx.instance)
    try:
        for c, d in accs:  # each core's semaphore write ...
            _on_core(ctx, c)
            emit(ctx, DMA_COPY, reads=[d], writes=[d], nbytes=4)
        if held is not None:
            for c, d in accs:  # ... then each core's wait, which reads what both wrote
                _on_core(ctx, c)
                emit(ctx, CORE_BARRIER, engine=held, reads=[d], p=1, n=1)
    finally:
        ctx.core, ctx.instance = before
