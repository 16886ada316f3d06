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

# %% [markdown] nbgrader={"grade": false, "grade_id": "intro", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# # Stage 5 — SPMD launch grids and two NeuronCores
#
# **Goals.** By the end of this notebook you can
#
# 1. launch one kernel as many **SPMD instances** with `kernel[grid](...)` and give each instance its share of
#    the work with `nl.program_id` and `nl.num_programs`;
# 2. have all instances write disjoint parts of one `nl.shared_hbm` output;
# 3. spread instances over the **two physical NeuronCores** of a trn2 logical core with `nl.nc(2)`, and know
#    why the same grid fails on trn1;
# 4. read the estimated speedup of two cores over one, and say where it falls short of 2×.
#
# The kernel questions here are graded on **trn2**, launched with the grid given in each question.

# %% [markdown] nbgrader={"grade": false, "grade_id": "intro_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# # Stage 5 — Two NeuronCores: logical cores and SPMD
#
# **Goals.** By the end of this notebook you can
#
# 1. run one kernel on the **two physical NeuronCores** of a trn2 logical core with `kernel[2](...)`, and give each
#    core its share of the work with `nl.program_id(0)` and `nl.num_programs(0)`;
# 2. have both cores write disjoint parts of one `nl.shared_hbm` output;
# 3. know why the same launch fails on trn1;
# 4. read the estimated speedup of two cores over one, and say where it falls short of 2×.
#
# The kernel questions here are graded on **trn2**, launched as each question says.
#
# *In the legacy dialect* a kernel is launched on an SPMD **grid** of instances: `kernel[4]` runs four instances
# one after another on one core, `kernel[nl.nc(2)]` two on two cores. Section 3 sets the two dialects side by side.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
import contextlib
import io

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.using_simulator()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, load_kernel  # load_kernel imports the kernel a %%writefile cell saved
from nkilab.kernels.modules import kernel_dialect  # "legacy" or "0.6": how a kernel is launched on two cores

