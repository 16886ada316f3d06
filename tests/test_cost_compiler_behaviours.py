"""The compiler behaviours issue 31 added to the cost model, each with the AWS text it follows, a kernel that shows
it and its variant that must not, and the "Why:" line the profile prints for it (cost/reasons.py).

- ``sequential_range`` keeps a loop's accesses to a tensor made outside it in program order ("The NKI compiler does
  not try to re-order or parallelize the executions of loops, and runs them in sequence order", aws-neuron-sdk
  v2.27.1 nki/get-started/about/index.rst:140); ``affine_range`` iterations overlap; a kernel that skips the middle
  end has both alike (CS149 2025's handout).  The mechanism predates issue 31; what is new is that the profile and
  check() name it.
- The compiler's scheduler may issue an instruction ahead of earlier ones of its engine, into its idle time
  ("Without this directive, the compiler scheduler is free to reorder independent operations", ``nl.no_reorder``;
  affine loops allow "the compiler to unroll and optimize code ordering between different iterations of the loop",
  v2.29.1 nki/get-started/about/index.rst:159); a ``sequential_range`` loop's instructions keep their order
  (cost/lanes.py).
- Renaming: a legacy tile made outside a loop and written whole in each iteration gets a buffer per value (the
  allocator's "key performance goal ... is to achieve instruction parallelism across different engines", v2.26
  general/nki/nki_direct_allocation_guide.rst:50-53); NKI 0.6 keeps one buffer and serialises ("the loop carries a
  dependency", nki/migration/index.rst:1472-1496).
- A copy whose engine the kernel leaves to the compiler runs where it finishes first ("compiler selects best engine
  based on engine workload", v2.26 nki.isa.tensor_copy's ``engine``); an NKI 0.6 copy on NeuronCore-v2 never on
  ScalarE ("On NeuronCore v2, tensor_copy is not supported on the Scalar Engine").

Numbers are cost-model estimates (deterministic), never wall-clock times.
"""

from __future__ import annotations

import inspect

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki import typing as nt

from nkisim import api
from nkisim.core.target import get as get_target
from nkisim.cost import model, report


def _profile(kernel, *args, target: str = "trn2") -> report.Profile:
    return api.profile_kernel(kernel, *args, target=target)


def _why(prof: report.Profile) -> list[str]:
    return [line.strip() for line in prof.summary_text().splitlines() if line.strip().startswith("Why:")]


