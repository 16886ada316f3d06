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
# # Stage 7 — Fusion: RMSNorm followed by a linear layer
#
# **Goals.** By the end of this notebook you can
#
# 1. compute `rmsnorm(x, g) @ w` in **one** kernel, so the normalised activations never go back to HBM;
# 2. transpose a tile on the Tensor Engine (`nisa.nc_transpose`) or while loading it (`nisa.dma_transpose`),
#    because a matmul contracts over partitions and a row tile has its rows, not its columns, on the partitions;
# 3. rewrite the math so each piece of work happens where it is cheapest: the weight `g` folded into `w` once,
#    `w` kept in SBUF for every row tile, and the per-row `1/rms` applied to the result on its way out of PSUM;
# 4. read the two kernels' estimated latencies against the Tensor Engine's bound.
#
# In a transformer every attention and MLP block starts with a normalisation followed by a projection, so this
# pair is everywhere. Stage 4 wrote RMSNorm, stage 6 the matmul; here they become one kernel. As before, the
# grade cells add hidden cases (float32 and bfloat16, C from 128 to 2048).
#
# *In the legacy dialect* the transposes are `nl.transpose` and `nl.load_transpose2d`, and the calls return their
# results instead of writing into `dst`; the notes below say where.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
import ml_dtypes
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.using_simulator()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, latency_label, latency_us, load_kernel, peak  # load_kernel: the kernel a %%writefile cell saved

TARGET = "trn2"  # the target the cost model estimates for (and the course grades on)
LABEL = latency_label(TARGET)  # "estimate: nkisim cost model, trn2" on the simulator
BF16 = ml_dtypes.bfloat16
EPS = 1e-6
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

from nkilab import check, latency_label, latency_us, load_kernel, peak  # load_kernel: the kernel a %%writefile cell saved

TARGET = "trn2"  # the target the cost model estimates for (and the course grades on)
LABEL = latency_label(TARGET)  # "estimate: nkisim cost model, trn2" on the simulator
BF16 = ml_dtypes.bfloat16
EPS = 1e-6
print("nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "AWS's NKI (Neuron SDK 2.32 or later)")


# %% [markdown] nbgrader={"grade": false, "grade_id": "math_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 1. What the kernel computes
#
# For `x` of shape `[R, C]` (R tokens, hidden size C), the RMSNorm weight `g` of shape `[C]` and a linear layer's
# weight `w` of shape `[C, N]`:
#
# $$\mathrm{out} = \mathrm{rmsnorm}(x, g)\, w, \qquad \mathrm{rmsnorm}(x, g)[r, c] = \frac{x[r, c]}{\sqrt{\frac{1}{C}\sum_k x[r, k]^2 + \varepsilon}}\; g[c], \quad \varepsilon = 10^{-6}.$$
#
# Two kernels (stage 4's, then stage 6's) would write the normalised `[R, C]` activations to HBM and read them
# straight back. One kernel keeps them in SBUF. The NumPy version, which the grader computes in float64:

# %% nbgrader={"grade": false, "grade_id": "numpy_ref", "locked": true, "schema_version": 3, "solution": false, "task": false}
def rmsnorm_linear_numpy(x, g, w):
    x, g, w = (v.astype(np.float64) for v in (x, g, w))
    return (x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS) * g) @ w


rng = np.random.default_rng(0)
x_demo = rng.standard_normal((4, 8))
print("out shape:", rmsnorm_linear_numpy(x_demo, rng.standard_normal(8), rng.standard_normal((8, 3))).shape)