print("neuronxcc.nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "the Neuron compiler")

# %% nbgrader={"grade": false, "grade_id": "setup_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
import os

import nki
import nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.provides_nki()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check, latency_label, latency_us, load_kernel  # load_kernel: the kernel a %%writefile cell saved

LABEL = latency_label("trn2")  # "estimate: nkisim cost model, trn2" on the simulator
print("nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "AWS's NKI (Neuron SDK 2.32 or later)")


# %% [markdown] nbgrader={"grade": false, "grade_id": "grids", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 1. One kernel, many instances
#
# `kernel[4](x)` runs the kernel body **four times**, as instances 0..3 of a one-dimensional launch grid. Every
# instance sees the same arguments; inside, `nl.program_id(0)` says which instance this is and
# `nl.num_programs(0)` how many there are along axis 0 (grids can have more axes: `kernel[2, 3]`).
#
# The output is created once for the whole grid: an `nl.ndarray(..., buffer=nl.shared_hbm)` is **shared** by all
# instances (SBUF tiles and `nl.hbm`/`private_hbm` tensors are private to each instance). So each instance must
# write its own, disjoint part of it. The usual split is one contiguous block of rows per instance:

# %% nbgrader={"grade": false, "grade_id": "demo_grid", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
def _double_blocks(x):
    """2 * x; instance i handles rows [i*B, (i+1)*B) with B = rows / instances (B <= 128 here)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)  # one output, shared by all instances
    block = x.shape[0] // nl.num_programs(0)
    start = nl.program_id(0) * block
    tile = nl.load(x[start:start + block, :])
    nl.store(out[start:start + block, :], value=nl.multiply(tile, 2.0))
    return out


double_blocks = nki.jit(_double_blocks)
x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
print(double_blocks[4](x))  # 4 instances of 2 rows each

# %% [markdown] nbgrader={"grade": false, "grade_id": "grid_bug", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# Use `nl.num_programs` rather than a hard-coded count. Below, a kernel that *assumes* 4 instances is launched
# with 3: nobody writes the last block. The simulator shows never-written output as NaN; on hardware it would
# be whatever the memory held before — a silent bug.

# %% nbgrader={"grade": false, "grade_id": "demo_grid_bug", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def double_assumes_four(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    block = x.shape[0] // 4  # wrong: assumes the grid has 4 instances
    start = nl.program_id(0) * block
    nl.store(out[start:start + block, :], value=nl.multiply(nl.load(x[start:start + block, :]), 2.0))
    return out


print(double_assumes_four[3](x))

# %% [markdown] nbgrader={"grade": false, "grade_id": "grids_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 1. One kernel, many instances
#
# `kernel[2](x)` runs the kernel body **twice**, once on each physical NeuronCore of a trn2 logical core, at the
# same time. Every instance sees the same arguments; inside, `nl.program_id(0)` says which one this is (0 or 1) and
# `nl.num_programs(0)` how many there are (2). Without brackets, `kernel(x)` is one instance: `program_id(0)` is 0
# and `num_programs(0)` is 1. (The number in brackets is the **logical-core degree**, 1 or 2, and it must match the
# runtime's `NEURON_LOGICAL_NC_CONFIG` on a device.)
#
# The output is created once for the whole launch: an `nl.ndarray(..., buffer=nl.shared_hbm)` is **shared** by both
# instances (SBUF tiles are private to each core). So each instance must write its own, disjoint part of it. The
# usual split is one contiguous block of rows per instance:

# %% nbgrader={"grade": false, "grade_id": "demo_grid_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
def _double_blocks(x):
    """2 * x; instance i handles rows [i*B, (i+1)*B) with B = rows / instances (B <= 128 here)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)  # one output, shared by both instances
    block = x.shape[0] // nl.num_programs(0)
    start = nl.program_id(0) * block
    tile = nl.load(x[start:start + block, :])
    nl.store(out[start:start + block, :], value=nl.multiply(tile, 2.0))
    return out


double_blocks = nki.jit(_double_blocks)
x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
print(double_blocks[2](x))  # 2 instances of 4 rows each, one per core
print("one instance, all 8 rows, gives the same:", np.array_equal(double_blocks(x), 2 * x))


# %% [markdown] nbgrader={"grade": false, "grade_id": "grid_bug_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# Use `nl.num_programs` rather than a hard-coded count. Below, a kernel that *assumes* two instances is launched
# on one core: nobody writes the second half. The simulator shows never-written output as NaN; on hardware it would
# be whatever the memory held before — a silent bug.

# %% nbgrader={"grade": false, "grade_id": "demo_grid_bug_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def double_assumes_two(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    block = x.shape[0] // 2  # wrong: assumes two instances
    start = nl.program_id(0) * block
    nl.store(out[start:start + block, :], value=nl.multiply(nl.load(x[start:start + block, :]), 2.0))
    return out


print(double_assumes_two(x))


# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 2. Your kernel: `vector_add_spmd` (3 points)
#
# Write `vector_add_spmd(a, b)`, returning `a + b`. The grader launches it as **`vector_add_spmd[4](a, b)`** on trn2
# (an NKI 0.6 kernel as `vector_add_spmd(a, b)`, one core: 0.6 has no grid of instances, see section 3).
#
# * `a`, `b` are `[R, F]` with R a multiple of 512 (so each of the 4 instances gets a whole number of 128-row
#   tiles) and 1 ≤ F ≤ 2048; float32, float16 or bfloat16.
# * Instance `i` computes rows `[i * R / n, (i + 1) * R / n)` where `n = nl.num_programs(0)`, in 128-row tiles
#   (`nl.affine_range` over its tiles), into the one shared output.
#
# Correctness 2 points, speed 1 (4096 × 1024 float32).

# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 2. Your kernel: `vector_add_spmd` (3 points)
#
# Write `vector_add_spmd(a, b)`, returning `a + b`, so that it is right on any launch: instance `p` of
# `n = nl.num_programs(0)` computes rows `[p * R / n, (p + 1) * R / n)`, in 128-row tiles, into the one shared
# output. The grader launches it as **`vector_add_spmd(a, b)`** on trn2 (one instance, all rows); `kernel[2]` would
# split them over two cores.
#
# * `a`, `b` are `[R, F]` with R a multiple of 512 (so any split gives whole 128-row tiles) and 1 ≤ F ≤ 2048;
#   float32, float16 or bfloat16.
#
# Correctness 2 points, speed 1 (4096 × 1024 float32).
#
# *In the legacy dialect* the grader launches it as `vector_add_spmd[4](a, b)`: four instances, one after another on
# one core, each with its quarter of the rows.

# %% nbgrader={"grade": false, "grade_id": "q1_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile vector_add_spmd.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_spmd(a, b):
    """a + b; launched as vector_add_spmd[n](a, b), each instance adds one block of R / n rows."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows_per_instance = a.shape[0] // nl.num_programs(0)
    first_row = nl.program_id(0) * rows_per_instance
    for t in nl.affine_range(rows_per_instance // 128):
        r0 = first_row + t * 128
        a_tile = nl.load(a[r0:r0 + 128, :])
        b_tile = nl.load(b[r0:r0 + 128, :])
        nl.store(out[r0:r0 + 128, :], value=nl.add(a_tile, b_tile))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile vector_add_spmd.py
import nki
import nki.language as nl


@nki.jit
def vector_add_spmd(a, b):
    """a + b; launched as vector_add_spmd(a, b) or vector_add_spmd[2](a, b), each logical core adds R / n rows."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows_per_core = a.shape[0] // nl.num_programs(0)
    first_row = nl.program_id(0) * rows_per_core
    for t in range(rows_per_core // 128):
        r0 = first_row + t * 128
        a_tile = nl.load(a[r0:r0 + 128, :])
        b_tile = nl.load(b[r0:r0 + 128, :])
        nl.store(out[r0:r0 + 128, :], value=nl.add(a_tile, b_tile))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("vector_add_spmd", "vector_add_spmd.py");

# %% nbgrader={"grade": true, "grade_id": "q1_grade", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (2 points), then speed vs the reference (1 point).
from nkilab import grade

grade("vector_add_spmd", "vector_add_spmd.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "cores", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 3. Two NeuronCores: `nl.nc(2)`
#
# On a single NeuronCore the instances of a grid run **one after another**, so `kernel[4]` is no faster than one
# instance doing all the work (its point is to write the work split once). A **trn2** chip groups two physical
# NeuronCores into one logical core, and a grid dimension written `nl.nc(2)` spreads its instances over both:
#
# | launch | instances | where they run |
# |---|---|---|
# | `kernel[nl.nc(2)](...)` | 2 | instance 0 on core 0, instance 1 on core 1, **at the same time** |
# | `kernel[nl.nc(2), 2](...)` | 2 × 2 | `program_id(0)` picks the core; the 2 along axis 1 run in turn on it |
# | `kernel[nl.spmd_dim(nl.nc(2), 2)](...)` | 4 along one axis | core 0 gets instances 0, 1; core 1 gets 2, 3 |
#
# Each physical core has its own engines, SBUF and 16 DMA queues, so a memory-bound kernel can move twice the bytes
# per microsecond. `nl.program_id` and `nl.num_programs` work as before: the kernel body does not change.
#
# A trn1 NeuronCore has no partner core; the compiler refuses a multi-core grid there. Run it:

# %% nbgrader={"grade": false, "grade_id": "demo_trn1", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
on_trn2 = nki.jit(_double_blocks, platform_target="trn2")
print("trn2, nl.nc(2):\n", on_trn2[nl.nc(2)](x))
four = on_trn2[nl.spmd_dim(nl.nc(2), 2)](x)  # 4 instances of 2 rows, two per core
print("trn2, nl.spmd_dim(nl.nc(2), 2) gives the same result:", np.array_equal(four, 2 * x))
try:
    nki.jit(_double_blocks, platform_target="trn1")[nl.nc(2)](x)
except Exception as err:  # the compiler's error, shown instead of stopping the notebook
    print(f"trn1, nl.nc(2): {type(err).__name__}: {err}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "cores_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 3. Two NeuronCores: `kernel[2]`
#
# A **trn2** chip groups two physical NeuronCores into one logical core; `kernel[2]` puts instance 0 on core 0 and
# instance 1 on core 1, **at the same time**. Each physical core has its own engines, SBUF and 16 DMA queues, so a
# memory-bound kernel can move twice the bytes per microsecond.
#
# A trn1 NeuronCore has no partner core, so a trn1 logical core is one physical core and `kernel[2]` is refused
# there. Run it (the target is chosen with AWS's `NEURON_PLATFORM_TARGET_OVERRIDE`, as on a device):

# %% nbgrader={"grade": false, "grade_id": "demo_trn1_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
print("trn2, kernel[2]:\n", double_blocks[2](x))
os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn1"  # compile for trn1, as on a trn1 instance
try:
    double_blocks[2](x)
except Exception as err:  # the compiler's error, shown instead of stopping the notebook
    print(f"trn1, kernel[2]: {type(err).__name__}: {err}")
finally:
    del os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"]


# %% [markdown] nbgrader={"grade": false, "grade_id": "cores_06", "locked": true, "schema_version": 3, "solution": false, "task": false}
# **The two dialects side by side: grids and logical cores.** NKI 0.6 (`import nki`) has no SPMD launch grid, and
# no `nl.nc` or `nl.spmd_dim`: the one number in brackets is the **logical-core degree**, 1 or 2.
#
# | legacy (`neuronxcc.nki`) | NKI 0.6 (`nki`) |
# |---|---|
# | `kernel[nl.nc(2)](a, g)`: two instances, one per physical core | `kernel[2](a, g)`: the kernel runs on both cores of a trn2 logical core |
# | `kernel[4](a, b)`: four instances, one after another on one core | `kernel(a, b)`: one core; the kernel loops over the blocks itself |
# | `kernel[nl.nc(2), 2](...)` | `kernel[2](...)`, with a loop over 2 blocks on each core |
#
# `nl.program_id(0)` and `nl.num_programs(0)` split the work in both, so the twins of this lesson's kernels keep the
# same split. Without brackets `nl.num_programs(0)` is 1, and the 0.6 `vector_add_spmd` then adds all rows on one
# core, which is what four legacy instances in turn on one core did. The grader launches each dialect its own way:
# `[4]` and `[nl.nc(2)]` for legacy kernels, no brackets and `[2]` for 0.6 ones.

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 4. Your kernel: `rmsnorm_2core` (4 points)
#
# Write `rmsnorm_2core(a, g)`: the RMSNorm of stage 4 (ε = 1e-6, any R ≥ 1, 1 ≤ C ≤ 4096, float32 or bfloat16),
# launched by the grader as **`rmsnorm_2core[nl.nc(2)](a, g)`** on trn2 (an NKI 0.6 kernel as
# `rmsnorm_2core[2](a, g)`).
#
# * Split the `ceil(R / 128)` row tiles between the `nl.num_programs(0)` instances: instance `p` takes tiles
#   `p * T, ..., p * T + T - 1` with `T = ceil(tiles / instances)`.
# * Some of those tiles may be partial or lie entirely past the last row (e.g. R = 1: instance 1 has nothing to do);
#   the mask `rows < R` handles both — a fully masked instruction does nothing.
# * Start from your `rmsnorm_fast`; each instance loads and broadcasts `g` for itself (SBUF is per core).
#
# Correctness 2 points, speed 2 (8192 × 2048 float32, on two cores).

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 4. Your kernel: `rmsnorm_2core` (4 points)
#
# Write `rmsnorm_2core(a, g)`: the RMSNorm of stage 4 (ε = 1e-6, any R ≥ 1, 1 ≤ C ≤ 4096, float32 or bfloat16),
# launched by the grader as **`rmsnorm_2core[2](a, g)`** on trn2: two cores.
#
# * Split the `ceil(R / 128)` row tiles between the `nl.num_programs(0)` instances: instance `p` takes tiles
#   `p * T, ..., p * T + T - 1` with `T = ceil(tiles / instances)`.
# * Some of those tiles may be partial or lie entirely past the last row (e.g. R = 1: instance 1 has nothing to do).
#   Their bounds are Python ints while the kernel compiles: shrink the last tile as in stage 4, and skip the tiles
#   that start past the end.
# * Start from your `rmsnorm_fast`; each instance loads and broadcasts `g` for itself (SBUF is per core).
#
# Correctness 2 points, speed 2 (8192 × 2048 float32, on two cores).
#
# *In the legacy dialect* the grader launches it as `rmsnorm_2core[nl.nc(2)](a, g)`, and the mask `rows < R` handles
# partial and empty tiles alike: a fully masked instruction does nothing.

# %% nbgrader={"grade": false, "grade_id": "q2_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile rmsnorm_2core.py
import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_2core(a, g):
    """RMSNorm(a) * g; launched as rmsnorm_2core[nl.nc(2)](a, g), each instance takes a block of row tiles."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(n_cols)[None, :]
    tiles_per_instance = math.ceil(math.ceil(n_rows / 128) / nl.num_programs(0))
    first_tile = nl.program_id(0) * tiles_per_instance
    row0 = nl.zeros((128, 1), dtype=nl.int32)  # g on every partition in one DMA, as in rmsnorm_fast
    g_bcast = nl.load(g.reshape((1, n_cols))[row0[i_p, 0], i_f])
    for t in nl.affine_range(tiles_per_instance):
        rows = (first_tile + t) * 128 + i_p
        valid = rows < n_rows
        a_tile = nl.load(a[rows, i_f], mask=valid)
        sum_sq = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.activation_reduce(op=nl.square, data=a_tile, reduce_op=np.add, reduce_res=sum_sq[i_p, 0],
                               dtype=nl.float32, mask=valid)
        inv_rms = nl.rsqrt(nisa.tensor_scalar(sum_sq, np.multiply, 1.0 / n_cols, op1=np.add, operand1=1e-6,
                                              mask=valid), mask=valid)
        normed = nisa.activation(op=nl.copy, data=a_tile, scale=inv_rms, mask=valid)
        nl.store(out[rows, i_f], value=nl.multiply(normed, g_bcast, dtype=a.dtype, mask=valid), mask=valid)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile rmsnorm_2core.py
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_2core(a, g):
    """RMSNorm(a) * g; launched as rmsnorm_2core[2](a, g), each logical core takes a block of row tiles."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_rows, n_cols = a.shape
    P = nl.tile_size.pmax
    tiles_per_core = math.ceil(math.ceil(n_rows / P) / nl.num_programs(0))
    first_tile = nl.program_id(0) * tiles_per_core
    g_bcast = nl.load(g.reshape((1, n_cols)).broadcast(0, P))  # g on every partition in one DMA, as in rmsnorm_fast
    for t in range(tiles_per_core):
        lo, hi = (first_tile + t) * P, min((first_tile + t + 1) * P, n_rows)
        if lo >= hi:  # past the last row (R = 1: core 1 has nothing to do); a Python int, known while tracing
            break
        rows = hi - lo
        a_tile = nl.load(a[lo:hi, :])
        squares = nl.ndarray((rows, n_cols), dtype=nl.float32)
        sum_sq = nl.ndarray((rows, 1), dtype=nl.float32)
        nisa.activation_reduce(squares, nl.square, a_tile, reduce_op=nl.add, reduce_res=sum_sq)
        mean_eps = nl.ndarray((rows, 1), dtype=nl.float32)
        nisa.tensor_scalar(mean_eps, sum_sq, nl.multiply, 1.0 / n_cols, op1=nl.add, operand1=1e-6)
        inv_rms = nl.rsqrt(mean_eps)
        normed = nl.ndarray((rows, n_cols), dtype=a.dtype)
        nisa.activation(normed, nl.copy, a_tile, scale=inv_rms)
        nl.store(out[lo:hi, :], value=nl.multiply(normed, g_bcast[0:rows, :], dtype=a.dtype))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("rmsnorm_2core", "rmsnorm_2core.py");

# %% nbgrader={"grade": true, "grade_id": "q2_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (2 points), then speed vs the reference (2 points).
from nkilab import grade

grade("rmsnorm_2core", "rmsnorm_2core.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "speedup_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 5. What does the second core buy?
#
# The same kernel, three launches: one instance doing everything (`[1]`), two instances on one core (`[2]`), and
# two instances on two cores (`[nl.nc(2)]`). The cell estimates each on trn2 for growing R (C = 2048, float32)
# and plots the speedup of `[nl.nc(2)]` over `[1]`. All latencies are **cost-model estimates for trn2**. (With the
# NKI 0.6 kernel, the `[nc(2)]` column is `kernel[2]` and the `[2]` column stays empty, `nan`: 0.6 cannot run two
# instances on one core.)

# %% nbgrader={"grade": false, "grade_id": "speedup_demo", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
def estimate_us(kernel, grid, rows, cols=2048):
    if grid is None:  # a launch the kernel's dialect cannot spell
        return float("nan")
    if ON_SIMULATOR:
        from neuronxcc.nki import typing as nt

        args = (nt.tensor[[rows, cols], nl.float32], nt.tensor[[cols], nl.float32])
    else:  # on a device nki.benchmark needs real arrays (their values do not matter)
        args = (np.ones((rows, cols), np.float32), np.ones(cols, np.float32))
    bench = nki.benchmark(kernel, platform_target="trn2")[grid]
    with contextlib.redirect_stdout(io.StringIO()):  # nki.benchmark's own report line
        bench(*args)
    return bench.benchmark_result.nc_latency.get_latency_percentile(99)


row_counts = [256, 1024, 4096, 8192]
speedups = []
try:
    kernel = load_kernel("rmsnorm_2core.py", "rmsnorm_2core")
    # NKI 0.6 spells two cores kernel[2] and has no grid of instances on one core (section 3's table)
    grids = ((1,), None, (2,)) if kernel_dialect(kernel) == "0.6" else ((1,), (2,), (nl.nc(2),))
    print("estimated latency on trn2 (us):")
    print(f"{'R':>6} {'[1]':>9} {'[2]':>9} {'[nc(2)]':>9} {'speedup':>8}")
    for rows in row_counts:
        one, two_serial, two_cores = (estimate_us(kernel, grid, rows) for grid in grids)
        speedups.append(one / two_cores)
        print(f"{rows:6d} {one:9.1f} {two_serial:9.1f} {two_cores:9.1f} {one / two_cores:7.2f}x")
except Exception as err:  # e.g. rmsnorm_2core is not written yet
    print(f"write rmsnorm_2core first ({type(err).__name__}: {err})")

if speedups:
    try:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(row_counts, speedups, "o-", label="nl.nc(2) vs one instance")
        ax.axhline(2.0, ls="--", c="gray", label="ideal 2x")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("rows R (C = 2048, float32)")
        ax.set_ylabel("estimated speedup (trn2)")
        ax.legend()
        plt.show()
    except ImportError:
        pass

# %% [markdown] nbgrader={"grade": false, "grade_id": "speedup_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 5. What does the second core buy?
#
# The same kernel, two launches: one core (`rmsnorm_2core(a, g)`) and two cores (`rmsnorm_2core[2](a, g)`). The cell
# estimates each on trn2 for growing R (C = 2048, float32) and plots the speedup of two cores over one. All latencies
# are **cost-model estimates for trn2** (measurements on a device).

# %% nbgrader={"grade": false, "grade_id": "speedup_demo_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
row_counts = [256, 1024, 4096, 8192]
speedups = []
try:
    kernel = load_kernel("rmsnorm_2core.py", "rmsnorm_2core")
    print(f"latency on trn2 (us; {LABEL}):")
    print(f"{'R':>6} {'one core':>9} {'kernel[2]':>9} {'speedup':>8}")
    for rows in row_counts:
        a_big, g_big = np.zeros((rows, 2048), np.float32), np.zeros(2048, np.float32)  # only shapes are read
        one = latency_us(kernel, a_big, g_big, target="trn2")
        two = latency_us(kernel, a_big, g_big, target="trn2", grid=2)
        speedups.append(one / two)
        print(f"{rows:6d} {one:9.1f} {two:9.1f} {one / two:7.2f}x")
except Exception as err:  # e.g. rmsnorm_2core is not written yet
    print(f"write rmsnorm_2core first ({type(err).__name__}: {err})")

if speedups:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(row_counts, speedups, "o-", label="kernel[2] vs one core")
    ax.axhline(2.0, ls="--", c="gray", label="ideal 2x")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("rows R (C = 2048, float32)")
    ax.set_ylabel(f"speedup ({LABEL})", fontsize=8)
    ax.legend()
    plt.show()


# %% [markdown] nbgrader={"grade": false, "grade_id": "w1_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ### Written question (1 point)
#
# In the table, why is `[2]` no faster than `[1]`, while `[nl.nc(2)]` is? And why is the two-core speedup well below
# 2× for R = 256 but close to 2× for R = 8192? Two or three sentences.

# %% [markdown] nbgrader={"grade": true, "grade_id": "w1_answer", "locked": false, "points": 1, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# ### BEGIN SOLUTION
# Instances of a grid on one NeuronCore run one after another on the same engines and DMA queues, so splitting the
# work into two instances there changes nothing; `nl.nc(2)` puts the two instances on two physical cores, each with
# its own engines and DMA queues, so they move data at the same time. The speedup is below 2× because some costs are
# not split: the fixed launch cost (about 11 µs in the cost model), each core's own load and broadcast of `g`, and the pipeline's start
# and end; with few rows (R = 256, one tile per core) those dominate, with many rows the per-row work dominates and
# the speedup approaches 2×.
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "w1_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ### Written question (1 point)
#
# In the table, what makes two cores faster than one at all, and why is the two-core speedup well below 2× for
# R = 256 but close to 2× for R = 8192? Two or three sentences.

# %% [markdown] nbgrader={"grade": true, "grade_id": "w1_answer_nki", "locked": false, "points": 1, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# ### BEGIN SOLUTION
# `kernel[2]` runs one instance on each physical core of the trn2 logical core, and each core has its own engines
# and 16 DMA queues, so the two halves of the rows are loaded, normalised and stored at the same time. The speedup
# is below 2× because some costs are not split: the fixed launch cost (about 11 µs in the cost model), each core's
# own load and broadcast of `g`, and the pipeline's start and end; with few rows (R = 256, one tile per core) those
# dominate, with many rows the per-row work dominates and the speedup approaches 2×.
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "hardware", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## On real hardware
#
# * **Which Neuron SDK.** This notebook is NKI 0.6 (`import nki`, `kernel[2]`) and needs Neuron SDK 2.32 or later;
#   the bracket must match the runtime's logical-core setting (`NEURON_LOGICAL_NC_CONFIG=2`, trn2's default). Its
#   legacy twin (`make lab DIALECT=legacy`: `import neuronxcc.nki`, grids and `nl.nc(2)`) needs SDK 2.29 or earlier:
#   since SDK 2.30 `neuronxcc.nki` is a compile error inside a kernel.
# * On a device, the speedup `latency_us` reports is a **measurement** (each launch's NEFF timed with nrtpy's
#   benchmark or `neuron-explorer capture`, stage 1); the numbers above are cost-model **estimates**.
# * On trn1 each NeuronCore runs its own kernel: launch without brackets there (or run one kernel per core from the
#   framework), since `kernel[2]` is a compile error, as shown above.
# * The two instances share the HBM output but nothing else: there is no synchronisation between them unless you
#   ask for it (`nisa.core_barrier`), which is why each must write a disjoint part of the output.
#
# **Next:** stage 6 turns to the one engine stages 1–5 left idle, the Tensor Engine, and matrix multiplication.

