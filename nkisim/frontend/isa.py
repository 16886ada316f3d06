"""``neuronxcc.nki.isa`` (``nisa``) on the simulator."""

from __future__ import annotations

import enum

from nkisim.core.context import active as _active
from nkisim.ops import catalog as _catalog

# every nisa.* instruction: generated from the op registry (ops.registry), recorded into programs
globals().update(_catalog.namespace("nisa"))


class engine(enum.IntEnum):  # noqa: N801
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    vector = 5
    sync = 6


unknown_engine, tensor_engine, scalar_engine = engine.unknown, engine.tensor, engine.scalar
gpsimd_engine, vector_engine = engine.gpsimd, engine.vector


class reduce_cmd(enum.IntEnum):  # noqa: N801
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class nc_version(enum.IntEnum):  # noqa: N801
    gen2 = 2
    gen3 = 3
    gen4 = 4  # trn3 (the 0.6 API's name; the legacy API never targeted it)


class dge_mode(enum.IntEnum):  # noqa: N801
    unknown = 0
    none = 1
    swdge = 2
    hwdge = 3


class oob_mode(enum.IntEnum):  # noqa: N801
    error = 0
    skip = 1


def get_nc_version() -> nc_version:
    """NeuronCore generation of the target: gen2 (trn1), gen3 (trn2) or gen4 (trn3)."""
    ctx = _active()
    if ctx is not None:
        return nc_version(ctx.nc_version)
    from nkisim.runtime.kernel import default_target

    return nc_version(default_target().nc_version)
