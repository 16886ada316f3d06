"""Stage 9 (RMSNorm backward and FP8) end to end: the notebook under a real Jupyter kernel, the reference kernels at
full marks, the backward reference against PyTorch's autograd, the FP8 reference and its tolerance against FP8's
precision, and mutant kernels (a lost rstd, a forgotten term, a lost accumulation, wrong group scales, no
saturation ...) losing correctness points."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from course_testing import (
    grade_in_process,
    inprocess_mutant_test,
    outputs_text,
    run_reference_notebook,
    solution_variant,
    write,
)

from nkilab.authoring.release import load_source
from nkilab.course.questions import QUESTIONS
from nkilab.course.stages import s09_rmsnorm_backward_fp8 as s9
from nkilab.judge.evaluate import case_data

STAGE = "09_rmsnorm_backward_fp8"
QIDS = ("rmsnorm_backward", "rmsnorm_fp8_forward")
HEADER = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\n"
          "import numpy as np\n\nFP8_MAX = 240.0\nGROUP = 16\n\n\n")


@pytest.mark.slow
def test_reference_notebook_runs_and_earns_full_marks():
    nb = run_reference_notebook(STAGE, {"q1_grade", "q2_grade"})
    autograd = outputs_text(nb, "demo_autograd").splitlines()
    assert all(float(line.split("=")[1]) < 1e-12 for line in autograd), autograd
    fp8 = outputs_text(nb, "demo_fp8")
    assert "float8_e4m3: max 240, eps 0.125, smallest subnormal 0.00195312" in fp8
    worst = float(fp8.split("worst relative error ")[1].split()[0])
    assert worst <= 0.0625
    lost = float(fp8.split("one scale for the whole row: ")[1].split("%")[0])
    assert lost >= 25  # the smallest group vanishes into the subnormals with one scale per row
    assert "cast without saturation: [120 inf inf]" in fp8 and "with: [120 240 240]" in fp8
    mm = {line.split()[0]: line for line in outputs_text(nb, "mm_demo").splitlines() if "busy" in line}
    busy = {k: float(v.split("busy")[1].split()[0]) for k, v in mm.items()}
    assert 1.8 < busy["bfloat16"] / busy["fp8"] < 2.2, busy  # double row: twice the contraction per instruction
    assert all(float(v.split("float64 ")[1]) < 1e-3 for v in mm.values())


@pytest.mark.parametrize("qid", QIDS)
def test_reference_kernels_full_marks(qid):
    q = QUESTIONS[qid]
    r = grade_in_process(qid, q.solution_path, 99)
    assert r.points == q.points, (qid, r)


def test_the_backward_reference_is_torch_autograd():
    torch = pytest.importorskip("torch")
    q = QUESTIONS["rmsnorm_backward"]
    # (not a one-column case: there 1 - xhat^2 cancels, and the float32 rstd's rounding is all that is left)
    for i, case in enumerate(q.public + q.hidden[:4]):
        if "one column" in q.kinds_of(case):
            continue
        x, w, dy, rstd = (a.astype(np.float64) for a in q.inputs(case, 5, i))
        xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        torch.nn.functional.rms_norm(xt, (x.shape[1],), weight=wt, eps=s9.EPS).backward(torch.tensor(dy))
        got = s9.rmsnorm_backward_reference(x, w, dy, rstd)
        assert got.shape == (x.shape[0] + 1, x.shape[1])
        # rstd comes in as float32 (as a forward pass saves it): the only difference from autograd's own float64
        np.testing.assert_allclose(got[:-1], xt.grad.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[-1], wt.grad.numpy(), rtol=1e-6, atol=1e-5)


def test_fp8_inputs_are_group_quantised_and_every_case_saturates():
    q = QUESTIONS["rmsnorm_fp8_forward"]
    fp8 = np.dtype(ml_dtypes.float8_e4m3)
    for i, case in enumerate(q.public + q.hidden):
        x_q, x_scale, w, out_scale = q.inputs(case, 3, i)
        assert x_q.dtype == fp8 and x_scale.dtype == np.float32 and out_scale.shape == (1, 1)
        assert w.dtype == np.dtype(case.arg_dtypes[2])
        groups = np.abs(x_q.astype(np.float64)).reshape(x_q.shape[0], -1, s9.GROUP).max(axis=2)
        assert np.all(np.isfinite(x_q.astype(np.float64))) and np.all(groups >= 200)  # each group uses the range
        want = q.expected([x_q, x_scale, w, out_scale], case)
        assert want.dtype == fp8
        assert np.any(np.abs(want.astype(np.float64)) == s9.FP8_MAX), case  # saturation is always exercised
        # the grader rounds the float64 value once, to nearest: exactly ml_dtypes' cast of the clipped value
        exact = s9.rmsnorm_fp8_reference(*(a.astype(np.float64) for a in (x_q, x_scale, w, out_scale)))
        assert np.array_equal(want, exact.astype(fp8))


def test_the_fp8_tolerance_is_one_unit_of_e4m3_and_the_lesson_says_so():
    info = ml_dtypes.finfo(np.dtype(ml_dtypes.float8_e4m3))
    assert s9.FP8_TOLERANCE == (float(info.eps), float(info.smallest_subnormal)) == (0.125, 2.0 ** -9)
    assert QUESTIONS["rmsnorm_fp8_forward"].tolerance("float8_e4m3") == s9.FP8_TOLERANCE
    text = "\n".join(c.source for c in load_source(s9_lesson()).cells if c.cell_type == "markdown")
    assert "the grader allows rtol = 0.125 (one unit, relative) and atol = 2^-9" in " ".join(text.split())
    # one unit covers exactly one rounding step: the neighbours of every positive e4m3 value are within it
    vals = np.unique(np.abs(np.arange(256, dtype=np.uint8).view(np.dtype(ml_dtypes.float8_e4m3)).astype(np.float64)))
    vals = vals[np.isfinite(vals)]
    gaps = np.diff(vals)
    assert np.all(gaps <= info.eps * vals[1:] + info.smallest_subnormal)


def s9_lesson():
    from course_testing import REPO

    return REPO / "notebooks" / f"{STAGE}.py"


def test_reference_kernels_inside_the_tolerances_across_seeds():
    """Float32 accumulation everywhere: the references use a fraction of the stated tolerance."""
    from nkilab.kernels.modules import load_kernel
    from nkisim import api

    for qid in QIDS:
        q = QUESTIONS[qid]
        kernel = load_kernel(q.solution_path, q.function)
        for seed in (1, 2):
            for i, case in enumerate(q.public + q.hidden):
                d = case_data(q, case, seed, i)
                got = np.asarray(api.launch(kernel, d.args, target="trn2").outputs).astype(np.float64)
                want = d.expected.astype(np.float64)
                rtol, atol = q.tolerance(case.dtype)
                used = np.abs(got - want) / (atol + rtol * np.abs(want))
                limit = 1.0 if qid == "rmsnorm_fp8_forward" else 0.5  # fp8: at most one unit, by construction
                assert used.max() <= limit, (qid, case, seed, used.max())


def _bw(*edits: tuple[str, str]) -> tuple[str, str]:
    return "rmsnorm_backward", solution_variant(STAGE, "rmsnorm_backward", *edits)


def _fp8(*edits: tuple[str, str]) -> tuple[str, str]:
    return "rmsnorm_fp8_forward", solution_variant(STAGE, "rmsnorm_fp8_forward", *edits)


MUTANTS = {
    # dw without rstd: the sum over rows of dy * x, the normalisation forgotten
    "dw_without_rstd": _bw(("nl.matmul(rs, q[:, c0:c0 + cn], transpose_x=True)",
                            "nl.matmul(nl.ones((n, 1), dtype=nl.float32), q[:, c0:c0 + cn], transpose_x=True)")),
    # dx without the term through rstd (as if rstd did not depend on x)
    "dx_forgets_the_rstd_term": _bw(("operand1=x_c,", "operand1=nl.multiply(x_c, 0.0),")),
    # dw overwritten by every tile of rows instead of accumulated across them
    "dw_not_accumulated_across_row_tiles": _bw(("dw_ps[k][:, 0:cn] += nl.matmul(", "dw_ps[k][:, 0:cn] = nl.matmul(")),
    # the mean over C taken over a wrong length (a fixed 128)
    "mean_over_the_wrong_length": _bw(("nl.multiply(coef, -1.0 / C)", "nl.multiply(coef, -1.0 / 128)")),
    # every tile treated as full: the last, ragged tile reads rows past R
    "ragged_last_tile_as_full": _bw(("r0, n = t * 128, min(128, R - t * 128)", "r0, n = t * 128, 128")),
    # no saturation: values past 240 become inf
    "fp8_no_saturation": _fp8(("q = nisa.tensor_scalar(v, np.minimum, FP8_MAX, op1=np.maximum, operand1=-FP8_MAX)",
                               "q = v")),
    # every group of the row dequantised with the row's first scale
    "fp8_one_scale_per_row": _fp8(("i_g = nl.arange(G)[None, :, None] + 0 * nl.arange(GROUP)[None, None, :]",
                                   "i_g = 0 * nl.arange(G)[None, :, None] + 0 * nl.arange(GROUP)[None, None, :]")),
    # the output scale multiplied instead of divided
    "fp8_out_scale_inverted": _fp8(("nisa.tensor_scalar(nl.load(out_scale), np.power, -1.0)", "nl.load(out_scale)")),
    # rstd of the quantised values: the group scales left out of the statistic
    "fp8_rstd_of_the_raw_fp8_values": _fp8((
        "nisa.activation_reduce(op=nl.square, data=x, reduce_op=np.add, reduce_res=ss)",
        "nisa.activation_reduce(op=nl.square, data=xq.reshape((n, C)), reduce_op=np.add, reduce_res=ss)")),
    # the weight left out
    "fp8_without_the_weight": _fp8(("ws = nl.load(w.reshape((1, C))[row0[i_w, 0], i_c], dtype=nl.bfloat16)",
                                    "ws = nl.ones((128, C), dtype=nl.bfloat16)")),
    # the software pipeline mixes tiles up: tile t - 3 scaled by a later tile's rstd (right only for one tile)
    "fp8_pipeline_mixes_up_tiles": _fp8(("p0, pn, xw, rstd, rstd_b = tiles[t - 3]",
                                         "p0, pn, xw, rstd, rstd_b = tiles[t - 3][:3] + tiles[min(t - 2, T - 1)][3:]")),
    # the GpSimd quarter of the groups never dequantised (left as the uninitialised tile)
    "fp8_gpsimd_quarter_forgotten": _fp8(("            if GV < G:\n", "            if False:\n")),
}

test_mutants_lose_correctness_points = inprocess_mutant_test(MUTANTS, seed=23, header=HEADER)


PLAIN_BACKWARD = """
    @nki.jit
    def rmsnorm_backward(x, w, dy, rstd):
        R, C = x.shape
        grads = nl.ndarray((R + 1, C), dtype=x.dtype, buffer=nl.shared_hbm)
        row0 = nl.zeros((128, 1), dtype=nl.int32)
        w_b = nl.load(w.reshape((1, C))[row0[nl.arange(128)[:, None], 0], nl.arange(C)[None, :]], dtype=nl.float32)
        dw_ps = [nl.zeros((1, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(0, C, 512)]
        for t in range((R + 127) // 128):
            r0, n = t * 128, min(128, R - t * 128)
            x_t = nl.load(x[r0:r0 + n, :], dtype=nl.float32)
            dy_t = nl.load(dy[r0:r0 + n, :], dtype=nl.float32)
            rs = nl.load(rstd[r0:r0 + n, :])
            xhat = nl.multiply(x_t, rs)
            g = nl.multiply(dy_t, w_b[:n, :])
            m = nl.mean(nl.multiply(g, xhat), axis=1)
            dx = nl.multiply(nl.subtract(g, nl.multiply(xhat, m)), rs, dtype=x.dtype)
            nl.store(grads[r0:r0 + n, :], value=dx)
            p = nl.multiply(dy_t, xhat)
            for k, c0 in enumerate(range(0, C, 512)):
                cn = min(512, C - c0)
                dw_ps[k][:, 0:cn] += nl.matmul(nl.ones((n, 1), dtype=nl.float32), p[:, c0:c0 + cn], transpose_x=True)
        for k, c0 in enumerate(range(0, C, 512)):
            cn = min(512, C - c0)
            nl.store(grads[R:R + 1, c0:c0 + cn], value=nl.copy(dw_ps[k][:, 0:cn], dtype=x.dtype))
        return grads
    """


def test_the_straightforward_backward_is_correct_and_loses_to_engine_balance(tmp_path):
    """The formulas as written, everything on the Vector engine: all correctness points, about twice the reference's
    estimated latency (the lesson's point about spreading the work over three engines)."""
    r = grade_in_process("rmsnorm_backward", write(tmp_path, "plain.py", PLAIN_BACKWARD, HEADER), seed=3)
    assert r.correctness == QUESTIONS["rmsnorm_backward"].correctness_points
    assert r.evaluation.ratio > 1.5, r.evaluation.ratio


IN_ORDER_FP8 = """
    @nki.jit
    def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
        R, C = x_q.shape
        G = C // GROUP
        GV = max(1, 3 * G // 4)
        out = nl.ndarray((R, C), dtype=x_q.dtype, buffer=nl.shared_hbm)
        inv_sb = nisa.activation(op=nl.copy, data=nisa.tensor_scalar(nl.load(out_scale), np.power, -1.0)
                                 .broadcast_to((128, 1)), dtype=nl.bfloat16)
        row0 = nl.zeros((128, 1), dtype=nl.int32)
        ws = nl.load(w.reshape((1, C))[row0[nl.arange(128)[:, None], 0], nl.arange(C)[None, :]], dtype=nl.bfloat16)
        i_p = nl.arange(128)[:, None, None]
        i_g = nl.arange(G)[None, :, None] + 0 * nl.arange(GROUP)[None, None, :]
        for t in range((R + 127) // 128):
            r0, n = t * 128, min(128, R - t * 128)
            xq = nl.load(x_q[r0:r0 + n, :], dtype=nl.bfloat16).reshape((n, G, GROUP))
            sc = nl.load(x_scale[r0:r0 + n, :], dtype=nl.bfloat16)
            x = nl.ndarray((n, G, GROUP), dtype=nl.bfloat16)
            x[:, :GV, :] = nisa.tensor_tensor(xq[:, :GV, :], sc[i_p[:n], i_g[:, :GV, :]], op=np.multiply)
            if GV < G:
                x[:, GV:, :] = nisa.tensor_tensor(xq[:, GV:, :], sc[i_p[:n], i_g[:, GV:, :]], op=np.multiply,
                                                  engine=nisa.gpsimd_engine)
            x = x.reshape((n, C))
            ss = nl.ndarray((n, 1), dtype=nl.float32)
            nisa.activation_reduce(op=nl.square, data=x, reduce_op=np.add, reduce_res=ss)
            ms = nisa.tensor_scalar(ss, np.multiply, 1.0 / C, op1=np.add, operand1=1e-6, engine=nisa.scalar_engine)
            rstd_b = nisa.activation(op=nl.rsqrt, data=ms, dtype=nl.bfloat16)
            xw = nisa.tensor_tensor(x, ws[:n, :], op=np.multiply, engine=nisa.gpsimd_engine)
            v = nisa.tensor_scalar(xw, np.multiply, rstd_b, op1=np.multiply, operand1=inv_sb[:n])
            nl.store(out[r0:r0 + n, :], value=nisa.tensor_scalar(v, np.minimum, FP8_MAX, op1=np.maximum,
                                                                 operand1=-FP8_MAX))
        return out
    """

#: the reference before bf16: the same software pipeline (three stages) with every tile in float32
FLOAT32_FP8 = """
    @nki.jit
    def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
        R, C = x_q.shape
        G = C // GROUP
        T = (R + 127) // 128
        out = nl.ndarray((R, C), dtype=x_q.dtype, buffer=nl.shared_hbm)
        inv_s = nisa.tensor_scalar(nl.load(out_scale), np.power, -1.0).broadcast_to((128, 1))
        row0 = nl.zeros((128, 1), dtype=nl.int32)
        w_all = nl.load(w.reshape((1, C))[row0[nl.arange(128)[:, None], 0], nl.arange(C)[None, :]], dtype=nl.float32)
        ws = nisa.tensor_scalar(w_all, np.multiply, inv_s)
        firsts, scaled = [], []
        for t in range(T + 2):
            if t < T:
                r0, n = t * 128, min(128, R - t * 128)
                xq = nl.load(x_q[r0:r0 + n, :])
                sc = nl.load(x_scale[r0:r0 + n, :])
                x = nl.multiply(xq.reshape((n, G, GROUP)), sc.reshape((n, G, 1)), dtype=nl.float32).reshape((n, C))
                ss = nl.ndarray((n, 1), dtype=nl.float32)
                nisa.activation_reduce(op=nl.square, data=x, reduce_op=np.add, reduce_res=ss)
                ms = nisa.tensor_scalar(ss, np.multiply, 1.0 / C, op1=np.add, operand1=1e-6, engine=nisa.scalar_engine)
                rstd = nisa.activation(op=nl.rsqrt, data=ms)
                xw = nisa.tensor_tensor(x, ws[:n, :], op=np.multiply, engine=nisa.gpsimd_engine)
                firsts.append((r0, n, xw, rstd))
            if 0 < t <= T:
                p0, pn, pxw, prstd = firsts.pop(0)
                scaled.append((p0, pn, nisa.activation(op=nl.copy, data=pxw, scale=prstd)))
            if t > 1:
                p0, pn, v = scaled.pop(0)
                q = nisa.tensor_scalar(v, np.minimum, FP8_MAX, op1=np.maximum, operand1=-FP8_MAX, dtype=out.dtype)
                nl.store(out[p0:p0 + pn, :], value=q)
        return out
    """


@pytest.mark.parametrize("name, body, low, high", [("in_order", IN_ORDER_FP8, 1.2, 2.0),
                                                   ("float32", FLOAT32_FP8, 1.5, 2.5)])
def test_the_fp8_kernel_without_its_pipeline_or_bf16_is_correct_and_slower(tmp_path, name, body, low, high):
    """The lesson's two points, each taken away: the reference's passes issued tile by tile (in-order engines wait
    for each other), or every tile in float32 (no Vector performance mode) -- both as correct, both slower
    (estimates), past the full speed tier."""
    r = grade_in_process("rmsnorm_fp8_forward", write(tmp_path, f"{name}.py", body, HEADER), seed=3)
    assert r.correctness == QUESTIONS["rmsnorm_fp8_forward"].correctness_points
    assert low < r.evaluation.ratio < high, r.evaluation.ratio
    assert r.speed < 1, r.speed
