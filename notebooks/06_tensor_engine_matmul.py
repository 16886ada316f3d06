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
# # Stage 6 — The Tensor Engine: tiled matrix multiplication
#
# **Goals.** By the end of this notebook you can
#
# 1. call the Tensor Engine with `nisa.nc_matmul(dst=res, stationary=x, moving=y)` and say which operand is
#    *stationary*, which is *moving*, and why the contraction runs over the **partition** axis of both;
# 2. multiply matrices of any size that is a multiple of the tile sizes by accumulating partial products in a
#    **PSUM** tile over the contraction dimension K, then evicting PSUM to SBUF and storing;
# 3. read in a profile that the straightforward kernel is limited by **data movement**, not by the Tensor Engine;
# 4. make it about twice as fast by **reusing** every loaded tile for several matmuls (blocking).
#
# Stages 1–5 used the Vector and Scalar engines. Matrix multiplication is what the fourth of the
# {{trn2:compute_engines}} compute engines of stage 1, the Tensor Engine (TensorE, or PE array), exists for: almost all of a transformer's arithmetic runs there. As before, each
# `%%writefile` cell saves your kernel, `check(...)` runs the public cases, and the grade cells add hidden cases
# (float32 and bfloat16, K from 128 to 2048).
#
# *In the legacy dialect* the matmul is `nl.matmul(x, y, transpose_x=True)`, which returns its PSUM result, and a K
# loop accumulates with `+=`; the notes below show both.

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
print("nki is provided by", "the nkisim CPU simulator" if ON_SIMULATOR else "AWS's NKI (Neuron SDK 2.32 or later)")


# %% [markdown] nbgrader={"grade": false, "grade_id": "te_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 1. One matmul on the Tensor Engine
#
# The PE array is a 128 × 128 grid of multiply-accumulate units. One matmul instruction takes two SBUF tiles:
#
# * the **stationary** operand `x`, shape `[K, M]` with K ≤ 128 partitions and M ≤ 128 columns, which is loaded
#   into the array and stays there;
# * the **moving** operand `y`, shape `[K, N]` with K ≤ 128 and N ≤ 512, which streams through the array one column
#   per cycle.
#
# It computes `x.T @ y`: result `[M, N]`, element `[m, n]` = Σₖ `x[k, m] · y[k, n]`. The sum runs over the
# **partition** axis of both operands, because the array adds its partial sums down its 128 rows, one row per
# partition. So NKI's matmul wants the left matrix already transposed, and the convention of the NKI tutorials is
# to pass it that way: `lhsT` is `[K, M]` in HBM, and `nisa.nc_matmul(dst=res, stationary=lhsT_tile,
# moving=rhs_tile)` writes `lhsT_tile.T @ rhs_tile` into `res`.
#
# The result goes to **PSUM**, a small memory next to the array ({{trn2:psum_partition_kib}} KiB per partition in {{trn2:psum_banks}} banks of {{trn2:psum_bank_kib}} KiB), as
# **float32** whatever the inputs' dtype: `res` is a tile you allocate there, `nl.ndarray((M, N), dtype=nl.float32,
# buffer=nl.psum)`, and a `[128, 512]` float32 tile fills exactly one bank. A result in PSUM has to be copied to
# SBUF before it can be stored to HBM: `nisa.tensor_copy(dst=res_sbuf, src=res)` on the Vector engine, or
# `nisa.activation(dst=res_sbuf, op=nl.copy, data=res)` on the Scalar engine, each casting to `res_sbuf`'s dtype.
#
# *In the legacy dialect* `nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)` returns the PSUM result, and
# `nl.copy(res, dtype=...)` evicts it.

# %% nbgrader={"grade": false, "grade_id": "figure_pe_array", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The matmul on the PE array, and the PSUM bank its [128, 512] float32 result fills.
import matplotlib.pyplot as plt
from nkilab import figures

figures.pe_array(n=512, target=TARGET)
figures.psum_banks([("res_psum", 512, "float32")], target=TARGET)
plt.show()

