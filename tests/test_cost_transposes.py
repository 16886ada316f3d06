"""Transposes priced by what AWS documents them to do (issue 31): fp32 on the Tensor Engine, and the DMA engines'
transposes on trn2 (their throughput, and where their descriptors come from).  Numbers asserted are cost-model
outputs (deterministic), each derived from the target files' parameters, never wall-clock times.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import pytest

from nkisim.core.target import get as get_target
from nkisim.cost import costs
from nkisim.cost.scheduler import schedule


def _trace(kernel, *args):
    kernel(*args)
    return kernel.last_launch.ctx.trace


def _pe_transposes(target, dtype):
    """The trace of 8 TensorE transposes of [128, 128] tiles of ``dtype`` (each stored, so each is live)."""
    @nki.jit(platform_target=target)
    def k(a):
        out = nl.ndarray((8, 128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(8):
            t = nl.load(a[i])
            nl.store(out[i], value=nl.copy(nisa.nc_transpose(t)))
        return out

    return _trace(k, nt.tensor[[8, 128, 128], dtype])


@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_an_fp32_pe_transpose_costs_the_fp32_matmul_rate(target):
    """A TensorE transpose is a matmul of the data with an identity ("this is exactly what nki.isa.nc_transpose()
    does", trainium_inferentia2_arch.rst:188-191) and an fp32 matmul costs "roughly 4x" (ibid. :268-269): on
    NeuronCore-v2 an fp32 transpose takes 4x the PE cycles of a bf16 one; NeuronCore-v3's transpose mode gives a "2x
    speedup in FP32 transpose" (trainium2_arch.rst:199-201), so 2x there.  (It was priced as a bf16 one: CS149 2024's
    fp32 conv2d by robertpare17, which transposes its fp32 weights in every nl.matmul, was 0.80x of its hardware
    latency, and 0.95x since.)"""
    prm = get_target(target).params
    busy = {dt: schedule(_pe_transposes(target, dt), prm).busy["pe"] for dt in (nl.float32, nl.bfloat16)}
    factor = {"trn1": 4, "trn2": 2}[target]
    assert prm.pe.fp32_transpose_factor == factor
    cycles = {nl.bfloat16: 128 + prm.pe.matmul_overhead_cycles,
              nl.float32: 128 * factor + prm.pe.matmul_overhead_cycles}
    for dt in busy:
        assert busy[dt] == pytest.approx(8 * cycles[dt] / prm.clock_ghz.pe)


def _dma_transposes(src_shape, dtype, spell):
    """A rolled (skip_middle_end) loop of 4 DMA transposes of ``src_shape`` blocks, each stored back to HBM."""
    rows, cols = src_shape

    @nki.compiler.skip_middle_end_transformations
    @nki.jit(platform_target="trn2")
    def k(a):
        out = nl.ndarray((4, cols, rows), dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            nisa.dma_copy(src=spell(a[i]), dst=out[i])
        return out

    return _trace(k, nt.tensor[[4, rows, cols], dtype])


def _hbm_load_transpose(a):
    return nl.load_transpose2d(a)


def _sbuf_dma_transpose(a):
    return nisa.dma_transpose(nl.load(a))


def test_trn2_dma_transposes_move_at_the_rates_aws_gives():
    """trn2's DMA transpose: "up to 90% DMA throughput utilization given hardware-friendly tensor access patterns"
    from HBM (trainium2_arch.rst:321), output in whole [128, 16] blocks (:303); "up to 50%" from SBUF (:340); any other
    output shape "at the cost of DMA performance" (:303, no figure: the earlier 0.25 guess).  A transposing DMA's
    queue time is then its plain copy's bytes at that fraction of the rate (the descriptors alike)."""
    prm = get_target("trn2").params
    d = prm.dma
    assert (d.transpose_efficiency, d.sbuf_transpose_efficiency, d.unaligned_transpose_efficiency) == (0.9, 0.5, 0.25)
    cases = [((128, 128), _hbm_load_transpose, d.transpose_efficiency),
             ((128, 128), _sbuf_dma_transpose, d.sbuf_transpose_efficiency),
             ((100, 128), _hbm_load_transpose, d.unaligned_transpose_efficiency)]  # out [128, 100]: 100 % 16
    for shape, spell, eff in cases:
        trace = _dma_transposes(shape, nl.float32, spell)
        t = next(ins for ins in trace if ins.kind.name in ("load_transpose2d", "dma_transpose"))
        assert costs.transpose_efficiency(t, prm) == eff
        nq = costs.dma_queues(t, prm)
        data = (t.nbytes / nq) / (d.bytes_per_ns * eff)
        desc = costs.descriptor_ns(prm) * costs.descriptors(t, prm) / nq
        assert costs.dma_queue_ns(t, nq, prm) == pytest.approx(d.issue_ns + desc + data)


