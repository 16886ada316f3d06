"""Stage 7 (fusion: RMSNorm followed by a linear layer) end to end: the notebook under a real Jupyter kernel,
reference kernels at full marks across seeds, mutant kernels losing correctness points, and speed tiers that
reward keeping w in SBUF and hoisting the transposes (cost-model estimates, which are deterministic)."""

from __future__ import annotations

import pytest
from course_testing import (
    grade_in_process,
    inprocess_mutant_test,
    outputs_text,
    run_reference_notebook,
    solution_variant,
    write,
)

from nkilab.course.questions import QUESTIONS

STAGE = "07_fused_rmsnorm_linear"
QIDS = ("rmsnorm_linear", "rmsnorm_linear_fast")


@pytest.mark.slow
def test_reference_notebook_runs_and_earns_full_marks():
    nb = run_reference_notebook(STAGE, {"q1_grade", "q2_grade"})
    assert "transposed: (128, 128) float32 in nl.psum" in outputs_text(nb, "demo_transpose")
    assert "equal to block.T: True" in outputs_text(nb, "demo_transpose")
    profile = outputs_text(nb, "profile_demo")
    assert "cost-model estimate" in profile and "target trn2" in profile
    ladder = outputs_text(nb, "ladder_demo").splitlines()
    assert "estimate: nkisim cost model, trn2" in ladder[0]
    us = {line.split()[0]: float(line.split()[-2]) for line in ladder[1:]}
    assert us["PE-array"] < us["rmsnorm_linear_fast"] < us["rmsnorm_linear"] / 2, ladder


@pytest.mark.parametrize("qid", QIDS)
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_kernels_full_marks(qid, seed):
    q = QUESTIONS[qid]
    r = grade_in_process(qid, q.solution_path, seed)
    assert r.points == q.points, (qid, r)


def test_cases_follow_the_rules():
    for qid in QIDS:
        q = QUESTIONS[qid]
        assert {c.dtype for c in q.public + q.hidden} == {"float32", "bfloat16"}
        for c in q.public + q.hidden + (q.speed_case,):
            (r, cc), (cg,), (cw, n) = c.arg_shapes
            assert cc == cg == cw and r % 128 == 0 and cc % 128 == 0 and n % 512 == 0, (qid, c)
            assert max(cc, n) <= 2048 and r <= 4096
        assert max(c.arg_shapes[0][1] for c in q.hidden) == 2048  # the longest sums the tolerances allow for


HOISTED_TRANSPOSES = (
    """        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(C // 128):
                normed_T = nl.copy(nl.transpose(normed[:, k * 128:(k + 1) * 128]), dtype=x.dtype)
                w_tile = nl.load(w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                res_psum += nl.matmul(normed_T, w_tile, transpose_x=True)""",
    """        normed_T = nl.ndarray((128, C // 128, 128), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(C // 128):
            normed_T[:, k, :] = nl.copy(nl.transpose(normed[:, k * 128:(k + 1) * 128]), dtype=x.dtype)
        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(C // 128):
                w_tile = nl.load(w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                res_psum += nl.matmul(normed_T[:, k, :], w_tile, transpose_x=True)""")


def test_speed_tiers_reward_reuse(tmp_path):
    # on the fast question: section 3's kernel (blocks transposed per output block, w reloaded per row tile)
    # earns no speed points; the same kernel with its transposes hoisted out of the output-column loop earns
    # half; keeping g-scaled w in SBUF as well (the reference) earns all
    plain = write(tmp_path, "plain.py", solution_variant(STAGE, "rmsnorm_linear", name="rmsnorm_linear_fast"))
    hoisted = write(tmp_path, "hoisted.py",
                    solution_variant(STAGE, "rmsnorm_linear", HOISTED_TRANSPOSES, name="rmsnorm_linear_fast"))
    q = QUESTIONS["rmsnorm_linear_fast"]
    for path, speed, lo, hi in ((plain, 0.0, 2.0, 4.5), (hoisted, 1.5, 1.2, 2.0)):
        r = grade_in_process("rmsnorm_linear_fast", path, 3)
        assert r.correctness == q.correctness_points, r
        assert r.speed == speed and lo < r.evaluation.ratio <= hi, (path.name, r.evaluation.ratio)


def _mutant(question: str, find: str, replace: str) -> tuple[str, str]:
    return question, solution_variant(STAGE, question, (find, replace))


MUTANTS = {
    # the RMSNorm weight forgotten
    "no_g": _mutant("rmsnorm_linear", "nl.multiply(nl.multiply(x_tile, inv_rms), g_all, dtype=x.dtype)",
                    "nl.multiply(x_tile, inv_rms, dtype=x.dtype)"),
    # sum of squares instead of their mean: every row scaled by 1/sqrt(C) too much
    "sum_not_mean": _mutant("rmsnorm_linear", "nl.mean(", "nl.sum("),
    # the first 128 columns of x for every block of C
    "first_block_only": _mutant("rmsnorm_linear", "normed[:, k * 128:(k + 1) * 128]", "normed[:, 0:128]"),
    # the fast kernel without its 1/rms on eviction
    "no_rms_on_eviction": _mutant("rmsnorm_linear_fast", "value=nl.multiply(res_psum, inv_rms, dtype=x.dtype)",
                                  "value=nl.copy(res_psum, dtype=x.dtype)"),
    # g applied to the columns of w (the output axis) instead of its rows
    "g_on_wrong_axis_of_w": _mutant("rmsnorm_linear_fast", "g.reshape((C, 1))[k * 128:(k + 1) * 128, :]",
                                    "g.reshape((C, 1))[0:128, :]"),
}

test_mutants_lose_correctness_points = inprocess_mutant_test(MUTANTS, seed=13)
