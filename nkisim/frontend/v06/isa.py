"""``nki.isa`` (``nisa``) of NKI 0.6: one adapter per instruction onto the op registry.

Each function has exactly the signature AWS documents for 0.6 (``nki/api/nki/isa/__init__.py``): the output
tile comes first (``dst``), enum parameters take enum members only, ``name=`` labels the instruction, and any
other keyword is an error, as in the 0.6 compiler.  The body renames and normalises the arguments and calls the
registry entry of the same instruction (``binding.call``), which checks, computes and prices it exactly as for
a legacy kernel, writing into ``dst``.  Instructions the simulator does not model yet are listed in
``NOT_SIMULATED`` and raise a clear error when called.
"""

from __future__ import annotations

from typing import Any

from nkisim.core import dtypes as _dt
from nkisim.frontend.v06.adapters import binding as _b
from nkisim.frontend.v06.adapters.control import (  # noqa: F401  (nisa's register instructions)
    VirtualRegister,
    register_alloc,
    register_load,
    register_move,
    register_store,
)
from nkisim.frontend.v06.adapters.cores import core_barrier, sendrecv  # noqa: F401  (LNC2's instructions)
from nkisim.frontend.v06.adapters.errors import error as _error
from nkisim.frontend.v06.adapters.instruction import (  # noqa: F401  (nisa's classes and target queries)
    NkiInstruction,
    NkiValidationError,
    get_nc_sub_version,
    get_nc_version,
)
from nkisim.frontend.v06.adapters.instruction import done as _done
from nkisim.frontend.v06.adapters.instruction import needs_gen as _needs_gen
from nkisim.frontend.v06.adapters.instruction import tensor as _t
from nkisim.frontend.v06.adapters.instruction import tensor_or_scalar as _ts
from nkisim.frontend.v06.adapters.isa_v4 import (  # noqa: F401  (the instructions NKI 0.6 added)
    activate2,
    dma_compute,
    exponential,
    nc_n_gather,
    nonzero_with_count,
    rand2,
    rand_get_state,
    rand_set_state,
    rng,
    set_rng_seed,
    topk,
)
from nkisim.frontend.v06.isa_constants import (  # noqa: F401  (re-exported: nisa.engine, ...)
    canonical,
    dge_mode,
    dma_engine,
    engine,
    gpsimd_engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
    scalar_engine,
    tensor_engine,
    unknown_engine,
    vector_engine,
)

# the enums under names no parameter shadows (``dma_copy(..., engine=...)`` names its argument ``engine``)
_Engine, _Cmd, _Dge, _Oob, _DmaEngine = engine, reduce_cmd, dge_mode, oob_mode, dma_engine


def _eng(value: Any, api: str) -> int:
    return canonical(_b.enum_value(value, _Engine, api, "engine"))


def _cmd(value: Any, api: str) -> int:
    return canonical(_b.enum_value(value, _Cmd, api, "reduce_cmd"))


# --- data movement ----------------------------------------------------------------------------------------
def dma_copy(dst: Any, src: Any, priority: Any = None, oob_mode: Any = oob_mode.error, dge_mode: Any = dge_mode.unknown,
             engine: Any = engine.unknown, name: Any = None) -> NkiInstruction:
    api = "dma_copy"
    d, s = _t(dst, api, "dst"), _t(src, api, "src")
    oob = _b.enum_value(oob_mode, _Oob, api, "oob_mode")
    dge = _b.enum_value(dge_mode, _Dge, api, "dge_mode")
    eng = _b.enum_value(engine, _Engine, api, "engine")
    if src.buffer.family == "psum":
        # rule: dma_copy.psum_source
        raise _error("err_dma_psum_source", "'src' of 'dma_copy' is in PSUM: DMA cannot read PSUM (NKI 0.3 dropped DMA "
                                            "reads from PSUM); copy it "
                                            "to SBUF first with nisa.tensor_copy or nisa.activation")
    hw = dge is _Dge.hwdge
    if hw and dst.dtype != src.dtype:
        # rule: dma_copy.hwdge_cast
        raise _error("err_dma_hwdge_cast",
                     f"dma_copy with dge_mode=hwdge cannot cast ({_dt.name(src.dtype)} -> {_dt.name(dst.dtype)}): "
                     f"hardware DGE copies need equal dtypes (NKI 0.3 dropped casting hwdge copies); reinterpret with "
                     f".view() or use another dge_mode")
    if eng is not _Engine.unknown and (not hw or eng not in (_Engine.scalar,
                                                                          _Engine.sync)):
        # rule: dma_copy.engine
        raise _error("err_dma_engine", f"engine={eng} of 'dma_copy' needs dge_mode=hwdge and one of nisa.engine.scalar "
                                       f"or nisa.engine.sync")
    if priority is not None:
        _needs_gen(4, "dma_copy with priority=")
    for n, t in (("dst", dst), ("src", src)):
        how = t.dynamic_addressing() if getattr(t, "__nki_view__", False) else None
        if how == "vector" and dge in (_Dge.hwdge, _Dge.none):
            # rule: dma_copy.dge_mode_indirect
            raise _error("err_dma_dge_mode", f"dma_copy with dge_mode={dge.name} cannot address {n} per partition (a "
                                             f"vector_select / .ap(vector_offset=) view): only the software DGE builds "
                                             f"those descriptors; use dge_mode=swdge or leave it unknown")
        if how == "scalar" and dge is _Dge.none:
            # rule: dma_copy.dge_mode_dynamic
            raise _error("err_dma_dge_mode", f"dma_copy with dge_mode=none cannot address {n} at a dynamic start (a "
                                             f"register or a tile as its offset): without a DGE the descriptors are "
                                             f"made before the kernel runs; use dge_mode=hwdge or swdge, or leave it "
                                             f"unknown")
    _b.call("nisa.dma_copy", dst=d, src=s, oob_mode=canonical(oob), dge_mode=canonical(dge))
    return _done(name)


