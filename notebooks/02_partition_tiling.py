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
# # Stage 2 — Partition tiling: any number of rows
#
# **Goals.** By the end of this notebook you can
#
# 1. loop over 128-row tiles of an `[N, F]` tensor, so N can be 129, 1000 or 8192;
# 2. handle a **ragged last tile** (N = 1, 127, 129, 1000, ...) as a smaller tile;
# 3. explain with the cost model why one 128-row tile is far faster than 128 one-row tiles, although
#    both move the same bytes;
# 4. recognise the compiler's error for a tile taller than 128 partitions.
#
# As in stage 1, each kernel cell starts with `%%writefile <name>.py` (running it saves your kernel), the
# `check(...)` cell after it runs the public cases and prints what is wrong, and the locked grade cell scores
# it on public and hidden cases. Every latency printed here is a **cost-model estimate** for the named target
# (trn2 unless stated), never a hardware measurement — unless you run the notebook on a Neuron device.
#
# *In the legacy dialect* the loop is `nl.affine_range` and the ragged tile a mask; sections 2 and 4 say how.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
import matplotlib.pyplot as plt
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.using_simulator()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, latency_label, latency_us

TARGET = "trn2"  # the target the cost model estimates for (and the course grades on)

LABEL = latency_label(TARGET)  # "estimate: nkisim cost model, <target>" on the simulator
print("neuronxcc.nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "the Neuron compiler")

# %% nbgrader={"grade": false, "grade_id": "setup_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
import matplotlib.pyplot as plt
import nki
import nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.provides_nki()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, latency_label, latency_us

TARGET = "trn2"  # the target the cost model estimates for (and the course grades on)

LABEL = latency_label(TARGET)  # "estimate: nkisim cost model, <target>" on the simulator
print("nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "AWS's NKI (Neuron SDK 2.32 or later)")


# %% [markdown] nbgrader={"grade": false, "grade_id": "limit", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 1. One tile cannot hold 256 rows
#
# Stage 1's kernels loaded a whole input as one tile. The first dimension of a tile is its **partition
# dimension**, and SBUF has 128 partitions, so a tile has at most `nl.tile_size.pmax` = 128 rows. Here is the
# one-tile kernel on a 256-row input — run it and read the compiler's error (the simulator raises the same
# message, at the offending line):

# %% nbgrader={"grade": false, "grade_id": "demo_limit", "locked": true, "schema_version": 3, "solution": false, "task": false}
@nki.jit
def one_tile_add(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), nl.load(y)))  # one tile per input: P = N rows
    return out


x256 = np.ones((256, 4), dtype=np.float32)
try:
    one_tile_add(x256, x256)
