"""An indirect DMA (a gather or scatter through an index tile) reads its index tile (issue 31): the cost model's
schedule makes it wait for whatever writes that tile.  Numbers asserted are the schedule's (deterministic)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

from nkisim.core.target import get as get_target
from nkisim.cost import costs
from nkisim.cost.scheduler import schedule


def _trace(kernel, *args):
    kernel(*args)
    return kernel.last_launch.ctx.trace


@nki.jit(platform_target="trn2")
def _gather_scatter(x, idx):
    """Rows of ``x`` gathered through an index the kernel computes (a chain of VectorE steps), then scattered back
    through the same index."""
    out = nl.ndarray((512, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    it = nl.load(idx)
    for _ in range(8):
        it = nl.add(it, 0)
    i_f = nl.arange(64)[None, :]
    g = nl.load(x[it, i_f])
    nl.store(out[it, i_f], value=g)
    return out


def test_a_gather_and_a_scatter_wait_for_their_index_tile():
    """"Index tensor must be 2-D, on SBUF" (aws-neuron-sdk nki/deep-dives/nki-dge.rst:99): the DMA reads the index
    tile to address its rows, so the legacy gather (``nl.load(x[idx, ...])``) and scatter (``nl.store(out[idx, ...])``)
    start after the last instruction that writes the index; they did not (the index tile was no read of theirs, so the
    gather ran at once, before its index existed)."""
    trace = _trace(_gather_scatter, nt.tensor[[512, 64], nl.float32], nt.tensor[[128, 1], nl.int32])
    sched = schedule(trace, get_target("trn2").params)
    last = max(i for i, ins in enumerate(trace) if ins.kind.name == "tensor_scalar")  # the index's last writer
    index = trace[last].writes[0].root
    gather, scatter = [i for i, ins in enumerate(trace) if ins.engine == "dma"][1:]
    for i in (gather, scatter):
        assert index in {r.root for r in trace[i].reads}
        assert sched.start[i] >= sched.end[last]


def test_an_indirect_dma_has_gpsimd_make_its_descriptors():
    """"The GpSimd Engine generates DMA descriptors during NEFF execution. This is the only mode that supports indirect
    (gather/scatter) operations ... Consumes GpSimd Engine cycles for descriptor generation" (nki-dge.rst:77-89), and
    the hardware DGE "Does not support indirect (gather/scatter) operations" (:125): each of the gather and the scatter
    holds GpSimd for the target's ``swdge_ns`` (spec §4.5, the compiler's own PerfSim: 500 ns on trn1, 700 on trn2)
    after its index is written and before its transfer starts, and queues on no hardware DGE."""
    for target, ns in (("trn1", 500), ("trn2", 700)):
        prm = get_target(target).params
        assert prm.dma.swdge_ns == ns
        trace = _trace(_gather_scatter, nt.tensor[[512, 64], nl.float32], nt.tensor[[128, 1], nl.int32])
        sched = schedule(trace, prm)
        assert sched.busy["pool"] == 2 * ns
        last = max(i for i, ins in enumerate(trace) if ins.kind.name == "tensor_scalar")
        gather = [i for i, ins in enumerate(trace) if ins.engine == "dma"][1]
        queued = sched.dma_queues[gather][0][0][0]  # when its data starts to move
        assert queued >= sched.end[last] + ns
        assert not costs.runtime_dge(trace[gather]) and costs.swdge_ns(trace[gather], prm) == ns


def test_the_gpsimd_descriptor_time_is_named_in_the_why_lines():
    """The software DGE's GpSimd time (the test above) gets its "Why:" line: the gather and the scatter, 2 x
    ``swdge_ns`` of GpSimd time, quoting AWS's DGE deep dive and saying the per-DMA figure is not AWS's."""
    from nkisim.cost.model import estimate

    trace = _trace(_gather_scatter, nt.tensor[[512, 64], nl.float32], nt.tensor[[128, 1], nl.int32])
    whys = [r for r in estimate(trace, "trn2").reasons if r.mechanism == "swdge"]
    assert sorted((r.count, r.us) for r in whys) == [(1, 0.7), (1, 0.7)]  # one line each: the load, the store
    text = whys[0].text()
    assert "gathers or scatters through an index tile had GpSimd make their DMA descriptors at run time, 0.7 us" in text
    assert "the only mode that supports indirect (gather/scatter) operations" in text and "not AWS's" in text