def dma_transpose(dst: Any, src: Any, axes: Any = None, priority: Any = None, dge_mode: Any = dge_mode.unknown,
                  oob_mode: Any = oob_mode.error, name: Any = None) -> NkiInstruction:
    api = "dma_transpose"
    dge = _b.enum_value(dge_mode, _Dge, api, "dge_mode")
    if _b.enum_value(oob_mode, _Oob, api, "oob_mode") is _Oob.skip:
        # rule: dma.oob_skip_static
        raise _error("err_operand_type", "oob_mode=skip of 'dma_transpose' needs an indirect source (NKI 0.5+); a "
                                         "static transpose cannot go out of bounds")
    if dst.dtype != src.dtype:
        # rule: transpose.dtype
        raise _error("err_transpose_dtype", f"'dst' ({_dt.name(dst.dtype)}) and 'src' ({_dt.name(src.dtype)}) of "
                                            f"'dma_transpose' must have the same dtype")
    if priority is not None:
        _needs_gen(4, "dma_transpose with priority=")
    _b.call("nisa.dma_transpose", _t(src, api, "src"), axes=axes, dge_mode=canonical(dge), dst=_t(dst, api, "dst"))
    return _done(name)


def tensor_copy(dst: Any, src: Any, engine: Any = engine.unknown, name: Any = None) -> NkiInstruction:
    api = "tensor_copy"
    _b.call("nisa.tensor_copy", _t(src, api, "src"), engine=_eng(engine, api), dst=_t(dst, api, "dst"))
    return _done(name)


def tensor_copy_predicated(dst: Any, src: Any, predicate: Any, reverse_pred: bool = False,
                           name: Any = None) -> NkiInstruction:
    api = "tensor_copy_predicated"
    _b.call("nisa.tensor_copy_predicated", _ts(src, api, "src"), _t(dst, api, "dst"), _t(predicate, api, "predicate"),
            bool(reverse_pred))
    return _done(name)


def memset(dst: Any, value: Any, engine: Any = engine.unknown, name: Any = None) -> NkiInstruction:
    api = "memset"
    d = _t(dst, api, "dst")
    integer = not _dt.is_float(dst.dtype)
    # rule memset.float_on_integer, narrowed: nki-library's 2.29_release kernels, validated on the 0.3 compiler,
    # write memset(value=0.0) on uint32 tiles; the migration guide's refused example is value=2.0 on int32
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            integer and not isinstance(value, int) and value != 0.0):
        # rule: memset.float_on_integer
        raise _error("err_memset_value_type",
                     f"'value' {value!r} of 'memset' does not match dst's dtype {_dt.name(dst.dtype)}: NKI 0.3 dropped "
                     f"the silent cast of a float value to an integer dst; pass an int literal")
    _b.call("nisa.memset", None, value, None, engine=_eng(engine, api), dst=d)
    return _done(name)


