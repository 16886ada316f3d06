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
# # Stage 8 — A convolution fused with max pooling
#
# **Goals.** By the end of this notebook you can
#
# 1. write a 2-D convolution as a sum of matrix multiplications, one per **filter tap**, with the channels on the
#    partitions and the pixels on the free dimension;
# 2. accumulate those matmuls in **PSUM** over the taps and over 128-channel tiles of the input, for any number of
#    channels (the last tile of channels may be ragged);
# 3. add the bias and do a 2 × 2 **max pool** before anything leaves the chip, so the convolution's output never
#    goes to HBM;
# 4. make it fast by filling each matmul's moving operand with several output rows, and measure how much of the
#    Tensor Engine's peak your kernel uses (**MFU**, model FLOPs utilisation), in float16 and float32.
#
# This is the capstone of Stanford CS149's Trainium assignment (part 2, "a fused convolution - max pool layer"),
# with the same two-tier grading of the fast kernel: half the speed points for matching a *relaxed* reference
# (your first kernel), all of them for matching the *optimised* one. CS149 wrote it in the legacy dialect
# (`import neuronxcc.nki`); this lesson is NKI 0.6, and `make lab DIALECT=legacy` opens its legacy twin.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
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
print("neuronxcc.nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "the Neuron compiler")

# %% nbgrader={"grade": false, "grade_id": "setup_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
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
print("nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "AWS's NKI (Neuron SDK 2.32 or later)")


# %% [markdown] nbgrader={"grade": false, "grade_id": "conv_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 1. A convolution is a sum of matmuls
#
# The layer takes a batch of images `X` of shape `[B, C_in, H, W]`, filters `W` of shape `[C_out, C_in, K, K]` and a
# bias of shape `[C_out]`. With stride 1 and no padding its output has `Ho = H - K + 1` rows and `Wo = W - K + 1`
# columns:
#
# $$\mathrm{conv}[b, o, y, x] = \mathrm{bias}[o] + \sum_{c=0}^{C_{in}-1} \sum_{i=0}^{K-1} \sum_{j=0}^{K-1}
#   W[o, c, i, j]\; X[b, c, y + i, x + j].$$
#
# Fix one **tap** `(i, j)` of the filter. Its term is a matrix product over the input channels: the
# `[C_out, C_in]` matrix `W[:, :, i, j]` times the `[C_in, pixels]` matrix of the image **shifted** by `(i, j)`.
# So the convolution is `K × K` matmuls that all add into the same output, which is exactly what PSUM accumulation
# does (stage 6). The cell checks the identity in NumPy against the sum as written above.

# %% nbgrader={"grade": false, "grade_id": "demo_taps", "locked": true, "schema_version": 3, "solution": false, "task": false}
def conv_by_taps(x, w):
    """conv2d of one image x [C_in, H, W] with w [C_out, C_in, K, K]: one matmul per tap, summed."""
    c_out, c_in, k, _ = w.shape
    ho, wo = x.shape[1] - k + 1, x.shape[2] - k + 1
    out = np.zeros((c_out, ho * wo))
    for i in range(k):
        for j in range(k):
            shifted = x[:, i:i + ho, j:j + wo].reshape(c_in, ho * wo)  # channels x pixels
            out += w[:, :, i, j] @ shifted
    return out.reshape(c_out, ho, wo)


rng = np.random.default_rng(0)
x_demo, w_demo = rng.standard_normal((3, 7, 6)), rng.standard_normal((4, 3, 3, 3))
direct = np.array([[[np.sum(w_demo[o] * x_demo[:, y:y + 3, xx:xx + 3]) for xx in range(4)] for y in range(5)]
                   for o in range(4)])
print("max |taps - direct sum| =", float(np.abs(conv_by_taps(x_demo, w_demo) - direct).max()))

# %% [markdown] nbgrader={"grade": false, "grade_id": "mapping_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 2. Mapping it onto a NeuronCore
#
# The Tensor Engine contracts over the **partition** axis of both operands (stage 6): `nl.matmul(s, m,
# transpose_x=True)` is `s.T @ m` for a stationary `s` of shape `[c, o]` and a moving `m` of shape `[c, n]`. Here the
# contraction runs over input channels, so:
#
# * **input channels on the partitions**, 128 at a time. `X[b, c0:c1, rows, :]` loads as an SBUF tile
#   `[channels, rows, W]`, and `x_rows[:, i, j:j + Wo]` is one input row shifted by tap `(i, j)`: a `[channels, Wo]`
#   moving operand, at most {{trn2:gemm_moving_fmax}} columns;
# * the stationary operand of tap `(i, j)` is `W[o0:o1, c0:c1, i, j]` **transposed** to `[channels in, channels out]`
#   (at most 128 × 128). `W` is stored output channel first, so load a block of it as it is and transpose each tap
#   on the PE array (`nl.transpose`, stage 7), once per block of output channels, not once per pixel;
# * the result, one output row of `[channels out, Wo]` in float32 PSUM, accumulates over every tap and every
#   128-channel tile of the input (`K · K · ⌈C_in / 128⌉` matmuls) before you read it.
#
# **Ragged channel counts.** With 200 channels the tiles are 128 and 72 channels. Loop over channel tiles with a
# plain Python `range` (the loop runs while the kernel is traced, so each tile's size `min(128, C - c0)` is a Python
# number) and slice every tile to its size: `w_T[:nci, ci, t, :nco]`, `acc[:nco, :]`, `out[b, c0:c0 + nco, ...]`.
#
# **Bias and pooling, fused.** The bias is one value per output channel, i.e. per **partition** of the result: a
# `[nco, 1]` tile that `nl.add` broadcasts along the row. A 2 × 2 max pool with stride 2 takes the maximum of
# conv rows `2r` and `2r + 1` (two PSUM tiles, elementwise), then of neighbouring columns: reshape the `[nco, Wo]`
# row to `[nco, Wo/2, 2]` and reduce the last axis with `nl.max(..., axis=2)`. Only the pooled `[nco, Wo/2]` row is
# stored: a quarter of the convolution's output, and nothing else goes back to HBM.
#
# A sketch of one pooled output row for one block of output channels (`top` and `bottom` are conv rows 2r and
# 2r + 1):
#
# ```python
# top = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
# bottom = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
# for ci in range(n_ci):
#     ...  # load the K + 1 input rows both conv rows read: X[b, <this channel tile>, 2r : 2r + K + 1, :]
#     for i in range(K):
#         for j in range(K):
#             tap = w_T[:nci, ci, i * K + j, :nco]  # [ci, co], stationary
#             top[:nco, :] += nl.matmul(tap, x_rows[:, i, j:j + Wo], transpose_x=True)
#             ...  # bottom: the same tap, one input row further down
# ```

# %% [markdown] nbgrader={"grade": false, "grade_id": "mapping_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 2. Mapping it onto a NeuronCore
#
# The Tensor Engine contracts over the **partition** axis of both operands (stage 6): `nisa.nc_matmul(dst=res,
# stationary=s, moving=m)` writes `s.T @ m` for a stationary `s` of shape `[c, o]` and a moving `m` of shape `[c, n]`.
# Here the contraction runs over input channels, so:
#
# * **input channels on the partitions**, 128 at a time. `X[b, c0:c1, rows, :]` loads as an SBUF tile
#   `[channels, rows, W]`, and `x_rows[:, i, j:j + Wo]` is one input row shifted by tap `(i, j)`: a `[channels, Wo]`
#   moving operand, at most {{trn2:gemm_moving_fmax}} columns;
# * the stationary operand of tap `(i, j)` is `W[o0:o1, c0:c1, i, j]` **transposed** to `[channels in, channels out]`
#   (at most 128 × 128). `W` is stored output channel first, so load a block of it as it is and transpose each tap
#   on the PE array (`nisa.nc_transpose`, stage 7), once per block of output channels, not once per pixel;
# * the result, one output row of `[channels out, Wo]` in float32 PSUM, accumulates over every tap and every
#   128-channel tile of the input (`K · K · ⌈C_in / 128⌉` matmuls) before you read it.
#
# **Ragged channel counts.** With 200 channels the tiles are 128 and 72 channels. Loop over channel tiles with
# Python's `range` (the loop runs while the kernel compiles, so each tile's size `min(128, C - c0)` is a Python
# number) and slice every tile to its size: `w_T[:nci, ci, t, :nco]`, `acc[:nco, :]`, `out[b, c0:c0 + nco, ...]`.
#
# **Bias and pooling, fused.** The bias is one value per output channel, i.e. per **partition** of the result: a
# `[nco, 1]` tile, the scalar operand of `nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=b_col)`. A
# 2 × 2 max pool with stride 2 takes the maximum of conv rows `2r` and `2r + 1` (two PSUM tiles, elementwise), then of
# neighbouring columns: reshape the `[nco, Wo]` row to `[nco, Wo/2, 2]` and reduce the last axis with
# `nl.max(..., axis=2)`. Only the pooled `[nco, Wo/2]` row is stored: a quarter of the convolution's output, and
# nothing else goes back to HBM.
#
# A sketch of one pooled output row for one block of output channels (`top` and `bottom` are conv rows 2r and
# 2r + 1):
#
# ```python
# top = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
# bottom = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
# for ci in range(n_ci):
#     ...  # load the K + 1 input rows both conv rows read: X[b, <this channel tile>, 2r : 2r + K + 1, :]
#     for i in range(K):
#         for j in range(K):
#             tap = w_T[:nci, ci, i * K + j, :nco]  # [ci, co], stationary
#             nisa.nc_matmul(dst=top[:nco, :], stationary=tap, moving=x_rows[:, i, j:j + Wo])
#             ...  # bottom: the same tap, one input row further down
# ```
#
# *In the legacy dialect* the matmul is `top[:nco, :] += nl.matmul(tap, x_rows[:, i, j:j + Wo], transpose_x=True)`,
# the transpose `nl.transpose`, and `nl.add(row, b_col)` broadcasts the bias along the row.

# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 3. A correct fused kernel — `conv2d_maxpool` (4 points)
#
# Write `conv2d_maxpool(X, W, bias)`, returning `max_pool2d(conv2d(X, W) + bias, 2)` (PyTorch's
# `torch.nn.functional.conv2d` then `max_pool2d(kernel_size=2, stride=2)`), shape `[B, C_out, Ho / 2, Wo / 2]`,
# with `X`'s dtype:
#
# * any channel counts `1 ≤ C_in, C_out ≤ 512` (ragged tiles!), square filters `1 ≤ K ≤ 5`, any batch size;
# * `Ho = H - K + 1` and `Wo = W - K + 1` are even, and `Wo ≤ 512` (one output row fits one PSUM bank);
# * float32 or float16, everything in the same dtype. Accumulate in float32 PSUM and round once, on the way out.
#
# Tolerances: rtol = atol = 1e-4 for float32 (sums of up to C_in · K² = 12800 products), 2e-3 for float16. Correctness
# earns 3 points, speed 1 (≤ 1.2× the reference's estimated latency on one 10 × 514 image with 256 channels in and
# out, float32, where one output row per matmul already fills the PE array).

# %% nbgrader={"grade": false, "grade_id": "q1_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile conv2d_maxpool.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def conv2d_maxpool(X, W, bias):
    """max_pool2d(conv2d(X, W) + bias, 2): one output row per matmul, any channel counts."""
    ### BEGIN SOLUTION
    B, C_in, H, Wd = X.shape
    C_out, _, K, _ = W.shape
    Ho, Wo = H - K + 1, Wd - K + 1
    out = nl.ndarray((B, C_out, Ho // 2, Wo // 2), dtype=X.dtype, buffer=nl.shared_hbm)
    n_ci = (C_in + 127) // 128  # input-channel tiles: the contraction, over partitions
    taps = W.reshape((C_out, C_in, K * K))
    for co in range((C_out + 127) // 128):  # a Python loop: the last tile may be ragged (nco < 128)
        co0, nco = co * 128, min(128, C_out - co * 128)
        b_col = nl.load(bias.reshape((C_out, 1))[co0:co0 + nco, :], dtype=nl.float32)
        # this tile's filters, one [ci, co] stationary tile per (input-channel tile, tap): transposed on the PE
        w_nat = nl.load(taps[co0:co0 + nco, :, :])
        w_T = nl.ndarray((128, n_ci, K * K, 128), dtype=W.dtype, buffer=nl.sbuf)
        for ci in range(n_ci):
            ci0, nci = ci * 128, min(128, C_in - ci * 128)
            for t in range(K * K):
                w_T[:nci, ci, t, :nco] = nl.copy(nl.transpose(w_nat[:, ci0:ci0 + nci, t]), dtype=W.dtype)
        for b in nl.affine_range(B):
            for r in nl.affine_range(Ho // 2):  # one pooled row = conv rows 2r and 2r + 1
                top = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
                bottom = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
                for ci in range(n_ci):
                    ci0, nci = ci * 128, min(128, C_in - ci * 128)
                    x_rows = nl.load(X[b, ci0:ci0 + nci, 2 * r:2 * r + K + 1, :])  # the K + 1 input rows they read
                    for i in range(K):
                        for j in range(K):
                            tap = w_T[:nci, ci, i * K + j, :nco]  # [ci, co], stationary
                            top[:nco, :] += nl.matmul(tap, x_rows[:, i, j:j + Wo], transpose_x=True)
                            bottom[:nco, :] += nl.matmul(tap, x_rows[:, i + 1, j:j + Wo], transpose_x=True)
                row = nl.add(nl.maximum(top[:nco, :], bottom[:nco, :]), b_col)  # bias: one value per partition
                pooled = nl.max(row.reshape((nco, Wo // 2, 2)), axis=2)  # neighbouring columns, pairwise
                nl.store(out[b, co0:co0 + nco, r, :], value=nl.copy(pooled, dtype=X.dtype))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile conv2d_maxpool.py
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def conv2d_maxpool(X, W, bias):
    """max_pool2d(conv2d(X, W) + bias, 2): one output row per matmul, any channel counts."""
    ### BEGIN SOLUTION
    B, C_in, H, Wd = X.shape
    C_out, _, K, _ = W.shape
    Ho, Wo = H - K + 1, Wd - K + 1
    out = nl.ndarray((B, C_out, Ho // 2, Wo // 2), dtype=X.dtype, buffer=nl.shared_hbm)
    n_ci = (C_in + 127) // 128  # input-channel tiles: the contraction, over partitions
    taps = W.reshape((C_out, C_in, K * K))
    for co in range((C_out + 127) // 128):  # the last tile may be ragged (nco < 128): a smaller slice
        co0, nco = co * 128, min(128, C_out - co * 128)
        b_col = nl.load(bias.reshape((C_out, 1))[co0:co0 + nco, :], dtype=nl.float32)
        # this tile's filters, one [ci, co] stationary tile per (input-channel tile, tap): transposed on the PE
        w_nat = nl.load(taps[co0:co0 + nco, :, :])
        w_T = nl.ndarray((128, n_ci, K * K, 128), dtype=W.dtype, buffer=nl.sbuf)
        for ci in range(n_ci):
            ci0, nci = ci * 128, min(128, C_in - ci * 128)
            for t in range(K * K):
                w_ps = nl.ndarray((nci, nco), dtype=W.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=w_ps, data=w_nat[:, ci0:ci0 + nci, t])
                nisa.activation(dst=w_T[:nci, ci, t, :nco], op=nl.copy, data=w_ps)
        for b in range(B):
            for r in range(Ho // 2):  # one pooled row = conv rows 2r and 2r + 1
                top = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
                bottom = nl.zeros((128, Wo), nl.float32, buffer=nl.psum)
                for ci in range(n_ci):
                    ci0, nci = ci * 128, min(128, C_in - ci * 128)
                    x_rows = nl.load(X[b, ci0:ci0 + nci, 2 * r:2 * r + K + 1, :])  # the K + 1 input rows they read
                    for i in range(K):
                        for j in range(K):
                            tap = w_T[:nci, ci, i * K + j, :nco]  # [ci, co], stationary
                            nisa.nc_matmul(dst=top[:nco, :], stationary=tap, moving=x_rows[:, i, j:j + Wo])
                            nisa.nc_matmul(dst=bottom[:nco, :], stationary=tap, moving=x_rows[:, i + 1, j:j + Wo])
                row = nl.maximum(top[:nco, :], bottom[:nco, :])  # conv rows 2r and 2r + 1, pairwise
                nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=b_col)  # bias: one value per partition
                pooled = nl.max(row.reshape((nco, Wo // 2, 2)), axis=2)  # neighbouring columns, pairwise
                res = nl.ndarray((nco, Wo // 2), dtype=X.dtype, buffer=nl.sbuf)
                nisa.activation(dst=res, op=nl.copy, data=pooled)
                nl.store(out[b, co0:co0 + nco, r, :], value=res)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("conv2d_maxpool", "conv2d_maxpool.py");

# %% nbgrader={"grade": true, "grade_id": "q1_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (3 points), then speed vs the reference (1 point).
from nkilab import grade

grade("conv2d_maxpool", "conv2d_maxpool.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "profile_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 4. Where does the time go?
#
# Profile your kernel on the fast question's graded shape: two 34 × 128 images, 256 channels in and out, 3 × 3
# filters, float16. All the arithmetic is on the Tensor Engine, so the question is how busy it is. Every number is a
# cost-model **estimate** for trn2.

# %% nbgrader={"grade": false, "grade_id": "profile_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
SHAPE = dict(B=2, C_in=256, C_out=256, H=34, W=128, K=3)


def conv_args(B, C_in, C_out, H, W, K, dtype):
    """Arguments of these shapes for a latency estimate or a profile (only their shapes and dtype are read)."""
    return np.zeros((B, C_in, H, W), dtype), np.zeros((C_out, C_in, K, K), dtype), np.zeros(C_out, dtype)


def conv_flops(B, C_in, C_out, H, W, K):
    """The convolution's multiply-adds, counted as 2 flops each (pooling and bias are not PE work)."""
    return 2 * B * C_out * (H - K + 1) * (W - K + 1) * C_in * K * K


if ON_SIMULATOR:
    from nkisim.api import profile_kernel

    try:
        prof = profile_kernel(load_kernel("conv2d_maxpool.py", "conv2d_maxpool"), *conv_args(**SHAPE, dtype=np.float16),
                              target=TARGET)
        print(prof.summary_text())
    except Exception as err:  # e.g. the kernel is not written yet
        print(f"could not profile conv2d_maxpool.py: {type(err).__name__}: {err}")
else:
    print("on hardware: NEURON_FRAMEWORK_DEBUG=1 and neuron-explorer capture (legacy: nki.profile), then Neuron Explorer")


# %% nbgrader={"grade": false, "grade_id": "figure_timeline", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The profile as an engine timeline (the fixed launch cost, each engine, the 16 DMA queues): how much of the time
# is the Tensor Engine busy, and what fills the gaps?
import matplotlib.pyplot as plt

if ON_SIMULATOR and "prof" in globals():
    prof.figure()
    plt.show()
else:
    print("no profile to draw (write conv2d_maxpool.py and run the profile cell first)")

# %% [markdown] nbgrader={"grade": false, "grade_id": "fill_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The Tensor Engine is busy most of the time, yet it runs at well under its peak rate. The reason is the size of
# each matmul. In the cost model a matmul whose moving operand has `N` columns takes
# `max({{trn2:pe_moving_floor_cycles}}, N)` cycles of the PE array ({{trn2:pe_fp32_factor}}× that in float32), plus about
# {{trn2:pe_matmul_overhead_cycles}} cycles of fixed cost per instruction (loading the stationary tile, starting the
# stream), at {{trn2:pe_clock_ghz}} GHz. With one output row per matmul, `N = Wo = 126`: a third of every
# instruction is overhead. A matmul of {{trn2:gemm_moving_fmax}} columns spends only an eighth of its time on it.
#
# **Several rows per matmul.** Think of each channel's image as one long row of `H · W` pixels (`X.reshape((B, C,
# H * W))`). Output pixel `(y, x)` then reads input pixel `(y + i) · W + (x + j)` for tap `(i, j)`: the flat index of
# `(y, x)` in a `W`-wide image, plus the constant `i · W + j`. So for `R` consecutive output rows, the tap's moving
# operand is **one contiguous slice** of `R · W` flat pixels starting at `(r0 + i) · W + j`, and the PSUM result is
# `R` rows of `W` columns. The last `K - 1` columns of each row wrap around into the next image row: they are
# garbage, and you drop them when you pool. With `R · W ≤ {{trn2:gemm_moving_fmax}}`, a 128-wide image gives 4 rows
# (504 useful columns of 512) per matmul instead of 1 (126).
#
# The cell compares the two for one block of 4 rows, 3 × 3 taps and 2 input-channel tiles, from the cost model's
# own parameters (an estimate of PE time only).

# %% nbgrader={"grade": false, "grade_id": "fill_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
def pe_cycles(columns, matmuls, fp32=False):
    """PE cycles of `matmuls` matmuls with `columns` moving columns each, by the cost model's formula."""
    if not ON_SIMULATOR:
        return float("nan")
    from nkisim.api import target

    pe = target(TARGET).params.pe
    per = max(pe.moving_floor_cycles, columns) * (pe.fp32_factor if fp32 else 1) + pe.matmul_overhead_cycles
    return per * matmuls


taps_and_tiles = 9 * 2
one_row = pe_cycles(126, 4 * taps_and_tiles)  # 4 rows, one matmul per row per tap and tile
four_rows = pe_cycles(4 * 128, taps_and_tiles)  # one 512-column matmul per tap and tile
print(f"4 output rows of 126 pixels, float16: one row per matmul {one_row:.0f} PE cycles, "
      f"four rows per matmul {four_rows:.0f} ({one_row / four_rows:.2f}x fewer)")

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 5. Fill the PE array — `conv2d_maxpool_fast` (4 points)
#
# Write `conv2d_maxpool_fast(X, W, bias)`, the same function, for **channel counts that are multiples of 128** (up to
# 512), `1 ≤ K ≤ 5`, even `Ho` and `Wo`, and images at most 256 pixels wide (so at least two full-width rows fit
# in a PSUM bank), float32 or float16. What the reference does:
#
# * **blocks of `RB = 2 · ⌊512 / (2W)⌋` output rows**, each computed by `K · K · C_in/128` matmuls of `RB · W`
#   columns as above (the last block of an image may have fewer rows). Keep one block of input rows,
#   `(RB + K - 1) · W` flat pixels per channel tile, in SBUF and use it for **every** block of output channels,
#   instead of loading it again per output channel block. The last tap reads up to `K - 1` pixels past the block:
#   allocate them and zero them (they only feed discarded columns);
# * **every filter tap transposed once**, at the start, into a `[128, C_in/128, K·K, C_out]` SBUF tile that stays
#   there (it fits easily: 256 × 256 × 9 float16 values are 9 KiB per partition). Transpose up to four taps into
#   one `[128, 4, 128]` PSUM tile and evict them with one copy;
# * **pool straight from PSUM** (`nl.maximum` of the two halves of each row pair, then `nl.max` of column pairs over
#   the first `Wo` columns), and only then add the bias: the maximum commutes with adding the same number to all
#   four values, and a quarter of the values is left to add it to. `nisa.activation(dst=res, op=nl.copy,
#   data=pooled, bias=b_col)` adds a per-partition bias and rounds to `res`'s dtype in one instruction (in the
#   legacy dialect it returns the result: `nisa.activation(op=nl.copy, data=pooled, bias=b_col, dtype=X.dtype)`).
#
# Same tolerances as `conv2d_maxpool`. Correctness earns 1 point and speed 3, graded like CS149's two tiers on two
# 34 × 128 images with 256 channels in and out in float16: **all** speed points at ≤ 1.2× the estimated latency of
# this reference (the optimised reference), **half** at ≤ 1.2× that of section 3's reference kernel (the relaxed
# reference, one row per matmul).
#
# How do these tiers compare with CS149's? At CS149's own shape (one 224 × 224 image, 256 channels, 2 × 2 pool), the
# two references' estimates for trn2 put the tiers at ≤ 1064.5 µs (all) and ≤ 1203.1 µs (half) in float16, where
# CS149 2025 asks ≤ 1002 and ≤ 1365 µs of p99 on the hardware, and ≤ 3753.6 and ≤ 3871.5 µs in float32, where it asks
# ≤ 4596 and ≤ 4964 µs: about as strict in float16, some 20% stricter in float32. A student's fused kernel that ran
# 825 µs (float16) and 3830 µs (float32) on trn2 gets all the points at CS149 and, estimated at 1044.3 and 3266.8 µs,
# all of them here. `bench/stage8_tiers.py` prints this comparison; ours are cost-model estimates, CS149's hardware
# thresholds (stanford-cs149/asst4-trainium2 `part2/test_harness.py`).

# %% nbgrader={"grade": false, "grade_id": "q2_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile conv2d_maxpool_fast.py
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def conv2d_maxpool_fast(X, W, bias):
    """The same, for channel counts that are multiples of 128: several rows per matmul, filters resident."""
    ### BEGIN SOLUTION
    B, C_in, H, Wd = X.shape
    C_out, _, K, _ = W.shape
    Ho, Wo = H - K + 1, Wd - K + 1
    n_ci, n_co = C_in // 128, C_out // 128
    RB = 2 * (512 // (2 * Wd))  # output rows per matmul: RB full-width rows fill at most 512 PSUM columns
    out = nl.ndarray((B, C_out, Ho // 2, Wo // 2), dtype=X.dtype, buffer=nl.shared_hbm)
    taps = W.reshape((C_out, C_in, K * K))
    flat = X.reshape((B, C_in, H * Wd))  # each channel's image as one row of H * W pixels
    # every filter tap of every channel pair, transposed once (four taps per PSUM bank) and kept in SBUF
    w_T = nl.ndarray((128, n_ci, K * K, C_out), dtype=W.dtype, buffer=nl.sbuf)
    b_cols = nl.ndarray((128, n_co), dtype=nl.float32, buffer=nl.sbuf)
    for co in nl.affine_range(n_co):
        b_cols[:, co:co + 1] = nl.load(bias.reshape((C_out, 1))[co * 128:(co + 1) * 128, :], dtype=nl.float32)
        for ci in nl.affine_range(n_ci):
            w_nat = nl.load(taps[co * 128:(co + 1) * 128, ci * 128:(ci + 1) * 128, :])
            for t0 in range(0, K * K, 4):
                nt = min(4, K * K - t0)
                w_ps = nl.ndarray((128, 4, 128), dtype=nl.float32, buffer=nl.psum)
                for t in range(nt):
                    w_ps[:, t, :] = nl.transpose(w_nat[:, :, t0 + t])
                w_T[:, ci, t0:t0 + nt, co * 128:(co + 1) * 128] = nl.copy(w_ps[:, 0:nt, :], dtype=W.dtype)
    for b in nl.affine_range(B):
        for blk in range((Ho + RB - 1) // RB):  # blocks of RB output rows (the last one may be shorter)
            r0 = blk * RB
            R = min(RB, Ho - r0)
            # the block's R + K - 1 input rows, flat, for every input-channel tile; loaded once for all co
            n_in = (R + K - 1) * Wd
            x_blk = nl.ndarray((128, n_ci, n_in + K - 1), dtype=X.dtype, buffer=nl.sbuf)
            for ci in nl.affine_range(n_ci):
                x_blk[:, ci, 0:n_in] = nl.load(flat[b, ci * 128:(ci + 1) * 128, r0 * Wd:r0 * Wd + n_in])
                if K > 1:  # the last tap reads K - 1 pixels past the block: they only feed discarded columns
                    x_blk[:, ci, n_in:n_in + K - 1] = nl.zeros((128, K - 1), dtype=X.dtype)
            for co in nl.affine_range(n_co):
                # R full-width rows at once: column c of row r is output pixel (r0 + r, c) for c < Wo; the
                # K - 1 columns past Wo wrap into the next row and are thrown away below
                acc = nl.zeros((128, R * Wd), nl.float32, buffer=nl.psum)
                for ci in nl.affine_range(n_ci):
                    for i in nl.affine_range(K):
                        for j in nl.affine_range(K):
                            acc += nl.matmul(w_T[:, ci, i * K + j, co * 128:(co + 1) * 128],
                                             x_blk[:, ci, i * Wd + j:i * Wd + j + R * Wd], transpose_x=True)
                # pool straight from PSUM, then add the bias to a quarter of the values (max commutes with +b)
                pairs = acc.reshape((128, R // 2, 2 * Wd))
                rows = nl.maximum(pairs[:, :, 0:Wo], pairs[:, :, Wd:Wd + Wo])
                pooled = nl.max(rows.reshape((128, R // 2, Wo // 2, 2)), axis=3)
                res = nisa.activation(op=nl.copy, data=pooled, bias=b_cols[:, co:co + 1], dtype=X.dtype)
                nl.store(out[b, co * 128:(co + 1) * 128, r0 // 2:r0 // 2 + R // 2, :], value=res)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile conv2d_maxpool_fast.py
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def conv2d_maxpool_fast(X, W, bias):
    """The same, for channel counts that are multiples of 128: several rows per matmul, filters resident."""
    ### BEGIN SOLUTION
    B, C_in, H, Wd = X.shape
    C_out, _, K, _ = W.shape
    Ho, Wo = H - K + 1, Wd - K + 1
    n_ci, n_co = C_in // 128, C_out // 128
    RB = 2 * (512 // (2 * Wd))  # output rows per matmul: RB full-width rows fill at most 512 PSUM columns
    out = nl.ndarray((B, C_out, Ho // 2, Wo // 2), dtype=X.dtype, buffer=nl.shared_hbm)
    taps = W.reshape((C_out, C_in, K * K))
    flat = X.reshape((B, C_in, H * Wd))  # each channel's image as one row of H * W pixels
    # every filter tap of every channel pair, transposed once (four taps per PSUM bank) and kept in SBUF
    w_T = nl.ndarray((128, n_ci, K * K, C_out), dtype=W.dtype, buffer=nl.sbuf)
    b_cols = nl.ndarray((128, n_co), dtype=nl.float32, buffer=nl.sbuf)
    for co in range(n_co):
        nisa.dma_copy(dst=b_cols[:, co:co + 1], src=bias.reshape((C_out, 1))[co * 128:(co + 1) * 128, :])
        for ci in range(n_ci):
            w_nat = nl.load(taps[co * 128:(co + 1) * 128, ci * 128:(ci + 1) * 128, :])
            for t0 in range(0, K * K, 4):
                nt = min(4, K * K - t0)
                w_ps = nl.ndarray((128, 4, 128), dtype=W.dtype, buffer=nl.psum)
                for t in range(nt):
                    nisa.nc_transpose(dst=w_ps[:, t, :], data=w_nat[:, :, t0 + t])
                nisa.activation(dst=w_T[:, ci, t0:t0 + nt, co * 128:(co + 1) * 128], op=nl.copy, data=w_ps[:, 0:nt, :])
    for b in range(B):
        for blk in range((Ho + RB - 1) // RB):  # blocks of RB output rows (the last one may be shorter)
            r0 = blk * RB
            R = min(RB, Ho - r0)
            # the block's R + K - 1 input rows, flat, for every input-channel tile; loaded once for all co
            n_in = (R + K - 1) * Wd
            x_blk = nl.ndarray((128, n_ci, n_in + K - 1), dtype=X.dtype, buffer=nl.sbuf)
            for ci in range(n_ci):
                nisa.dma_copy(dst=x_blk[:, ci, 0:n_in], src=flat[b, ci * 128:(ci + 1) * 128, r0 * Wd:r0 * Wd + n_in])
                if K > 1:  # the last tap reads K - 1 pixels past the block: they only feed discarded columns
                    nisa.memset(dst=x_blk[:, ci, n_in:n_in + K - 1], value=0.0)
            for co in range(n_co):
                # R full-width rows at once: column c of row r is output pixel (r0 + r, c) for c < Wo; the
                # K - 1 columns past Wo wrap into the next row and are thrown away below
                acc = nl.zeros((128, R * Wd), nl.float32, buffer=nl.psum)
                for ci in range(n_ci):
                    for i in range(K):
                        for j in range(K):
                            nisa.nc_matmul(dst=acc, stationary=w_T[:, ci, i * K + j, co * 128:(co + 1) * 128],
                                           moving=x_blk[:, ci, i * Wd + j:i * Wd + j + R * Wd])
                # pool straight from PSUM, then add the bias to a quarter of the values (max commutes with +b)
                pairs = acc.reshape((128, R // 2, 2 * Wd))
                rows = nl.maximum(pairs[:, :, 0:Wo], pairs[:, :, Wd:Wd + Wo])
                pooled = nl.max(rows.reshape((128, R // 2, Wo // 2, 2)), axis=3)
                res = nl.ndarray((128, R // 2, Wo // 2), dtype=X.dtype, buffer=nl.sbuf)
                nisa.activation(dst=res, op=nl.copy, data=pooled, bias=b_cols[:, co:co + 1])
                nl.store(out[b, co * 128:(co + 1) * 128, r0 // 2:r0 // 2 + R // 2, :], value=res)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("conv2d_maxpool_fast", "conv2d_maxpool_fast.py");

# %% nbgrader={"grade": true, "grade_id": "q2_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (1 point), then speed in two tiers (3 points).
from nkilab import grade

grade("conv2d_maxpool_fast", "conv2d_maxpool_fast.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "mfu_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 6. Model FLOPs utilisation, float16 and float32
#
# **MFU** is the share of the Tensor Engine's peak a kernel achieves on the work the model needs:
#
# $$\mathrm{MFU} = \frac{\text{the convolution's flops}}{\text{latency} \times \text{PE peak}},\qquad
#   \text{flops} = 2 \cdot B \cdot C_{out} \cdot H_o \cdot W_o \cdot C_{in} \cdot K^2 .$$
#
# Only useful work counts: not the garbage columns of the full-width trick, not the transposes of the filters. The
# cell prints what you need for both dtypes: the flops of the graded shape, your fast kernel's estimated latency,
# and the PE array's peak rate for that dtype, read from the simulator's target file for trn2 (float16 runs at the
# bfloat16 rate; float32 takes {{trn2:pe_fp32_factor}} PE passes per column).

# %% nbgrader={"grade": false, "grade_id": "mfu_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
PEAK = peak(TARGET)
flops = conv_flops(**SHAPE)
print(f"graded shape {SHAPE}: {flops / 1e9:.3f} GFLOP")
for dtype in (nl.float16, nl.float32):
    name = np.dtype(dtype).name
    try:
        x = np.zeros((SHAPE["B"], SHAPE["C_in"], SHAPE["H"], SHAPE["W"]), dtype=dtype)  # only shapes matter
        w = np.zeros((SHAPE["C_out"], SHAPE["C_in"], SHAPE["K"], SHAPE["K"]), dtype=dtype)
        us = latency_us(load_kernel("conv2d_maxpool_fast.py", "conv2d_maxpool_fast"), x, w,
                        np.zeros(SHAPE["C_out"], dtype=dtype), target=TARGET)
        print(f"  {name:8s} latency {us:7.1f} us ({LABEL}); PE peak {PEAK.pe_tflops_for(name):g} TFLOPS")
    except Exception as err:  # not written yet
        print(f"  {name:8s} not measured ({type(err).__name__}: {err})")

# %% nbgrader={"grade": false, "grade_id": "figure_roofline", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Your two kernels on the roofline of one NeuronCore at the graded float16 shape: the Tensor Engine's FLOPs per byte
# the DMAs moved (right: each loaded byte feeds more matmul work) and the rate reached (up: closer to the PE peak).
# Estimates for trn2; the FLOPs are the PE array's, garbage columns of the full-width trick included.
import matplotlib.pyplot as plt
from nkilab import figures

x16 = np.zeros((SHAPE["B"], SHAPE["C_in"], SHAPE["H"], SHAPE["W"]), dtype=np.float16)
w16 = np.zeros((SHAPE["C_out"], SHAPE["C_in"], SHAPE["K"], SHAPE["K"]), dtype=np.float16)
points = []
for name in ("conv2d_maxpool", "conv2d_maxpool_fast"):
    try:
        points.append(figures.kernel_point(f"your {name}", load_kernel(f"{name}.py", name), x16, w16,
                                           np.zeros(SHAPE["C_out"], dtype=np.float16), target=TARGET))
    except Exception as err:  # not written yet, or not for this shape
        print(f"{name}: not on the roofline ({type(err).__name__}: {err})")
figures.roofline(points, target=TARGET, dtype="float16")
plt.show()

# %% [markdown] nbgrader={"grade": false, "grade_id": "w1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ### Written question (1 point)
#
# From the numbers above, compute your `conv2d_maxpool_fast`'s MFU in float16 and in float32 (show the arithmetic).
# Why is float32's MFU the higher of the two, although float32 is the slower kernel? What is the largest MFU a kernel
# with 4 rows of a 128-wide image per matmul can reach in float16, by the cost model's matmul formula?

# %% [markdown] nbgrader={"grade": true, "grade_id": "w1_answer", "locked": false, "points": 1, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The graded shape is 2 · 256 · 32 · 126 · 256 · 9 · 2 = 9.51 GFLOP. With the reference's estimates (about 160 µs in
# float16 and 533 µs in float32): MFU(float16) = 9.51e9 / (160e-6 s · {{trn2:pe_tflops_bf16}}e12 FLOP/s) ≈ 0.75, and MFU(float32) =
# 9.51e9 / (533e-6 s · {{trn2:pe_tflops_fp32}}e12 FLOP/s) ≈ 0.89. Float32 runs {{trn2:pe_fp32_factor}} PE passes per column, so each matmul's fixed overhead
# ({{trn2:pe_matmul_overhead_cycles}} cycles), the filter transposes and the kernel's launch cost are small next to its 4 · 512 cycles of work, while
# in float16 the same overhead is an eighth of each matmul. A matmul of 512 columns of which 4 · 126 = 504 are useful
# costs 512 + {{trn2:pe_matmul_overhead_cycles}} cycles, so float16's ceiling is 504 / 584 ≈ 0.86, before the launch cost and the pipeline's start.
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "hardware", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## On real hardware
#
# * **Which Neuron SDK.** This notebook is NKI 0.6 (`import nki`) and needs Neuron SDK 2.32 or later. Its legacy twin
#   (`make lab DIALECT=legacy`, `import neuronxcc.nki`, CS149's dialect) needs SDK 2.29 or earlier: since SDK 2.30 that
#   namespace inside a kernel is a compile error. The simulator runs both.
# * The kernels are plain NKI and compile unchanged for a NeuronCore; the microseconds and MFU above are cost-model
#   **estimates** for trn2. On a device, `check` and `latency_us` measure the latency (the NEFF timed with nrtpy's
#   benchmark or `neuron-explorer capture`, stage 1), and Neuron Explorer shows the Tensor Engine's utilisation over
#   time (CS149's write-up asks for the MFU from there).
# * CS149's version of this kernel takes a `pool_size` of 1 or 2, channel counts that are multiples of 128 and
#   images up to 224 × 224, which no longer fit SBUF whole: it streams blocks of rows with their `K - 1` halo rows,
#   as `conv2d_maxpool_fast` does. Its harness runs the kernel against `torch.nn.functional.conv2d` and
#   `max_pool2d`; this course's grader does the same comparison against a NumPy reference, with hidden sizes.
# * Padding (a "same" convolution) is a wider input with zeros around it; strides other than 1 pick every s-th
#   column of the shifted rows, which the flat trick no longer gives for free.
#
# **Next:** stage 9 goes from inference to training: the backward pass of RMSNorm, and FP8.

