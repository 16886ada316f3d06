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
# # Stage 1 — Vector add: load, compute, store
#
# **Goals.** By the end of this notebook you can
#
# 1. say where a kernel's data lives (HBM) and where it is computed on (SBUF tiles);
# 2. write the three-step NKI kernel: load (a DMA into SBUF) → compute → store, with the instructions themselves
#    (`nisa.dma_copy`, `nisa.tensor_scalar`: each writes into the tile you name) and with the `nl.load` / `nl.add` /
#    `nl.store` shorthands;
# 3. explain the **128-partition limit** and recognise the error you get past it;
# 4. stream a long free dimension through SBUF in chunks, and read a latency estimate against a reference.
#
# **How this notebook works.** Each kernel cell starts with `%%writefile <name>.py`: running it *saves* your
# kernel to a file (it does not run it). The `check(...)` cell after it runs that file on a few public test
# inputs in a separate process and tells you, in plain words, what is wrong — shape and dtype first, then the
# first wrong element (by 128-row tile, partition and column), then, once everything is right, the modelled
# latency against the speed tiers. Grading runs more (hidden) cases: other sizes, dtypes and random data.
#
# **Which NKI.** The course is written in **NKI 0.6**, the `nki` package of Neuron SDK 2.32 and later (`import nki`,
# `import nki.language as nl`, `import nki.isa as nisa`). On a laptop, `import nki` is served by **nkisim**, the
# course's CPU simulator; latencies are estimates from its cost model. On a trn1/trn2 instance with SDK 2.32 the same
# notebook runs on AWS's compiler and a NeuronCore.
#
# *In the legacy dialect* (`import neuronxcc.nki`: Neuron SDK 2.29 and earlier, the dialect of Stanford CS149's
# handouts) the kernels read almost the same. `make lab DIALECT=legacy` opens this course's legacy twin, graded the
# same way, and notes like this one say where the two dialects differ.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np

try:
    import nkisim

    ON_SIMULATOR = nkisim.using_simulator()
except ImportError:  # a Neuron machine without the course simulator installed
    ON_SIMULATOR = False

from nkilab import check

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

from nkilab import check, latency_label, latency_us