def nc_stream_shuffle(dst: Any, src: Any, shuffle_mask: Any, name: Any = None) -> NkiInstruction:
    api = "nc_stream_shuffle"
    _b.call("nisa.nc_stream_shuffle", _t(src, api, "src"), _t(dst, api, "dst"), tuple(shuffle_mask))
    return _done(name)


def local_gather(dst: Any, src_buffer: Any, index: Any, num_elem_per_idx: Any = 1, num_valid_indices: Any = None,
                 name: Any = None) -> NkiInstruction:
    api = "local_gather"
    _b.call("nisa.local_gather", _t(src_buffer, api, "src_buffer"), _t(index, api, "index"), num_elem_per_idx,
            num_valid_indices, dst=_t(dst, api, "dst"))
    return _done(name)


# --- Tensor Engine --------------------------------------------------------------------------------------------
def nc_matmul(dst: Any, stationary: Any, moving: Any, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False, accumulate: Any = None,
              tile_position: Any = (), tile_size: Any = (), perf_mode: Any = matmul_perf_mode.none,
              name: Any = None) -> NkiInstruction:
    api = "nc_matmul"
    mode = _b.enum_value(perf_mode, matmul_perf_mode, api, "perf_mode")
    if accumulate is not None and not isinstance(accumulate, bool):
        # rule: python.argument_type
        raise TypeError(f"'accumulate' of 'nc_matmul' must be None, True or False, got {accumulate!r}")
    if {stationary.dtype, moving.dtype} == {_dt.float8_e4m3, _dt.float8_e4m3fn}:
        # rule: nc_matmul.fp8_mix
        raise _error("err_operand_type", "'stationary' and 'moving' of 'nc_matmul' mix float8_e4m3 with "
                                         "float8_e4m3fn, which NKI 0.4+ refuses: use one of the two")
    _b.call("nisa.nc_matmul", _t(stationary, api, "stationary"), _t(moving, api, "moving"),
            is_stationary_onezero=is_stationary_onezero, is_moving_onezero=is_moving_onezero,
            is_transpose=is_transpose, tile_position=tile_position, tile_size=tile_size,
            perf_mode=None if mode is matmul_perf_mode.none else "double_row_gen3", dst=_t(dst, api, "dst"),
            accumulate=accumulate)
    return _done(name)


def nc_matmul_mx(dst: Any, stationary: Any, moving: Any, stationary_scale: Any, moving_scale: Any,
                 tile_position: Any = None, tile_size: Any = None, accumulate: Any = None,
                 name: Any = None) -> NkiInstruction:
    api = "nc_matmul_mx"
    if accumulate is not None and not isinstance(accumulate, bool):
        # rule: python.argument_type
        raise TypeError(f"'accumulate' of 'nc_matmul_mx' must be None, True or False, got {accumulate!r}")
    _b.call("nisa.nc_matmul_mx", _t(stationary, api, "stationary"), _t(moving, api, "moving"),
            _t(stationary_scale, api, "stationary_scale"), _t(moving_scale, api, "moving_scale"),
            dst=_t(dst, api, "dst"), tile_position=tile_position or (), tile_size=tile_size or (),
            accumulate=accumulate)
    return _done(name)


def quantize_mx(dst: Any, src: Any, dst_scale: Any, name: Any = None) -> NkiInstruction:
    api = "quantize_mx"
    _b.call("nisa.quantize_mx", _t(src, api, "src"), _t(dst, api, "dst"), _t(dst_scale, api, "dst_scale"))
    return _done(name)


def nc_transpose(dst: Any, data: Any, engine: Any = engine.unknown, name: Any = None) -> NkiInstruction:
    api = "nc_transpose"
    if dst.dtype != data.dtype:
        # rule: transpose.dtype
        raise _error("err_transpose_dtype", f"'dst' ({_dt.name(dst.dtype)}) and 'data' ({_dt.name(data.dtype)}) of "
                                            f"'nc_transpose' must have the same dtype (NKI 0.6 transposes do not cast)")
    _b.call("nisa.nc_transpose", _t(data, api, "data"), engine=_eng(engine, api), dst=_t(dst, api, "dst"))
    return _done(name)


# --- Vector / Scalar / GpSimd compute -------------------------------------------------------------------------
def tensor_tensor(dst: Any, data1: Any, data2: Any, op: Any, engine: Any = engine.unknown,
                  name: Any = None) -> NkiInstruction:
    api = "tensor_tensor"
    _b.call("nisa.tensor_tensor", _t(data1, api, "data1"), _t(data2, api, "data2"), _b.op(op, api),
            engine=_eng(engine, api), dst=_t(dst, api, "dst"))
    return _done(name)