def _copies_then_matmul(loop, skip_middle_end: bool = False):
    """Per iteration: a row of ``x`` scaled into a tile made in the loop, multiplied on TensorE, and stored into its
    own part of ``out``, which is made outside the loop."""

    def conv(x, w):
        out = nl.ndarray((16, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        ws = nl.load(w)
        xs = nl.load(x)
        for t in loop(16):
            row = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
            row[...] = nl.multiply(xs[:, t * 4:t * 4 + 512], 2.0)
            acc = nl.matmul(ws, row, transpose_x=True)
            nl.store(out[t], value=acc)
        return out

    conv.__name__ = f"conv_{loop.__name__}"
    if skip_middle_end:
        conv = nki.compiler.skip_middle_end_transformations(conv)
    return nki.jit(conv)


CONV_ARGS = (nt.tensor[[128, 576], nl.bfloat16], nt.tensor[[128, 128], nl.bfloat16])


def test_sequential_range_keeps_a_carried_tensor_in_program_order_and_says_so():
    seq = _profile(_copies_then_matmul(nl.sequential_range), *CONV_ARGS)
    aff = _profile(_copies_then_matmul(nl.affine_range), *CONV_ARGS)
    # each store into ``out`` waits for the previous one to complete (~1300 ns each, spec §4.4); affine stores overlap
    assert seq.estimate.total_us >= 16 * 1.3 and seq.estimate.total_us > 1.3 * aff.estimate.total_us
    why = _why(seq)
    assert any("sequential_range keeps a loop's accesses to a tensor made outside it in program order: 15 "
               "instructions waited" in w for w in why), why
    assert not any("sequential_range" in w for w in _why(aff))
    # without the middle end both loop kinds are alike (CS149 2025's handout: "effectively the same")
    seq_raw = _profile(_copies_then_matmul(nl.sequential_range, True), *CONV_ARGS)
    aff_raw = _profile(_copies_then_matmul(nl.affine_range, True), *CONV_ARGS)
    assert seq_raw.estimate.total_us == aff_raw.estimate.total_us
    assert not any("sequential_range" in w for w in _why(seq_raw))


def _rows_of_taps(loop, skip_middle_end: bool = False):
    """robertpare17's conv2d (CS149 2024) in small: per row (``affine_range``), six filter taps (``loop``), each an
    input window copied into a tile made in the tap's loop and multiplied into the row's PSUM accumulator; then the
    row's result is moved out of PSUM, biased and stored."""

    def conv(x, w):
        out = nl.ndarray((8, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        ws = nl.load(w)
        for r in nl.affine_range(8):
            strip = nl.load(x[r])
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for t in loop(6):
                win = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                win[...] = nl.copy(strip[:, t:t + 512])  # TAP COPY
                acc += nl.matmul(ws, win, transpose_x=True)
            res = nl.copy(acc, dtype=nl.float32)
            nl.store(out[r], value=nl.add(res, 1.0))
        return out

    conv.__name__ = f"taps_{loop.__name__}"
    if skip_middle_end:
        conv = nki.compiler.skip_middle_end_transformations(conv)
    return nki.jit(conv)


TAP_ARGS = (nt.tensor[[8, 128, 520], nl.bfloat16], nt.tensor[[128, 128], nl.bfloat16])


def test_affine_range_iterations_are_reordered_on_an_engine_and_sequential_range_ones_are_not():
    """The next row's window copies run on ScalarE while this row's result waits for TensorE, ahead of the copy out of
    PSUM that comes first in program order, when the tap loop is ``affine_range``; under ``sequential_range`` they
    wait their turn and TensorE idles at every row (robertpare17's kernel: 1332 us on trn1 with sequential filter
    loops, 1060 us with affine ones; the model ties them without the mechanism).  The same work either way; the
    profile's "Why:" line names the loop kind at the copy's line."""
    seq = _profile(_rows_of_taps(nl.sequential_range), *TAP_ARGS, target="trn1")
    aff = _profile(_rows_of_taps(nl.affine_range), *TAP_ARGS, target="trn1")
    assert seq.estimate.engine_busy_us == aff.estimate.engine_busy_us
    assert seq.estimate.total_us > 1.05 * aff.estimate.total_us, (seq.estimate.total_us, aff.estimate.total_us)
    line = next(n for n, text in enumerate(inspect.getsource(_rows_of_taps).splitlines(), 0) if "TAP COPY" in text)
    line += _rows_of_taps.__code__.co_firstlineno
    why = [w for w in _why(seq) if f"line {line}: sequential_range runs a loop's iterations in sequence order: " in w]
    assert len(why) == 1 and "instructions whose data was ready waited behind earlier instructions of their " \
        "engine" in why[0] and "Scheduling options for loop" in why[0], _why(seq)
    assert not any("sequential_range" in w for w in _why(aff))
    # a kernel that skips the middle end keeps every engine's order (the loop kinds alike, as for the carried rule)
    seq_raw = _profile(_rows_of_taps(nl.sequential_range, True), *TAP_ARGS, target="trn1")
    aff_raw = _profile(_rows_of_taps(nl.affine_range, True), *TAP_ARGS, target="trn1")
    assert seq_raw.estimate.total_us == aff_raw.estimate.total_us
    assert not any("sequential_range" in w for w in _why(seq_raw))


def _one_row_buffer(whole: bool):
    """A legacy kernel with one row tile made before its loop and loaded in every iteration (``whole``: the load
    covers the tile; else it loads all but the last column, so the tile is never written whole)."""

    @nki.compiler.skip_middle_end_transformations
    @nki.jit
    def rows(x, w):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        ws = nl.load(w)
        row = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        for i in nl.sequential_range(24):  # as in CS149 2025 xaviergonzalez conv2d (middle end skipped)
            if whole:
                nisa.dma_copy(src=x[i], dst=row)
            else:
                nisa.dma_copy(src=x[i, :, 0:511], dst=row[:, 0:511])
            for _j in nl.affine_range(4):
                acc += nisa.nc_matmul(ws, row)
        nl.store(out, value=acc)
        return out

    return rows


ROW_ARGS = (nt.tensor[[24, 128, 512], nl.bfloat16], nt.tensor[[128, 128], nl.bfloat16])


def test_a_legacy_tile_written_whole_in_each_iteration_is_renamed():
    renamed = _profile(_one_row_buffer(True), *ROW_ARGS)
    shared = _profile(_one_row_buffer(False), *ROW_ARGS)
    ev = renamed.events
    loads = [e for e in ev if e.instruction.engine == "dma" and e.instruction.loops]  # the row loads (the store is after)
    mms = [e for e in ev if e.engine == "pe" and e.instruction.loops]
    assert len(loads) == 24 and len(mms) == 96
    # the second row's load runs while the first row's matmuls do (it writes another buffer): it is done first
    assert loads[1].end_ns < mms[3].end_ns
    # the tile never written whole keeps one buffer: each load's data moves after the previous row's last matmul
    # (then the ~1300 ns a DMA takes to complete, spec §4.4)
    sh_loads = [e for e in shared.events if e.instruction.engine == "dma" and e.instruction.loops]
    sh_mms = [e for e in shared.events if e.engine == "pe" and e.instruction.loops]
    assert len(sh_loads) == 24 and sh_loads[1].end_ns >= sh_mms[3].end_ns + 1300
    assert renamed.estimate.total_us < shared.estimate.total_us
    why = _why(renamed)
    assert any("written whole 24 times gets a new buffer for each value" in w for w in why), why
    assert not any("new buffer" in w for w in _why(shared))
    # the values rotate over the target's renamed_rotation buffers (6 on trn2, fitted): with 2, loads wait longer
    prm = get_target("trn2").params
    trace = renamed.trace
    assert prm.buffers.renamed_rotation == 6
    six = model.estimate(trace, "trn2", prm=prm).total_us
    prm = prm.replace("buffers", "renamed_rotation", 2)
    assert model.estimate(trace, "trn2", prm=prm).total_us > 1.1 * six


def test_disable_dge_makes_no_descriptors_at_run_time():
    """A kernel that skips the middle end pays the hardware DGE per DMA of a rolled loop (trn2 ``dge_ns``), unless it
    is compiled with ``--disable-dge`` ("these optimizations can be disabled using the --disable-dge compiler command
    line option or the framework-level option additional_compile_opt=" --disable-dge"", aws-neuron-sdk v2.26.0
    release-notes/compiler/neuronx-cc/index.rst:62), as CS149's harness does when it profiles."""

    @nki.compiler.skip_middle_end_transformations
    @nki.jit
    def gather_rows(a):
        out = nl.ndarray((128, 64 * 64), dtype=a.dtype, buffer=nl.shared_hbm)
        rows = nl.ndarray((128, 64 * 64), dtype=a.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(64):
            rows[:, i * 64:(i + 1) * 64] = nl.load(a[i])
        nl.store(out, value=rows)
        return out

    lat = {}
    for opt in ("", "--disable-dge"):
        b = nki.benchmark(warmup=1, iters=1, platform_target="trn2", additional_compile_opt=opt)(gather_rows)
        b(nt.tensor[[64, 128, 64], nl.float32])
        lat[opt] = b.benchmark_result.nc_latency.get_latency_percentile(99)
    dge_us = get_target("trn2").params.dma.dge_ns / 1000
    # 64 independent loads: their descriptors, made one after another by the one DGE (64 x dge_ns at least), bound
    # the kernel; made ahead of time they cost nothing at run time, and at least half of that time goes
    assert lat[""] >= 64 * dge_us and lat[""] - lat["--disable-dge"] >= 0.5 * 64 * dge_us


def _copies(dialect_jit):
    @dialect_jit
    def copies(x):
        out = nl.ndarray((8, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        xs = nl.load(x)
        for i in nl.affine_range(8):
            t = nisa.tensor_copy(xs)
            nl.store(out[i], value=t)
        return out

    return copies


def test_a_copy_left_to_the_compiler_runs_on_the_engine_free_first():
    prof = _profile(_copies(nki.jit), nt.tensor[[128, 512], nl.float32], target="trn2")
    table = {r["source"]: r["engines"] for r in prof.line_table()}
    assert table["t = nisa.tensor_copy(xs)"] == ["act", "dve"]
    assert any("copies left to the compiler ran on ScalarE rather than VectorE" in w for w in _why(prof))
    # the kernel's own choice is kept
    own = _profile(nki.jit(_pinned_copies), nt.tensor[[128, 512], nl.float32], target="trn2")
    assert {r["source"]: r["engines"] for r in own.line_table()}[
        "t = nisa.tensor_copy(xs, engine=nisa.vector_engine)"] == ["dve"]


def _pinned_copies(x):
    out = nl.ndarray((8, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    xs = nl.load(x)
    for i in nl.affine_range(8):
        t = nisa.tensor_copy(xs, engine=nisa.vector_engine)
        nl.store(out[i], value=t)
    return out


# --- NKI 0.6: the same kernels, where AWS says the compiler does otherwise ------------------------------------------
def _nki06():
    import nkisim

    nkisim.install()
    import nki
    import nki.isa as nisa06
    import nki.language as nl06

    return nki, nisa06, nl06


def test_nki06_keeps_one_buffer_for_a_tile_made_before_its_loop():
    """"the execution will be serialized because the loop carries a dependency on add_buf ... it is important to
    hoist the tensor down inside the loop" (aws-neuron-sdk nki/migration/index.rst:1472-1496): no renaming."""
    nki06, nisa06, nl06 = _nki06()

    def rows(x, w):
        out = nl06.ndarray((128, 512), dtype=nl06.float32, buffer=nl06.shared_hbm)
        ws = nl06.ndarray((128, 128), dtype=nl06.bfloat16, buffer=nl06.sbuf)
        nisa06.dma_copy(dst=ws, src=w)
        row = nl06.ndarray((128, 512), dtype=nl06.bfloat16, buffer=nl06.sbuf)
        acc = nl06.ndarray((128, 512), dtype=nl06.float32, buffer=nl06.psum)
        res = nl06.ndarray((128, 512), dtype=nl06.float32, buffer=nl06.sbuf)
        for i in nl06.sequential_range(24):
            nisa06.dma_copy(dst=row, src=x[i])
            for _j in nl06.affine_range(4):
                nisa06.nc_matmul(dst=acc, stationary=ws, moving=row)
        nisa06.tensor_copy(dst=res, src=acc)
        nisa06.dma_copy(dst=out, src=res)
        return out

    prof = api.profile_kernel(nki06.jit(rows), nt.tensor[[24, 128, 512], nl.bfloat16],
                              nt.tensor[[128, 128], nl.bfloat16], target="trn2")
    loads = [e for e in prof.events if e.instruction.engine == "dma"][1:-1]  # (every 0.6 loop is unrolled in the trace)
    mms = [e for e in prof.events if e.engine == "pe"]
    assert len(loads) == 24 and len(mms) == 96
    assert loads[1].end_ns >= mms[3].end_ns + 1300
    assert not any("new buffer" in w for w in _why(prof))


def test_nki06_tensor_copy_on_neuroncore_v2_stays_on_vectore():
    nki06, nisa06, nl06 = _nki06()

    def copies(x):
        out = nl06.ndarray((8, 128, 512), dtype=nl06.float32, buffer=nl06.shared_hbm)
        xs = nl06.ndarray((128, 512), dtype=nl06.float32, buffer=nl06.sbuf)
        nisa06.dma_copy(dst=xs, src=x)
        for i in nl06.affine_range(8):
            t = nl06.ndarray((128, 512), dtype=nl06.float32, buffer=nl06.sbuf)
            nisa06.tensor_copy(dst=t, src=xs)
            nisa06.dma_copy(dst=out[i], src=t)
        return out

    engines = {}
    for target in ("trn1", "trn2"):
        prof = api.profile_kernel(nki06.jit(copies), nt.tensor[[128, 512], nl.float32], target=target)
        engines[target] = {r["source"]: r["engines"] for r in prof.line_table()}["nisa06.tensor_copy(dst=t, src=xs)"]
    assert engines == {"trn1": ["dve"], "trn2": ["act", "dve"]}
