"""Issue 12: every instruction added for third-party code also runs in cost-only mode.

``nki.benchmark`` traces a kernel without values (inputs may be ``nt.tensor`` placeholders) and hands
the trace to the cost model; each new instruction must trace there and get a positive latency.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import numpy as np
import pytest


def _sink(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def _select_ops(a, v):
    t, b = nl.load(a), nl.load(v)
    ix, iy = nl.mgrid[0:128, 0:64]
    r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    s = nisa.affine_select(pred=(iy < ix), on_true_tile=t[ix, iy], on_false_value=0.0)
    s = nisa.range_select(on_true_tile=s, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=b, bound1=b,
                          reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=r, reduce_op=nl.max)
    nisa.select_reduce(dst=d, predicate=t, on_true=s, on_false=b, reduce_res=r, reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.tensor_copy_predicated(src=s, dst=d, predicate=t)
    return _sink(d)


def _scan_ops(a, v):
    t, b = nl.load(a), nl.load(v)
    r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    s = nisa.tensor_tensor_scan(t, t, initial=b, op0=np.multiply, op1=np.add)
    nisa.tensor_scalar_cumulative(src=s, dst=d, op0=nl.add, op1=nl.add, imm0=b)
    return _sink(nisa.tensor_scalar_reduce(data=d, op0=np.multiply, operand0=2.0, reduce_op=np.add, reduce_res=r))


def _topk_ops(a, v):
    t = nl.load(a)
    m = nisa.max8(src=t)
    i = nisa.nc_find_index8(data=t, vals=m)
    k = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
    r = nisa.nc_match_replace8(data=t, vals=m, imm=0.0, dst_idx=k)
    nl.store(_sink(i), i)
    return _sink(r)


def _movement_ops(a, v):
    t = nl.load(a)
    idx = nisa.iota(nl.arange(128)[:, None], dtype=nl.uint16)
    g = nisa.local_gather(t, idx)
    nisa.nc_stream_shuffle(src=t, dst=t, shuffle_mask=list(range(32)))
    d = nisa.dropout(t, prob=0.5)
    c = nisa.tensor_copy_dynamic_src(d[:, 0:8])
    u = nl.gather_flattened(data=t, indices=nisa.iota(nl.arange(8)[None, :], dtype=nl.uint32).broadcast_to((128, 8)))
    nl.store(_sink(g), g)
    nl.store(_sink(c), c)
    w = nisa.dma_transpose(a[0:32, 0:64])
    nl.store(_sink(w), w)
    return _sink(u)


@pytest.mark.parametrize("body", [_select_ops, _scan_ops, _topk_ops, _movement_ops])
def test_new_instructions_trace_in_cost_only_mode(body) -> None:
    bench = nki.benchmark(nki.jit(body, platform_target="trn2"))
    bench(nt.tensor[[128, 64], nl.float32], nt.tensor[[128, 1], nl.float32])
    assert bench.benchmark_result.nc_latency.get_latency_percentile(99) > 0


def test_double_row_matmul_in_cost_only_mode() -> None:
    def body(a, b):
        return _sink(nl.copy(nisa.nc_matmul(nl.load(a), nl.load(b), perf_mode="double_row_gen3")))

    bench = nki.benchmark(nki.jit(body, platform_target="trn2"))
    bench(nt.tensor[[128, 2, 32], nl.float8_e5m2], nt.tensor[[128, 2, 512], nl.float8_e5m2])
    assert bench.benchmark_result.nc_latency.get_latency_percentile(99) > 0
