"""The two logical cores of an NKI 0.6 ``kernel[2]`` launch, talking: ``nisa.sendrecv`` and ``nisa.core_barrier``.

Both cores call the instruction; the runtime's rendezvous (``runtime.lnc.meet``) waits for the second and then
issues the registry's instruction for both sides (the two transfers of a ``sendrecv``, each core's semaphore write
of a barrier).  Outside an LNC2 launch a ``sendrecv`` has no partner (an error) and a barrier only its own write.
"""

from __future__ import annotations

from typing import Any

from nkisim.core.context import current as _current
from nkisim.core.location import user_location, warn
from nkisim.frontend.v06.adapters import binding as _b
from nkisim.frontend.v06.adapters.errors import error as _error
from nkisim.frontend.v06.adapters.instruction import NkiInstruction
from nkisim.frontend.v06.adapters.instruction import done as _done
from nkisim.frontend.v06.adapters.instruction import needs_gen as _needs_gen
from nkisim.frontend.v06.adapters.instruction import tensor as _t
from nkisim.frontend.v06.adapters.known_issues import DocumentedRuleWarning, first_time
from nkisim.frontend.v06.isa_constants import canonical, dma_engine, engine
from nkisim.runtime import lnc as _lnc

_Engine, _DmaEngine = engine, dma_engine


#: isa docstring sendrecv: over ``dma_engine.gpsimd_dma`` at most 1024/512/256 bytes per partition of 32/16/8-bit
#: data, i.e. this many elements
_GPSIMD_SENDRECV_ELEMENTS = 256


def sendrecv(src: Any, dst: Any, send_to_rank: Any, recv_from_rank: Any, pipe_id: Any,
             dma_engine: Any = dma_engine.dma, name: Any = None) -> NkiInstruction:
    """Send ``src`` to the other logical core and receive its tile into ``dst`` (LNC2); both cores call it with the
    same ``pipe_id`` and the transfer happens when both have."""
    api = "sendrecv"
    eng = _b.enum_value(dma_engine, _DmaEngine, api, "dma_engine")
    s, d = _t(src, api, "src"), _t(dst, api, "dst")
    _needs_gen(3, "sendrecv")
    ctx = _current()
    me = _lnc.current_core(ctx)
    for pname, rank in (("send_to_rank", send_to_rank), ("recv_from_rank", recv_from_rank)):
        if isinstance(rank, bool) or not isinstance(rank, int) or rank != 1 - me:
            # rule: sendrecv.ranks
            raise _error("err_operand_type", f"'{pname}' of 'sendrecv' on logical core {me} must be {1 - me}, the "
                                             f"other core of the LNC2 pair, got {rank!r}")
    if eng is _DmaEngine.gpsimd_dma:
        cap = _GPSIMD_SENDRECV_ELEMENTS * src.dtype.itemsize
        per_partition = src.size // src.shape[0] * src.dtype.itemsize
        if per_partition > cap:
            # rule: sendrecv.gpsimd_bytes
            raise _error("err_operand_type", f"sendrecv over dma_engine.gpsimd_dma moves at most {cap} bytes per "
                                             f"partition for {src.dtype.itemsize * 8}-bit data, got {per_partition}")
    if not _lnc.meet(ctx, ("sendrecv", pipe_id), (s, d),
                     lambda got: _b.call("nisa.sendrecv", got[0][0], got[0][1], got[1][0], got[1][1])):
        # rule: sendrecv.ranks
        raise _error("err_operand_type", "nisa.sendrecv exchanges tiles between the two logical cores of an LNC2 "
                                         "launch: launch the kernel as kernel[2](...)")
    return _done(name)


def core_barrier(data: Any, cores: Any, engine: Any = engine.gpsimd, name: Any = None) -> NkiInstruction:
    """Wait until both logical cores of an LNC2 launch reach the barrier (``cores=(0, 1)``), through the
    ``shared_hbm`` tensor ``data``; the engine named waits (is held) until the later core arrives."""
    api = "core_barrier"
    eng = canonical(_b.enum_value(engine, _Engine, api, "engine"))
    d = _t(data, api, "data")
    _needs_gen(3, "core_barrier")
    if data.on_chip:
        _on_chip_warning(data)
    spelled = _cores(cores)
    if spelled == (0,):
        _one_core_warning(cores)
        _b.call("nisa.core_barrier", d, _lnc.current_core(_current()), None, eng)
        return _done(name)
    if spelled != (0, 1):
        # rule: core_barrier.cores
        raise _error("err_operand_type", f"'cores' of 'core_barrier' must be (0, 1), got {cores!r}")
    ctx = _current()
    if not _lnc.meet(ctx, ("core_barrier",), d, lambda got: _b.call("nisa.core_barrier", got[0], 0, got[1], eng)):
        _b.call("nisa.core_barrier", d, 0, None, eng)  # one logical core: only its own semaphore write and wait
    return _done(name)


def _cores(cores: Any) -> tuple[Any, ...] | None:
    """``cores`` as a tuple: a tuple or list of core numbers, or one number (``(0)`` is the integer 0)."""
    if isinstance(cores, (tuple, list)):
        return tuple(cores)
    if isinstance(cores, int) and not isinstance(cores, bool):
        return (cores,)
    return None


def _on_chip_warning(data: Any) -> None:
    """A barrier through an on-chip tile runs, warned once per line: AWS's docs ask for shared HBM, but nki-library
    2.29_release and main, validated on the compiler, synchronise an SBUF block counter so."""
    if not first_time(_current(), ("core_barrier on chip", user_location())):
        return
    # rule: core_barrier.on_chip_data
    warn(f"core_barrier(data={data.name}) names a tile in {data.buffer.space}: AWS's docs say \"This must be data in "
         f"shared HBM that multiple cores are accessing\" (nki/api/nki/isa/__init__.py, core_barrier), but AWS's "
         f"own kernels validated on the compiler (nki-library 2.29_release, moe_cte/bwmm_shard_on_I.py) synchronise "
         f"an SBUF tile so; the simulator runs it as the barrier's semaphore write and wait, ordered after the "
         f"tile's last write", DocumentedRuleWarning)


def _one_core_warning(cores: Any) -> None:
    """A barrier of core 0 alone runs (its own semaphore write and wait), warned once per line: AWS's docs support
    only (0, 1), but nki-library 2.29_release, validated on the compiler, writes it for its one-shard case."""
    if not first_time(_current(), ("core_barrier one core", user_location())):
        return
    # rule: core_barrier.one_core
    warn(f"core_barrier(cores={cores!r}): AWS's docs say \"Currently only cores=(0, 1) is supported\" "
                  f"(nki/api/nki/isa/__init__.py, core_barrier), but AWS's own kernels validated on the compiler "
                  f"(nki-library 2.29_release, moe_cte/bwmm_shard_on_I.py) write a barrier of core 0 alone for one "
                  f"shard; the simulator runs it as this core's own semaphore write and wait, waiting for no other "
                  f"core", DocumentedRuleWarning)
