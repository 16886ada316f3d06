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
# 2. write the three-step NKI kernel: `nl.load` → compute → `nl.store`;
# 3. explain the **128-partition limit** and recognise the error you get past it;
# 4. stream a long free dimension through SBUF in chunks, and read a latency estimate against a reference.
#
# **How this notebook works.** Each kernel cell starts with `%%writefile <name>.py`: running it *saves* your
# kernel to a file (it does not run it). The `check(...)` cell after it runs that file on a few public test
# inputs in a separate process and tells you, in plain words, what is wrong — shape and dtype first, then the
# first wrong element (by 128-row tile, partition and column), then, once everything is right, the modelled
# latency against the speed tiers. Grading runs more (hidden) cases: other sizes, dtypes and random data.
#
# On a laptop, `import neuronxcc.nki` is served by **nkisim**, the course's CPU simulator; latencies are
# estimates from its cost model. On a trn1/trn2 instance the same notebook runs on the real compiler and device.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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
# 2. **load** inputs into SBUF tiles: `t = nl.load(x)` (a DMA transfer, HBM → SBUF);
# 3. **compute** on tiles: `nl.add(t1, t2)`, `nl.multiply(t, 2.0)`, ... (the result is a new SBUF tile);
# 4. **store** the result back: `nl.store(out, value=t)` (DMA, SBUF → HBM), and `return out`.
#
# The first dimension of a tile is its **partition dimension** (P): the 128 partitions are 128 lanes that work
# in parallel. The other dimensions are the **free dimension** (F), processed over time by each lane.
# Here is a complete kernel that doubles a `[P, F]` array — not your exercise, but the same skeleton.

# %% nbgrader={"grade": false, "grade_id": "figure_memory", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The memories and engines of one NeuronCore, and one SBUF tile: 128 partitions side by side, each going along
# the free dimension. (Drawn by nkilab.figures from the simulator's trn2 target file.)
import matplotlib.pyplot as plt
from nkilab import figures

figures.memory_hierarchy("trn2")
figures.partitions_and_free(rows=128, cols=2048, target="trn2")
plt.show()

# %% nbgrader={"grade": false, "grade_id": "demo_double", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% [markdown] nbgrader={"grade": false, "grade_id": "limit", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 2. The 128-partition limit
#
# A tile spans at most `nl.tile_size.pmax` = 128 partitions. Ask for more and the compiler refuses — the
# simulator raises the same error, pointing at your line. Run the cell and read the message:

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
# `i*128:(i+1)*128` in iteration `i`), masking the last, partial tile when P is not a multiple of 128.
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
# Instead, **stream** the free dimension in chunks: in a loop over `nl.affine_range(F // CHUNK)`, load the
# chunk `a[:, j*CHUNK:(j+1)*CHUNK]` (and `b`'s), add, and store into the same slice of `out`. The iterations
# of an `affine_range` loop are independent, so the compiler overlaps the loads of one chunk with the add and
# store of another: the DMA queues and the engines stay busy at the same time.
#
# Chunk size matters. Very small chunks pay a fixed cost per DMA and per instruction over and over; one huge
# chunk gives no overlap. Try a few sizes and watch the speed line of `check` — the reference solution sits
# at 1.0×, full speed points need ≤ 1.2×, half points ≤ 2×.
#
# You can estimate any kernel's latency yourself with `nki.benchmark`, the same call as on a real device:

# %% nbgrader={"grade": false, "grade_id": "demo_bench", "locked": true, "schema_version": 3, "solution": false, "task": false}
bench = nki.benchmark(double_kernel)
bench(np.ones((128, 2048), dtype=np.float32))
print(f"p99 latency: {bench.benchmark_result.nc_latency.get_latency_percentile(99):.1f} us")

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
# * **Which Neuron SDK.** Each kernel cell comes in two dialects. The legacy one (`import neuronxcc.nki`) compiles
#   with Neuron SDK 2.29 and earlier; since SDK 2.30 that namespace is a compile error inside a kernel. The NKI 0.6
#   one (`import nki`) needs SDK 2.32 or later, and has no `nki.benchmark`: on a device you compile it to a NEFF
#   and time that with the Neuron runtime's tools. The simulator runs both and gives both the same estimate.
# * The notebook is plain NKI: on a trn1/trn2 instance with the Neuron SDK, `neuronxcc.nki` is the real
#   compiler and your kernels run on a NeuronCore. `check` then reports `nki.benchmark`'s measured p99 latency
#   and compares it with the reference solution measured on the same device.
# * The simulator's latency is an **estimate** from a cost model (DMA, engine and scheduling costs); use it to
#   compare designs, not as a promise of microseconds. Correctness is what the grader requires first.
# * On hardware an oversized tile is still a compile error; an SBUF overflow makes the compiler spill to HBM,
#   which costs real time — one more reason to stream big arrays in chunks.
#
# **Next:** stage 2 tiles the *partition* dimension, so P can be 129, 1000 or a million rows.
