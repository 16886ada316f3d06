"""Stage 6 (the Tensor Engine: tiled matmul) end to end: the notebook under a real Jupyter kernel, reference
kernels at full marks, mutant kernels losing correctness points, and speed tiers that separate reuse from
reloading (cost-model estimates, which are deterministic)."""

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

from nkilab import check
from nkilab.course.questions import QUESTIONS

STAGE = "06_tensor_engine_matmul"
QIDS = ("matmul_tiled", "matmul_fast")


@pytest.mark.slow
def test_reference_notebook_runs_and_earns_full_marks():
    nb = run_reference_notebook(STAGE, {"q1_grade", "q2_grade"})
    one = outputs_text(nb, "demo_one_tile")
    assert "result tile: (64, 512) float32 in nl.psum" in one
    assert float(one.split("max |kernel - numpy| =")[1].split()[0]) < 1e-4
    limits = outputs_text(nb, "demo_limits")  # the moving tile's limit, not the PSUM tensor's banks (NKI 0.6)
    assert "'moving[128, 1024]' of 'nc_matmul' exceed architecture limitation of 512" in limits, limits
    profile = outputs_text(nb, "profile_demo")
    assert "cost-model estimate" in profile and "176160768" in profile  # the bytes section 3 talks about
    reuse = outputs_text(nb, "reuse_demo")
    assert "PE-array bound 217 us" in reuse and "176" in reuse
    ladder = outputs_text(nb, "ladder_demo").splitlines()
    assert "estimate: nkisim cost model, trn2" in ladder[0]
    us = {line.split()[0]: float(line.split()[1]) for line in ladder[3:]}
    assert 2.0 < us["matmul_tiled"] / us["matmul_fast"] < 2.6, ladder


@pytest.mark.parametrize("qid", QIDS)
def test_reference_kernels_full_marks(qid):
    q = QUESTIONS[qid]
    r = grade_in_process(qid, q.solution_path, 123)
    assert r.points == q.points, (qid, r)


def test_cases_follow_each_questions_rules():
    for qid, (m_step, n_step) in {"matmul_tiled": (128, 512), "matmul_fast": (256, 1024)}.items():
        q = QUESTIONS[qid]
        cases = q.public + q.hidden + (q.speed_case,)
        assert {c.dtype for c in q.public + q.hidden} == {"float32", "bfloat16"}
        for c in cases:
            (k, m), (k2, n) = c.arg_shapes
            assert k == k2 and k % 128 == 0 and m % m_step == 0 and n % n_step == 0, (qid, c)
            assert max(k, m, n) <= 2048
        assert max(c.arg_shapes[0][0] for c in cases) == 2048  # the longest fp32 sums the tolerance allows for
        assert q.tolerance("float32") == (1e-4, 1e-4) and q.tolerance("bfloat16") == (1.6e-2, 1.6e-2)


HOISTED = """
    @nki.jit
    def matmul_fast(lhsT, rhs):
        K, M = lhsT.shape
        N = rhs.shape[1]
        result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
        for m in nl.affine_range(M // 128):
            lhsT_col = nl.ndarray((128, K // 128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // 128):
                lhsT_col[:, k, :] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
            for n in nl.affine_range(N // 512):
                res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                for k in nl.affine_range(K // 128):
                    rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                    res_psum += nl.matmul(lhsT_col[:, k, :], rhs_tile, transpose_x=True)
                nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512],
                         value=nl.copy(res_psum, dtype=result.dtype))
        return result
    """


def test_speed_tiers_reward_reuse(tmp_path):
    # on the fast question's 2048^3 bfloat16 case: reloading every tile (section 2's kernel) earns no speed
    # points, hoisting only the lhsT loads earns half, the 2x2 blocks of the reference earn all
    tiled = write(tmp_path, "tiled.py", solution_variant(STAGE, "matmul_tiled", name="matmul_fast"))
    hoisted = write(tmp_path, "hoisted.py", HOISTED)
    q = QUESTIONS["matmul_fast"]
    for path, speed, lo, hi in ((tiled, 0.0, 2.0, 2.6), (hoisted, 1.5, 1.2, 2.0)):
        r = grade_in_process("matmul_fast", path, 5)
        assert r.correctness == q.correctness_points, r
        assert r.speed == speed and lo < r.evaluation.ratio <= hi, (path.name, r.evaluation.ratio)


def _mutant(find: str, replace: str) -> tuple[str, str]:
    return "matmul_tiled", solution_variant(STAGE, "matmul_tiled", (find, replace))


MUTANTS = {
    # `=` instead of `+=`: only the last K slice survives
    "overwrite_instead_of_accumulate": _mutant("res_psum += nl.matmul", "res_psum[...] = nl.matmul"),
    # x @ y instead of x.T @ y: the stationary tile is transposed on the PE first, the product is wrong
    "no_transpose_x": _mutant("rhs_tile, transpose_x=True)", "rhs_tile)"),
    # the accumulator in the output dtype on SBUF: bfloat16 partial sums lose the low bits of every product
    "accumulate_in_sbuf_output_dtype": _mutant("nl.zeros((128, 512), nl.float32, buffer=nl.psum)",
                                               "nl.zeros((128, 512), lhsT.dtype, buffer=nl.sbuf)"),
    # the K loop stops one slice early
    "k_loop_one_short": _mutant("for k in nl.affine_range(K // 128):", "for k in nl.affine_range(K // 128 - 1):"),
    # output tiles placed 511 columns apart: overlapping, the last 512 - 511 columns per tile never written
    "n_stride_511": _mutant("result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512]",
                            "result[m * 128:(m + 1) * 128, n * 511:n * 511 + 512]"),
}

test_mutants_lose_correctness_points = inprocess_mutant_test(MUTANTS, seed=11)


@pytest.mark.processes
def test_check_explains_a_lost_accumulation(tmp_path, capsys):
    # overwriting PSUM in every iteration of an affine_range K loop is the compiler's dependency error, at the
    # student's line; with K = 128 (one iteration) there is nothing to lose and the case passes
    name, body = MUTANTS["overwrite_instead_of_accumulate"]
    check(name, write(tmp_path, "overwrite.py", body))
    out = capsys.readouterr().out
    assert "[ok  ] public case 1/3" in out
    assert "NKISyntaxError at overwrite.py line 18 (`res_psum[...] = nl.matmul(" in out
    assert "Unexpected output dependencies" in out and "docs/errors/err_unexpected_output_dependencies.md" in out
    assert "Public checks passed" not in out
