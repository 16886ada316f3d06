"""``neuronxcc.nki.isa`` (``nisa``) on the simulator."""

from __future__ import annotations

import enum

from nkisim.core.context import active as _active
from nkisim.core.recording import record_namespace as _record_namespace
from nkisim.ops.isa import (  # noqa: F401
    activation,
    activation_reduce,
    bn_aggr,
    bn_stats,
    dma_copy,
    iota,
    memset,
    reciprocal,
    scalar_tensor_tensor,
    tensor_copy,
    tensor_partition_reduce,
    tensor_reduce,
    tensor_scalar,
    tensor_tensor,
)
from nkisim.ops.matmul import nc_matmul, nc_transpose  # noqa: F401
from nkisim.ops.movement import (  # noqa: F401
    dropout,
    local_gather,
    nc_stream_shuffle,
    sequence_bounds,
    tensor_copy_dynamic_dst,
    tensor_copy_dynamic_src,
)
from nkisim.ops.scan import tensor_scalar_cumulative, tensor_scalar_reduce, tensor_tensor_scan  # noqa: F401
from nkisim.ops.select import (  # noqa: F401
    affine_select,
    range_select,
    select_reduce,
    tensor_copy_predicated,
)
from nkisim.ops.topk import max8, nc_find_index8, nc_match_replace8  # noqa: F401
from nkisim.ops.transpose import dma_transpose  # noqa: F401


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


class dge_mode(enum.IntEnum):  # noqa: N801
    unknown = 0
    none = 1
    swdge = 2
    hwdge = 3


class oob_mode(enum.IntEnum):  # noqa: N801
    error = 0
    skip = 1


def get_nc_version() -> nc_version:
    """NeuronCore generation of the target: gen2 (trn1) or gen3 (trn2)."""
    ctx = _active()
    if ctx is not None:
        return nc_version(ctx.nc_version)
    from nkisim.runtime.kernel import default_target

    return nc_version(default_target().nc_version)


# every nisa.* instruction is an NKI call a program records (core.recording)
_record_namespace(globals(), "nisa", skip=("get_nc_version",))
