"""NKI 0.6 adapters of the instructions 0.6 added to the ISA (``ops/isa_v4.py``): ``exponential``, ``activate2``,
``nonzero_with_count``, ``topk``, ``nc_n_gather``, ``dma_compute`` and the random generators (``rng``, ``rand2``,
``set_rng_seed``, ``rand_set_state``, ``rand_get_state``).  Each has AWS's signature (strict: an unknown keyword is Python's TypeError),
normalises enums and operators, and calls the one registry entry, which checks, computes and prices it."""

from __future__ import annotations

from typing import Any

from nkisim.frontend.v06.adapters import binding as _b
from nkisim.frontend.v06.adapters.instruction import NkiInstruction
from nkisim.frontend.v06.adapters.instruction import done as _done
from nkisim.frontend.v06.adapters.instruction import tensor as _t
from nkisim.frontend.v06.adapters.instruction import tensor_or_scalar as _ts
from nkisim.frontend.v06.isa_constants import canonical, engine, oob_mode, reduce_cmd

_Cmd, _Oob, _Engine = reduce_cmd, oob_mode, engine


def _cmd(value: Any, api: str) -> int:
    return canonical(_b.enum_value(value, _Cmd, api, "reduce_cmd"))


def _int(value: Any) -> Any:
    """A register-free int argument as the registry entry checks it (a numpy integer becomes an int)."""
    return int(value) if hasattr(value, "__index__") and not isinstance(value, bool) else value


def exponential(dst: Any, src: Any, max_value: Any = 0.0, reduce_res: Any = None,
                reduce_cmd: Any = reduce_cmd.idle, reduce_init: Any = 0.0, name: Any = None) -> NkiInstruction:
    api = "exponential"
    _b.call("nisa.exponential", _t(src, api, "src"), dst=_t(dst, api, "dst"), max_value=_ts(max_value, api, "max_value"),
            reduce_res=None if reduce_res is None else _t(reduce_res, api, "reduce_res"),
            reduce_cmd=_cmd(reduce_cmd, api), reduce_init=_ts(reduce_init, api, "reduce_init"))
    return _done(name)


def activate2(dst: Any, op: Any, data: Any, imm0: Any, imm1: Any, op0: Any, op1: Any, relu_param: Any = 0.0,
              reverse0: bool = False, reverse1: bool = False, reduce_op: Any = None, reduce_res: Any = None,
              reduce_cmd: Any = reduce_cmd.idle, name: Any = None) -> NkiInstruction:
    api = "activate2"
    _b.call("nisa.activate2", _b.op(op, api), _t(data, api, "data"), _ts(imm0, api, "imm0"), _ts(imm1, api, "imm1"),
            _b.op(op0, api, "op0"), _b.op(op1, api, "op1"), relu_param=_ts(relu_param, api, "relu_param"),
            reverse0=bool(reverse0), reverse1=bool(reverse1),
            reduce_op=_b.op(reduce_op, api, "reduce_op", optional=True),
            reduce_res=None if reduce_res is None else _t(reduce_res, api, "reduce_res"),
            reduce_cmd=_cmd(reduce_cmd, api), dst=_t(dst, api, "dst"))
    return _done(name)


def nonzero_with_count(dst: Any, src: Any, index_offset: Any = 0, padding_val: Any = -1,
                       name: Any = None) -> NkiInstruction:
    api = "nonzero_with_count"
    _b.call("nisa.nonzero_with_count", _t(src, api, "src"), dst=_t(dst, api, "dst"), index_offset=_int(index_offset),
            padding_val=_int(padding_val))
    return _done(name)


def topk(val_dst: Any, idx_dst: Any, src: Any, n: Any, name: Any = None) -> NkiInstruction:
    api = "topk"
    _b.call("nisa.topk", _t(src, api, "src"), _int(n), val_dst=_t(val_dst, api, "val_dst"),
            idx_dst=_t(idx_dst, api, "idx_dst"))
    return _done(name)


def nc_n_gather(dst: Any, data: Any, indices: Any, name: Any = None) -> NkiInstruction:
    api = "nc_n_gather"
    _b.call("nisa.nc_n_gather", _t(data, api, "data"), _t(indices, api, "indices"), dst=_t(dst, api, "dst"))
    return _done(name)


def dma_compute(dst: Any, srcs: Any, reduce_op: Any, scales: Any = None, unique_indices: bool = True,
                oob_mode: Any = oob_mode.error, name: Any = None) -> NkiInstruction:
    api = "dma_compute"
    if not isinstance(srcs, (list, tuple)):
        # rule: python.argument_type
        raise TypeError(f"'srcs' of '{api}' must be a list of tensors, got {type(srcs).__name__}")
    oob = _b.enum_value(oob_mode, _Oob, api, "oob_mode")
    _b.call("nisa.dma_compute", [_t(s, api, f"srcs[{i}]") for i, s in enumerate(srcs)],
            _b.op(reduce_op, api, "reduce_op"), dst=_t(dst, api, "dst"),
            scales=None if scales is None else [_ts(s, api, "scales") for s in scales],
            unique_indices=bool(unique_indices), oob_mode=canonical(oob))
    return _done(name)


def _eng(value: Any, api: str) -> int:
    return canonical(_b.enum_value(value, _Engine, api, "engine"))


def rng(dst: Any, engine: Any = engine.vector, name: Any = None) -> NkiInstruction:
    api = "rng"
    _b.call("nisa.rng", dst=_t(dst, api, "dst"), engine=_eng(engine, api))
    return _done(name)


def rand2(dst: Any, min: Any, max: Any, name: Any = None) -> NkiInstruction:  # noqa: A002  (AWS's names)
    api = "rand2"
    _b.call("nisa.rand2", _ts(min, api, "min"), _ts(max, api, "max"), dst=_t(dst, api, "dst"))
    return _done(name)


def set_rng_seed(src_seeds: Any, name: Any = None) -> NkiInstruction:
    api = "set_rng_seed"
    _b.call("nisa.set_rng_seed", _t(src_seeds, api, "src_seeds"))
    return _done(name)


def rand_set_state(src_seeds: Any, engine: Any = engine.gpsimd, name: Any = None) -> NkiInstruction:
    api = "rand_set_state"
    _b.call("nisa.rand_set_state", _t(src_seeds, api, "src_seeds"), engine=_eng(engine, api))
    return _done(name)


def rand_get_state(dst: Any, engine: Any = engine.gpsimd, name: Any = None) -> NkiInstruction:
    api = "rand_get_state"
    _b.call("nisa.rand_get_state", dst=_t(dst, api, "dst"), engine=_eng(engine, api))
    return _done(name)


for _fn in (exponential, activate2, nonzero_with_count, topk, nc_n_gather, dma_compute, rng, rand2, set_rng_seed,
            rand_set_state, rand_get_state):
    _fn.__qualname__ = f"nki.isa.{_fn.__name__}"