# %% [markdown] nbgrader={"grade": false, "grade_id": "transpose_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 2. The matmul wants the other axis on the partitions
#
# A normalised row tile has its 128 **rows** on the partitions and C columns along the free axis. The matmul
# `nl.matmul(s, m, transpose_x=True)` computes `s.T @ m` and contracts over the partitions of both operands, so the
# stationary operand has to be a `[128 columns of C, 128 rows]` block: the **transpose** of a `[128, 128]` block of
# the row tile. The Tensor Engine transposes a block of up to 128 × 128 by multiplying it with an identity matrix:
# `nl.transpose(t)` returns the transposed block in PSUM (float32), which you copy to SBUF with the dtype the
# matmul should use. (`nl.matmul(a, b)` *without* `transpose_x=True` inserts this same transpose for you, one per
# call; writing it out lets you decide how often it happens. `nl.load_transpose2d` transposes while loading from
# HBM instead, but here the data to transpose is already in SBUF.)

# %% nbgrader={"grade": false, "grade_id": "demo_transpose", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def transpose_block(a):
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)  # [128 rows, 128 columns]: rows on the partitions
    t_T = nl.transpose(t)  # [128 columns, 128 rows], in PSUM
    if ON_SIMULATOR:  # shapes and buffers are known while tracing
        print("transposed:", t_T.shape, t_T.dtype, "in", t_T.buffer)
    nl.store(out, value=nl.copy(t_T, dtype=a.dtype))
    return out


block = rng.standard_normal((128, 128)).astype(np.float32)
print("equal to block.T:", np.array_equal(transpose_block(block), block.T))

# %% [markdown] nbgrader={"grade": false, "grade_id": "transpose_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 2. The matmul wants the other axis on the partitions
#
# A normalised row tile has its 128 **rows** on the partitions and C columns along the free axis. The matmul
# `nisa.nc_matmul(dst=res, stationary=s, moving=m)` computes `s.T @ m` and contracts over the partitions of both
# operands, so the stationary operand has to be a `[128 columns of C, 128 rows]` block: the **transpose** of a
# `[128, 128]` block of the row tile. The Tensor Engine transposes a block of up to 128 × 128 by multiplying it with
# an identity matrix: `nisa.nc_transpose(dst=t_T, data=t)` writes the transposed block into `t_T`, a tile you
# allocate in PSUM, which you copy to SBUF with the dtype the matmul should use. (`nisa.dma_transpose(dst=...,
# src=...)` transposes while loading from HBM instead, but here the data to transpose is already in SBUF.)
#
# *In the legacy dialect* `nl.transpose(t)` returns the transposed block in PSUM, `nl.matmul(a, b)` *without*
# `transpose_x=True` inserts that transpose for you, one per call, and `nl.load_transpose2d` is the transposing load.

