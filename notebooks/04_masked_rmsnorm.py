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
# # Stage 4 — RMSNorm: ragged tiles and broadcasting
#
# **Goals.** By the end of this notebook you can
#
# 1. process any number of rows — 1, 127, 129, 1000 — with 128-row tiles, the last one **smaller** (a mask in the
#    legacy dialect);
# 2. tell the two broadcasts of a normalisation kernel apart: a per-row statistic of shape `(P,)` broadcast
#    along the **free** axis, and a per-column weight `g` broadcast along the **partition** axis;
# 3. write RMSNorm with `nl.square`, `nl.mean`, `nl.rsqrt`, and check it against PyTorch's `rms_norm`;
# 4. make it faster with fewer, fused instructions on better-suited engines (`nki.isa`), and compare its
#    estimated latency with the bandwidth bound.
#
# As in stage 1, each `%%writefile` cell saves your kernel to a file, `check(...)` runs it on the public cases in
# a separate process, and the grade cells run hidden cases too (1, 127, 129, 1000 rows; float32 and bfloat16).
#
# *In the legacy dialect* ragged tiles are masks over `nl.arange` index grids, and `nl.multiply` broadcasts a
# per-row statistic by itself; sections 2 and 3 show both forms.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
import math

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.using_simulator()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, latency_us

