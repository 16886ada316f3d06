# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] nbgrader={"grade": false, "grade_id": "intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# # Stage 9 — RMSNorm backward, and FP8
#
# **Goals.** By the end of this notebook you can
#
# 1. derive RMSNorm's backward pass, and compute it from what the forward pass saved (`rstd`, one number per row);
# 2. reduce **across rows**, i.e. across partitions, on the Tensor Engine: the weight gradient `dw` is a matmul
#    with a column vector, accumulated in PSUM over every tile of rows;
# 3. spread elementwise work over three engines (Vector, GpSimd, Scalar) when a kernel computes more per byte than
#    it moves;
# 4. compute in **FP8** (e4m3): scales per group of 16 values, a per-tensor output scale, saturation, and what a
#    fair tolerance for an FP8 result is; and see FP8's matmul throughput on trn2.
#
# Training kernels (COAT, Transformer Engine) run both halves of this: the backward pass of every normalisation,
# and activations stored and multiplied in FP8 with fine-grained scales.
#
# *In the legacy dialect* the instructions return their results instead of writing into `dst`; the notes below say
# where the kernels differ.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
import ml_dtypes
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.using_simulator()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, latency_label, load_kernel, peak  # load_kernel: the kernel a %%writefile cell saved

TARGET = "trn2"  # the target the cost model estimates for (and the course grades on)
LABEL = latency_label(TARGET)  # "estimate: nkisim cost model, trn2" on the simulator
EPS = 1e-6
FP8 = np.dtype(nl.float8_e4m3)
print("neuronxcc.nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "the Neuron compiler")

# %% nbgrader={"grade": false, "grade_id": "setup_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.provides_nki()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, latency_label, load_kernel, peak  # load_kernel: the kernel a %%writefile cell saved

TARGET = "trn2"  # the target the cost model estimates for (and the course grades on)
LABEL = latency_label(TARGET)  # "estimate: nkisim cost model, trn2" on the simulator
EPS = 1e-6
FP8 = np.dtype(nl.float8_e4m3)
print("nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "AWS's NKI (Neuron SDK 2.32 or later)")


# %% [markdown] nbgrader={"grade": false, "grade_id": "math_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 1. The backward pass of RMSNorm
#
# The forward pass (stage 4) computes, per row `r` of `x` (shape `[R, C]`) with the weight `w` (shape `[C]`):
#
# $$\mathrm{rstd}_r = \Big(\tfrac{1}{C}\textstyle\sum_c x_{rc}^2 + \varepsilon\Big)^{-1/2},\qquad
#   \hat x_{rc} = x_{rc}\,\mathrm{rstd}_r,\qquad y_{rc} = \hat x_{rc}\, w_c .$$
#
# A training framework keeps `rstd` (one float32 per row) for the backward pass, which gets `dy = ∂L/∂y` and returns
# the gradients of the loss with respect to `x` and `w`. With `g = dy · w` (elementwise):
#
# $$\frac{\partial L}{\partial w_c} = \sum_r dy_{rc}\,\hat x_{rc}, \qquad
#   \frac{\partial L}{\partial x_{rc}} = \mathrm{rstd}_r \Big( g_{rc} - \hat x_{rc}\cdot \tfrac{1}{C}\textstyle\sum_k g_{rk}\,\hat x_{rk} \Big).$$
#
# The second formula is the chain rule through `rstd`, which depends on the whole row: `∂rstd_r/∂x_rk = -rstd_r³ x_rk
# / C`. The cell checks both formulas against PyTorch's autograd (float64).

# %% nbgrader={"grade": false, "grade_id": "demo_autograd", "locked": true, "schema_version": 3, "solution": false, "task": false}
def rmsnorm_backward_numpy(x, w, dy):
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    xhat, g = x * rstd, dy * w
    dx = rstd * (g - xhat * np.mean(g * xhat, axis=1, keepdims=True))
    return dx, np.sum(dy * xhat, axis=0)


rng = np.random.default_rng(0)
x_d, w_d, dy_d = rng.standard_normal((6, 10)), rng.standard_normal(10), rng.standard_normal((6, 10))
try:
    import torch

    xt, wt = torch.tensor(x_d, requires_grad=True), torch.tensor(w_d, requires_grad=True)
    torch.nn.functional.rms_norm(xt, (10,), weight=wt, eps=EPS).backward(torch.tensor(dy_d))
    dx_d, dw_d = rmsnorm_backward_numpy(x_d, w_d, dy_d)
    print("max |dx - autograd| =", float(np.abs(dx_d - xt.grad.numpy()).max()))
    print("max |dw - autograd| =", float(np.abs(dw_d - wt.grad.numpy()).max()))
except ImportError:
    print("PyTorch is not installed here: the formulas are checked in the course's tests")

# %% [markdown] nbgrader={"grade": false, "grade_id": "mapping_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 2. Mapping it onto a NeuronCore
#
# **`dx` is per row**, like the forward pass: rows on the partitions, 128 at a time, `C` along the free dimension.
# The row sum `Σ_k g_rk x̂_rk` is a free-axis reduction, one number per partition. Rewrite `dx` so each step is one
# instruction: with `q = dy · x` and `s_r = Σ_c q_rc w_c`,
#
# $$dx_{rc} = \mathrm{rstd}_r\,(dy_{rc}\, w_c) + \Big(-\tfrac{\mathrm{rstd}_r^3\, s_r}{C}\Big)\, x_{rc} .$$
#
# **`dw` is a sum over rows**, i.e. over the **partitions** of every row tile, and then over all row tiles. The
# engines reduce along the free axis; the Tensor Engine contracts over partitions (stage 6). So `dw` for one row
# tile is a matmul whose stationary operand is the `[rows, 1]` column `rstd` and whose moving operand is `q`:
# `nisa.nc_matmul(dst=dw_psum, stationary=rstd_tile, moving=q[:, c0:c1])` adds `Σ_r rstd_r q_rc`, a
# `[1, c1 - c0]` result of at most {{trn2:gemm_moving_fmax}} columns, into the PSUM tile `dw_psum`. Accumulate it
# there across the loop over row tiles, exactly like stage 6's loop over K (the first matmul overwrites, every later
# one adds), and evict it once at the end. Keep both operands float32 (float32 matmuls pair with float32): the
# sum runs over thousands of rows.
#
# **Engine balance.** Per element this kernel multiplies four times (`q`, `q·w`, `dy·w`, the final combination)
# and moves three values (`x`, `dy` in, `dx` out). The Vector engine alone would be the bottleneck. Three engines can
# take elementwise work:
#
# * the **Vector** engine (`nl.multiply`, `nisa.tensor_tensor`, `nisa.scalar_tensor_tensor` ...);
# * the **GpSimd** engine: `nisa.tensor_tensor(dst=t, data1=a, data2=b, engine=nisa.engine.gpsimd, op=nl.multiply)`;
# * the **Scalar** engine for anything of the form `f(data · scale + bias)` with a per-partition `scale`:
#   `nisa.activation(dst=t, op=nl.copy, data=x, scale=coef)` is `x · coef` row by row, and
#   `nisa.activation_reduce(dst=t, op=nl.copy, data=x, reduce_op=nl.add, reduce_res=s)` sums a row while copying it.
#
# **The packed output.** The grader compares one array, so the kernel returns `grads` of shape `[R + 1, C]`: `dx` in
# rows `0 .. R-1` and `dw` in row `R` (a framework would return two tensors).
#
# **A ragged last tile without masks.** Loop over tiles of rows with a plain Python `range`, as stage 8 looped over
# channel tiles: each tile's row count `n = min(128, R - r0)` is then a Python number, and every slice is `[:n]`,
# the matmul's contraction included. (The loop is unrolled when the kernel compiles; that is fine for a few dozen
# tiles.)
#
# *In the legacy dialect* the dw matmul is `dw_psum += nl.matmul(rstd_tile, q[:, c0:c1], transpose_x=True)`, the
# instructions return their results (`nisa.tensor_tensor(a, b, op=np.multiply, engine=nisa.gpsimd_engine)`), and the
# operators are NumPy's.

# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 3. `rmsnorm_backward` (4 points)
#
# Write `rmsnorm_backward(x, w, dy, rstd)`:
#
# * `x` and `dy` are `[R, C]`, `w` is `[C]`, all float32 or all bfloat16; `rstd` is `[R, 1]` float32, as the forward
#   pass saved it (`1/sqrt(mean(x²) + 1e-6)` per row); `R ≥ 1` (any), `1 ≤ C ≤ 2048`;
# * return `grads`, `[R + 1, C]` with `x`'s dtype: `dx` in rows `0 .. R-1`, `dw` in row `R`.
#
# Compute in float32 and round once, when storing. Tolerances: rtol = atol = 1e-4 for float32 (`dw` sums up to
# thousands of rows), 1.6e-2 for bfloat16 (the output rounded once). Correctness earns 3 points, speed 1 (≤ 1.2× the
# reference's estimated latency for R = 4096, C = 2048 in float32).

# %% nbgrader={"grade": false, "grade_id": "q1_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile rmsnorm_backward.py
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_backward(x, w, dy, rstd):
    """dx and dw of RMSNorm, packed: grads[:R] = dx, grads[R] = dw."""
    ### BEGIN SOLUTION
    R, C = x.shape
    grads = nl.ndarray((R + 1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_c = nl.arange(128)[:, None], nl.arange(C)[None, :]
    row0 = nl.zeros((128, 1), dtype=nl.int32)  # w on every partition in one DMA: each partition gathers row 0
    w_b = nl.load(w.reshape((1, C))[row0[i_p, 0], i_c], dtype=nl.float32)
    dw_ps = [nl.zeros((1, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(0, C, 512)]  # one bank each
    for t in range((R + 127) // 128):  # a Python loop: the last tile of rows may be ragged (n < 128)
        r0, n = t * 128, min(128, R - t * 128)
        x_t = nl.load(x[r0:r0 + n, :], dtype=nl.float32)
        dy_t = nl.load(dy[r0:r0 + n, :], dtype=nl.float32)
        rs = nl.load(rstd[r0:r0 + n, :])
        q = nisa.tensor_tensor(dy_t, x_t, op=np.multiply, engine=nisa.gpsimd_engine)  # dy * x         (GpSimd)
        for k, c0 in enumerate(range(0, C, 512)):  # dw: the sum over this tile's rows, on the Tensor Engine
            cn = min(512, C - c0)
            dw_ps[k][:, 0:cn] += nl.matmul(rs, q[:, c0:c0 + cn], transpose_x=True)
        qw = nisa.tensor_tensor(q, w_b[:n, :], op=np.multiply, engine=nisa.gpsimd_engine)  # * w      (GpSimd)
        s = nl.ndarray((n, 1), dtype=nl.float32)
        nisa.activation_reduce(op=nl.copy, data=qw, reduce_op=np.add, reduce_res=s)  # row sums        (Scalar)
        coef = nl.multiply(nl.multiply(nl.multiply(rs, rs), rs), s)  # rstd^3 * s, one per row
        x_c = nisa.activation(op=nl.copy, data=x_t, scale=nl.multiply(coef, -1.0 / C))  # -rstd^3 s x / C (Scalar)
        g = nisa.tensor_tensor(dy_t, w_b[:n, :], op=np.multiply)  # dy * w                             (Vector)
        dx = nisa.scalar_tensor_tensor(data=g, op0=np.multiply, operand0=rs, op1=np.add, operand1=x_c,
                                       dtype=x.dtype)  # rstd * g + x_c, rounded once                 (Vector)
        nl.store(grads[r0:r0 + n, :], value=dx)
    for k, c0 in enumerate(range(0, C, 512)):
        cn = min(512, C - c0)
        nl.store(grads[R:R + 1, c0:c0 + cn], value=nl.copy(dw_ps[k][:, 0:cn], dtype=x.dtype))
    return grads
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile rmsnorm_backward.py
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_backward(x, w, dy, rstd):
    """dx and dw of RMSNorm, packed: grads[:R] = dx, grads[R] = dw."""
    ### BEGIN SOLUTION
    R, C = x.shape
    grads = nl.ndarray((R + 1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    w_b = nl.load(w.reshape((1, C)).broadcast(0, 128), dtype=nl.float32)  # w on every partition in one DMA
    dw_ps = [nl.zeros((1, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(0, C, 512)]  # one bank each
    for t in range((R + 127) // 128):  # the last tile of rows may be ragged (n < 128): a smaller slice
        r0, n = t * 128, min(128, R - t * 128)
        x_t = nl.load(x[r0:r0 + n, :], dtype=nl.float32)
        dy_t = nl.load(dy[r0:r0 + n, :], dtype=nl.float32)
        rs = nl.load(rstd[r0:r0 + n, :])
        q = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=q, data1=dy_t, data2=x_t, op=nl.multiply, engine=nisa.engine.gpsimd)  # dy * x (GpSimd)
        for k, c0 in enumerate(range(0, C, 512)):  # dw: the sum over this tile's rows, on the Tensor Engine
            cn = min(512, C - c0)
            nisa.nc_matmul(dst=dw_ps[k][:, 0:cn], stationary=rs, moving=q[:, c0:c0 + cn])
        qw = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=qw, data1=q, data2=w_b[:n, :], op=nl.multiply, engine=nisa.engine.gpsimd)  # (GpSimd)
        s = nl.ndarray((n, 1), dtype=nl.float32, buffer=nl.sbuf)
        qw_copy = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=qw_copy, op=nl.copy, data=qw, reduce_op=nl.add, reduce_res=s)  # row sums (Scalar)
        coef = nl.multiply(nl.multiply(nl.multiply(rs, rs), rs), s)  # rstd^3 * s, one per row
        x_c = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=x_c, op=nl.copy, data=x_t, scale=nl.multiply(coef, -1.0 / C))  # -rstd^3 s x / C (Scalar)
        g = nl.ndarray((n, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=g, data1=dy_t, data2=w_b[:n, :], op=nl.multiply)  # dy * w                 (Vector)
        dx = nl.ndarray((n, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=dx, data=g, op0=nl.multiply, operand0=rs, op1=nl.add,
                                  operand1=x_c)  # rstd * g + x_c, rounded once                           (Vector)
        nl.store(grads[r0:r0 + n, :], value=dx)
    for k, c0 in enumerate(range(0, C, 512)):
        cn = min(512, C - c0)
        dw = nl.ndarray((1, cn), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=dw, op=nl.copy, data=dw_ps[k][:, 0:cn])
        nl.store(grads[R:R + 1, c0:c0 + cn], value=dw)
    return grads
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("rmsnorm_backward", "rmsnorm_backward.py");

# %% nbgrader={"grade": true, "grade_id": "q1_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (3 points), then speed vs the reference (1 point).
from nkilab import grade

grade("rmsnorm_backward", "rmsnorm_backward.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "fp8_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 4. FP8: e4m3, group scales, saturation
#
# NKI's `nl.float8_e4m3` has 1 sign bit, {{float8_e4m3:exponent_bits}} exponent bits and
# {{float8_e4m3:mantissa_bits}} mantissa bits. Its largest finite value is {{float8_e4m3:max}}; neighbouring values
# are {{float8_e4m3:eps_pow2}} = {{float8_e4m3:eps}} apart relative to their binade (so rounding to nearest errs by at
# most half that, 6.25%); normal numbers go down to {{float8_e4m3:smallest_normal_pow2}}, subnormals to
# {{float8_e4m3:smallest_subnormal_pow2}}. A tensor's values must be **scaled** into that range before the cast:
#
# * **group scales**: one float32 scale per 1 × 16 group of a row, `scale = amax(|group|) / {{float8_e4m3:max}}`, so
#   every group uses the whole range, however different the groups' magnitudes (activations have outliers);
#   dequantising is `x ≈ x_q · scale`;
# * a **per-tensor scale** for an output nobody has seen yet, taken from an earlier step's amax ("delayed
#   scaling"). When this step's values grow past it, the quotient exceeds {{float8_e4m3:max}}: a plain cast makes
#   **inf** of it; clamp to `±{{float8_e4m3:max}}` first (**saturation**).
#
# The cell quantises a row with group scales, dequantises it, and casts a few values that are too large.

# %% nbgrader={"grade": false, "grade_id": "demo_fp8", "locked": true, "schema_version": 3, "solution": false, "task": false}
info = ml_dtypes.finfo(FP8)
print(f"float8_e4m3: max {float(info.max):g}, eps {float(info.eps):g}, smallest subnormal {float(info.smallest_subnormal):g}")
row = rng.standard_normal(64) * np.repeat(2.0 ** np.array([-9, -3, 3, 7]), 16)  # four groups, very different sizes
scales = (np.abs(row).reshape(4, 16).max(axis=1) / float(info.max)).astype(np.float32)
row_q = (row / np.repeat(scales, 16)).astype(FP8)
back = row_q.astype(np.float64) * np.repeat(scales, 16)
print("group scales:", scales)
print(f"round trip, worst relative error {np.max(np.abs(back - row) / np.abs(row)):.4f} "
      f"(at most half a unit: {float(info.eps) / 2:g})")
one_scale = float(np.abs(row).max()) / float(info.max)  # one scale for the whole row instead
one = (row / one_scale).astype(FP8).astype(np.float64) * one_scale
small = np.abs(row) < 2.0 ** -6  # the values of the smallest group
print(f"one scale for the whole row: {100 * np.mean(one[small] == 0):.0f}% of the smallest group's values become 0, "
      f"the rest err by up to {np.max(np.abs(one[small] - row[small]) / np.abs(row[small])):.0%}")
print("cast without saturation:", np.array([120.0, 250.0, 1000.0]).astype(FP8),
      " with:", np.clip([120.0, 250.0, 1000.0], -float(info.max), float(info.max)).astype(FP8))

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 5. RMSNorm in FP8 — `rmsnorm_fp8_forward` (4 points)
#
# Write `rmsnorm_fp8_forward(x_q, x_scale, w, out_scale)`:
#
# * `x_q` is `[R, C]` float8_e4m3 with one float32 scale per 1 × 16 group in `x_scale` (`[R, C/16]`): the activations
#   are `x = x_q · scale`; `w` is `[C]` float32 or bfloat16; `out_scale` is `[1, 1]` float32; `R ≥ 1`, `C` a multiple
#   of 16 up to 2048;
# * return `[R, C]` float8_e4m3: `rmsnorm(x) · w / out_scale` (as stage 4, eps = 1e-6), saturated to
#   `±{{float8_e4m3:max}}`. In every case some values need the saturation: `out_scale` comes from half this step's
#   amax.
#
# Dequantise with one multiply: view the `[n, C]` tile as `[n, C/16, 16]` and the scales as `[n, C/16, 1]`, and
# broadcast the size-1 axis with a view, `sc.broadcast(2, 16)` (a stride of 0: each scale read 16 times), as the
# second operand of `nisa.tensor_tensor`. `nisa.tensor_scalar(dst=q, data=v, op0=nl.minimum, operand0=240.0,
# op1=nl.maximum, operand1=-240.0)` saturates and casts to `q`'s dtype in one instruction. (In the legacy dialect
# `nl.multiply` broadcasts the size-1 axis itself, and `nisa.tensor_scalar(v, np.minimum, 240.0, op1=np.maximum,
# operand1=-240.0, dtype=nl.float8_e4m3)` returns the saturated tile.)
#
# **Compute in bf16: the output is FP8.** An FP8 result keeps 3 mantissa bits, so nothing in between needs float32's
# 23. Load `x_q` and the scales with `dtype=nl.bfloat16` (the DMA converts on the way; FP8 values are exact in bf16),
# keep every tile bf16, and store the saturated bf16 tile into the FP8 output (the DMA converts again). On trn2 the
# Vector engine has a **performance mode** for 2-byte data: a `tensor_tensor` multiply of contiguous bf16 tiles runs
# at a quarter of its float32 cost and a bf16 `tensor_scalar` at a quarter of one pass. Each bf16 rounding is off by
# at most 2^-9 relative; a few of them stay far under half an FP8 unit (2^-5 relative at least), so the result still lies within one
# unit of the exactly rounded value (the tolerance below).
#
# **Keep three engines busy, tile after tile.** Every tile of rows takes five passes: the dequantising multiply, the
# sum of squares (Scalar, `activation_reduce`), `x · w` (GpSimd), `· rstd / out_scale` (one `tensor_scalar` with two
# multiplies on the Vector engine; one tile in four on the Scalar engine, as a scale per row) and the saturation
# (Vector: a min and a max; AWS documents trn2's Scalar engine `tensor_scalar` as multiply and add only, and GpSimd's
# as `rsqrt` only, and the simulator refuses the others as the compiler does). The dequantising multiply reads each
# scale 16 times (a zero stride), which is not contiguous, so the performance mode halves it only once: give three
# quarters of the groups to the Vector engine and the last quarter to GpSimd, two instructions that run side by side.
#
# Each engine runs its instructions in program order, so a loop body that issues the five passes in turn makes every
# engine wait for the one before. Issue, in each step `t` of the loop, the first stage of tile `t` (load, dequantise,
# sum of squares, `rstd`), the weight of tile `t - 2`, the `rstd` of tile `t - 3` and the saturation and store of tile
# `t - 5`: each waits for work issued steps earlier, long enough for a slow engine to have finished it. This is
# **software pipelining**: the loop runs `T + 5` steps, each stage skipping the steps where its tile does not exist,
# and the estimate shows what it is worth.
#
# **The tolerance, from FP8's precision.** A kernel that rounds once differs from the float64 reference only where
# the two values fall on opposite sides of a rounding boundary, and then by one unit in the last place; bf16 in
# between moves a value by far less than half a unit, so it can only do the same; the grader allows rtol =
# {{float8_e4m3:eps}} (one unit, relative) and atol = {{float8_e4m3:smallest_subnormal_pow2}} (one subnormal step
# near zero). A wrong group scale, a missing `rstd`, an inverted `out_scale` or a missing saturation are off by far
# more. Correctness earns 3 points, speed 1 (≤ 1.2× the reference's estimated latency for R = C = 2048 with a
# float32 weight).

# %% nbgrader={"grade": false, "grade_id": "q2_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile rmsnorm_fp8_forward.py
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

FP8_MAX = 240.0  # the largest finite float8_e4m3
GROUP = 16  # values per input scale


@nki.jit
def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
    """rmsnorm(x_q * group scales) * w / out_scale, saturated, as float8_e4m3 (bf16 in between)."""
    ### BEGIN SOLUTION
    R, C = x_q.shape
    G = C // GROUP
    GV = max(1, 3 * G // 4)  # groups the Vector engine dequantises; GpSimd takes the rest
    T = (R + 127) // 128  # tiles of rows
    out = nl.ndarray((R, C), dtype=x_q.dtype, buffer=nl.shared_hbm)
    inv_s = nisa.tensor_scalar(nl.load(out_scale), np.power, -1.0).broadcast_to((128, 1))  # 1 / out_scale, every row
    inv_sb = nisa.activation(op=nl.copy, data=inv_s, dtype=nl.bfloat16)
    eps = nl.full((128, 1), 1e-6, dtype=nl.float32)
    i_p = nl.arange(128)[:, None, None]
    i_g = nl.arange(G)[None, :, None] + 0 * nl.arange(GROUP)[None, None, :]  # each group's scale 16 times
    row0 = nl.zeros((128, 1), dtype=nl.int32)  # the row of w each partition gathers (one DMA puts w on all 128)
    i_w, i_c = nl.arange(128)[:, None], nl.arange(C)[None, :]
    ws = None  # w on every partition: loaded in the first step, after that tile's loads
    tiles = {}  # tile -> what its next stage needs
    for t in range(T + 5):  # step t: tile t's first stage, t-2's weight, t-3's rstd, t-5's saturation and store
        if 0 <= t - 5 < T:
            p0, pn, v = tiles.pop(t - 5)
            q = nisa.tensor_scalar(v, np.minimum, FP8_MAX, op1=np.maximum, operand1=-FP8_MAX)  # saturate (Vector)
            nl.store(out[p0:p0 + pn, :], value=q)  # the DMA casts bf16 to float8_e4m3
        if 0 <= t - 3 < T:
            p0, pn, xw, rstd, rstd_b = tiles[t - 3]
            if t % 4 == 2:  # one tile in four on the Scalar engine, which has time to spare
                rs = nisa.activation(op=nl.copy, data=rstd, scale=inv_s[:pn])  # rstd / out_scale
                v = nisa.activation(op=nl.copy, data=xw, scale=rs, dtype=nl.bfloat16)
            else:  # the others on the Vector engine: all bf16, so 4x in its performance mode
                v = nisa.tensor_scalar(xw, np.multiply, rstd_b, op1=np.multiply, operand1=inv_sb[:pn])
            tiles[t - 3] = (p0, pn, v)
        if 0 <= t - 2 < T:
            p0, pn, x, rstd, rstd_b = tiles[t - 2]
            xw = nisa.tensor_tensor(x, ws[:pn, :], op=np.multiply, engine=nisa.gpsimd_engine)  # x * w (GpSimd)
            tiles[t - 2] = (p0, pn, xw, rstd, rstd_b)
        if t < T:
            r0, n = t * 128, min(128, R - t * 128)
            xq = nl.load(x_q[r0:r0 + n, :], dtype=nl.bfloat16).reshape((n, G, GROUP))  # the DMA casts (exact)
            sc = nl.load(x_scale[r0:r0 + n, :], dtype=nl.bfloat16)
            x = nl.ndarray((n, G, GROUP), dtype=nl.bfloat16)
            x[:, :GV, :] = nisa.tensor_tensor(xq[:, :GV, :], sc[i_p[:n], i_g[:, :GV, :]], op=np.multiply)
            if GV < G:
                x[:, GV:, :] = nisa.tensor_tensor(xq[:, GV:, :], sc[i_p[:n], i_g[:, GV:, :]],
                                                  op=np.multiply, engine=nisa.gpsimd_engine)  # (GpSimd)
            x = x.reshape((n, C))
            ss = nl.ndarray((n, 1), dtype=nl.float32)
            nisa.activation_reduce(op=nl.square, data=x, reduce_op=np.add, reduce_res=ss)  # sum of squares (Scalar)
            rstd = nisa.activation(op=nl.rsqrt, data=ss, scale=1.0 / C, bias=eps[:n])  # 1 / sqrt(ss / C + eps)
            tiles[t] = (r0, n, x, rstd, nisa.activation(op=nl.copy, data=rstd, dtype=nl.bfloat16))
        if t == 0:  # after the first tile's loads: w in bf16 on every partition, one DMA (the DMA casts)
            ws = nl.load(w.reshape((1, C))[row0[i_w, 0], i_c], dtype=nl.bfloat16)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile rmsnorm_fp8_forward.py
import nki
import nki.isa as nisa
import nki.language as nl

FP8_MAX = 240.0  # the largest finite float8_e4m3
GROUP = 16  # values per input scale


@nki.jit
def rmsnorm_fp8_forward(x_q, x_scale, w, out_scale):
    """rmsnorm(x_q * group scales) * w / out_scale, saturated, as float8_e4m3 (bf16 in between)."""
    ### BEGIN SOLUTION
    R, C = x_q.shape
    G = C // GROUP
    GV = max(1, 3 * G // 4)  # groups the Vector engine dequantises; GpSimd takes the rest
    T = (R + 127) // 128  # tiles of rows
    out = nl.ndarray((R, C), dtype=x_q.dtype, buffer=nl.shared_hbm)
    inv_s1 = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=inv_s1, data=nl.load(out_scale), op0=nl.power, operand0=-1.0)
    inv_s = nl.broadcast_to(inv_s1, (128, 1))  # 1 / out_scale on every partition
    inv_sb = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.activation(dst=inv_sb, op=nl.copy, data=inv_s)
    eps = nl.full((128, 1), 1e-6, dtype=nl.float32)
    ws = None  # w on every partition: loaded in the first step, after that tile's loads
    tiles = {}  # tile -> what its next stage needs
    for t in range(T + 5):  # step t: tile t's first stage, t-2's weight, t-3's rstd, t-5's saturation and store
        if 0 <= t - 5 < T:
            p0, pn, v = tiles.pop(t - 5)
            q = nl.ndarray((pn, C), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=q, data=v, op0=nl.minimum, operand0=FP8_MAX, op1=nl.maximum,
                               operand1=-FP8_MAX)  # saturate (Vector)
            nl.store(out[p0:p0 + pn, :], value=q)  # the DMA casts bf16 to float8_e4m3
        if 0 <= t - 3 < T:
            p0, pn, xw, rstd, rstd_b = tiles[t - 3]
            v = nl.ndarray((pn, C), dtype=nl.bfloat16, buffer=nl.sbuf)
            if t % 4 == 2:  # one tile in four on the Scalar engine, which has time to spare
                rs = nl.ndarray((pn, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=rs, op=nl.copy, data=rstd, scale=inv_s[:pn, :])  # rstd / out_scale
                nisa.activation(dst=v, op=nl.copy, data=xw, scale=rs)
            else:  # the others on the Vector engine: all bf16, so 4x in its performance mode
                nisa.tensor_scalar(dst=v, data=xw, op0=nl.multiply, operand0=rstd_b, op1=nl.multiply,
                                   operand1=inv_sb[:pn, :])
            tiles[t - 3] = (p0, pn, v)
        if 0 <= t - 2 < T:
            p0, pn, x, rstd, rstd_b = tiles[t - 2]
            xw = nl.ndarray((pn, C), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=xw, data1=x, data2=ws[:pn, :], op=nl.multiply, engine=nisa.engine.gpsimd)  # x * w
            tiles[t - 2] = (p0, pn, xw, rstd, rstd_b)
        if t < T:
            r0, n = t * 128, min(128, R - t * 128)
            xq = nl.load(x_q[r0:r0 + n, :], dtype=nl.bfloat16).reshape((n, G, GROUP))  # the DMA casts (exact)
            sc = nl.load(x_scale[r0:r0 + n, :], dtype=nl.bfloat16).reshape((n, G, 1))
            x = nl.ndarray((n, G, GROUP), dtype=nl.bfloat16, buffer=nl.sbuf)
            # each group's scale read 16 times along the last axis (a stride-0 view)
            nisa.tensor_tensor(dst=x[:, :GV, :], data1=xq[:, :GV, :], data2=sc[:, :GV, :].broadcast(2, GROUP),
                               op=nl.multiply)
            if GV < G:
                nisa.tensor_tensor(dst=x[:, GV:, :], data1=xq[:, GV:, :], data2=sc[:, GV:, :].broadcast(2, GROUP),
                                   op=nl.multiply, engine=nisa.engine.gpsimd)
            x = x.reshape((n, C))
            ss = nl.ndarray((n, 1), dtype=nl.float32, buffer=nl.sbuf)
            sq = nl.ndarray((n, C), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.activation_reduce(dst=sq, op=nl.square, data=x, reduce_op=nl.add, reduce_res=ss)  # (Scalar)
            rstd = nl.ndarray((n, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=rstd, op=nl.rsqrt, data=ss, scale=1.0 / C, bias=eps[:n, :])  # 1 / sqrt(ss/C + eps)
            rstd_b = nl.ndarray((n, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.activation(dst=rstd_b, op=nl.copy, data=rstd)
            tiles[t] = (r0, n, x, rstd, rstd_b)
        if t == 0:  # after the first tile's loads: w in bf16 on every partition, one DMA (the DMA casts)
            ws = nl.load(w.reshape((1, C)).broadcast(0, 128), dtype=nl.bfloat16)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("rmsnorm_fp8_forward", "rmsnorm_fp8_forward.py");

# %% nbgrader={"grade": true, "grade_id": "q2_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (3 points), then speed vs the reference (1 point).
from nkilab import grade

grade("rmsnorm_fp8_forward", "rmsnorm_fp8_forward.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "mm_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 6. FP8 on the Tensor Engine
#
# The reason to store activations in FP8 is the matmuls that read them. On trn2 the PE array takes FP8 operands "two
# rows at a time": `nisa.nc_matmul(s, m, perf_mode="double_row_gen3")` with `s` of shape `[128, 2, M]` and `m` of
# shape `[128, 2, N]` contracts over 256 values (both rows of every partition) in the time a bfloat16 matmul
# contracts over 128. The target file lists the peaks: {{trn2:pe_tflops_bf16}} TFLOPS in bfloat16,
# {{trn2:pe_tflops_fp8}} in FP8, {{trn2:pe_tflops_fp32}} in float32. The cell runs the same 2048-long contraction
# (`[2048, 128]ᵀ @ [2048, 512]`) both ways and shows the Tensor Engine's estimated busy time.

# %% nbgrader={"grade": false, "grade_id": "mm_demo", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def contract_bf16(a, b):
    """a [128, 16, 128] and b [128, 16, 512]: sum over 16 slices of a[:, k].T @ b[:, k], one matmul each."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a_t, b_t = nl.load(a), nl.load(b)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(16):
        acc += nisa.nc_matmul(a_t[:, k, :], b_t[:, k, :])
    nl.store(out, value=nl.copy(acc))
    return out


@nki.jit
def contract_fp8(a, b):
    """The same contraction in FP8: two slices per double-row matmul."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a_t, b_t = nl.load(a), nl.load(b)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(8):
        acc += nisa.nc_matmul(a_t[:, 2 * k:2 * k + 2, :], b_t[:, 2 * k:2 * k + 2, :], perf_mode="double_row_gen3")
    nl.store(out, value=nl.copy(acc))
    return out


a8 = rng.standard_normal((128, 16, 128)).astype(FP8)  # FP8 values are exact in bfloat16 too
b8 = rng.standard_normal((128, 16, 512)).astype(FP8)
want = np.einsum("kri,krj->ij", a8.astype(np.float64), b8.astype(np.float64))
if ON_SIMULATOR:
    from nkisim.api import launch

    for name, kern, args in (("bfloat16", contract_bf16, (a8.astype(ml_dtypes.bfloat16), b8.astype(ml_dtypes.bfloat16))),
                             ("fp8", contract_fp8, (a8, b8))):
        run = launch(kern, args, target=TARGET)
        err = float(np.abs(np.asarray(run.outputs) - want).max())
        pe_us = run.estimate().engine_busy_us["pe"]
        print(f"{name:9s} Tensor Engine busy {pe_us:5.2f} us ({LABEL}); max error vs float64 {err:.2g}")
else:
    print("on hardware: time both with nki.benchmark")
print(f"peaks on {TARGET}: {peak(TARGET).pe_tflops}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "mm_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 6. FP8 on the Tensor Engine
#
# The reason to store activations in FP8 is the matmuls that read them. On trn2 the PE array takes FP8 operands "two
# rows at a time": `nisa.nc_matmul(dst=acc, stationary=s, moving=m, perf_mode=nisa.matmul_perf_mode.double_row)` with
# `s` of shape `[128, 2, M]` and `m` of shape `[128, 2, N]` contracts over 256 values (both rows of every partition) in
# the time a bfloat16 matmul contracts over 128. The target file lists the peaks: {{trn2:pe_tflops_bf16}} TFLOPS in
# bfloat16, {{trn2:pe_tflops_fp8}} in FP8, {{trn2:pe_tflops_fp32}} in float32. The cell runs the same 2048-long
# contraction (`[2048, 128]ᵀ @ [2048, 512]`) both ways and shows the Tensor Engine's estimated busy time.
#
# *In the legacy dialect* the same matmul is `acc += nisa.nc_matmul(s, m, perf_mode="double_row_gen3")`.

# %% nbgrader={"grade": false, "grade_id": "mm_demo_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def contract_bf16(a, b):
    """a [128, 16, 128] and b [128, 16, 512]: sum over 16 slices of a[:, k].T @ b[:, k], one matmul each."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a_t, b_t = nl.load(a), nl.load(b)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in range(16):
        nisa.nc_matmul(dst=acc, stationary=a_t[:, k, :], moving=b_t[:, k, :])
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nl.store(out, value=res)
    return out


@nki.jit
def contract_fp8(a, b):
    """The same contraction in FP8: two slices per double-row matmul."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a_t, b_t = nl.load(a), nl.load(b)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in range(8):
        nisa.nc_matmul(dst=acc, stationary=a_t[:, 2 * k:2 * k + 2, :], moving=b_t[:, 2 * k:2 * k + 2, :],
                       perf_mode=nisa.matmul_perf_mode.double_row)
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nl.store(out, value=res)
    return out


a8 = rng.standard_normal((128, 16, 128)).astype(FP8)  # FP8 values are exact in bfloat16 too
b8 = rng.standard_normal((128, 16, 512)).astype(FP8)
want = np.einsum("kri,krj->ij", a8.astype(np.float64), b8.astype(np.float64))
if ON_SIMULATOR:
    from nkisim.api import launch

    for name, kern, args in (("bfloat16", contract_bf16, (a8.astype(ml_dtypes.bfloat16), b8.astype(ml_dtypes.bfloat16))),
                             ("fp8", contract_fp8, (a8, b8))):
        run = launch(kern, args, target=TARGET)
        err = float(np.abs(np.asarray(run.outputs) - want).max())
        pe_us = run.estimate().engine_busy_us["pe"]
        print(f"{name:9s} Tensor Engine busy {pe_us:5.2f} us ({LABEL}); max error vs float64 {err:.2g}")
else:
    print("on hardware: time both with latency_us (the NEFF timed on the device)")
print(f"peaks on {TARGET}: {peak(TARGET).pe_tflops}")


# %% nbgrader={"grade": false, "grade_id": "figure_fp8_timelines", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The two contractions as engine timelines: the FP8 one issues half the matmuls, each contracting two rows.
import matplotlib.pyplot as plt

if ON_SIMULATOR:
    from nkisim.api import profile_kernel

    for name, kern, args in (("bfloat16", contract_bf16, (a8.astype(ml_dtypes.bfloat16), b8.astype(ml_dtypes.bfloat16))),
                             ("fp8", contract_fp8, (a8, b8))):
        p = profile_kernel(kern, *args, target=TARGET)
        p.figure(title=f"{name}: {p.estimate.total_us:.1f} us on {TARGET}, Tensor Engine busy "
                       f"{p.estimate.engine_busy_us['pe']:.2f} us ({LABEL})")
    plt.show()
else:
    print("on hardware: capture both with neuron-explorer (legacy: nki.profile) and open them in Neuron Explorer")

# %% [markdown] nbgrader={"grade": false, "grade_id": "w1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ### Written question (1 point)
#
# In section 4's demo, one scale for the whole row turns many values into 0. Why, and why do scales per 16 values
# not? And why can a kernel that rounds an intermediate to bfloat16 (8 mantissa bits) before the final cast still
# pass the FP8 tolerance, while one that forgets the saturation cannot?

# %% [markdown] nbgrader={"grade": true, "grade_id": "w1_answer", "locked": false, "points": 1, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# With one scale, the row's largest value (in a group of size about 2^7) maps to 240, and the group of size about
# 2^-9 maps to about 240 · 2^-16 ≈ 0.004 and below: near or under FP8's smallest subnormal (2^-9), where there are
# no mantissa bits left, so many of its values round to 0 and the rest keep one or two significant bits. A scale
# per 16 values maps each group's own amax to 240, and every group keeps its 3 mantissa bits. An
# intermediate rounded to bfloat16 errs by at most 2^-9 relative, far below FP8's unit (2^-3): it can only move the
# result across a rounding boundary, i.e. by one unit, which the tolerance allows. Without saturation a value above
# 240 becomes inf, which no tolerance accepts (the grader reports it as a NaN/Inf where the answer is finite).
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "hardware", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## On real hardware
#
# * **Which Neuron SDK.** This notebook is NKI 0.6 (`import nki`) and needs Neuron SDK 2.32 or later. Its legacy twin
#   (`make lab DIALECT=legacy`, `import neuronxcc.nki`) needs SDK 2.29 or earlier: since SDK 2.30 that namespace inside
#   a kernel is a compile error. The simulator runs both.
# * Everything here is plain NKI; the microseconds are cost-model **estimates** for trn2 (on a device, `check`
#   measures: the NEFF timed with nrtpy's benchmark or `neuron-explorer capture`, stage 1). `nl.float8_e4m3` is the
#   IEEE-style e4m3 of trn2 (its maximum is {{float8_e4m3:max}}); trn3 adds OCP's `float8_e4m3fn` (maximum 448) and
#   MX formats, whose scales are powers of two shared by 32 values (`nisa.quantize_mx` in NKI 0.6).
# * A training step would also produce the next step's `out_scale` (the amax of `y`) and the backward pass in FP8
#   would quantise `dx` with group scales: both are reductions you have now written twice.
# * PyTorch's `torch.nn.functional.rms_norm` with autograd is the reference for the backward pass; on a device,
#   compare your kernel's `dx` and `dw` with it on the same inputs.