def tensor_scalar(dst: Any, data: Any, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, engine: Any = engine.unknown,
                  name: Any = None) -> NkiInstruction:
    api = "tensor_scalar"
    _b.call("nisa.tensor_scalar", _t(data, api, "data"), _b.op(op0, api, "op0"), _ts(operand0, api, "operand0"),
            bool(reverse0), _b.op(op1, api, "op1", optional=True),
            None if operand1 is None else _ts(operand1, api, "operand1"), bool(reverse1),
            engine=_eng(engine, api), dst=_t(dst, api, "dst"))
    return _done(name)


def scalar_tensor_tensor(dst: Any, data: Any, op0: Any, operand0: Any, op1: Any, operand1: Any,
                         reverse0: bool = False, reverse1: bool = False, name: Any = None) -> NkiInstruction:
    api = "scalar_tensor_tensor"
    _b.call("nisa.scalar_tensor_tensor", data=_t(data, api, "data"), op0=_b.op(op0, api, "op0"),
            operand0=_ts(operand0, api, "operand0"), op1=_b.op(op1, api, "op1"),
            operand1=_t(operand1, api, "operand1"), reverse0=bool(reverse0), reverse1=bool(reverse1),
            dst=_t(dst, api, "dst"))
    return _done(name)


def tensor_reduce(dst: Any, op: Any, data: Any, axis: Any, negate: bool = False, keepdims: bool = False,
                  name: Any = None) -> NkiInstruction:
    api = "tensor_reduce"
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    rank = data.ndim
    norm = sorted(a + rank if a < 0 else a for a in axes)
    if not norm or norm != list(range(norm[0], rank)) or norm[0] == 0:
        # rule: reduce.trailing_axes
        raise _error("err_reduce_axis", f"axis={axis!r} of 'tensor_reduce' on a rank-{rank} tile: the reduced axes "
                                        f"must be trailing free dimensions ending at the last one (NKI 0.3 dropped axis=1 meaning the "
                                        f"last one), e.g. [{rank - 1}] "
                                        f"or [1, ..., {rank - 1}]")
    _b.call("nisa.tensor_reduce", _b.op(op, api), _t(data, api, "data"), tuple(norm), negate=bool(negate),
            keepdims=bool(keepdims), dst=_t(dst, api, "dst"))
    return _done(name)


def tensor_partition_reduce(dst: Any, op: Any, data: Any, name: Any = None) -> NkiInstruction:
    api = "tensor_partition_reduce"
    _b.call("nisa.tensor_partition_reduce", _b.op(op, api), _t(data, api, "data"), dst=_t(dst, api, "dst"))
    return _done(name)


def activation(dst: Any, op: Any, data: Any, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, name: Any = None) -> NkiInstruction:
    api = "activation"
    if bias is not None and bias.__class__ is not float and getattr(bias, "ndim", 2) >= 2 and \
            bias.size != bias.shape[0]:
        # rule: activation.bias_shape
        raise _error("err_activation_bias_shape", f"'bias' of 'activation' must have a free size of 1 (one value per "
                                                  f"partition), got shape {list(bias.shape)}")
    _b.call("nisa.activation", _b.op(op, api), _t(data, api, "data"),
            bias=None if bias is None else _ts(bias, api, "bias"), scale=_ts(scale, api, "scale"),
            reduce_op=_b.op(reduce_op, api, "reduce_op", optional=True),
            reduce_res=None if reduce_res is None else _t(reduce_res, api, "reduce_res"),
            reduce_cmd=_cmd(reduce_cmd, api), dst=_t(dst, api, "dst"))
    return _done(name)


def activation_reduce(dst: Any, op: Any, data: Any, reduce_op: Any, reduce_res: Any, bias: Any = None,
                      scale: Any = 1.0, name: Any = None) -> NkiInstruction:
    api = "activation_reduce"
    _b.call("nisa.activation_reduce", _b.op(op, api), _t(data, api, "data"), reduce_op=_b.op(reduce_op, api, "reduce_op"),
            reduce_res=_t(reduce_res, api, "reduce_res"), bias=None if bias is None else _ts(bias, api, "bias"),
            scale=_ts(scale, api, "scale"), dst=_t(dst, api, "dst"))
    return _done(name)