print("neuronxcc.nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "the Neuron compiler")

# %% nbgrader={"grade": false, "grade_id": "setup_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
import math

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.provides_nki()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, latency_us

print("nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "AWS's NKI (Neuron SDK 2.32 or later)")


# %% [markdown] nbgrader={"grade": false, "grade_id": "rmsnorm_def", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 1. What RMSNorm computes
#
# For `a` of shape `[R, C]` (R rows, e.g. tokens; C columns, e.g. the hidden size) and a weight `g` of shape `[C]`:
#
# $$\mathrm{out}[r, c] = \frac{a[r, c]}{\sqrt{\frac{1}{C}\sum_{k} a[r, k]^2 + \varepsilon}}\; g[c], \qquad \varepsilon = 10^{-6}.$$
#
# Each **row** gets one statistic (its root mean square); each **column** gets one weight. This is exactly
# `torch.nn.functional.rms_norm(a, (C,), weight=g, eps=1e-6)`. Here is the formula in NumPy, checked against
# PyTorch (the grader uses the same formula, computed in float64):

# %% nbgrader={"grade": false, "grade_id": "numpy_ref", "locked": true, "schema_version": 3, "solution": false, "task": false}
EPS = 1e-6


def rmsnorm_numpy(a, g):
    a = a.astype(np.float64)
    return a / np.sqrt(np.mean(a * a, axis=1, keepdims=True) + EPS) * g.astype(np.float64)


rng = np.random.default_rng(0)
a_demo = rng.standard_normal((5, 8)).astype(np.float32)
g_demo = rng.standard_normal(8).astype(np.float32)
try:
    import torch

    expected = torch.nn.functional.rms_norm(torch.from_numpy(a_demo), (8,), weight=torch.from_numpy(g_demo), eps=EPS)
    print("max |numpy - torch| =", float(np.abs(rmsnorm_numpy(a_demo, g_demo) - expected.numpy()).max()))
except ImportError:
    print("torch is not installed; the NumPy formula above is the definition the grader uses")

# %% [markdown] nbgrader={"grade": false, "grade_id": "masks", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 2. Ragged rows need a mask
#
# Stage 1's kernels had at most 128 rows. Now R is anything, so we walk the rows in 128-row tiles:
# tile `i` covers rows `i*128 + i_p`, where `i_p = nl.arange(128)[:, None]` is the partition index (a column
# of 0..127) and `i_f = nl.arange(C)[None, :]` the free index (a row of 0..C-1). Together they broadcast into a
# `[128, C]` grid of indices: `a[i * 128 + i_p, i_f]`.
#
# With `R = 200` there are `ceil(200 / 128) = 2` tiles, and the second one would reach rows 128..255 — past the
# end of `a`. The compiler rejects that access at compile time. Run the cell:

# %% nbgrader={"grade": false, "grade_id": "demo_nomask", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def copy_rows_unmasked(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(x.shape[1])[None, :]
    for i in nl.affine_range(math.ceil(x.shape[0] / 128)):
        tile = nl.load(x[i * 128 + i_p, i_f])
        nl.store(out[i * 128 + i_p, i_f], value=tile)
    return out


x200 = np.arange(200 * 4, dtype=np.float32).reshape(200, 4)
try:
    copy_rows_unmasked(x200)
except Exception as err:  # the compiler's error, shown instead of stopping the notebook
    print(f"{type(err).__name__}: {err}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "masks2", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# A **mask** says which elements of the index grid are real: `mask=(i * 128 + i_p < n_rows)`. It is a
# compile-time predicate on the indices (comparisons of affine expressions of loop variables and `nl.arange`,
# joined with `&`), so it costs nothing at run time: the instruction simply covers fewer partitions. Put the
# same mask on the `nl.load`, on every compute instruction of that tile, and on the `nl.store`:

# %% nbgrader={"grade": false, "grade_id": "demo_mask", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def copy_rows_masked(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n_rows = x.shape[0]
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(x.shape[1])[None, :]
    for i in nl.affine_range(math.ceil(n_rows / 128)):
        rows = i * 128 + i_p
        tile = nl.load(x[rows, i_f], mask=(rows < n_rows))
        nl.store(out[rows, i_f], value=tile, mask=(rows < n_rows))
    return out


print("masked copy is exact:", np.array_equal(copy_rows_masked(x200), x200))

# %% [markdown] nbgrader={"grade": false, "grade_id": "masks_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 2. Ragged rows: a smaller last tile
#
# Stage 1's kernels had at most 128 rows. Now R is anything, so we walk the rows in 128-row tiles: tile `i` is the
# slice `a[i * 128:(i + 1) * 128, :]`, a `[128, C]` tile.
#
# With `R = 200` there are `ceil(200 / 128) = 2` tiles, and the second one would reach rows 128..255 — past the
# end of `a`. The compiler rejects that access at compile time. Run the cell:

# %% nbgrader={"grade": false, "grade_id": "demo_nomask_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def copy_rows_unsized(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(math.ceil(x.shape[0] / 128)):
        tile = nl.load(x[i * 128:(i + 1) * 128, :])  # the last tile runs past row 199
        nl.store(out[i * 128:(i + 1) * 128, :], value=tile)
    return out


x200 = np.arange(200 * 4, dtype=np.float32).reshape(200, 4)
try:
    copy_rows_unsized(x200)
except Exception as err:  # the compiler's error, shown instead of stopping the notebook
    print(f"{type(err).__name__}: {err}")


# %% [markdown] nbgrader={"grade": false, "grade_id": "masks2_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# The kernel's Python runs while it compiles, with `R` a plain int, so the last tile can simply be **smaller**: end
# the slice at row `R`. The last tile's instructions then cover the rows that exist (72 of them for R = 200), at no
# cost at run time:

# %% nbgrader={"grade": false, "grade_id": "demo_mask_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def copy_rows_sized(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n_rows = x.shape[0]
    for i in range(math.ceil(n_rows / 128)):
        lo, hi = i * 128, min((i + 1) * 128, n_rows)  # the last tile: hi - lo rows
        tile = nl.load(x[lo:hi, :])
        nl.store(out[lo:hi, :], value=tile)
    return out


print("copy with a smaller last tile is exact:", np.array_equal(copy_rows_sized(x200), x200))


# %% [markdown] nbgrader={"grade": false, "grade_id": "masks_06", "locked": true, "schema_version": 3, "solution": false, "task": false}
# **The two dialects side by side.** NKI 0.6 (`import nki`) has neither `nl.arange` index grids nor `mask=`; the
# legacy dialect (`import neuronxcc.nki`) cannot size a tile from its symbolic loop index.
#
# | legacy (`neuronxcc.nki`) | NKI 0.6 (`nki`) |
# |---|---|
# | `for i in nl.affine_range(n_tiles):` | `for i in range(n_tiles):` (`nl.affine_range` is a deprecated alias) |
# | `rows = i * 128 + i_p` | `lo, hi = i * 128, min((i + 1) * 128, n_rows)` |
# | `tile = nl.load(x[rows, i_f], mask=(rows < n_rows))` | `tile = nl.load(x[lo:hi, :])`, a `(hi - lo, C)` tile |
# | `nl.store(out[rows, i_f], value=tile, mask=(rows < n_rows))` | `nl.store(out[lo:hi, :], value=tile)` |
#
# Both say the same thing: for R = 200 the last tile's instructions cover 72 partitions, and the simulator prices
# both spellings alike. Each kernel cell of this lesson comes in both dialects, the same algorithm issuing the same
# instructions.

# %% [markdown] nbgrader={"grade": false, "grade_id": "broadcast", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 3. Two broadcasts, on two different axes
#
# * **The row statistic, along the free axis.** `nl.sum(t, axis=[1])` (or `nl.mean`) of a `[128, C]` tile
#   reduces the free axis and returns a tile of shape `(128,)` — one number per partition, i.e. per row.
#   In an elementwise op with a `[128, C]` tile it acts as `(128, 1)` and is repeated along the free axis:
#   `nl.multiply(t, s)` multiplies row `p` by `s[p]`. The engines do this natively (a per-partition scalar).
# * **The weight, along the partition axis.** `g` is one row of C numbers that every partition needs. Load it
#   **once, outside the loop**, as a `(1, C)` tile and copy it to all partitions with
#   `g_tile.broadcast_to((128, C))`. The compiler does that with TensorE matmuls against a ones vector (one
#   per 512 columns: a matmul's output fills at most one PSUM bank), then copies the result out of PSUM on the
#   Scalar or Vector engine. Broadcasting across partitions is never free, so do it once, not once per row tile.
#
# The cell below prints the shapes on a tiny input:

# %% nbgrader={"grade": false, "grade_id": "demo_broadcast", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def show_shapes(x, w):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n_cols = x.shape[1]
    i_f = nl.arange(n_cols)[None, :]
    tile = nl.load(x)  # (P, C)
    row_sum = nl.sum(tile, axis=[1])  # (P,): one value per partition (row)
    w_row = nl.load(w.reshape((1, n_cols))[nl.arange(1)[:, None], i_f])  # (1, C)
    w_all = w_row.broadcast_to((x.shape[0], n_cols))  # (P, C): the same row on every partition
    if ON_SIMULATOR:  # shapes are known while tracing; on hardware, read them off the code instead
        print("tile", tile.shape, "| row_sum", row_sum.shape, "| w_row", w_row.shape, "| w_all", w_all.shape)
    nl.store(out, value=nl.multiply(nl.multiply(tile, row_sum), w_all))
    return out


res = show_shapes(np.ones((4, 3), np.float32), np.array([1, 2, 3], np.float32))
print(res)  # every row sums to 3, times g = [1, 2, 3]

# %% [markdown] nbgrader={"grade": false, "grade_id": "broadcast_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 3. Two broadcasts, on two different axes
#
# * **The row statistic, along the free axis.** `nl.sum(t, axis=[1], keepdims=True)` (or `nl.mean`) of a
#   `[128, C]` tile reduces the free axis and returns a `(128, 1)` tile: one number per partition, i.e. per row.
#   To scale each row by its own number, pass it as the scalar operand of `nisa.tensor_scalar`:
#   `nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=s)` multiplies row `p` by `s[p]`. The engines do
#   this natively (a per-partition scalar). `nl.multiply` does not broadcast: its two tiles must have one shape.
# * **The weight, along the partition axis.** `g` is one row of C numbers that every partition needs. Load it
#   **once, outside the loop**, as a `(1, C)` tile and copy it to all partitions with
#   `nl.broadcast_to(g_tile, (128, C))`. That copy runs on TensorE (matmuls against a ones vector, one per 512
#   columns: a matmul's output fills at most one PSUM bank), then out of PSUM on the Scalar or Vector engine.
#   Broadcasting across partitions is never free, so do it once, not once per row tile; a ragged last tile uses the
#   first rows of it (`g_bcast[0:hi - lo, :]`, a view).
#
# *In the legacy dialect* `nl.sum(t, axis=[1])` returns a `(128,)` tile that `nl.multiply(t, s)` broadcasts along
# the free axis by itself, and the weight's broadcast is the method `g_tile.broadcast_to((128, C))`.
#
# The cell below prints the shapes on a tiny input (`print` in a kernel runs while it compiles, so it works on a
# device too):

# %% nbgrader={"grade": false, "grade_id": "demo_broadcast_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def show_shapes(x, w):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = x.shape
    tile = nl.load(x)  # (P, C)
    row_sum = nl.sum(tile, axis=[1], keepdims=True)  # (P, 1): one value per partition (row)
    w_row = nl.load(w.reshape((1, n_cols)))  # (1, C)
    w_all = nl.broadcast_to(w_row, (n_rows, n_cols))  # (P, C): the same row on every partition
    print("tile", tile.shape, "| row_sum", row_sum.shape, "| w_row", w_row.shape, "| w_all", w_all.shape)
    scaled = nl.ndarray((n_rows, n_cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=scaled, data=tile, op0=nl.multiply, operand0=row_sum)  # row p times row_sum[p]
    nl.store(out, value=nl.multiply(scaled, w_all, dtype=x.dtype))
    return out


res = show_shapes(np.ones((4, 3), np.float32), np.array([1, 2, 3], np.float32))
print(res)  # every row sums to 3, times g = [1, 2, 3]


# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 4. Your kernel: `rmsnorm` (4 points)
#
# Write `rmsnorm(a, g)`:
#
# * `a` is `[R, C]` with **any R ≥ 1** and 1 ≤ C ≤ 4096; `g` is `[C]`; both float32 or bfloat16. Return an array of
#   `a`'s shape and dtype equal to the formula of section 1 (ε = 1e-6).
# * Loop over `ceil(R / 128)` row tiles, the last one smaller (a mask in the legacy dialect).
# * Per tile: `nl.square`, then `nl.mean(..., axis=[1], keepdims=True)`, add ε, `nl.rsqrt`, scale each row by that
#   `(rows, 1)` statistic (`nisa.tensor_scalar`; in the legacy dialect `nl.multiply` by the `(128,)` statistic), then
#   multiply by `g` broadcast to all partitions (loaded once, before the loop).
# * Keep the row statistic in float32 (`dtype=nl.float32` on `nl.square`), also for bfloat16 inputs: bfloat16 keeps
#   only about 3 significant digits, and an error in the statistic scales the whole row. Give the last multiply
#   `dtype=a.dtype`, so the output has the input's dtype.
#
# Tolerances: rtol = atol = 1e-5 for float32, 1.6e-2 for bfloat16. Correctness earns all 4 points: this first
# version is graded on correctness only. Section 5 shows why these instructions cannot come close to the hardware's
# limit, and section 6's `rmsnorm_fast` is graded on its speed.

# %% nbgrader={"grade": false, "grade_id": "q1_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile rmsnorm.py
import math

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm(a, g):
    """a / sqrt(mean(a^2, row) + 1e-6) * g for a of shape [R, C] (any R) and g of shape [C]."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(n_cols)[None, :]
    g_tile = nl.load(g.reshape((1, n_cols))[nl.arange(1)[:, None], i_f])
    g_bcast = g_tile.broadcast_to((128, n_cols))
    for i in nl.affine_range(math.ceil(n_rows / 128)):
        rows = i * 128 + i_p
        a_tile = nl.load(a[rows, i_f], mask=(rows < n_rows))
        squares = nl.square(a_tile, dtype=nl.float32, mask=(rows < n_rows))
        mean_sq = nl.mean(squares, axis=[1], mask=(rows < n_rows))
        inv_rms = nl.rsqrt(mean_sq + 1e-6, mask=(rows < n_rows))
        normed = nl.multiply(a_tile, inv_rms, mask=(rows < n_rows))
        out_tile = nl.multiply(normed, g_bcast, dtype=a.dtype, mask=(rows < n_rows))
        nl.store(out[rows, i_f], value=out_tile, mask=(rows < n_rows))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile rmsnorm.py
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm(a, g):
    """a / sqrt(mean(a^2, row) + 1e-6) * g for a of shape [R, C] (any R) and g of shape [C]."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    P = nl.tile_size.pmax
    g_tile = nl.load(g.reshape((1, n_cols)))
    g_bcast = nl.broadcast_to(g_tile, (P, n_cols))
    for i in range(math.ceil(n_rows / P)):
        lo, hi = i * P, min((i + 1) * P, n_rows)  # the last tile may have fewer rows: a smaller tile, no mask
        a_tile = nl.load(a[lo:hi, :])
        squares = nl.square(a_tile, dtype=nl.float32)
        mean_sq = nl.mean(squares, axis=[1], keepdims=True)  # (rows, 1): one value per row
        inv_rms = nl.rsqrt(nl.add(mean_sq, 1e-6))
        # NKI 0.6's nl.multiply does not broadcast: scale each row by its (rows, 1) statistic with tensor_scalar
        normed = nl.ndarray((hi - lo, n_cols), dtype=nl.float32)
        nisa.tensor_scalar(normed, a_tile, nl.multiply, inv_rms)
        out_tile = nl.multiply(normed, g_bcast[0:hi - lo, :], dtype=a.dtype)
        nl.store(out[lo:hi, :], value=out_tile)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("rmsnorm", "rmsnorm.py");

# %% nbgrader={"grade": true, "grade_id": "q1_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (4 points; section 6 grades the speed).
from nkilab import grade

grade("rmsnorm", "rmsnorm.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "w1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ### Written question (1 point)
#
# Your kernel multiplies a `[128, C]` tile by two things: the per-row inverse RMS and the weight `g`. Which axis
# does each one broadcast along, and why does `g` need an explicit `broadcast_to` (done once, outside the loop)
# while the inverse RMS does not? Two or three sentences.

# %% [markdown] nbgrader={"grade": true, "grade_id": "w1_answer", "locked": false, "points": 1, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The inverse RMS has one value per row, i.e. per partition, so it is repeated along the free axis: each lane
# multiplies its own C elements by its own scalar, which the engines do natively (a `(P, 1)` operand). The weight
# has one value per column and must be the same on every partition, so it is repeated along the partition axis:
# the data has to be physically copied to all 128 partitions: TensorE matmuls with a ones vector and a copy out of
# PSUM, about 1.8 µs of TensorE and 1.8 µs of ScalarE time for C = 2048 float32 on trn2 (estimates), plus the load
# of `g`. Done once before the loop, it is reused by every row tile; redone per tile, that work is paid 32 times
# for 4096 rows. The load costs most: a `[1, C]` row goes in 4-byte DMA pieces on trn2 (AWS's RMSNorm-Quant design
# doc: the compiler's handling of a trivial partition dimension splits such a load into many small DMA buffer
# loads), about 23 µs for C = 2048 float32, so redone per tile it nearly triples the estimate.
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "profile_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 5. Where does the time go?
#
# The simulator's profiler schedules your kernel's instructions on the engines of a trn2 NeuronCore and reports,
# per source line, the modelled engine time (an **estimate**, not a measurement). On a Neuron machine, capture a
# real profile with `neuron-explorer` instead (stage 3, "On real hardware"). Run it on your `rmsnorm`:

# %% nbgrader={"grade": false, "grade_id": "profile_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
from nkilab import load_kernel  # imports the kernel a %%writefile cell saved

if ON_SIMULATOR:
    from nkisim.api import profile_kernel  # traces shapes and dtypes only: the arrays' values are not read

    try:
        prof = profile_kernel(load_kernel("rmsnorm.py", "rmsnorm"), np.zeros((4096, 2048), np.float32),
                              np.zeros(2048, np.float32), target="trn2")
        print(prof.summary_text())
        print(prof.line_table_text(top=8))
    except Exception as err:  # e.g. the kernel is not written yet
        print(f"could not profile rmsnorm.py: {type(err).__name__}: {err}")
else:
    print("on hardware: NEURON_FRAMEWORK_DEBUG=1 and neuron-explorer capture (legacy: nki.profile), then Neuron Explorer")


# %% nbgrader={"grade": false, "grade_id": "figure_timeline", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The profile above as an engine timeline: the fixed launch cost, then each engine's instructions and the 16 DMA
# queues. Look for the engine that is busy almost all the time.
import matplotlib.pyplot as plt

if ON_SIMULATOR and "prof" in globals():
    prof.figure()
    plt.show()
else:
    print("no profile to draw (write rmsnorm.py and run the profile cell first)")

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 6. A faster RMSNorm: `rmsnorm_fast` (4 points)
#
# In the profile, the Vector engine (dve) is busy almost all the time — the mean and both multiplies each pass over
# the whole tile — while the Scalar engine (act) only computes the squares. Meanwhile the loads wait: a tile's buffer
# is reused two iterations later, only after those instructions are done with it. A kernel this simple should be limited by **moving the data** (read `a`, write `out`), not by
# compute. The `nki.isa` API gives you direct control of the instructions. Ideas, from most to least important:
#
# * **Fuse square and sum** into one ScalarE instruction: `nisa.activation_reduce(dst=squares, op=nl.square,
#   data=a_tile, reduce_op=nl.add, reduce_res=ssum)` writes the squares into `squares` (which you can ignore) and
#   their row sums into `ssum`, a `(rows, 1)` float32 tile you allocate with `nl.ndarray`.
# * **Scale on ScalarE**: `nisa.activation(dst=normed, op=nl.copy, data=a_tile, scale=inv_rms)` computes
#   `a_tile * inv_rms` with `inv_rms` a `(rows, 1)` tile, so the Vector engine only does the multiply by `g`.
# * **Fold the mean into one small instruction**: `nisa.tensor_scalar(dst=mean_eps, data=ssum, op0=nl.multiply,
#   operand0=1 / C, op1=nl.add, operand1=1e-6)` works on one value per partition, so it is cheap; then `nl.rsqrt`.
# * **Put `g` on every partition with one DMA.** On trn2 a load of the `[1, C]` row goes in 4-byte pieces (AWS's
#   RMSNorm-Quant design doc: with a partition dimension of 1 the compiler may split it into many tiny DMA buffer
#   loads), about 23 µs for C = 2048 float32, a tenth of this kernel, and the TensorE broadcast follows it.
#   `g.reshape((1, C)).broadcast(0, 128)` is a view that reads the same row for each of 128 partitions (a stride
#   of 0); `nl.load` of it is one DMA of 128 rows, each `C` contiguous elements, into a `[128, C]` tile, and no
#   broadcast is left to do. AWS's nki-library loads its bias vectors this way (`load_bias` in
#   `output_projection_cte_tensor_io.py`).
#
# *In the legacy dialect* the same instructions return their result instead of writing into `dst`, take NumPy's
# operators (`np.add`) and a `mask=`, and name the reduction's target with an index grid:
# `nisa.activation_reduce(op=nl.square, data=a_tile, reduce_op=np.add, reduce_res=ssum[i_p, 0], dtype=nl.float32,
# mask=...)`. An HBM tensor has no broadcast view there; an indirect load does the same job: given a `(128, 1)`
# int32 tile `idx` of zeros (`nl.zeros`), `nl.load(g.reshape((1, C))[idx[i_p, 0], i_f])` has each of the 128
# partitions gather row 0.
#
# Same rules and cases as `rmsnorm`. Correctness earns 1 point and speed 3: full speed points at ≤ 1.2× this
# question's reference (the straightforward kernel of section 4 is about 1.6× it), half at ≤ 2×.

# %% nbgrader={"grade": false, "grade_id": "q2_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile rmsnorm_fast.py
import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_fast(a, g):
    """rmsnorm with fused, engine-balanced instructions."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(n_cols)[None, :]
    # g on every partition in one DMA: each of the 128 partitions gathers row 0 of g viewed as [1, C]
    row0 = nl.zeros((128, 1), dtype=nl.int32)
    g_bcast = nl.load(g.reshape((1, n_cols))[row0[i_p, 0], i_f])
    for i in nl.affine_range(math.ceil(n_rows / 128)):
        rows = i * 128 + i_p
        valid = rows < n_rows
        a_tile = nl.load(a[rows, i_f], mask=valid)
        # ScalarE: squares and their row sum in one instruction (fp32 accumulation)
        sum_sq = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.activation_reduce(op=nl.square, data=a_tile, reduce_op=np.add, reduce_res=sum_sq[i_p, 0],
                               dtype=nl.float32, mask=valid)
        # one value per partition: mean + eps, then 1/sqrt
        inv_rms = nl.rsqrt(nisa.tensor_scalar(sum_sq, np.multiply, 1.0 / n_cols, op1=np.add, operand1=1e-6,
                                              mask=valid), mask=valid)
        # ScalarE scales by the per-row statistic; VectorE multiplies by the broadcast weight
        normed = nisa.activation(op=nl.copy, data=a_tile, scale=inv_rms, mask=valid)
        out_tile = nl.multiply(normed, g_bcast, dtype=a.dtype, mask=valid)
        nl.store(out[rows, i_f], value=out_tile, mask=valid)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile rmsnorm_fast.py
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_fast(a, g):
    """rmsnorm with fused, engine-balanced instructions."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    P = nl.tile_size.pmax
    g_bcast = nl.load(g.reshape((1, n_cols)).broadcast(0, P))  # g on every partition in one DMA (a stride-0 view)
    for i in range(math.ceil(n_rows / P)):
        lo, hi = i * P, min((i + 1) * P, n_rows)
        rows = hi - lo
        a_tile = nl.load(a[lo:hi, :])
        # ScalarE: squares and their row sum in one instruction (fp32 accumulation); the squares are not needed
        squares = nl.ndarray((rows, n_cols), dtype=nl.float32)
        sum_sq = nl.ndarray((rows, 1), dtype=nl.float32)
        nisa.activation_reduce(squares, nl.square, a_tile, reduce_op=nl.add, reduce_res=sum_sq)
        # one value per partition: mean + eps, then 1/sqrt
        mean_eps = nl.ndarray((rows, 1), dtype=nl.float32)
        nisa.tensor_scalar(mean_eps, sum_sq, nl.multiply, 1.0 / n_cols, op1=nl.add, operand1=1e-6)
        inv_rms = nl.rsqrt(mean_eps)
        # ScalarE scales by the per-row statistic; VectorE multiplies by the broadcast weight
        normed = nl.ndarray((rows, n_cols), dtype=a.dtype)
        nisa.activation(normed, nl.copy, a_tile, scale=inv_rms)
        out_tile = nl.multiply(normed, g_bcast[0:rows, :], dtype=a.dtype)
        nl.store(out[lo:hi, :], value=out_tile)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("rmsnorm_fast", "rmsnorm_fast.py");

# %% nbgrader={"grade": true, "grade_id": "q2_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (1 point), then speed vs the reference (3 points).
from nkilab import grade

grade("rmsnorm_fast", "rmsnorm_fast.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "bound_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 7. How close to the hardware limit?
#
# RMSNorm reads `a` once and writes `out` once: for 4096 × 2048 float32 that is 2 × 32 MiB. No kernel can be
# faster than moving those bytes at the peak DMA bandwidth ({{trn2:dma_gbps}} GB/s per trn2 NeuronCore: {{trn2:dma_queues}} DMA engines × {{trn2:dma_bytes_per_ns}} B/ns),
# plus the fixed cost of launching a kernel. The cell compares both of your kernels with that **bandwidth bound**
# (all numbers are cost-model estimates for trn2):

# %% nbgrader={"grade": false, "grade_id": "bound_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
R, C = 4096, 2048
moved = (2 * R * C + C) * 4  # bytes: read a and g, write out
if ON_SIMULATOR:
    from nkisim.api import target as sim_target

    prm = sim_target("trn2").params
    bound_us = moved / (prm.peak.dma_gbps * 1e3) + prm.kernel.fixed_us
    print(f"bandwidth bound (trn2 estimate): {moved / 2**20:.0f} MiB moved -> {bound_us:.1f} us")
    a_big, g_big = np.zeros((R, C), np.float32), np.zeros(C, np.float32)  # only their shapes are read
    for path, name in (("rmsnorm.py", "rmsnorm"), ("rmsnorm_fast.py", "rmsnorm_fast")):
        try:
            lat = latency_us(load_kernel(path, name), a_big, g_big, target="trn2")
            print(f"{name:13s} estimated {lat:7.1f} us on trn2 = {100 * bound_us / lat:3.0f}% of the bandwidth bound")
        except Exception as err:  # not written yet
            print(f"{name:13s} not measured ({type(err).__name__}: {err})")
else:
    print(f"{moved / 2**20:.0f} MiB moved; compare latency_us's measurement with bytes / DMA bandwidth on your device")


# %% [markdown] nbgrader={"grade": false, "grade_id": "hardware", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## On real hardware
#
# * **Which Neuron SDK.** This notebook is NKI 0.6 (`import nki`, smaller last tiles) and needs Neuron SDK 2.32 or
#   later. Its legacy twin (`make lab DIALECT=legacy`: `import neuronxcc.nki`, masks) needs SDK 2.29 or earlier:
#   since SDK 2.30 `neuronxcc.nki` is a compile error inside a kernel.
# * A smaller last tile, like a legacy mask, is compile-time: the compiler issues the last tile's instructions for
#   the rows that exist, exactly as here. An out-of-bounds slice is the same compile error on a Neuron machine.
# * `nki.isa` instructions map one-to-one onto engine instructions, so the engine balance you see in the
#   simulator's profile is the one Neuron Explorer shows — but the microseconds here are **estimates**; measure on
#   the device (`check` and `latency_us` do, stage 1) before trusting a small difference.
# * What is left between `rmsnorm_fast` and the bandwidth bound is mostly DMA latency on the critical path: a tile's
#   load still waits for the buffer of the tile two iterations back. Larger transfers (several rows per partition)
#   or more buffers hide more of it; try them once the basics work.
#
# **Next:** stage 5 splits the rows over two NeuronCores of a trn2.