except Exception as err:  # the compiler's error, shown instead of stopping the notebook
    print(f"{type(err).__name__}: {err}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 2. A loop over 128-row tiles: `tiled_add` (3 points)
#
# Split the rows into tiles of 128 and handle one tile per loop iteration:
#
# ```python
# for t in range(N // 128):                           # t = 0, 1, ..., N//128 - 1
#     a_tile = nl.load(a[t * 128:(t + 1) * 128, :])   # rows 128t .. 128t+127, all F columns
#     ...
# ```
#
# NKI 0.6 runs a kernel's Python when it compiles it, so `t` is a plain Python int and the loop is **unrolled**:
# N/128 copies of its body, one per tile. The copies touch disjoint rows, so no iteration waits for another and
# the compiler overlaps them: while the Vector engine adds tile `t`, the DMA queues already load tile `t + 1` and
# store tile `t - 1`. The compiler orders instructions by the data they share, nothing else; an iteration that
# needs what an earlier one wrote (a running total) waits for it, and that is all.
#
# *In the legacy dialect* the loop variable of `nl.affine_range` is symbolic (use it in index expressions, not in
# `if`), and the kind of loop says how iterations relate: `nl.affine_range` declares them independent, so they
# overlap, and `nl.sequential_range` keeps the tensors the loop carries in program order, so they do not (for
# N = 8192 and F = 64 the cost model estimates 108 µs with `sequential_range` against 48 µs with `affine_range`
# on trn2). NKI 0.6 keeps both names only as deprecated spellings of `range`.
#
# Write `tiled_add(a, b)` that returns `a + b`:
#
# * `a` and `b` are `[N, F]` with **N a multiple of 128** (128 ≤ N ≤ 8192), 1 ≤ F ≤ 2048, same dtype
#   (float32, float16 or bfloat16). The output has their shape and dtype.
# * Load, add and store one `[128, F]` tile per iteration.

# %% nbgrader={"grade": false, "grade_id": "q1_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile tiled_add.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tiled_add(a, b):
    """a + b for a, b of shape [N, F] with N a multiple of 128: one 128-row tile per iteration."""
    ### BEGIN SOLUTION
    N, F = a.shape
    P = nl.tile_size.pmax  # 128
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(N // P):
        a_tile = nl.load(a[t * P:(t + 1) * P, :])
        b_tile = nl.load(b[t * P:(t + 1) * P, :])
        sum_tile = nl.add(a_tile, b_tile)
        nl.store(out[t * P:(t + 1) * P, :], value=sum_tile)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile tiled_add.py
import nki
import nki.language as nl


@nki.jit
def tiled_add(a, b):
    """a + b for a, b of shape [N, F] with N a multiple of 128: one 128-row tile per iteration."""
    ### BEGIN SOLUTION
    N, F = a.shape
    P = nl.tile_size.pmax  # 128
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in range(N // P):
        a_tile = nl.load(a[t * P:(t + 1) * P, :])
        b_tile = nl.load(b[t * P:(t + 1) * P, :])
        sum_tile = nl.add(a_tile, b_tile)
        nl.store(out[t * P:(t + 1) * P, :], value=sum_tile)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("tiled_add", "tiled_add.py");

# %% nbgrader={"grade": true, "grade_id": "q1_grade", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (2 points), then speed vs the reference (1 point).
from nkilab import grade

grade("tiled_add", "tiled_add.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "height_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 3. Why 128 rows per tile? The cost of a DMA transfer
#
# Your kernel moves 128 rows per `nl.load`. Nothing stops a kernel from moving fewer — the CS149 course's
# first tiled kernel moved **one** row per transfer. The bytes moved are the same; only the number of
# transfers changes. The cell below builds the same kernel with tile heights 1, 2, 4, ..., 128 and
# estimates each one on a `[2048, 512]` float32 input.

# %% nbgrader={"grade": false, "grade_id": "demo_height", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
def add_tiles_of(h):
    """The tiled add with h rows per tile (N must be a multiple of h)."""

    @nki.jit
    def add_h_rows(x, y):
        N, F = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for t in nl.affine_range(N // h):
            x_tile = nl.load(x[t * h:(t + 1) * h, :])
            y_tile = nl.load(y[t * h:(t + 1) * h, :])
            nl.store(out[t * h:(t + 1) * h, :], value=nl.add(x_tile, y_tile))
        return out

    return add_h_rows


a_big = np.zeros((2048, 512), dtype=np.float32)
heights = [1, 2, 4, 8, 16, 32, 64, 128]
lat = [latency_us(add_tiles_of(h), a_big, a_big, target=TARGET) for h in heights]
print(f"{'tile height':>11}  {'DMA transfers':>13}  {'latency (' + LABEL + ')':>44}")
for h, us in zip(heights, lat):
    print(f"{h:>11}  {3 * 2048 // h:>13}  {us:>41.1f} us")

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.loglog(heights, lat, "o-")
ax.set_xticks(heights, [str(h) for h in heights])
ax.set_yticks([50, 100, 200, 500, 1000, 2000, 5000], ["50", "100", "200", "500", "1000", "2000", "5000"])
ax.minorticks_off()
ax.set_xlabel("rows per tile (partitions used)")
ax.set_ylabel("latency (us)")
ax.set_title(f"[2048, 512] fp32 add, {LABEL}", fontsize=9)
ax.grid(True, which="both", alpha=0.3)
plt.show()

# %% nbgrader={"grade": false, "grade_id": "demo_height_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
def add_tiles_of(h):
    """The tiled add with h rows per tile (N must be a multiple of h)."""

    @nki.jit
    def add_h_rows(x, y):
        N, F = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for t in range(N // h):
            x_tile = nl.load(x[t * h:(t + 1) * h, :])
            y_tile = nl.load(y[t * h:(t + 1) * h, :])
            nl.store(out[t * h:(t + 1) * h, :], value=nl.add(x_tile, y_tile))
        return out

    return add_h_rows


a_big = np.zeros((2048, 512), dtype=np.float32)
heights = [1, 2, 4, 8, 16, 32, 64, 128]
lat = [latency_us(add_tiles_of(h), a_big, a_big, target=TARGET) for h in heights]
print(f"{'tile height':>11}  {'DMA transfers':>13}  {'latency (' + LABEL + ')':>44}")
for h, us in zip(heights, lat):
    print(f"{h:>11}  {3 * 2048 // h:>13}  {us:>41.1f} us")

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.loglog(heights, lat, "o-")
ax.set_xticks(heights, [str(h) for h in heights])
ax.set_yticks([50, 100, 200, 500, 1000, 2000, 5000], ["50", "100", "200", "500", "1000", "2000", "5000"])
ax.minorticks_off()
ax.set_xlabel("rows per tile (partitions used)")
ax.set_ylabel("latency (us)")
ax.set_title(f"[2048, 512] fp32 add, {LABEL}", fontsize=9)
ax.grid(True, which="both", alpha=0.3)
plt.show()

# %% [markdown] nbgrader={"grade": false, "grade_id": "height_explain", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Doubling the tile height roughly **halves** the latency, all the way to 128 rows. Two facts about DMA
# explain it:
#
# * **Every transfer pays a fixed cost** (descriptor set-up and a semaphore handshake, on the order of a
#   microsecond) before a single byte moves. One-row tiles pay it 3 × 2048 times; 128-row tiles only 48 times.
# * **Partitions move in parallel.** A NeuronCore has 16 DMA queues and each serves 8 partitions, so a
#   128-row tile keeps all 16 queues busy at once, while a 1-row tile keeps one busy and fifteen idle.
#
# At 128 rows the kernel is close to bandwidth-bound: most of its time is bytes flowing at the DMA rate plus
# the kernel's fixed launch cost. The published hardware numbers show the same cliff: in CS149's 2024 lab a
# 25600-element vector add took **27404 µs** with 1-row tiles and **206 µs** with 128-row tiles on trn1,
# and in the 2025 lab 37318 and 378 µs on trn2; the cost model's estimates for those kernels are within about
# 10% of all four (docs/cost-model.md, "Calibration").

# %% nbgrader={"grade": false, "grade_id": "figure_queues", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Which DMA queues move a 1-row and a 128-row tile, then the engine timelines of the add with tile heights 1 and
# 128 on a [256, 512] input: in the 1-row kernel only queue 0 ever moves data; in the 128-row kernel every
# transfer spreads over all 16 queues (each light-orange bar is one transfer's data on that queue).
from nkilab import figures

figures.dma_queues((1, 128), target=TARGET)
if ON_SIMULATOR:
    from nkisim.api import profile_kernel

    small = np.zeros((256, 512), dtype=np.float32)
    for h in (1, 128):
        prof = profile_kernel(add_tiles_of(h), small, small, target=TARGET)
        prof.figure(title=f"tile height {h}: {prof.estimate.total_us:.1f} us on {TARGET} "
                          f"({prof.estimate.dma_count} DMA transfers; {LABEL})")
plt.show()

# %% [markdown] nbgrader={"grade": false, "grade_id": "ragged_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 4. A ragged last tile
#
# With N = 1000 rows, 1000 = 7 × 128 + 104: seven full tiles and a last tile of 104 rows. Rounding the
# loop count up and slicing 128 rows as before reads past the end of the tensor. The compiler checks every
# access against the tensor's shape and refuses:

# %% nbgrader={"grade": false, "grade_id": "figure_ragged", "locked": true, "schema_version": 3, "solution": false, "task": false}
# N = 1000 rows in 128-row tiles: seven full tiles and a last one of 104 rows; the hatched rows of the last
# tile lie past the end of the tensor.
figures.partitions_and_free(rows=1000, cols=512, target=TARGET)
plt.show()

# %% nbgrader={"grade": false, "grade_id": "demo_ragged", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def unmasked_add(x, y):
    N, F = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((N + 127) // 128):  # ceil(N / 128) tiles
        x_tile = nl.load(x[t * 128:(t + 1) * 128, :])  # the last tile runs past row N - 1
        y_tile = nl.load(y[t * 128:(t + 1) * 128, :])
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.add(x_tile, y_tile))
    return out


x129 = np.ones((129, 4), dtype=np.float32)
try:
    unmasked_add(x129, x129)
except Exception as err:
    print(f"{type(err).__name__}: {err}")

# %% nbgrader={"grade": false, "grade_id": "demo_ragged_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def unmasked_add(x, y):
    N, F = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((N + 127) // 128):  # ceil(N / 128) tiles
        x_tile = nl.load(x[t * 128:(t + 1) * 128, :])  # the last tile runs past row N - 1
        y_tile = nl.load(y[t * 128:(t + 1) * 128, :])
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.add(x_tile, y_tile))
    return out


x129 = np.ones((129, 4), dtype=np.float32)
try:
    unmasked_add(x129, x129)
except Exception as err:
    print(f"{type(err).__name__}: {err}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "mask_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# A **mask** tells the compiler which elements of a tile's index range exist. Index the tile with
# `nl.arange` index vectors instead of slices, and pass the condition as `mask=`:
#
# ```python
# P = nl.tile_size.pmax
# i_p = nl.arange(P)[:, None]
# i_f = nl.arange(F)[None, :]
# for t in nl.affine_range((N + P - 1) // P):
#     rows = t * P + i_p
#     a_tile = nl.load(a[rows, i_f], mask=(rows < N))
#     ...
#     nl.store(out[rows, i_f], value=..., mask=(rows < N))
# ```
#
# `i_p` is a `(128, 1)` column of partition indices and `i_f` a `(1, F)` row of column indices; together they
# broadcast to the tile's `(128, F)` index grid, and `rows` holds each partition's row number in `a`. The
# load skips the partitions whose `rows < N` is false.
#
# A mask is resolved at compile time: the last iteration's instructions simply shrink to 104 partitions, at
# no runtime cost. Mask every instruction that touches a row past the end — the loads and the store at
# least; compute instructions may take the same `mask=` (it saves them work on the missing rows).
#
# (Another correct way: loop over the `N // 128` full tiles with slices, then handle the `N % 128` leftover
# rows in one more load/compute/store written after the loop, under a plain Python `if N % 128:` — N is a
# Python int at trace time. The mask version keeps one copy of the code.)

# %% [markdown] nbgrader={"grade": false, "grade_id": "mask_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# In NKI 0.6 a tile is as big as you make it, and `N` is a Python int while the kernel compiles: the last tile is
# simply **smaller**. Slice it to end at row `N`:
#
# ```python
# P = nl.tile_size.pmax
# for t in range((N + P - 1) // P):
#     lo, hi = t * P, min((t + 1) * P, N)      # the last tile has hi - lo = N - t * P rows
#     a_tile = nl.load(a[lo:hi, :])
#     ...
#     nl.store(out[lo:hi, :], value=...)
# ```
#
# Every instruction of the last iteration is issued for `hi - lo` partitions: the compiler sees the smaller shape,
# no row past the end is touched, and it costs nothing at runtime. With the `nisa` instructions, allocate the last
# tile with that many rows (`nl.ndarray((hi - lo, F), ...)`) or use a slice of a full-size one (`tile[0:hi - lo, :]`):
# slicing an SBUF tensor makes a view, which is free.
#
# (Another correct way: loop over the `N // 128` full tiles, then handle the `N % 128` leftover rows in one more
# load/compute/store after the loop, under `if N % 128:`. The `min` version keeps one copy of the code.)
#
# *In the legacy dialect* the loop index of `nl.affine_range` is symbolic, so Python cannot size the last tile:
# the kernel indexes with `nl.arange` grids (`i_p = nl.arange(P)[:, None]`, `i_f = nl.arange(F)[None, :]`, rows
# `t * P + i_p`) and passes a **mask**, `nl.load(a[rows, i_f], mask=(rows < N))`, on every instruction that touches
# a row past the end. The cost model prices a masked instruction like the smaller tile it amounts to.

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 5. Any N: `tiled_add_relu` (4 points)
#
# Write `tiled_add_relu(a, b)` that returns `max(a + b, 0)` (a ReLU after the add):
#
# * `a` and `b` are `[N, F]` with **any 1 ≤ N ≤ 8192** (1, 127, 129, 1000, ...) and 1 ≤ F ≤ 2048, same dtype
#   (float32, float16 or bfloat16). The output has their shape and dtype.
# * Tile the rows by 128 and handle the ragged last tile. `nl.maximum(x, 0.0)` (or `nl.relu(x)`) computes
#   the ReLU on a tile.
#
# Speed: full points at ≤ 1.2× the reference solution's estimated latency on `[1000, 1024]` float32,
# half points at ≤ 2×.

# %% nbgrader={"grade": false, "grade_id": "q2_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile tiled_add_relu.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tiled_add_relu(a, b):
    """max(a + b, 0) for a, b of shape [N, F], any N >= 1: 128-row tiles, the last one masked."""
    ### BEGIN SOLUTION
    N, F = a.shape
    P = nl.tile_size.pmax
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(F)[None, :]
    for t in nl.affine_range((N + P - 1) // P):
        rows = t * P + i_p
        a_tile = nl.load(a[rows, i_f], mask=(rows < N))
        b_tile = nl.load(b[rows, i_f], mask=(rows < N))
        sum_tile = nl.add(a_tile, b_tile, mask=(rows < N))
        relu_tile = nl.maximum(sum_tile, 0.0, mask=(rows < N))
        nl.store(out[rows, i_f], value=relu_tile, mask=(rows < N))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile tiled_add_relu.py
import nki
import nki.language as nl


@nki.jit
def tiled_add_relu(a, b):
    """max(a + b, 0) for a, b of shape [N, F], any N >= 1: 128-row tiles, the last one smaller."""
    ### BEGIN SOLUTION
    N, F = a.shape
    P = nl.tile_size.pmax
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in range((N + P - 1) // P):
        lo, hi = t * P, min((t + 1) * P, N)  # the ragged last tile is a smaller tile: rows lo .. hi - 1
        a_tile = nl.load(a[lo:hi, :])
        b_tile = nl.load(b[lo:hi, :])
        sum_tile = nl.add(a_tile, b_tile)
        relu_tile = nl.maximum(sum_tile, 0.0)
        nl.store(out[lo:hi, :], value=relu_tile)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("tiled_add_relu", "tiled_add_relu.py");

# %% nbgrader={"grade": true, "grade_id": "q2_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (2 points), then speed vs the reference (2 points).
from nkilab import grade

grade("tiled_add_relu", "tiled_add_relu.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "w1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ### Written question (1 point)
#
# In section 3, the kernel with 1-row tiles and the kernel with 128-row tiles move exactly the same bytes,
# yet the first is tens of times slower in the estimate (and on real trn1/trn2 hardware). Explain why, naming
# the two DMA facts involved. Two or three sentences.

# %% [markdown] nbgrader={"grade": true, "grade_id": "w1_answer", "locked": false, "points": 1, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Each DMA transfer pays a fixed cost (descriptor set-up and semaphore handshake, about a microsecond)
# regardless of its size, and 1-row tiles need 128× as many transfers (3 × 2048 instead of 48), so that fixed
# cost dominates. Also the 16 DMA queues each serve 8 partitions, so a 128-row tile spreads over all 16 queues
# and moves its rows in parallel, whereas a 1-row tile uses a single queue and leaves the others idle.
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "hardware", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## On real hardware
#
# * **Which Neuron SDK.** This notebook is NKI 0.6 (`import nki`, Python loops, a smaller last tile) and needs Neuron
#   SDK 2.32 or later. Its legacy twin (`make lab DIALECT=legacy`: `import neuronxcc.nki`, `nl.affine_range` and
#   masks) needs SDK 2.29 or earlier: since SDK 2.30 `neuronxcc.nki` is a compile error inside a kernel.
# * On a trn1/trn2 instance with SDK 2.32, `import nki` is AWS's compiler: the 256-row and out-of-bound errors above
#   are its compile-time errors, and `latency_us` reports a measurement instead of an estimate (the kernel's NEFF,
#   saved with `NEURON_FRAMEWORK_DEBUG=1`, timed with nrtpy's benchmark or `neuron-explorer capture`: stage 1, "On
#   real hardware").
# * A smaller last tile costs nothing at runtime on hardware either (nor does a legacy mask): the compiler emits the
#   last iteration's instructions with fewer partitions.
# * The estimates model DMA fixed costs, queues and bandwidth from published figures; compare designs with
#   them, do not quote them as measured microseconds.
#
# **Next:** stage 3 reshapes a long 1-D vector into `(tiles, 128, FREE_DIM)` and picks the free-dimension
# size that overlaps DMA with compute best.

