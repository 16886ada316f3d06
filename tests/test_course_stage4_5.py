"""Stages 4 (masked RMSNorm) and 5 (multi-core SPMD) end to end: notebooks under a real Jupyter kernel, the
grader's verdicts on reference and mutant kernels, grid/target plumbing, and the two-core cost estimate."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from course_testing import (
    grade_in_process,
    inprocess_mutant_test,
    outputs_text,
    run_reference_notebook,
    solution_variant,
)
from course_testing import write as write_module

from nkilab import check, grade_report
from nkilab.course.questions import QUESTIONS
from nkilab.course.stages.s04_masked_rmsnorm import EPS, rmsnorm_reference

STAGES = {"04_masked_rmsnorm": ("rmsnorm", "rmsnorm_fast"), "05_multicore_spmd": ("vector_add_spmd", "rmsnorm_2core")}

# stage 4 and 5 kernels also use math and nki.isa
HEADER = ("import math\n\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\n"
          "import neuronxcc.nki.language as nl\nimport numpy as np\n\n\n")
write = functools.partial(write_module, header=HEADER)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


# --------------------------------------------------------------------------- notebooks under Jupyter


@pytest.mark.slow
@pytest.mark.parametrize("stage", sorted(STAGES))
def test_reference_notebook_runs_and_earns_full_marks(stage):
    nb = run_reference_notebook(stage, {"q1_grade", "q2_grade"})
    if stage.startswith("04"):
        assert "slice 128:256 is out of bounds for dimension 0 of 'x' with size 200" in outputs_text(nb, "demo_nomask")
        assert "copy with a smaller last tile is exact: True" in outputs_text(nb, "demo_mask")
        assert "row_sum (4, 1)" in outputs_text(nb, "demo_broadcast")
        bound = outputs_text(nb, "bound_demo")
        assert "bandwidth bound (trn2 estimate)" in bound and bound.count("% of the bandwidth bound") == 2
    else:
        assert "nan" in outputs_text(nb, "demo_grid_bug")
        assert "one instance, all 8 rows, gives the same: True" in outputs_text(nb, "demo_grid")
        assert "trn1, kernel[2]: NKIValueError: kernel[2]: logical NeuronCore degree 2 is not supported on trn1" \
            in outputs_text(nb, "demo_trn1")
        table = outputs_text(nb, "speedup_demo")
        assert "latency on trn2 (us; estimate: nkisim cost model, trn2)" in table
        last = table.strip().splitlines()[-1].split()
        assert last[0] == "8192" and float(last[-1].rstrip("x")) > 1.7, table


# --------------------------------------------------------------------------- reference kernels and the reference


def test_numpy_reference_is_torch_rms_norm():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, g = rng.standard_normal((37, 300)), rng.standard_normal(300)
    want = torch.nn.functional.rms_norm(torch.from_numpy(a), (300,), weight=torch.from_numpy(g), eps=EPS).numpy()
    np.testing.assert_allclose(rmsnorm_reference(a, g), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("qid", [q for qs in STAGES.values() for q in qs])
def test_reference_kernels_full_marks(qid):
    q = QUESTIONS[qid]
    r = grade_in_process(qid, q.solution_path, 123)
    assert r.points == q.points, (qid, r)


def test_stage_registries():
    rows = {c.shape[0] for c in QUESTIONS["rmsnorm"].public + QUESTIONS["rmsnorm"].hidden}
    assert {1, 127, 129, 1000} <= rows
    for qid in ("rmsnorm", "rmsnorm_fast", "rmsnorm_2core"):
        q = QUESTIONS[qid]
        assert {c.dtype for c in q.public + q.hidden} == {"float32", "bfloat16"}
        assert all(c.arg_shapes == (c.shape, (c.shape[1],)) for c in q.public + q.hidden)
    assert QUESTIONS["vector_add_spmd"].grid == (4,) and QUESTIONS["rmsnorm_2core"].grid == ({"nc": 2},)
    assert all(QUESTIONS[q].target == "trn2" for q in STAGES["05_multicore_spmd"])


def test_fast_kernel_is_faster_than_the_plain_one(tmp_path):
    # Q1, the straightforward kernel, is graded on correctness only: all 4 points, no timed run, no speed line
    plain = grade_in_process("rmsnorm", QUESTIONS["rmsnorm"].solution_path, 1)
    assert (plain.points, plain.correctness, plain.speed) == (4.0, 4.0, 0.0)
    assert plain.evaluation.latency_us is None and "Speed" not in plain.text()
    # handed in as Q2 it is correct and earns only half the speed points of the optimized tier
    body = solution_variant("04_masked_rmsnorm", "rmsnorm", name="rmsnorm_fast")
    as_fast = grade_in_process("rmsnorm_fast", write(tmp_path, "plain_as_fast.py", body), 1)
    assert 1.2 < as_fast.evaluation.ratio < 2.0
    assert (as_fast.correctness, as_fast.speed) == (1.0, 1.5)


# --------------------------------------------------------------------------- mutants

RMS_PLAIN = """
    @nki.jit
    def {name}(a, g):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        n_rows, n_cols = a.shape
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(n_cols)[None, :]
        g_b = nl.load(g.reshape((1, n_cols))[nl.arange(1)[:, None], i_f]).broadcast_to((128, n_cols))
        for i in nl.affine_range({tiles}):
            rows = i * 128 + i_p
            m = {mask}
            t = nl.load(a[rows, i_f], mask=m)
            ms = nl.sum(nl.square(t, dtype=nl.float32, mask=m), axis=[1], mask=m) / {count}
            y = nl.multiply(t, nl.rsqrt(ms + 1e-6, mask=m), mask=m)
            y = nl.multiply(y, {weight}, dtype=a.dtype, mask=m)
            nl.store(out[rows, i_f], value=y, mask=m)
        return out
    """
GOOD = {"tiles": "math.ceil(n_rows / 128)", "mask": "rows < n_rows", "count": "n_cols", "weight": "g_b"}


def rms_mutant(name: str, **change: str) -> str:
    return RMS_PLAIN.format(name=name, **{**GOOD, **change})


WRONG_AXIS = RMS_PLAIN.replace(
    "g_b = nl.load(g.reshape((1, n_cols))[nl.arange(1)[:, None], i_f]).broadcast_to((128, n_cols))",
    "g_b = nl.load(g.reshape((n_cols, 1))[i_p, nl.arange(1)[None, :]], mask=(i_p < n_cols))")

MUTANTS = {
    # stage 4: the last, partial tile without a mask is an out-of-bounds access (compile error)
    "rms_no_mask": ("rmsnorm", rms_mutant("rmsnorm", mask="None")),
    # ... and without the partial tile at all, its rows are never stored
    "rms_ragged_tile_dropped": ("rmsnorm", rms_mutant("rmsnorm", tiles="n_rows // 128")),
    "rms_mean_over_partitions": ("rmsnorm", rms_mutant("rmsnorm", count="128")),
    "rms_weight_not_applied": ("rmsnorm", rms_mutant("rmsnorm", weight="1.0")),
    # g as a (P, 1) column: broadcast along the free axis (g[row] per row) instead of along the partitions
    "rms_weight_on_wrong_axis": ("rmsnorm", WRONG_AXIS.format(name="rmsnorm", **GOOD)),
    "fast_sum_not_mean": ("rmsnorm_fast", """
        @nki.jit
        def rmsnorm_fast(a, g):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            n_rows, n_cols = a.shape
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(n_cols)[None, :]
            g_b = nl.load(g.reshape((1, n_cols))[nl.arange(1)[:, None], i_f]).broadcast_to((128, n_cols))
            for i in nl.affine_range(math.ceil(n_rows / 128)):
                rows = i * 128 + i_p
                m = rows < n_rows
                t = nl.load(a[rows, i_f], mask=m)
                s = nl.ndarray((128, 1), dtype=nl.float32)
                nisa.activation_reduce(op=nl.square, data=t, reduce_op=np.add, reduce_res=s[i_p, 0], mask=m,
                                       dtype=nl.float32)
                r = nl.rsqrt(nisa.tensor_scalar(s, np.add, 1e-6, mask=m), mask=m)
                y = nisa.activation(op=nl.copy, data=t, scale=r, mask=m)
                nl.store(out[rows, i_f], value=nl.multiply(y, g_b, dtype=a.dtype, mask=m), mask=m)
            return out
        """),
    "fast_ragged_tile_dropped": ("rmsnorm_fast", rms_mutant("rmsnorm_fast", tiles="n_rows // 128")),
    # stage 5: every instance writes block 0
    "spmd_ignores_program_id": ("vector_add_spmd", """
        @nki.jit
        def vector_add_spmd(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            block = a.shape[0] // nl.num_programs(0)
            for t in nl.affine_range(block // 128):
                r0 = t * 128
                nl.store(out[r0:r0 + 128, :], value=nl.add(nl.load(a[r0:r0 + 128, :]), nl.load(b[r0:r0 + 128, :])))
            return out
        """),
    # the block size assumes 2 instances: instances 2 and 3 of the [4] grid read past the end
    "spmd_assumes_two_instances": ("vector_add_spmd", """
        @nki.jit
        def vector_add_spmd(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            block = a.shape[0] // 2
            first = nl.program_id(0) * block
            for t in nl.affine_range(block // 128):
                r0 = first + t * 128
                nl.store(out[r0:r0 + 128, :], value=nl.add(nl.load(a[r0:r0 + 128, :]), nl.load(b[r0:r0 + 128, :])))
            return out
        """),
    "spmd_last_instance_dropped": ("vector_add_spmd", """
        @nki.jit
        def vector_add_spmd(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            block = a.shape[0] // nl.num_programs(0)
            first = nl.program_id(0) * block
            if nl.program_id(0) == nl.num_programs(0) - 1:
                return out
            for t in nl.affine_range(block // 128):
                r0 = first + t * 128
                nl.store(out[r0:r0 + 128, :], value=nl.add(nl.load(a[r0:r0 + 128, :]), nl.load(b[r0:r0 + 128, :])))
            return out
        """),
    # tiles split with floor division: an odd number of row tiles loses the last one
    "two_core_floor_split": ("rmsnorm_2core", RMS_PLAIN.format(
        name="rmsnorm_2core", tiles="(math.ceil(n_rows / 128) // nl.num_programs(0))", mask="rows < n_rows",
        count="n_cols", weight="g_b").replace(
            "rows = i * 128 + i_p",
            "rows = (nl.program_id(0) * (math.ceil(n_rows / 128) // nl.num_programs(0)) + i) * 128 + i_p")),
    # both instances normalise the first half: the second half of the rows is never written
    "two_core_same_rows": ("rmsnorm_2core", RMS_PLAIN.format(
        name="rmsnorm_2core", tiles="math.ceil(math.ceil(n_rows / 128) / nl.num_programs(0))", mask="rows < n_rows",
        count="n_cols", weight="g_b")),
}


test_mutants_lose_correctness_points = inprocess_mutant_test(MUTANTS, seed=7, header=HEADER)


@pytest.mark.processes
def test_check_explains_the_missing_mask(tmp_path, capsys):
    path = write(tmp_path, "nomask.py", MUTANTS["rms_no_mask"][1])
    result = check("rmsnorm", path)
    text = capsys.readouterr().out
    assert not result.passed
    assert "[ok  ] public case 1/5" in text  # 256 rows: two whole tiles
    assert "NKIIndexError at nomask.py line" in text and "Out-of-bound access" in text

    path = write(tmp_path, "dropped.py", MUTANTS["rms_ragged_tile_dropped"][1])
    check("rmsnorm", path)
    text = capsys.readouterr().out
    assert "row 128 (row tile 1, partition 0)" in text and "were those elements ever stored?" in text


# --------------------------------------------------------------------------- grid / target plumbing


@pytest.mark.processes
def test_grid_questions_run_in_process_and_ignore_the_default_target(capsys, monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")  # the question forces trn2 regardless
    for qid in STAGES["05_multicore_spmd"]:
        kernel = load(QUESTIONS[qid].solution_path, qid)
        assert check(qid, kernel).passed, qid
        assert "estimate (nkisim cost model, trn2)" in capsys.readouterr().out
    r = grade_report("rmsnorm_2core", QUESTIONS["rmsnorm_2core"].solution_path, seed=5, target="trn1", verbose=False)
    assert r.points == QUESTIONS["rmsnorm_2core"].points and r.evaluation.target == "trn2"


def test_multi_core_grid_on_trn1_is_the_compiler_error():
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl

    kernel = load(QUESTIONS["rmsnorm_2core"].solution_path, "rmsnorm_2core")
    a, g = np.ones((256, 64), np.float32), np.ones(64, np.float32)
    with pytest.raises(Exception, match="SPMD grid with multi neuron cores is not supported on trn1"):
        nki.jit(kernel.func, platform_target="trn1")[nl.nc(2)](a, g)


def test_two_cores_nearly_halve_a_memory_bound_kernel():
    """SBUF is per core: the instances on core 1 must not wait for core 0's rotating buffers."""
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl
    from neuronxcc.nki import typing as nt

    kernel = load(QUESTIONS["rmsnorm_2core"].solution_path, "rmsnorm_2core")

    def lat(grid):
        bench = nki.benchmark(kernel, platform_target="trn2")[grid]
        bench(nt.tensor[[8192, 2048], nl.float32], nt.tensor[[2048], nl.float32])
        return bench.benchmark_result.nc_latency.get_latency_percentile(99)

    one, serial, cores = lat((1,)), lat((2,)), lat((nl.nc(2),))
    # instances on one core run one after another: the rows' work once, plus what each instance repeats (its own
    # load of g onto every partition, one DMA of 1 MiB: about 2.4 us of the 400)
    assert serial == pytest.approx(one, rel=0.02)
    assert 1.8 < one / cores < 2.0  # each core repeats that load too (a shared rotating buffer would leave it near 1)