def tensor_tensor_scan(dst: Any, data0: Any, data1: Any, initial: Any, op0: Any, op1: Any, reverse0: bool = False,
                       reverse1: bool = False, name: Any = None) -> NkiInstruction:
    api = "tensor_tensor_scan"
    _b.call("nisa.tensor_tensor_scan", _t(data0, api, "data0"), _t(data1, api, "data1"), _ts(initial, api, "initial"),
            _b.op(op0, api, "op0"), _b.op(op1, api, "op1"), bool(reverse0), bool(reverse1), dst=_t(dst, api, "dst"))
    return _done(name)


def tensor_scalar_cumulative(dst: Any, src: Any, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             reduce_cmd: Any = reduce_cmd.reset_reduce, name: Any = None) -> NkiInstruction:
    api = "tensor_scalar_cumulative"
    _b.call("nisa.tensor_scalar_cumulative", _t(src, api, "src"), _t(dst, api, "dst"), _b.op(op0, api, "op0"),
            _b.op(op1, api, "op1"), _ts(imm0, api, "imm0"), None if imm1 is None else _ts(imm1, api, "imm1"),
            _cmd(reduce_cmd, api))
    return _done(name)


def tensor_scalar_reduce(dst: Any, data: Any, op0: Any, operand0: Any, reduce_op: Any, reduce_res: Any = None,
                         reverse0: bool = False, reduce_cmd: Any = reduce_cmd.reset_reduce, reduce_init: Any = None,
                         reduce_res_negate: bool = False, name: Any = None) -> NkiInstruction:
    api = "tensor_scalar_reduce"
    _b.call("nisa.tensor_scalar_reduce", _t(data, api, "data"), _b.op(op0, api, "op0"), _ts(operand0, api, "operand0"),
            _b.op(reduce_op, api, "reduce_op"), None if reduce_res is None else _t(reduce_res, api, "reduce_res"),
            bool(reverse0), dst=_t(dst, api, "dst"), reduce_cmd=_cmd(reduce_cmd, api),
            reduce_init=None if reduce_init is None else _ts(reduce_init, api, "reduce_init"),
            reduce_res_negate=bool(reduce_res_negate))
    return _done(name)


def reciprocal(dst: Any, data: Any, name: Any = None) -> NkiInstruction:
    api = "reciprocal"
    _b.call("nisa.reciprocal", _t(data, api, "data"), dst=_t(dst, api, "dst"))
    return _done(name)


def iota(dst: Any, pattern: Any, offset: Any = 0, channel_multiplier: Any = 0, name: Any = None) -> NkiInstruction:
    api = "iota"
    _b.call("nisa.iota", dst=_t(dst, api, "dst"), pattern=tuple(tuple(p) for p in pattern), offset=int(offset),
            channel_multiplier=int(channel_multiplier))
    return _done(name)


def affine_select(dst: Any, pattern: Any, channel_multiplier: Any, on_true_tile: Any, on_false_value: Any,
                  cmp_op: Any = None, offset: Any = 0, name: Any = None) -> NkiInstruction:
    api = "affine_select"
    _b.call("nisa.affine_select", None, _t(on_true_tile, api, "on_true_tile"), float(on_false_value),
            dst=_t(dst, api, "dst"), pattern=tuple(tuple(p) for p in pattern), offset=int(offset),
            channel_multiplier=int(channel_multiplier),
            cmp_op="equal" if cmp_op is None else _b.op(cmp_op, api, "cmp_op"))
    return _done(name)


def range_select(dst: Any, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_cmd: Any = reduce_cmd.reset_reduce, reduce_res: Any = None, reduce_op: Any = None,
                 range_start: Any = 0, on_false_value: Any = -3.4028234663852886e38, name: Any = None) -> NkiInstruction:
    api = "range_select"
    _b.call("nisa.range_select", _t(on_true_tile, api, "on_true_tile"), _b.op(comp_op0, api, "comp_op0"),
            _b.op(comp_op1, api, "comp_op1"), _t(bound0, api, "bound0"), _t(bound1, api, "bound1"),
            _cmd(reduce_cmd, api), None if reduce_res is None else _t(reduce_res, api, "reduce_res"),
            "max" if reduce_op is None else _b.op(reduce_op, api, "reduce_op"), float(range_start),
            float(on_false_value), dst=_t(dst, api, "dst"))
    return _done(name)