# %% nbgrader={"grade": false, "grade_id": "demo_one_tile", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
@nki.jit
def one_tile_matmul(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    x = nl.load(lhsT)  # stationary [K, M]
    y = nl.load(rhs)  # moving [K, N]
    res = nl.matmul(x, y, transpose_x=True)  # [M, N], float32, in PSUM
    if ON_SIMULATOR:  # shapes and buffers are known while tracing; on hardware, read them off the code
        print("result tile:", res.shape, res.dtype, "in", res.buffer)
    nl.store(out, value=nl.copy(res, dtype=out.dtype))  # PSUM -> SBUF (cast) -> HBM
    return out


rng = np.random.default_rng(0)
a_demo = rng.standard_normal((128, 64)).astype(np.float32)
b_demo = rng.standard_normal((128, 512)).astype(np.float32)
print("max |kernel - numpy| =", float(np.abs(one_tile_matmul(a_demo, b_demo) - a_demo.T @ b_demo).max()))

# %% nbgrader={"grade": false, "grade_id": "demo_one_tile_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
@nki.jit
def one_tile_matmul(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    x = nl.load(lhsT)  # stationary [K, M]
    y = nl.load(rhs)  # moving [K, N]
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)  # the result: float32, in PSUM
    nisa.nc_matmul(dst=res, stationary=x, moving=y)  # res = x.T @ y
    print("result tile:", res.shape, res.dtype, "in", res.buffer)  # runs while the kernel compiles
    res_sbuf = nl.ndarray((M, N), dtype=out.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res_sbuf, src=res)  # PSUM -> SBUF (cast to the output dtype)
    nl.store(out, value=res_sbuf)  # SBUF -> HBM
    return out


rng = np.random.default_rng(0)
a_demo = rng.standard_normal((128, 64)).astype(np.float32)
b_demo = rng.standard_normal((128, 512)).astype(np.float32)
print("max |kernel - numpy| =", float(np.abs(one_tile_matmul(a_demo, b_demo) - a_demo.T @ b_demo).max()))


# %% [markdown] nbgrader={"grade": false, "grade_id": "limits_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The tile sizes are hard limits (`nl.tile_size.gemm_stationary_fmax` = 128, `nl.tile_size.gemm_moving_fmax` = 512,
# and 128 partitions). A moving tile of 1024 columns is a compile error, although the 1024-column float32 result
# tile the kernel allocates in PSUM is not: a PSUM tensor may span several of its 2 KiB banks per partition (AWS's
# nki-library allocates one for its top-k), but one matmul writes at most one bank, 512 float32 columns:

# %% nbgrader={"grade": false, "grade_id": "demo_limits", "locked": true, "schema_version": 3, "solution": false, "task": false}
try:
    one_tile_matmul(a_demo, rng.standard_normal((128, 1024)).astype(np.float32))
except Exception as err:  # the compiler's error, shown instead of stopping the notebook
    print(f"{type(err).__name__}: {err}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ## 2. Any size: accumulate over K in PSUM — `matmul_tiled` (4 points)
#
# For `lhsT` of shape `[K, M]` and `rhs` of shape `[K, N]`, cut the output `[M, N]` into `[128, 512]` tiles. Output
# tile `(m, n)` is a sum over the K/128 slices of the contraction dimension:
#
# ```python
# # one PSUM bank: a [128, 512] float32 accumulator
# res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
# for k in nl.affine_range(K // 128):
#     ...  # load the [128, 128] tile of lhsT and the [128, 512] tile of rhs for this k
#     res_psum += nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)
# ```
#
# `+=` on a PSUM tile is done by the Tensor Engine itself (it adds into the bank instead of overwriting it), and it
# is the one loop-carried update `nl.affine_range` allows: the compiler knows accumulation order does not change
# the result beyond rounding. After the K loop, copy the tile to SBUF with the output dtype and store it.
#
# Write `matmul_tiled(lhsT, rhs)`:
#
# * K and M are multiples of 128, N is a multiple of 512 (each up to 2048); both inputs are float32 or bfloat16.
# * Return `lhsT.T @ rhs` with shape `[M, N]` and `lhsT`'s dtype. Accumulate in float32 PSUM, also for bfloat16.
#
# Tolerances: rtol = atol = 1e-4 for float32 (sums of up to 2048 products), 1.6e-2 for bfloat16. Correctness earns 3
# points, speed 1 (≤ 1.2× the reference's estimated latency for K = 2048, M = 128, N = 512 in bfloat16: one output
# tile, so every tile is loaded once whatever the loop order, and the kernel is as fast as the data arrives).

# %% [markdown] nbgrader={"grade": false, "grade_id": "q1_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ## 2. Any size: accumulate over K in PSUM — `matmul_tiled` (4 points)
#
# For `lhsT` of shape `[K, M]` and `rhs` of shape `[K, N]`, cut the output `[M, N]` into `[128, 512]` tiles. Output
# tile `(m, n)` is a sum over the K/128 slices of the contraction dimension:
#
# ```python
# # one PSUM bank: a [128, 512] float32 accumulator
# res_psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
# for k in range(K // 128):
#     ...  # load the [128, 128] tile of lhsT and the [128, 512] tile of rhs for this k
#     nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
# ```
#
# The Tensor Engine adds into the PSUM bank itself. `nc_matmul`'s `accumulate=` argument says whether a matmul
# overwrites its `dst` (`False`) or adds to it (`True`); the default, `None`, lets the compiler decide: the first
# matmul into a PSUM location since it was allocated overwrites it, every later one adds. The loop above therefore
# needs no flag (`accumulate=(k > 0)` says the same explicitly). After the K loop, copy the tile to SBUF with the
# output dtype and store it.
#
# Write `matmul_tiled(lhsT, rhs)`:
#
# * K and M are multiples of 128, N is a multiple of 512 (each up to 2048); both inputs are float32 or bfloat16.
# * Return `lhsT.T @ rhs` with shape `[M, N]` and `lhsT`'s dtype. Accumulate in float32 PSUM, also for bfloat16.
#
# Tolerances: rtol = atol = 1e-4 for float32 (sums of up to 2048 products), 1.6e-2 for bfloat16. Correctness earns 3
# points, speed 1 (≤ 1.2× the reference's estimated latency for K = 2048, M = 128, N = 512 in bfloat16: one output
# tile, so every tile is loaded once whatever the loop order, and the kernel is as fast as the data arrives).

# %% [markdown] nbgrader={"grade": false, "grade_id": "psum_nki_text", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="legacy"
# ### The same accumulation in NKI 0.6
#
# Kernels for Neuron SDK 2.32 and later are written in NKI 0.6 (`import nki`). Its `nisa` instructions write into a
# tile you pass as `dst` instead of returning a new one, so the PSUM accumulator is the matmul's destination:
#
# ```python
# # legacy: neuronxcc.nki
# res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
# for k in nl.affine_range(K // 128):
#     res_psum += nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)
# res_sbuf = nl.copy(res_psum, dtype=result.dtype)
#
# # NKI 0.6: import nki, nki.isa as nisa
# res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
# for k in range(K // 128):
#     nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
# res_sbuf = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
# nisa.activation(dst=res_sbuf, op=nl.copy, data=res_psum)  # PSUM -> SBUF on the Scalar engine, cast
# ```
#
# `nc_matmul` computes `stationary.T @ moving`, the `transpose_x=True` form. Its `accumulate=` argument says whether
# a matmul overwrites the PSUM tile (`False`) or adds to it (`True`); the default, `None`, lets the compiler decide:
# the first matmul into a location overwrites it, every later one adds. The loop above therefore needs no flag
# (`accumulate=(k > 0)` says the same explicitly). The zeros are not needed, since the first matmul overwrites them;
# the lesson keeps them so that both kernels issue the same instructions. Loops are Python's `range`, unrolled when the kernel is traced (`nl.affine_range` remains only as
# a deprecated alias). The eviction is the Scalar engine's copy, casting to `res_sbuf`'s dtype; in 0.6, `nl.copy` is
# the Vector engine's `tensor_copy` instead.

# %% [markdown] nbgrader={"grade": false, "grade_id": "psum_nki_text_nki", "locked": true, "schema_version": 3, "solution": false, "task": false} dialect="nki"
# ### In the legacy dialect
#
# The legacy dialect (`import neuronxcc.nki`, Neuron SDK 2.29 and earlier) returns a new tile from each call, so the
# accumulation is `+=` on a zeroed PSUM tile, which the Tensor Engine performs in the bank, and the one loop-carried
# update `nl.affine_range` allows:
#
# ```python
# res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
# for k in nl.affine_range(K // 128):
#     res_psum += nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)
# res_sbuf = nl.copy(res_psum, dtype=result.dtype)
# ```
#
# The reference solutions of both dialects zero the accumulator first (in NKI 0.6 the first matmul would overwrite
# it anyway) so that they issue the same instructions, and the simulator gives them the same estimate.

# %% nbgrader={"grade": false, "grade_id": "q1_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile matmul_tiled.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    """lhsT.T @ rhs for lhsT [K, M] and rhs [K, N]: one [128, 512] PSUM accumulator per output tile."""
    ### BEGIN SOLUTION
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                res_psum += nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)
            res_sbuf = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sbuf)
    return result
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile matmul_tiled.py
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    """lhsT.T @ rhs for lhsT [K, M] and rhs [K, N]: one [128, 512] PSUM accumulator per output tile."""
    ### BEGIN SOLUTION
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                # the first matmul into res_psum overwrites it, every later one adds (accumulate=None)
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
            res_sbuf = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
            nisa.activation(dst=res_sbuf, op=nl.copy, data=res_psum)  # PSUM -> SBUF on the Scalar engine, cast
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sbuf)
    return result
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q1_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("matmul_tiled", "matmul_tiled.py");