def test_a_transpose_the_hardware_dge_cannot_make_takes_no_dge_time():
    """"Hardware DGE constraints for dma_transpose: src.shape[0] == 16, src.shape[-1] % 128 == 0, src.dtype must be 2
    bytes" (nki-dge.rst:145-149): an fp32 [128, 128] load_transpose2d in a rolled loop cannot have its descriptors made
    by the DGE at run time, so it does not queue on the DGE (made as on NeuronCore-v2); the loop's stores still do,
    and so does a bf16 [16, 128] transpose, which the DGE can make.  CS149 2025's rishic3 fp32 4096x4096
    load_transpose2d kernel (836 us on hardware) was estimated 1891 us, its DGE alone 1192 us serially."""
    prm = get_target("trn2").params
    fp32 = _dma_transposes((128, 128), nl.float32, _hbm_load_transpose)
    bf16 = _dma_transposes((16, 128), nl.bfloat16, lambda a: nisa.dma_transpose(a))
    for trace, transposes_use_dge in ((fp32, False), (bf16, True)):
        for ins in trace:
            if ins.engine == "dma":
                transposing = ins.kind.name in ("load_transpose2d", "dma_transpose")
                assert costs.runtime_dge(ins) == (transposes_use_dge or not transposing)
    # the schedule: with a DGE far slower than everything else, the fp32 loop's latency is its 4 stores' DGE time,
    # not its 8 DMAs'
    slow = prm.replace("dma", "dge_ns", 100_000.0).replace("dma", "dge_descriptor_ns", 0.0)
    end = max(schedule(fp32, slow).core_end.values())
    assert 4 * 100_000 < end < 5 * 100_000


def _matmuls(transpose_x: bool):
    """4 matmuls of a [128, 128] bf16 ``x`` by a [128, 512] tile each, x passed as written (``nl.matmul(x, y)``) or
    already transposed (``transpose_x=True``): the same TensorE work but for the transposes the compiler inserts (x
    is loaded in the loop: a transpose of one x made before it would be loop-invariant, hoisted and charged once)."""
    @nki.jit(platform_target="trn2")
    def k(a, b):
        out = nl.ndarray((4, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            acc = nl.matmul(nl.load(a[i]), nl.load(b[i]), transpose_x=transpose_x)  # MATMUL LINE
            nl.store(out[i], value=nl.copy(acc))
        return out

    return k, (nt.tensor[[4, 128, 128], nl.bfloat16], nt.tensor[[4, 128, 512], nl.bfloat16])


def test_nl_matmuls_inserted_transposes_are_named_in_the_profile():
    """``nl.matmul(x, y)`` "lowers to nc_matmul(transpose(x), y). To avoid this extra transpose instruction being
    inserted, use x.T and transpose_x=True" (aws-neuron-sdk v2.26.0 general/nki/api/nki/language/__init__.py:1044-1050;
    NKI 0.6: "If False, an additional transpose will be inserted", nki/api/nki/language/__init__.py:2220-2221).  The
    model has always charged that transpose (TensorE time); the profile's "Why:" line now says so at the matmul's line,
    with how many and their TensorE time, and says nothing of it when x comes transposed."""
    from nkisim import api

    k, args = _matmuls(False)
    prof = api.profile_kernel(k, *args)
    [why] = [r for r in prof.estimate.reasons if r.mechanism == "inserted_transpose"]
    line = next(n for n, text in enumerate(open(__file__).read().splitlines(), 1) if text.endswith("# MATMUL LINE"))
    prm = get_target("trn2").params
    assert (why.line, why.count) == (line, 4)
    assert why.us == pytest.approx(4 * (128 + prm.pe.matmul_overhead_cycles) / prm.clock_ghz.pe / 1000)
    text = prof.summary_text()
    assert f"Why: line {line}: nl.matmul(x, y) without transpose_x=True: the compiler inserted 4 transposes of x on " \
           "the Tensor Engine" in text, text
    k2, args2 = _matmuls(True)
    prof2 = api.profile_kernel(k2, *args2)
    assert "inserted_transpose" not in {r.mechanism for r in prof2.estimate.reasons}
    assert "transpose_x" not in prof2.summary_text()


def test_dma_transposes_are_named_with_the_queue_time_they_add():
    """The profile's "Why:" line for trn2's DMA transposes (the rates test above): how many, and the DMA queue time
    they took beyond plain copies of the same bytes, summed over their queues -- from HBM into whole [128, 16] blocks
    at AWS's "up to 90%", so 1/0.9 - 1 of a copy's data time; the loop's plain stores are not counted."""
    from nkisim.cost.model import estimate

    prm = get_target("trn2").params
    trace = _dma_transposes((128, 128), nl.float32, _hbm_load_transpose)
    [why] = [r for r in estimate(trace, "trn2").reasons if r.mechanism == "dma_transpose"]
    assert why.count == 4
    assert why.us == pytest.approx(4 * 128 * 128 * 4 / prm.dma.bytes_per_ns * (1 / 0.9 - 1) / 1000)
    assert why.text().startswith(f"line {why.line}: 4 DMAs transposed as they moved, slower than plain copies of the "
                                 f"same bytes: {why.us:.1f} us more DMA queue time in all")
    assert "up to 90% DMA throughput utilization" in why.text()
    copies = _dma_transposes((128, 128), nl.float32, lambda a: a)  # the same loop without the transpose
    assert "dma_transpose" not in {r.mechanism for r in estimate(copies, "trn2").reasons}