TARGET = "trn2"  # the target the cost model estimates for (and the course grades on)
LABEL = latency_label(TARGET)  # "estimate: nkisim cost model, trn2" here; "measured on <instance>" on a device
print("nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "AWS's NKI (Neuron SDK 2.32 or later)")


# %% [markdown] nbgrader={"grade": false, "grade_id": "memories", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 1. Where the data lives: HBM and SBUF
#
# A NeuronCore has two memories you program directly:
#
# | memory | what | shape |
# |---|---|---|
# | **HBM** (device DRAM) | kernel inputs and outputs; big (tens of GiB) and comparatively far away | flat, row-major, any shape |
# | **SBUF** (state buffer, on chip) | where every engine reads and writes; {{trn2:sbuf_partition_kib}} KiB per partition a kernel can use on trn2 ({{trn1:sbuf_partition_kib}} KiB on trn1) | **{{trn2:partitions}} partitions** × a free dimension |
#
# The {{trn2:compute_engines}} compute engines (Vector, Scalar, GpSimd and Tensor) cannot touch HBM. So every kernel has the same skeleton:
#
# 1. **allocate the output** in HBM: `out = nl.ndarray(shape, dtype=..., buffer=nl.shared_hbm)`;
# 2. **load** inputs into SBUF tiles: allocate a tile, `t = nl.ndarray(shape, dtype=..., buffer=nl.sbuf)`, and copy
#    into it with the DMA instruction `nisa.dma_copy(dst=t, src=x)` (HBM → SBUF);
# 3. **compute** on tiles: an engine instruction writes its result into a tile you allocated, e.g.
#    `nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=2.0)`;
# 4. **store** the result back: `nisa.dma_copy(dst=out, src=y)` (DMA, SBUF → HBM), and `return out`.
#
# Every `nisa` call names its output first (`dst=`): NKI 0.6 allocates no tile behind your back. The `nl` shorthands
# do the allocating for you: `t = nl.load(x)` allocates an SBUF tile and issues that `dma_copy`, `nl.add(t1, t2)` or
# `nl.multiply(t, 2.0)` allocates a result tile and issues the compute instruction, and `nl.store(out, value=y)` is
# the DMA back. Same instructions, fewer lines; your kernels may use either.
#
# *In the legacy dialect* `nl.load`, `nl.add` and `nl.store` are the same calls, and its `nisa` functions return a
# new tile instead of taking `dst=`.
#
# The first dimension of a tile is its **partition dimension** (P): the 128 partitions are 128 lanes that work
# in parallel. The other dimensions are the **free dimension** (F), processed over time by each lane.
# Here is a complete kernel that doubles a `[P, F]` array — not your exercise, but the same skeleton, written both
# ways.

# %% nbgrader={"grade": false, "grade_id": "figure_memory", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The memories and engines of one NeuronCore, and one SBUF tile: 128 partitions side by side, each going along
# the free dimension. (Drawn by nkilab.course.figures from the simulator's trn2 target file.)
import matplotlib.pyplot as plt
from nkilab import figures

figures.memory_hierarchy("trn2")
figures.partitions_and_free(rows=128, cols=2048, target="trn2")
plt.show()

# %% nbgrader={"grade": false, "grade_id": "demo_double", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def double_kernel(x):
    """2 * x for x of shape [P, F], P <= 128."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x)  # HBM -> SBUF: P partitions, F elements each
    doubled = nl.multiply(tile, 2.0)  # computed on SBUF by an engine
    nl.store(out, value=doubled)  # SBUF -> HBM
    return out


x = np.arange(12, dtype=np.float32).reshape(3, 4)
print(double_kernel(x))

# %% nbgrader={"grade": false, "grade_id": "demo_double_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def double_kernel(x):
    """2 * x for x of shape [P, F], P <= 128: the instructions themselves."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)  # in HBM
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)  # P partitions, F elements each
    nisa.dma_copy(dst=tile, src=x)  # HBM -> SBUF
    doubled = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=doubled, data=tile, op0=nl.multiply, operand0=2.0)  # the Vector engine, on SBUF
    nisa.dma_copy(dst=out, src=doubled)  # SBUF -> HBM
    return out


@nki.jit
def double_short(x):
    """The same kernel with the nl shorthands, which allocate each result tile and issue the same instructions."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out


x = np.arange(12, dtype=np.float32).reshape(3, 4)
print(double_kernel(x))
print("double_short gives the same:", np.array_equal(double_kernel(x), double_short(x)))


# %% [markdown] nbgrader={"grade": false, "grade_id": "limit", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 2. The 128-partition limit
#
# A tile spans at most `nl.tile_size.pmax` = 128 partitions. Ask for more and the compiler refuses — the
# simulator raises the same error, pointing at your line (here the SBUF tile `double_kernel` allocates for a
# 256-row input). Run the cell and read the message:

# %% nbgrader={"grade": false, "grade_id": "demo_limit", "locked": true, "schema_version": 3, "solution": false, "task": false}
print("nl.tile_size.pmax =", nl.tile_size.pmax)
too_tall = np.ones((256, 4), dtype=np.float32)
try:
    double_kernel(too_tall)
except Exception as err:  # the compiler's error, shown instead of stopping the notebook
    print(f"{type(err).__name__}: {err}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 3. Your first kernel: `vector_add_naive` (3 points)
#
# Write `vector_add_naive(a, b)` that returns `a + b`.
#
# * `a` and `b` have the same shape `[P, F]` with **1 ≤ P ≤ 128** and 1 ≤ F ≤ 4096, and the same dtype
#   (float32, float16 or bfloat16). The output has that shape and dtype.
# * One tile per input is enough: load both, add them with `nl.add`, store, return.
#
# Fill in the body, run the cell (it writes `vector_add_naive.py`), then run the `check` cell below it.

# %% nbgrader={"grade": false, "grade_id": "q1_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile vector_add_naive.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_naive(a, b):
    """a + b for a, b of shape [P, F] with P <= 128: a single tile each."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    a_tile = nl.load(a)
    b_tile = nl.load(b)
    sum_tile = nl.add(a_tile, b_tile)
    nl.store(out, value=sum_tile)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile vector_add_naive.py
