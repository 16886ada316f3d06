"""Stage 8 (conv2d + max pool, fused; CS149's capstone) end to end: the notebook under a real Jupyter kernel, the
reference kernels at full marks, mutants losing correctness points, the two speed tiers (relaxed and optimised
reference) giving 0, half and all speed points, and a kernel written to CS149's task statement matching PyTorch's
conv2d + max_pool2d in float16 and float32 through the course's harness."""

from __future__ import annotations

import numpy as np
import pytest
from course_testing import (
    REPO,
    grade_in_process,
    inprocess_mutant_test,
    outputs_text,
    run_reference_notebook,
    solution_variant,
    write,
)

from nkilab.course.questions import QUESTIONS, Case, Question
from nkilab.course.stages.s08_conv2d_maxpool import conv2d_maxpool_reference
from nkilab.judge.evaluate import evaluate, record
from nkilab.kernels.modules import load_kernel

STAGE = "08_conv2d_maxpool"
QIDS = ("conv2d_maxpool", "conv2d_maxpool_fast")
ISA_HEADER = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\n"
              "import numpy as np\n\n\n")


def torch_conv_pool(x: np.ndarray, w: np.ndarray, bias: np.ndarray, pool: int = 2) -> np.ndarray:
    torch = pytest.importorskip("torch")
    y = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(bias))
    return (torch.nn.functional.max_pool2d(y, pool) if pool > 1 else y).numpy()


@pytest.mark.slow
def test_reference_notebook_runs_and_earns_full_marks():
    nb = run_reference_notebook(STAGE, {"q1_grade", "q2_grade"})
    assert float(outputs_text(nb, "demo_taps").split("=")[1]) < 1e-12
    profile = outputs_text(nb, "profile_demo")
    assert "cost-model estimate" in profile and "target trn2" in profile
    fill = outputs_text(nb, "fill_demo")
    assert "one row per matmul 14256 PE cycles, four rows per matmul 10512" in fill  # (126+72)*72 vs (512+72)*18
    mfu = outputs_text(nb, "mfu_demo").splitlines()
    assert "9.513 GFLOP" in mfu[0]
    assert "float16  latency" in mfu[1] and "PE peak 79 TFLOPS" in mfu[1] and "PE peak 20 TFLOPS" in mfu[2]
    us = {line.split()[0]: float(line.split()[2]) for line in mfu[1:]}
    mfu16, mfu32 = 9.51e9 / (us["float16"] * 79e6), 9.51e9 / (us["float32"] * 20e6)
    assert 0.7 < mfu16 < mfu32 < 0.95, (mfu16, mfu32)  # what the written answer's model solution says


@pytest.mark.parametrize("qid", QIDS)
def test_reference_kernels_full_marks(qid):
    q = QUESTIONS[qid]
    r = grade_in_process(qid, q.solution_path, 321)
    assert r.points == q.points, (qid, r)


def test_the_numpy_reference_is_pytorchs_conv2d_and_max_pool2d():
    rng = np.random.default_rng(7)
    for b, c_in, c_out, h, w, k in [(2, 3, 5, 8, 10, 3), (1, 130, 7, 9, 9, 2), (1, 4, 4, 6, 6, 1), (1, 2, 3, 9, 7, 5)]:
        x, wt, bias = rng.standard_normal((b, c_in, h, w)), rng.standard_normal((c_out, c_in, k, k)), \
            rng.standard_normal(c_out)
        np.testing.assert_allclose(conv2d_maxpool_reference(x, wt, bias), torch_conv_pool(x, wt, bias), rtol=1e-12,
                                   atol=1e-12)


def test_cases_follow_each_questions_rules():
    for qid in QIDS:
        q = QUESTIONS[qid]
        assert {c.dtype for c in q.public + q.hidden} == {"float32", "float16"}
        for c in q.public + q.hidden + (q.speed_case,):
            (b, c_in, h, w), (c_out, c_in2, k, k2), (c_out2,) = c.arg_shapes
            assert c_in == c_in2 and c_out == c_out2 and k == k2 and 1 <= k <= 5, c
            assert (h - k + 1) % 2 == 0 and (w - k + 1) % 2 == 0 and w - k + 1 <= 512 and max(c_in, c_out) <= 512, c
            if qid == "conv2d_maxpool_fast":
                assert c_in % 128 == 0 and c_out % 128 == 0 and w <= 256, c
        # the longest fp32 sums the stated tolerance covers (C_in * K^2 up to 512 * 25 by the rules)
        assert max(c.arg_shapes[0][1] * c.arg_shapes[1][2] ** 2 for c in q.hidden + q.public) <= 512 * 25