# %% nbgrader={"grade": false, "grade_id": "demo_transpose_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def transpose_block(a):
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)  # [128 rows, 128 columns]: rows on the partitions
    t_T = nl.ndarray((a.shape[1], a.shape[0]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=t_T, data=t)  # [128 columns, 128 rows], on the Tensor Engine
    print("transposed:", t_T.shape, t_T.dtype, "in", t_T.buffer)  # runs while the kernel compiles
    t_T_sbuf = nl.ndarray(t_T.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=t_T_sbuf, src=t_T)  # PSUM -> SBUF
    nl.store(out, value=t_T_sbuf)
    return out


block = rng.standard_normal((128, 128)).astype(np.float32)
print("equal to block.T:", np.array_equal(transpose_block(block), block.T))


# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 3. One kernel: `rmsnorm_linear` (4 points)
#
# Write `rmsnorm_linear(x, g, w)`:
#
# * `x` is `[R, C]`, `g` is `[C]`, `w` is `[C, N]`; R and C are multiples of 128, N a multiple of 512 (R up to
#   4096, C and N up to 2048); all three float32 or bfloat16. Return `rmsnorm(x, g) @ w`, shape `[R, N]`, with `x`'s dtype.
# * For each 128-row tile: normalise it as in stage 4 (load `g` and broadcast it once, before the loop), then for
#   each 512-column block of the output accumulate over the C/128 blocks in PSUM as in stage 6, with the
#   transposed `[128, 128]` block of the normalised tile as the stationary operand and the matching
#   `[128, 512]` tile of `w` as the moving one.
# * Give the normalised tile `x`'s dtype (bfloat16 matmuls are four times faster than float32 ones), but keep
#   the row statistic in float32.
#
# Tolerances: rtol = atol = 1e-4 for float32; rtol = 2e-2, atol = 0.5 for bfloat16 (the outputs are sums of C
# products, of size about √C, and the normalised values are rounded to bfloat16 before the matmul). Correctness
# earns all 4 points: this first version is graded on correctness only. Section 4 shows where its time goes, and
# section 5's `rmsnorm_linear_fast` is graded on its speed.

# %% nbgrader={"grade": false, "grade_id": "q1_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile rmsnorm_linear.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm_linear(x, g, w):
    """rmsnorm(x, g) @ w for x [R, C], g [C], w [C, N], without writing the normalised x to HBM."""
    ### BEGIN SOLUTION
    R, C = x.shape
    N = w.shape[1]
    out = nl.ndarray((R, N), dtype=x.dtype, buffer=nl.shared_hbm)
    g_all = nl.load(g.reshape((1, C))).broadcast_to((128, C))
    for r in nl.affine_range(R // 128):
        x_tile = nl.load(x[r * 128:(r + 1) * 128, :])
        mean_sq = nl.mean(nl.square(x_tile, dtype=nl.float32), axis=[1])
        inv_rms = nl.rsqrt(mean_sq + 1e-6)
        normed = nl.multiply(nl.multiply(x_tile, inv_rms), g_all, dtype=x.dtype)
        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(C // 128):
                normed_T = nl.copy(nl.transpose(normed[:, k * 128:(k + 1) * 128]), dtype=x.dtype)
                w_tile = nl.load(w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                res_psum += nl.matmul(normed_T, w_tile, transpose_x=True)
            nl.store(out[r * 128:(r + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(res_psum, dtype=x.dtype))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile rmsnorm_linear.py
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_linear(x, g, w):
    """rmsnorm(x, g) @ w for x [R, C], g [C], w [C, N], without writing the normalised x to HBM."""
    ### BEGIN SOLUTION
    R, C = x.shape
    N = w.shape[1]
    out = nl.ndarray((R, N), dtype=x.dtype, buffer=nl.shared_hbm)
    g_all = nl.broadcast_to(nl.load(g.reshape((1, C))), (128, C))
    for r in range(R // 128):
        x_tile = nl.load(x[r * 128:(r + 1) * 128, :])
        mean_sq = nl.mean(nl.square(x_tile, dtype=nl.float32), axis=[1])
        inv_rms = nl.rsqrt(nl.add(mean_sq, 1e-6))
        # 1/rms is one value per partition (a [128, 1] operand), g one value per element
        scaled = nl.ndarray((128, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=scaled, data=x_tile, op0=nl.multiply, operand0=inv_rms)
        normed = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=normed, data1=scaled, data2=g_all, op=nl.multiply)
        for n in range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(C // 128):
                normed_T_psum = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=normed_T_psum, data=normed[:, k * 128:(k + 1) * 128])
                normed_T = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
                nisa.activation(dst=normed_T, op=nl.copy, data=normed_T_psum)
                w_tile = nl.load(w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=res_psum, stationary=normed_T, moving=w_tile)
            res = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
            nisa.activation(dst=res, op=nl.copy, data=res_psum)
            nl.store(out[r * 128:(r + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("rmsnorm_linear", "rmsnorm_linear.py");

# %% nbgrader={"grade": true, "grade_id": "q1_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (4 points; section 5 grades the speed).
from nkilab import grade

grade("rmsnorm_linear", "rmsnorm_linear.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "profile_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 4. Where does the time go?
#
# Profile your `rmsnorm_linear` on R = C = N = 2048, bfloat16 (every number is a cost-model **estimate** for trn2):

# %% nbgrader={"grade": false, "grade_id": "profile_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
SIZE = 2048
if ON_SIMULATOR:
    from nkisim.api import profile_kernel  # traces shapes and dtypes only: the arrays' values are not read

    try:
        prof = profile_kernel(load_kernel("rmsnorm_linear.py", "rmsnorm_linear"), np.zeros((SIZE, SIZE), BF16),
                              np.zeros(SIZE, BF16), np.zeros((SIZE, SIZE), BF16), target=TARGET)
        print(prof.summary_text())
    except Exception as err:  # e.g. the kernel is not written yet
        print(f"could not profile rmsnorm_linear.py: {type(err).__name__}: {err}")
else:
    print("on hardware: NEURON_FRAMEWORK_DEBUG=1 and neuron-explorer capture (legacy: nki.profile), then Neuron Explorer")


# %% [markdown] nbgrader={"grade": false, "grade_id": "algebra_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Two things stand out. First, the Tensor Engine and the Scalar engine spend much of their time on
# **transposes**: every `[128, 128]` block of the normalised tile is transposed, and copied out of PSUM, once per
# output column block, N/512 times, though it is the same block each time; and each matmul waits for its copy,
# which waits for its transpose. Second, the DMA queues move about 150 MB for the 24 MiB of `x`, `w` and output:
# every row tile loads all of `w` again.
#
# A little algebra moves each piece of work to where it is cheapest. Write `s[r]` = 1/rms of row r. Then
#
# $$\mathrm{out}[r, n] = \sum_c s[r]\, x[r, c]\, g[c]\, w[c, n] = s[r] \sum_c x[r, c]\, \big(g[c]\, w[c, n]\big).$$
#
# * **Fold `g` into `w` once.** `g[c]` scales row c of `w`: load each `[128, N]` row block of `w` once, multiply it
#   by its 128 values of `g` as a `(128, 1)` per-partition column (free on the engines), and keep the scaled `w`
#   in SBUF for every row tile: `C/128 × N` values per partition, 64 KiB for C = N = 2048 in bfloat16.
# * **Transpose `x` itself**, once per row tile, before the output-column loop: `x` needs no normalising first.
#   This is the biggest single saving (about half the time, estimated). And since `x` comes straight from HBM, the
#   DMA can transpose it while loading it: `nisa.dma_transpose(dst=x_T[:, k, :], src=x[rows, cols])` turns an
#   `[128, 128]` block of `x` into its transpose in SBUF (`nl.load_transpose2d(x[rows, cols])` in the legacy
#   dialect). A transposing DMA is slower than a plain one, but the DMA queues have time to spare here, and the
#   Tensor Engine is left with the matmuls alone.
# * **Scale by `s[r]` on the way out.** `s` has one value per row, i.e. per partition of the `[128, 512]`
#   result, so `nisa.tensor_scalar` with `op0=nl.multiply` and `operand0=inv_rms` applies it while
#   evicting PSUM to SBUF (`nl.multiply(res_psum, inv_rms, dtype=x.dtype)` in the legacy dialect): the eviction
#   was needed anyway.

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 5. The fast fused kernel: `rmsnorm_linear_fast` (4 points)
#
# Write `rmsnorm_linear_fast(x, g, w)`, the same function with the same rules, using the three ideas above. Some
# shapes that help: the scaled `w` as one SBUF tile `nl.ndarray((128, C // 128, N), dtype=w.dtype,
# buffer=nl.sbuf)` filled slice by slice (`nisa.tensor_scalar(dst=w_sb[:, k, :], ...)`; `w_sb[:, k, :] = ...` in the
# legacy dialect); `g` as a column, `g.reshape((C, 1))[k * 128:(k + 1) * 128, :]`; the transposed blocks of a row
# tile as `nl.ndarray((128, C // 128, 128), ...)`.
#
# Same tolerances as `rmsnorm_linear`. Correctness earns 1 point and speed 3: full speed points at ≤ 1.2× the
# reference's estimated latency on R = 4096, C = N = 2048 bfloat16, half at ≤ 2× (the kernel of section 3 is
# several times slower).

# %% nbgrader={"grade": false, "grade_id": "q2_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile rmsnorm_linear_fast.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm_linear_fast(x, g, w):
    """rmsnorm(x, g) @ w = diag(1/rms) (x @ (g * w)): w scaled once and kept in SBUF, 1/rms applied on eviction."""
    ### BEGIN SOLUTION
    R, C = x.shape
    N = w.shape[1]
    KT = C // 128  # 128-row blocks of w (and 128-column blocks of x)
    out = nl.ndarray((R, N), dtype=x.dtype, buffer=nl.shared_hbm)
    # g folded into w: row c of w times g[c], loaded and scaled once, reused by every row tile of x
    w_scaled = nl.ndarray((128, KT, N), dtype=w.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        g_col = nl.load(g.reshape((C, 1))[k * 128:(k + 1) * 128, :])
        w_scaled[:, k, :] = nl.multiply(nl.load(w[k * 128:(k + 1) * 128, :]), g_col, dtype=w.dtype)
    for r in nl.affine_range(R // 128):
        x_tile = nl.load(x[r * 128:(r + 1) * 128, :])
        inv_rms = nl.rsqrt(nl.mean(nl.square(x_tile, dtype=nl.float32), axis=[1]) + 1e-6)
        # the row tile's [128, 128] blocks, transposed by the DMA while loading, once for every output column block
        x_T = nl.ndarray((128, KT, 128), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            x_T[:, k, :] = nl.load_transpose2d(x[r * 128:(r + 1) * 128, k * 128:(k + 1) * 128])
        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                res_psum += nl.matmul(x_T[:, k, :], w_scaled[:, k, n * 512:(n + 1) * 512], transpose_x=True)
            # 1/rms is one value per partition (row): applied while evicting PSUM
            nl.store(out[r * 128:(r + 1) * 128, n * 512:(n + 1) * 512],
                     value=nl.multiply(res_psum, inv_rms, dtype=x.dtype))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile rmsnorm_linear_fast.py
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_linear_fast(x, g, w):
    """rmsnorm(x, g) @ w = diag(1/rms) (x @ (g * w)): w scaled once and kept in SBUF, 1/rms applied on eviction."""
    ### BEGIN SOLUTION
    R, C = x.shape
    N = w.shape[1]
    KT = C // 128  # 128-row blocks of w (and 128-column blocks of x)
    out = nl.ndarray((R, N), dtype=x.dtype, buffer=nl.shared_hbm)
    # g folded into w: row c of w times g[c], loaded and scaled once, reused by every row tile of x
    w_scaled = nl.ndarray((128, KT, N), dtype=w.dtype, buffer=nl.sbuf)
    for k in range(KT):
        g_col = nl.load(g.reshape((C, 1))[k * 128:(k + 1) * 128, :])
        w_rows = nl.load(w[k * 128:(k + 1) * 128, :])
        nisa.tensor_scalar(dst=w_scaled[:, k, :], data=w_rows, op0=nl.multiply, operand0=g_col)
    for r in range(R // 128):
        x_tile = nl.load(x[r * 128:(r + 1) * 128, :])
        inv_rms = nl.rsqrt(nl.add(nl.mean(nl.square(x_tile, dtype=nl.float32), axis=[1]), 1e-6))
        # the row tile's [128, 128] blocks, transposed by the DMA while loading, once for every output column block
        x_T = nl.ndarray((128, KT, 128), dtype=x.dtype, buffer=nl.sbuf)
        for k in range(KT):
            nisa.dma_transpose(dst=x_T[:, k, :], src=x[r * 128:(r + 1) * 128, k * 128:(k + 1) * 128])
        for n in range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(KT):
                nisa.nc_matmul(dst=res_psum, stationary=x_T[:, k, :], moving=w_scaled[:, k, n * 512:(n + 1) * 512])
            # 1/rms is one value per partition (row): applied while evicting PSUM
            res = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=res, data=res_psum, op0=nl.multiply, operand0=inv_rms)
            nl.store(out[r * 128:(r + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("rmsnorm_linear_fast", "rmsnorm_linear_fast.py");

# %% nbgrader={"grade": true, "grade_id": "q2_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (1 point), then speed vs the reference (3 points).
from nkilab import grade

grade("rmsnorm_linear_fast", "rmsnorm_linear_fast.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "ladder_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 6. How close to the Tensor Engine's limit?
#
# The matmuls alone are 2·R·C·N flops; at the PE array's peak ({{trn2:pe_tflops_bf16}} bfloat16 TFLOPS per trn2 NeuronCore) that is
# the bound below. The cell estimates both of your kernels next to it.

# %% nbgrader={"grade": false, "grade_id": "ladder_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
PE_TFLOPS = peak(TARGET).pe_tflops_for("bfloat16")  # trn2's peak, read from the cost model's target file
big, g_big = np.zeros((SIZE, SIZE), dtype=BF16), np.zeros(SIZE, dtype=BF16)  # only shapes and dtypes matter
print(f"R = C = N = {SIZE}, bfloat16, latency ({LABEL})")
print(f"  {'PE-array bound':20s} {2 * SIZE**3 / (PE_TFLOPS * 1e6):8.1f} us")
for path, name in (("rmsnorm_linear.py", "rmsnorm_linear"), ("rmsnorm_linear_fast.py", "rmsnorm_linear_fast")):
    try:
        us = latency_us(load_kernel(path, name), big, g_big, big, target=TARGET)
        print(f"  {name:20s} {us:8.1f} us")
    except Exception as err:  # not written yet
        print(f"  {name:20s} not measured ({type(err).__name__}: {err})")

# %% nbgrader={"grade": false, "grade_id": "figure_roofline", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Your two kernels on the roofline of one NeuronCore (the Tensor Engine's FLOPs per byte the DMAs moved, and the
# rate they reach; estimates for trn2). Folding and keeping w resident move fewer bytes per FLOP: the point moves right.
import matplotlib.pyplot as plt
from nkilab import figures

points = []
for path, name in (("rmsnorm_linear.py", "rmsnorm_linear"), ("rmsnorm_linear_fast.py", "rmsnorm_linear_fast")):
    try:
        points.append(figures.kernel_point(f"your {name}", load_kernel(path, name), big, g_big, big, target=TARGET))
    except Exception as err:  # not written yet
        print(f"{name}: not on the roofline ({type(err).__name__}: {err})")
figures.roofline(points, target=TARGET, dtype="bfloat16")
plt.show()

# %% [markdown] nbgrader={"grade": false, "grade_id": "hardware", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## On real hardware
#
# * **Which Neuron SDK.** This notebook is NKI 0.6 (`import nki`) and needs Neuron SDK 2.32 or later. Its legacy twin
#   (`make lab DIALECT=legacy`, `import neuronxcc.nki`) needs SDK 2.29 or earlier: since SDK 2.30 that namespace inside
#   a kernel is a compile error. The simulator runs both.
# * Everything here maps onto the hardware as written; the microseconds are cost-model **estimates** for trn2. On a
#   device `check` and `latency_us` measure instead (the NEFF timed with nrtpy's benchmark or `neuron-explorer
#   capture`, stage 1).
# * Folding `g` into `w` changes where bfloat16 rounding happens (once on `g·w` instead of on every normalised
#   activation); both stay well within the tolerances, but a real model would fold it offline, once, when the
#   weights are loaded.
# * The fast kernel keeps all of `w` in SBUF. For weights larger than SBUF ({{trn2:sbuf_usable_mib}} MiB usable on trn2, less what
#   the other tiles need) the next step is blocking over N as well, as in stage 6: a
#   block of `w` stays resident while every row tile passes through it.
#
# Two stages follow: a convolution fused with max pooling (stage 8), and RMSNorm's backward pass with FP8 (stage 9).