import nki
import nki.language as nl


@nki.jit
def vector_add_naive(a, b):
    """a + b for a, b of shape [P, F] with P <= 128: a single tile each."""
    ### BEGIN SOLUTION
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    a_tile = nl.load(a)
    b_tile = nl.load(b)
    sum_tile = nl.add(a_tile, b_tile)
    nl.store(out, value=sum_tile)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("vector_add_naive", "vector_add_naive.py");

# %% nbgrader={"grade": true, "grade_id": "q1_grade", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (2 points), then speed vs the reference (1 point).
from nkilab import grade

grade("vector_add_naive", "vector_add_naive.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "w1_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ### Written question (1 point)
#
# Your `vector_add_naive` kernel fails when `a` has 256 rows. Why exactly does a 256-row tile fail, and what
# would you change in the kernel so that it handles 256 (or 1000) rows? Two or three sentences.

# %% [markdown] nbgrader={"grade": true, "grade_id": "w1_answer", "locked": false, "points": 1, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The first dimension of an SBUF tile is the partition dimension, and SBUF has 128 physical partitions (lanes),
# so a tile can span at most `nl.tile_size.pmax` = 128 of them; `nl.load` of a 256-row array would need a
# 256-partition tile, which the compiler rejects ("number of partitions ... exceed architecture limitation of
# 128"). The fix is to split the rows into 128-row tiles and loop over them (load, add and store rows
# `i*128:(i+1)*128` in iteration `i`), with a smaller last tile (a mask in the legacy dialect) when P is not a
# multiple of 128.
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 4. A long free dimension: `vector_add_stream` (4 points)
#
# Now `a` and `b` are `[P, F]` with 1 ≤ P ≤ 128 and a **long** free dimension: F is a multiple of 2048, up to
# 65536 and more. One giant tile per input stops compiling once a row outgrows a partition: at F = 65536 a
# float32 tile needs 256 KiB per partition, and SBUF has {{trn2:sbuf_partition_kib}} KiB per partition (trn2). Even where it fits, every
# step waits for the previous one: all of `a` and `b` must arrive before the add starts, and the store starts
# only after the add. The latency adds up.
#
# Instead, **stream** the free dimension in chunks: in a loop `for j in range(F // CHUNK)`, load the chunk
# `a[:, j*CHUNK:(j+1)*CHUNK]` (and `b`'s), add, and store into the same slice of `out`. NKI 0.6 runs a kernel's
# Python at compile time, so the loop is unrolled into one load-add-store per chunk; the iterations touch disjoint
# slices, so the compiler overlaps the loads of one chunk with the add and store of another: the DMA queues and the
# engines stay busy at the same time.
#
# *In the legacy dialect* the loop is `for j in nl.affine_range(F // CHUNK)`, which declares its iterations
# independent (section 2 of stage 2 says more).
#
# Chunk size matters. Very small chunks pay a fixed cost per DMA and per instruction over and over; one huge
# chunk gives no overlap. Try a few sizes and watch the speed line of `check` — the reference solution sits
# at 1.0×, full speed points need ≤ 1.2×, half points ≤ 2×.
#
# You can estimate any kernel's latency yourself with `latency_us` from `nkilab`: here the cost model's estimate for
# trn2; on a Neuron device it compiles the kernel and times it there (see "On real hardware" below).
#
# *In the legacy dialect* `nki.benchmark(kernel)` does this, as on a device with Neuron SDK 2.29; NKI 0.6 has no
# `nki.benchmark`.

# %% nbgrader={"grade": false, "grade_id": "demo_bench", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
bench = nki.benchmark(double_kernel)
bench(np.ones((128, 2048), dtype=np.float32))
print(f"p99 latency: {bench.benchmark_result.nc_latency.get_latency_percentile(99):.1f} us")

# %% nbgrader={"grade": false, "grade_id": "demo_bench_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
us = latency_us(double_kernel, np.ones((128, 2048), dtype=np.float32), target=TARGET)
print(f"double_kernel on [128, 2048] float32: {us:.1f} us ({LABEL})")


# %% nbgrader={"grade": false, "grade_id": "q2_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile vector_add_stream.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    """a + b for a, b of shape [P, F] with P <= 128 and F a multiple of 2048, streamed in free-dim chunks."""
    ### BEGIN SOLUTION
    chunk = 2048
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(a.shape[1] // chunk):
        a_tile = nl.load(a[:, j * chunk:(j + 1) * chunk])
        b_tile = nl.load(b[:, j * chunk:(j + 1) * chunk])
        nl.store(out[:, j * chunk:(j + 1) * chunk], value=nl.add(a_tile, b_tile))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile vector_add_stream.py
import nki
import nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    """a + b for a, b of shape [P, F] with P <= 128 and F a multiple of 2048, streamed in free-dim chunks."""
    ### BEGIN SOLUTION
    chunk = 2048
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for j in range(a.shape[1] // chunk):
        a_tile = nl.load(a[:, j * chunk:(j + 1) * chunk])
        b_tile = nl.load(b[:, j * chunk:(j + 1) * chunk])
        nl.store(out[:, j * chunk:(j + 1) * chunk], value=nl.add(a_tile, b_tile))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("vector_add_stream", "vector_add_stream.py");

# %% nbgrader={"grade": true, "grade_id": "q2_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (2 points), then speed vs the reference (2 points).
from nkilab import grade

grade("vector_add_stream", "vector_add_stream.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "hardware", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## On real hardware
#
# * **Which Neuron SDK.** This notebook is NKI 0.6 (`import nki`) and needs Neuron SDK 2.32 or later. Its legacy
#   twin (`make lab DIALECT=legacy`, `import neuronxcc.nki`) compiles with SDK 2.29 and earlier; since SDK 2.30 that
#   namespace is a compile error inside a kernel. The simulator runs both and gives both the same estimate.
# * On a trn1/trn2 instance with SDK 2.32, `import nki` is AWS's compiler and your kernels run on a NeuronCore. NKI 0.6
#   has no `nki.benchmark`, so `check` and `latency_us` time a kernel the way AWS documents for 0.6: it is compiled
#   once with `NEURON_FRAMEWORK_DEBUG=1`, which saves its NEFF, and that NEFF is timed on the device with nrtpy's
#   `NrtpyModel.benchmark` (nrtpy lives in a virtualenv of its own: `~/nrtpy_venv`, or the Python that
#   `NKILAB_NRTPY_PYTHON` names) or, without nrtpy, with `neuron-explorer capture`. The latency then reads
#   "measured on trn2.48xlarge" (your instance), and the reference solution is measured the same way on the same
#   device. In the legacy dialect it is `nki.benchmark`'s measured p99.
# * The simulator's latency is an **estimate** from a cost model (DMA, engine and scheduling costs); use it to
#   compare designs, not as a promise of microseconds. Correctness is what the grader requires first.
# * On hardware an oversized tile is still a compile error; an SBUF overflow makes the compiler spill to HBM,
#   which costs real time — one more reason to stream big arrays in chunks.
#
# **Next:** stage 2 tiles the *partition* dimension, so P can be 129, 1000 or a million rows.