@pytest.mark.slow
def test_reference_kernels_stay_inside_the_tolerances_across_seeds():
    """The stated tolerances have room: the reference kernels' worst error over three seeds' cases is well inside."""
    from nkilab.judge.evaluate import case_data

    for qid in QIDS:
        q = QUESTIONS[qid]
        kernel = load_kernel(q.solution_path, q.function)
        from nkisim import api

        for seed in (1, 2, 3):
            for i, case in enumerate(q.public + q.hidden):
                d = case_data(q, case, seed, i)
                got = api.launch(kernel, d.args, target="trn2").outputs.astype(np.float64)
                rtol, atol = q.tolerance(case.dtype)
                used = np.abs(got - d.expected.astype(np.float64)) / (atol + rtol * np.abs(d.expected.astype(np.float64)))
                assert used.max() < 0.6, (qid, case, seed, used.max())


def _q1(*edits: tuple[str, str]) -> str:
    return solution_variant(STAGE, "conv2d_maxpool", *edits)


MUTANTS = {
    # tap (i, j) reads input row i + 1: every tap one row too low for the top conv row of each pair
    "tap_offset_off_by_one": ("conv2d_maxpool", _q1(("x_rows[:, i, j:j + Wo]", "x_rows[:, i + 1, j:j + Wo]"))),
    # PSUM zeroed for every input-channel tile: only the last tile's 128 channels are summed
    "no_accumulation_over_input_channel_tiles": ("conv2d_maxpool", _q1(
        ("                top = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)\n"
         "                bottom = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)\n"
         "                for ci in range(n_ci):\n",
         "                for ci in range(n_ci):\n"
         "                    top = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)\n"
         "                    bottom = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)\n"))),
    # the ragged last block of output channels starts at co * nco instead of co * 128: it computes and stores
    # the wrong channels, over part of the previous block's output
    "wrong_output_tile_on_a_ragged_edge": ("conv2d_maxpool", _q1(
        ("co0, nco = co * 128, min(128, C_out - co * 128)", "nco = min(128, C_out - co * 128)\n        co0 = co * nco"))),
    # the bias of the first block of output channels added to every block
    "bias_of_the_first_channel_block": ("conv2d_maxpool", _q1(
        ("bias.reshape((C_out, 1))[co0:co0 + nco, :]", "bias.reshape((C_out, 1))[0:nco, :]"))),
    # the fast kernel keeps the K - 1 wrapped-around columns of each row: the pool window straddles them
    "fast_pools_the_wrapped_columns": ("conv2d_maxpool_fast", solution_variant(
        STAGE, "conv2d_maxpool_fast", ("rows = nl.maximum(pairs[:, :, 0:Wo], pairs[:, :, Wd:Wd + Wo])",
                                       "rows = nl.maximum(pairs[:, :, K - 1:K - 1 + Wo], pairs[:, :, Wd + K - 1:Wd + K - 1 + Wo])"))),
    # the fast kernel's last, shorter block of rows is left out
    "fast_drops_the_last_row_block": ("conv2d_maxpool_fast", solution_variant(
        STAGE, "conv2d_maxpool_fast", ("for blk in range((Ho + RB - 1) // RB):", "for blk in range(Ho // RB):"))),
}

test_mutants_lose_correctness_points = inprocess_mutant_test(MUTANTS, seed=17, header=ISA_HEADER)


def test_pooling_before_the_bias_is_the_same_function(tmp_path):
    """Not a mutant: max(a + b, c + b) = max(a, c) + b for one bias per channel, so pooling before adding the bias
    is exact (the fast reference does it to add the bias to a quarter of the values)."""
    body = _q1(("row = nl.add(nl.maximum(top[:nco, :], bottom[:nco, :]), b_col)",
                "row = nl.maximum(top[:nco, :], bottom[:nco, :])"),
               ("nl.store(out[b, co0:co0 + nco, r, :], value=nl.copy(pooled, dtype=X.dtype))",
                "nl.store(out[b, co0:co0 + nco, r, :], value=nl.add(pooled, b_col, dtype=X.dtype))"))
    r = grade_in_process("conv2d_maxpool", write(tmp_path, "pool_first.py", body, ISA_HEADER), seed=17)
    assert r.correctness == QUESTIONS["conv2d_maxpool"].correctness_points


def _transposes_per_row_pair() -> str:
    """The relaxed kernel with its filter transposes moved inside the loop over output rows: correct, slower than
    1.2x the relaxed reference."""
    body = solution_variant(STAGE, "conv2d_maxpool", name="conv2d_maxpool_fast")
    start, end = body.index("        w_T = nl.ndarray"), body.index("        for b in nl.affine_range(B):")
    block = body[start:end]
    body = body[:start] + body[end:]
    moved = "".join("        " + line for line in block.splitlines(True))
    return body.replace("                top = nl.zeros(", moved + "                top = nl.zeros(", 1)