# %% nbgrader={"grade": true, "grade_id": "q1_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (3 points), then speed vs the reference (1 point).
from nkilab import grade

grade("matmul_tiled", "matmul_tiled.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "profile_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 3. Where does the time go?
#
# Profile your `matmul_tiled` on K = M = N = 2048 in bfloat16, the dtype matmuls usually run in (the PE array is
# four times faster on bfloat16 than on float32). The profiler schedules the instructions on a trn2 NeuronCore's
# engines and DMA queues; every number is a cost-model **estimate**.

# %% nbgrader={"grade": false, "grade_id": "profile_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
SIZE = 2048
if ON_SIMULATOR:
    from nkisim.api import profile_kernel  # traces shapes and dtypes only: the arrays' values are not read

    try:
        prof = profile_kernel(load_kernel("matmul_tiled.py", "matmul_tiled"), np.zeros((SIZE, SIZE), BF16),
                              np.zeros((SIZE, SIZE), BF16), target=TARGET)
        print(prof.summary_text())
    except Exception as err:  # e.g. the kernel is not written yet
        print(f"could not profile matmul_tiled.py: {type(err).__name__}: {err}")
else:
    print("on hardware: NEURON_FRAMEWORK_DEBUG=1 and neuron-explorer capture (legacy: nki.profile), then Neuron Explorer")


# %% [markdown] nbgrader={"grade": false, "grade_id": "reuse_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The Tensor Engine is busy for about 250 µs of the roughly 660 µs the kernel takes, while the DMA queues move
# about **176 MB** — for inputs and output of 8 MiB each. Count the loads: every `[128, 128]` tile of `lhsT` is
# loaded again for each of the N/512 output columns of tiles, and every `[128, 512]` tile of `rhs` again for each of
# the M/128 output rows of tiles. The kernel computes with each loaded byte once, then throws it away.
#
# The cure is **reuse**: load a tile once and use it for several matmuls while it sits in SBUF. If each output
# *block* covers BM × BN output tiles (BM·128 rows, BN·512 columns), one pass over K loads BM `lhsT` tiles and BN
# `rhs` tiles per K slice and feeds BM·BN matmuls with them. The cell counts the bytes each block shape moves and
# compares two lower bounds on the time: moving those bytes at the peak DMA rate, and doing the 2·K·M·N flops at the
# PE array's peak rate (trn2: {{trn2:dma_gbps}} GB/s and {{trn2:pe_tflops_bf16}} bfloat16 TFLOPS per NeuronCore).

# %% nbgrader={"grade": false, "grade_id": "reuse_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
def bytes_moved(K, M, N, bm, bn, itemsize=2):
    """DMA bytes of a blocked matmul: lhsT reloaded per column block, rhs per row block, result stored once."""
    lhsT_loads = K * M * (N // (512 * bn))
    rhs_loads = K * N * (M // (128 * bm))
    return (lhsT_loads + rhs_loads + M * N) * itemsize


PEAK = peak(TARGET)  # trn2's peak rates per NeuronCore, read from the cost model's target file
DMA_GBPS, PE_TFLOPS = PEAK.dma_gbps, PEAK.pe_tflops_for("bfloat16")
pe_bound_us = 2 * SIZE**3 / (PE_TFLOPS * 1e6)
print(f"K = M = N = {SIZE}, bfloat16; PE-array bound {pe_bound_us:.0f} us")
print(f"{'block BM x BN':>14} {'MB moved':>9} {'DMA bound (us)':>15}")
for bm, bn in [(1, 1), (2, 1), (1, 2), (2, 2), (4, 2)]:
    moved = bytes_moved(SIZE, SIZE, SIZE, bm, bn)
    print(f"{bm:>8} x {bn:<4} {moved / 1e6:9.0f} {moved / (DMA_GBPS * 1e3):15.0f}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "q2_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# With 1 × 1 blocks the data movement alone takes more than twice as long as the PE array needs for all the
# arithmetic; with 2 × 2 blocks the data-movement bound comes down to within about 15% of the PE-array bound. Bigger blocks need more SBUF and, above all, more PSUM: every output tile of a
# block is a live `[128, 512]` float32 accumulator, i.e. one of PSUM's {{trn2:psum_banks}} banks.
#
# ## 4. Reuse what you load: `matmul_fast` (4 points)
#
# Write `matmul_fast(lhsT, rhs)`, the same product, for K a multiple of 128, **M a multiple of 256 and N a multiple
# of 1024** (each up to 2048), float32 or bfloat16. A plan that works well:
#
# * For each block of 256 output rows (`m`): load that block's `lhsT` columns for **all** K slices once, into one
#   SBUF tile of shape `(128, K // 128, 256)` — partition dimension first, then one slot per K slice:
#   `nisa.dma_copy(dst=lhsT_block[:, k, :], src=lhsT[k * 128:(k + 1) * 128, m * 256:(m + 1) * 256])` (in the
#   legacy dialect, `lhsT_block[:, k, :] = nl.load(...)`).
# * For each block of 1024 output columns (`n`): load `rhs` likewise into a `(128, K // 128, 1024)` tile.
# * Then compute the block's 2 × 2 output tiles, each with its own PSUM accumulator (four of PSUM's banks), in one
#   loop over K: each K slice feeds all four matmuls as soon as it arrives, taking the operands
#   as slices of the block tiles, e.g. `lhsT_block[:, k, bm * 128:(bm + 1) * 128]` (a `[128, 128]` tile).
#
# Same tolerances as `matmul_tiled`. Correctness earns 1 point and speed 3: full speed points at ≤ 1.2× the
# reference's estimated latency on K = M = N = 2048 bfloat16, half at ≤ 2× (the kernel of section 2 is about 2.3×).

# %% nbgrader={"grade": false, "grade_id": "q2_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="legacy"
# %%writefile matmul_fast.py
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def matmul_fast(lhsT, rhs):
    """lhsT.T @ rhs with [256, 1024] output blocks: every loaded tile feeds two matmuls."""
    ### BEGIN SOLUTION
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TK, TM, TN = 128, 128, 512  # one matmul: a [TK, TM] stationary and a [TK, TN] moving tile
    BM, BN = 2, 2  # output tiles per block along M and along N
    for m in nl.affine_range(M // (BM * TM)):
        # this block's lhsT columns, every K slice: loaded once, used by every n block
        lhsT_block = nl.ndarray((TK, K // TK, BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TK):
            lhsT_block[:, k, :] = nl.load(lhsT[k * TK:(k + 1) * TK, m * BM * TM:(m + 1) * BM * TM])
        for n in nl.affine_range(N // (BN * TN)):
            rhs_block = nl.ndarray((TK, K // TK, BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // TK):
                rhs_block[:, k, :] = nl.load(rhs[k * TK:(k + 1) * TK, n * BN * TN:(n + 1) * BN * TN])
            # one accumulator per output tile of the block; the K loop outermost, so the first matmuls start as soon
            # as the first K slice has arrived
            res = [nl.zeros((TM, TN), nl.float32, buffer=nl.psum) for _ in range(BM * BN)]
            for k in nl.affine_range(K // TK):
                for bm in range(BM):
                    for bn in range(BN):
                        res[bm * BN + bn][...] += nl.matmul(lhsT_block[:, k, bm * TM:(bm + 1) * TM],
                                                            rhs_block[:, k, bn * TN:(bn + 1) * TN], transpose_x=True)
            for bm in range(BM):
                for bn in range(BN):
                    row, col = (m * BM + bm) * TM, (n * BN + bn) * TN
                    nl.store(result[row:row + TM, col:col + TN], value=nl.copy(res[bm * BN + bn], dtype=result.dtype))
    return result
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_kernel_nki", "locked": false, "schema_version": 3, "solution": true, "task": false} dialect="nki"
# %%writefile matmul_fast.py
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_fast(lhsT, rhs):
    """lhsT.T @ rhs with [256, 1024] output blocks: every loaded tile feeds two matmuls."""
    ### BEGIN SOLUTION
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TK, TM, TN = 128, 128, 512  # one matmul: a [TK, TM] stationary and a [TK, TN] moving tile
    BM, BN = 2, 2  # output tiles per block along M and along N
    for m in range(M // (BM * TM)):
        # this block's lhsT columns, every K slice: loaded once, used by every n block
        lhsT_block = nl.ndarray((TK, K // TK, BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in range(K // TK):
            nisa.dma_copy(dst=lhsT_block[:, k, :], src=lhsT[k * TK:(k + 1) * TK, m * BM * TM:(m + 1) * BM * TM])
        for n in range(N // (BN * TN)):
            rhs_block = nl.ndarray((TK, K // TK, BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in range(K // TK):
                nisa.dma_copy(dst=rhs_block[:, k, :], src=rhs[k * TK:(k + 1) * TK, n * BN * TN:(n + 1) * BN * TN])
            # one accumulator per output tile of the block; the K loop outermost, so the first matmuls start as soon
            # as the first K slice has arrived
            res = [nl.zeros((TM, TN), nl.float32, buffer=nl.psum) for _ in range(BM * BN)]
            for k in range(K // TK):
                for bm in range(BM):
                    for bn in range(BN):
                        nisa.nc_matmul(dst=res[bm * BN + bn], stationary=lhsT_block[:, k, bm * TM:(bm + 1) * TM],
                                       moving=rhs_block[:, k, bn * TN:(bn + 1) * TN])
            for bm in range(BM):
                for bn in range(BN):
                    row, col = (m * BM + bm) * TM, (n * BN + bn) * TN
                    res_sbuf = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.activation(dst=res_sbuf, op=nl.copy, data=res[bm * BN + bn])
                    nl.store(result[row:row + TM, col:col + TN], value=res_sbuf)
    return result
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "q2_check", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("matmul_fast", "matmul_fast.py");

# %% nbgrader={"grade": true, "grade_id": "q2_grade", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Grading: correctness on public + hidden cases (1 point), then speed vs the reference (3 points).
from nkilab import grade

grade("matmul_fast", "matmul_fast.py")

# %% [markdown] nbgrader={"grade": false, "grade_id": "ladder_text", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## 5. Your two kernels side by side
#
# The cell estimates both of your kernels on K = M = N = 2048, bfloat16, and puts them next to the two bounds of
# section 3. The gap that is left between `matmul_fast` and the PE-array bound is the pipeline filling and draining,
# the PSUM evictions on the Scalar engine, and the kernel's fixed launch cost.

# %% nbgrader={"grade": false, "grade_id": "ladder_demo", "locked": true, "schema_version": 3, "solution": false, "task": false}
big = np.zeros((SIZE, SIZE), dtype=BF16)  # only shape and dtype matter to an estimate
print(f"K = M = N = {SIZE}, bfloat16, latency ({LABEL})")
print(f"  {'PE-array bound':16s} {pe_bound_us:8.1f} us")
print(f"  {'DMA bound, 2x2':16s} {bytes_moved(SIZE, SIZE, SIZE, 2, 2) / (DMA_GBPS * 1e3):8.1f} us")
for path, name in (("matmul_tiled.py", "matmul_tiled"), ("matmul_fast.py", "matmul_fast")):
    try:
        us = latency_us(load_kernel(path, name), big, big, target=TARGET)
        print(f"  {name:16s} {us:8.1f} us")
    except Exception as err:  # not written yet
        print(f"  {name:16s} not measured ({type(err).__name__}: {err})")

# %% nbgrader={"grade": false, "grade_id": "figure_roofline", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The roofline of one NeuronCore: below the ridge a kernel cannot beat the DMA bandwidth times its arithmetic
# intensity (FLOPs per byte it moves), above it the PE array's peak. Your kernels are points (intensity and rate
# from the profile, estimates for trn2); "every byte once" moves each input and the output exactly once.
points = [figures.KernelPoint("every byte once, at the PE peak", 2 * SIZE**3, 3 * SIZE * SIZE * 2,
                              pe_bound_us)]
for path, name in (("matmul_tiled.py", "matmul_tiled"), ("matmul_fast.py", "matmul_fast")):
    try:
        points.append(figures.kernel_point(f"your {name}", load_kernel(path, name), big, big, target=TARGET))
    except Exception as err:  # not written yet
        print(f"{name}: not on the roofline ({type(err).__name__}: {err})")
figures.roofline(points, target=TARGET, dtype="bfloat16")
plt.show()

# %% [markdown] nbgrader={"grade": false, "grade_id": "hardware", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## On real hardware
#
# * **Which Neuron SDK.** This notebook is NKI 0.6 (`import nki`, `nisa.nc_matmul`) and needs Neuron SDK 2.32 or
#   later. Its legacy twin (`make lab DIALECT=legacy`: `import neuronxcc.nki`, `nl.matmul`) needs SDK 2.29 or
#   earlier: since SDK 2.30 that namespace inside a kernel is a compile error. The simulator runs both.
# * The tile limits, the float32 PSUM and the "contract over partitions" rule are the hardware's, so the kernels run
#   unchanged on a Neuron device; the microseconds above are cost-model **estimates** for trn2. On the device,
#   `check` and `latency_us` measure instead (the NEFF timed with nrtpy's benchmark or `neuron-explorer capture`,
#   stage 1), and Neuron Explorer shows the real engine timeline.
# * The NKI matrix-multiplication tutorial goes further on the same path: larger blocks along M and N, blocking K
#   as well, and keeping the output block in SBUF across K blocks. Each step trades SBUF and PSUM space for fewer
#   bytes moved.
# * A fused kernel can also skip HBM altogether for an intermediate: normalise a tile (stage 4), then feed it to the
#   Tensor Engine straight from SBUF. That is the next stage: RMSNorm fused with the linear layer that follows it.