def select_reduce(dst: Any, predicate: Any, on_true: Any, on_false: Any, reduce_res: Any = None,
                  reduce_cmd: Any = reduce_cmd.idle, reduce_op: Any = None, reverse_pred: bool = False,
                  name: Any = None) -> NkiInstruction:
    api = "select_reduce"
    _b.call("nisa.select_reduce", _t(dst, api, "dst"), _t(predicate, api, "predicate"), _t(on_true, api, "on_true"),
            _ts(on_false, api, "on_false"), None if reduce_res is None else _t(reduce_res, api, "reduce_res"),
            _cmd(reduce_cmd, api), "max" if reduce_op is None else _b.op(reduce_op, api, "reduce_op"),
            bool(reverse_pred))
    return _done(name)


def sequence_bounds(dst: Any, segment_ids: Any, name: Any = None) -> NkiInstruction:
    api = "sequence_bounds"
    _b.call("nisa.sequence_bounds", _t(segment_ids, api, "segment_ids"), dst=_t(dst, api, "dst"))
    return _done(name)


def bn_stats(dst: Any, data: Any, name: Any = None) -> NkiInstruction:
    api = "bn_stats"
    _b.call("nisa.bn_stats", _t(data, api, "data"), dst=_t(dst, api, "dst"))
    return _done(name)


def bn_aggr(dst: Any, data: Any, name: Any = None) -> NkiInstruction:
    api = "bn_aggr"
    _b.call("nisa.bn_aggr", _t(data, api, "data"), dst=_t(dst, api, "dst"))
    return _done(name)


def dropout(dst: Any, data: Any, prob: Any, name: Any = None) -> NkiInstruction:
    api = "dropout"
    _b.call("nisa.dropout", _t(data, api, "data"), _ts(prob, api, "prob"), dst=_t(dst, api, "dst"))
    return _done(name)


def max8(dst: Any, src: Any, name: Any = None) -> NkiInstruction:
    api = "max8"
    _b.call("nisa.max8", _t(src, api, "src"), dst=_t(dst, api, "dst"))
    return _done(name)


def nc_find_index8(dst: Any, data: Any, vals: Any, name: Any = None) -> NkiInstruction:
    api = "nc_find_index8"
    _b.call("nisa.nc_find_index8", _t(data, api, "data"), _t(vals, api, "vals"), dst=_t(dst, api, "dst"))
    return _done(name)


def nc_match_replace8(dst: Any, data: Any, vals: Any, imm: Any, dst_idx: Any = None, name: Any = None) -> NkiInstruction:
    api = "nc_match_replace8"
    _b.call("nisa.nc_match_replace8", _t(data, api, "data"), _t(vals, api, "vals"), float(imm),
            None if dst_idx is None else _t(dst_idx, api, "dst_idx"), dst=_t(dst, api, "dst"))
    return _done(name)


# --- instructions the simulator does not model yet ------------------------------------------------------------
#: 0.6 instructions that exist in the API but that the simulator refuses with a clear error, and why
NOT_SIMULATED: dict[str, str] = {
}


#: legacy instructions NKI 0.6 removed, and what replaces them (asking for one is an AttributeError that says so)
#: instructions an NKI release removed (rule isa.removed), and what replaces them
REMOVED = {"tensor_copy_dynamic_src", "tensor_copy_dynamic_dst"}


def __getattr__(name: str) -> Any:
    if name in REMOVED:
        # rule: isa.removed
        raise AttributeError(f"module 'nki.isa' has no attribute '{name}': removed in NKI 0.4 (NKI 0.4 dropped "
                             f"nisa.{name}); use nisa.tensor_copy with .ap(scalar_offset=register)")
    # rule: python.no_attribute
    raise AttributeError(f"module 'nki.isa' has no attribute '{name}'")


def _refusal(api: str, what: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        # rule: limit.refused_api
        raise NotImplementedError(f"nki.isa.{api} ({what}) is not supported by the nkisim simulator yet")

    refused.__name__ = api
    refused.__qualname__ = f"nki.isa.{api}"
    refused.__nki06_refused__ = what  # type: ignore[attr-defined]
    return refused


for _api, _what in NOT_SIMULATED.items():
    globals()[_api] = _refusal(_api, _what)

for _name, _fn in list(globals().items()):
    if callable(_fn) and getattr(_fn, "__module__", None) == __name__ and not _name.startswith("_") \
            and not isinstance(_fn, type) and _name not in ("canonical",) or _name.startswith("register_") \
            or _name in ("sendrecv", "core_barrier", "get_nc_version", "get_nc_sub_version"):
        _fn.__qualname__ = f"nki.isa.{_name}"