def test_speed_tiers_against_the_relaxed_and_the_optimised_reference(tmp_path):
    q = QUESTIONS["conv2d_maxpool_fast"]
    relaxed = write(tmp_path, "relaxed.py", solution_variant(STAGE, "conv2d_maxpool", name="conv2d_maxpool_fast"),
                    ISA_HEADER)
    slow = write(tmp_path, "slow.py", _transposes_per_row_pair(), ISA_HEADER)
    fast = write(tmp_path, "fast.py", solution_variant(STAGE, "conv2d_maxpool_fast"), ISA_HEADER)
    got, said = {}, {}
    for path in (slow, relaxed, fast):
        r = grade_in_process("conv2d_maxpool_fast", path, seed=5)
        assert r.correctness == q.correctness_points, (path.name, r.evaluation.cases[0].verdict)
        ev = r.evaluation
        got[path.stem] = (r.speed, round(ev.latency_us / ev.relaxed_us, 2), round(ev.ratio, 2))
        said[path.stem] = " ".join(record(ev, correctness=r.correctness, speed=r.speed).speed_lines())
    assert got["fast"][0] == 3.0 and got["fast"][2] == 1.0
    assert got["relaxed"][0] == 1.5 and got["relaxed"][1] == 1.0 and got["relaxed"][2] > 1.3  # relaxed: half
    assert got["slow"][0] == 0.0 and got["slow"][1] > 1.2, got  # slower than 1.2x the relaxed reference: none
    # what check() and the grade report say about the two tiers
    assert "half at <= 1.2x the relaxed reference (conv2d_maxpool's reference solution:" in said["relaxed"]
    assert "You would get: partial speed points (half)." in said["relaxed"]


# --------------------------------------------------------------------------- CS149's task, through our harness

CS149 = REPO / "tests" / "kernels" / "cs149_conv2d.py"


def _cs149_question(pool: int, full: bool) -> Question:
    """CS149's small-image correctness cases (batch 4, 32 x 16, 3 x 3 filters, 128 or 256 channels in and out), in
    float32 and float16; ``full``: every combination, else one per dtype."""
    def case(b: int, c_in: int, c_out: int, h: int, w: int, dtype: str) -> Case:
        return Case((b, c_in, h, w), dtype, arg_shapes=((b, c_in, h, w), (c_out, c_in, 3, 3), (c_out,)))

    combos = [(ci, co) for ci in (128, 256) for co in (128, 256)] if full else [(128, 256), (256, 128)]
    cases = tuple(case(4, ci, co, 32, 16, dt) for ci, co in combos for dt in ("float32", "float16")
                  if full or (dt == "float32") == (ci == 128))
    return Question(qid=f"cs149_pool{pool}", title="CS149 part 2", function="cs149", arg_names=("X", "W", "bias"),
                    reference=lambda x, w, b: torch_conv_pool(x, w, b, pool), public=cases, hidden=(),
                    speed_case=cases[0], solution="-", correctness_points=1.0, speed_points=0.0,
                    tolerances={"float32": (1e-4, 1e-4)})


@pytest.mark.parametrize("pool, full", [(2, False), pytest.param(1, True, marks=pytest.mark.slow),
                                        pytest.param(2, True, marks=pytest.mark.slow)])
def test_a_kernel_written_to_cs149s_statement_matches_pytorch_through_our_harness(pool, full):
    kernel = load_kernel(CS149, "fused_conv2d_maxpool")

    def cs149(X, W, bias):  # noqa: N803  (the statement's names)
        return kernel.func(X, W, bias, pool_size=pool)

    ev = evaluate(_cs149_question(pool, full), cs149, hidden=False, seed=149, speed=False)
    assert ev.problem is None and ev.correct, [c.verdict.message for c in ev.cases if not c.verdict.ok]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cs149_kernel_on_cs149s_large_image(dtype):
    """CS149's large correctness case (224 x 224, 256 channels, more than SBUF holds) with its uniform [0, 1) inputs,
    bias and max pool, on the simulator, against PyTorch."""
    kernel = load_kernel(CS149, "fused_conv2d_maxpool")
    rng = np.random.default_rng(149)
    x = rng.random((1, 256, 224, 224)).astype(dtype)
    w = rng.random((256, 256, 3, 3)).astype(dtype)
    bias = rng.random(256).astype(dtype)
    got = kernel(x, w, bias, pool_size=2)
    want = torch_conv_pool(x.astype(np.float64), w.astype(np.float64), bias.astype(np.float64), 2)
    assert got.shape == want.shape == (1, 256, 111, 111) and got.dtype == np.dtype(dtype)
    rtol = 1e-5 if dtype == "float32" else 2e-3  # float16: the output rounded once (values ~600, ulp 0.5)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=1e-3)


def test_hidden_cases_reach_the_fast_kernels_ragged_row_block():
    q = QUESTIONS["conv2d_maxpool_fast"]
    assert any(q.kinds["several row blocks"](c) and (c.arg_shapes[0][2] - c.arg_shapes[1][2] + 1) %
               (2 * (512 // (2 * c.arg_shapes[0][3]))) for c in q.hidden)
