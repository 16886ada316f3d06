"""Pictures for the lessons and ``check()``, drawn by code so every number in them comes from the target file.

Diagrams of the hardware the lessons teach: the memory hierarchy (HBM, SBUF, PSUM and the engines between
them), a tile's partitions and free dimension (and a tall array cut into 128-row tiles), the 16 DMA queues and
the partitions each serves, the Tensor Engine's PE array with its stationary and moving operands, and PSUM's
banks.  Then measurements: a roofline with kernels as points (their FLOPs, the bytes their DMAs moved and their
estimated time, from the simulator's profile), and the map of which tiles of an output are wrong that
``check()`` shows.  Each function returns a matplotlib ``Figure``; a notebook shows it (``plt.show()``).

Hardware numbers (partitions, bytes per partition, banks, queues, peaks) are read through ``nkisim.api.target``
from ``nkisim/targets/<target>.toml``, the one place they live, and are labelled with the target.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nkilab.course import manifest
from nkisim import api

#: the colours of the lessons' pictures: memories, engines, DMA
COLORS = {"hbm": "#c7d7ea", "sbuf": "#d8ecd0", "psum": "#f7dfc0", "pe": "#d62728", "dve": "#1f77b4",
          "act": "#2ca02c", "pool": "#9467bd", "dma": "#ff7f0e", "idle": "#e6e6e6", "wrong": "#d62728",
          "right": "#e8f4e4", "stationary": "#6a51a3", "moving": "#3182bd"}
COURSE_TARGET = manifest.course().target  # the course's (course.toml); a picture may be drawn for another


def _plt() -> Any:
    import matplotlib

    if "ipykernel" not in sys.modules and "MPLBACKEND" not in os.environ:
        matplotlib.use("Agg")  # headless: tests, scripts, the docs build; a notebook keeps its inline backend
    import matplotlib.pyplot as plt

    return plt


def _kib(n: float) -> str:
    return f"{n / 1024:.0f} KiB" if n < 2**20 else f"{n / 2**20:.3g} MiB"


def _box(ax: Any, x: float, y: float, w: float, h: float, color: str, text: str = "", size: float = 9,
         **kw: Any) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", facecolor=color, edgecolor="#444444",
                                linewidth=1.0, **kw))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)


def _arrow(ax: Any, xy0: tuple[float, float], xy1: tuple[float, float], text: str = "", both: bool = False,
           color: str = "#333333", size: float = 8, offset: tuple[float, float] = (0.0, 0.0)) -> None:
    ax.annotate("", xy=xy1, xytext=xy0, arrowprops={"arrowstyle": "<->" if both else "->", "color": color,
                                                     "linewidth": 1.4})
    if text:
        ax.text((xy0[0] + xy1[0]) / 2 + offset[0], (xy0[1] + xy1[1]) / 2 + offset[1], text, ha="center",
                va="center", fontsize=size, color=color,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})


def _canvas(w: float, h: float, xlim: float, ylim: float) -> tuple[Any, Any]:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(w, h))
    ax.set_xlim(0, xlim)
    ax.set_ylim(0, ylim)
    ax.axis("off")
    return fig, ax


# --------------------------------------------------------------------------- the memory hierarchy
def memory_hierarchy(target: str = COURSE_TARGET) -> Any:
    """HBM, SBUF and PSUM with the engines and the data paths between them (lessons 1, 6)."""
    t = api.target(target)
    dma = t.params["dma"]
    peak = t.params["peak"]
    fig, ax = _canvas(10, 4.8, 10, 4.8)
    _box(ax, 0.1, 0.4, 1.6, 3.4, COLORS["hbm"], "HBM\n(device memory,\noff chip)\n\nkernel inputs and\noutputs"
         " live here\n\nno engine can\nread it", 8.5)
    sbuf_total = t.partitions * t.sbuf_partition_bytes
    _box(ax, 3.1, 0.4, 2.6, 2.7, COLORS["sbuf"])
    ax.text(4.4, 2.85, "SBUF (on chip)", ha="center", fontsize=10, weight="bold")
    for k in range(16):  # 128 partitions, drawn 8 to a stripe
        ax.plot([3.25, 5.55], [0.6 + k * 0.13] * 2, color="#8fbf80", linewidth=0.6)
    ax.text(4.4, 1.6, f"{t.partitions} partitions\n× {_kib(t.sbuf_partition_bytes)} each\n= {_kib(sbuf_total)}",
            ha="center", va="center", fontsize=8.5, bbox={"facecolor": COLORS["sbuf"], "edgecolor": "none"})
    psum_pp = t.psum_bank_bytes * t.psum_banks
    _box(ax, 7.6, 0.4, 2.3, 2.7, COLORS["psum"])
    ax.text(8.75, 2.85, "PSUM (on chip)", ha="center", fontsize=10, weight="bold")
    for b in range(t.psum_banks + 1):
        ax.plot([7.75 + b * 2.0 / t.psum_banks] * 2, [0.55, 2.6], color="#d9a868", linewidth=0.6)
    ax.text(8.75, 1.6, f"{t.partitions} partitions\n× {t.psum_banks} banks × {_kib(t.psum_bank_bytes)}\n"
            f"= {_kib(t.partitions * psum_pp)}", ha="center", va="center", fontsize=8.5,
            bbox={"facecolor": COLORS["psum"], "edgecolor": "none"})
    for name, key, x, w in (("Vector\nEngine", "dve", 2.7, 1.0), ("Scalar\nEngine", "act", 3.85, 1.0),
                            ("GpSimd\nEngine", "pool", 5.0, 1.0), ("Tensor Engine\n(PE array)", "pe", 6.5, 1.5)):
        _box(ax, x, 3.75, w, 0.75, "white", name, 8)
        ax.add_patch(_stripe(x, 3.75, w, COLORS[key]))
    _arrow(ax, (1.8, 1.75), (3.0, 1.75), both=True, color=COLORS["dma"])
    ax.text(2.4, 2.45, f"DMA\nnl.load / nl.store\n{dma['queues']} queues\n{peak['dma_gbps']:g} GB/s",
            ha="center", va="center", fontsize=7.5, color=COLORS["dma"])
    _arrow(ax, (4.4, 3.2), (4.4, 3.7), both=True)
    ax.text(4.3, 3.45, "read and\nwrite SBUF", fontsize=7.5, ha="right", va="center")  # clear of HBM and DMA
    _arrow(ax, (5.75, 2.9), (6.8, 3.7), color=COLORS["pe"])
    ax.text(5.9, 3.45, "operands", fontsize=7.5, ha="right", color=COLORS["pe"])
    _arrow(ax, (7.7, 3.7), (8.4, 3.2), color=COLORS["pe"])
    ax.text(8.2, 3.5, "results accumulate", fontsize=7.5, color=COLORS["pe"])
    _arrow(ax, (7.5, 0.9), (5.8, 0.9), "nl.copy back to SBUF\n(Vector or Scalar engine)", offset=(0, 0.45))
    ax.set_title(f"Where a kernel's data lives ({target}; sizes from nkisim's {target} target file)", fontsize=10)
    return fig


def _stripe(x: float, y: float, w: float, color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, 0.08, facecolor=color, edgecolor="none")


# --------------------------------------------------------------------------- partitions and free dimension
def partitions_and_free(rows: int = 128, cols: int = 512, target: str = COURSE_TARGET) -> Any:
    """A ``[rows, cols]`` array as the hardware sees it: up to 128 rows side by side on the partitions (left), and
    when there are more rows, the array cut into 128-row tiles, the last one ragged (right; lesson 2)."""
    p = api.target(target).partitions
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [1.1, 1]})
    ax = axes[0]
    ax.set_xlim(-0.35, 1.15)
    ax.set_ylim(-0.12, 1.12)
    ax.axis("off")
    tile_rows = min(rows, p)
    for k in range(16):
        shade = COLORS["sbuf"] if k * p // 16 < tile_rows else COLORS["idle"]
        ax.add_patch(_rect(0, 1 - (k + 1) / 16, 1, 1 / 16, shade))
    ax.annotate("", xy=(-0.05, 0), xytext=(-0.05, 1), arrowprops={"arrowstyle": "<->"})
    ax.text(-0.1, 0.5, f"partition dim P (at most {p})\nlanes working side by side", rotation=90, ha="right",
            va="center", fontsize=8)
    ax.annotate("", xy=(1, 1.04), xytext=(0, 1.04), arrowprops={"arrowstyle": "->"})
    ax.text(0.5, 1.08, f"free dim F = {cols}: each lane goes along it over time", ha="center", fontsize=8)
    ax.text(1.02, 1 - 0.5 / 16, "partition 0", fontsize=7, va="center")
    ax.text(1.02, 0.5 / 16, f"partition {p - 1}", fontsize=7, va="center")
    used = f"{tile_rows} of {p} partitions in use" + ("" if tile_rows == p else " (the rest idle)")
    ax.set_title(f"one SBUF tile [{tile_rows}, {cols}]: {used}", fontsize=9)
    ax = axes[1]
    ax.axis("off")
    n_tiles = max(1, math.ceil(rows / p))
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-0.05, 1.1)
    shown = min(n_tiles, 8)
    h = 1.0 / shown
    for k in range(shown):
        t = k if k < shown - 1 else n_tiles - 1
        last = t == n_tiles - 1
        filled = (rows - t * p) / p if last else 1.0
        y = 1 - (k + 1) * h
        ax.add_patch(_rect(0, y + h * (1 - filled), 1, h * filled, COLORS["hbm"]))
        if filled < 1:
            ax.add_patch(_rect(0, y, 1, h * (1 - filled), "white", hatch="///"))
        ax.add_patch(_rect(0, y, 1, h, "none"))
        label = f"tile {t}: rows {t * p}..{min(rows, (t + 1) * p) - 1}"
        if k == shown - 2 and n_tiles > shown:
            label = f"... {n_tiles - shown} more tiles ..."
        ax.text(1.05, y + h / 2, label, fontsize=7.5, va="center")
    ragged = rows % p
    note = (f"last tile has {ragged} rows: mask the other {p - ragged}" if ragged else "every tile is full")
    ax.set_title(f"HBM array [{rows}, {cols}] in {n_tiles} tile{'s' if n_tiles > 1 else ''} of {p} rows\n{note}",
                 fontsize=9)
    fig.tight_layout()
    return fig


def _rect(x: float, y: float, w: float, h: float, color: str, **kw: Any) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, facecolor=color, edgecolor="#555555", linewidth=0.6, **kw)


# --------------------------------------------------------------------------- DMA queues
def dma_queues(tile_rows: Sequence[int] = (1, 128), target: str = COURSE_TARGET) -> Any:
    """Which of the 16 DMA queues move a tile of each height (one queue per 8 partitions; lessons 2, 5)."""
    t = api.target(target)
    nq, per = int(t.params["dma"]["queues"]), int(t.params["dma"]["partitions_per_queue"])
    plt = _plt()
    fig, axes = plt.subplots(1, len(tile_rows), figsize=(4.2 * len(tile_rows), 4.4), squeeze=False)
    for ax, r in zip(axes[0], tile_rows):
        busy = min(nq, max(1, math.ceil(r / per)))
        ax.set_xlim(-0.9, 2.2)
        ax.set_ylim(0, nq)
        ax.axis("off")
        for q in range(nq):
            y = nq - 1 - q
            on = q < busy
            ax.add_patch(_rect(0, y + 0.08, 1.0, 0.84, COLORS["dma"] if on else COLORS["idle"]))
            rows_here = max(0, min(per, r - q * per))
            if rows_here:
                ax.add_patch(_rect(0, y + 0.08, rows_here / per, 0.84, "#b35806"))
            ax.text(-0.05, y + 0.5, f"queue {q}", ha="right", va="center", fontsize=7)
            ax.text(1.05, y + 0.5, f"partitions {q * per}-{q * per + per - 1}" + (" (busy)" if on else ""),
                    va="center", fontsize=6.5, color="#333333" if on else "#999999")
        ax.set_title(f"a {r}-row tile: {busy} of {nq} queues move data", fontsize=9)
    fig.suptitle(f"DMA queues of one NeuronCore ({target}): each serves {per} partitions", fontsize=10)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- the PE array
def pe_array(n: int = 512, target: str = COURSE_TARGET) -> Any:
    """``nl.matmul(x, y, transpose_x=True)`` on the Tensor Engine: the stationary operand (``x``, [K, M]) is loaded
    into the 128 x 128 PE array, the moving operand (``y``, [K, N]) streams through it, and the [M, N] result
    lands in a PSUM bank (lesson 6)."""
    t = api.target(target)
    k = m = t.partitions
    ms, mv = t.gemm_stationary_free_max, t.gemm_moving_free_max
    n = min(n, mv)
    fig, ax = _canvas(10, 4.6, 10, 4.6)
    _box(ax, 3.4, 0.9, 2.6, 2.6, "#f3eef8")
    for i in range(1, 8):
        ax.plot([3.4 + i * 2.6 / 8] * 2, [0.9, 3.5], color="#bcaed8", linewidth=0.6)
        ax.plot([3.4, 6.0], [0.9 + i * 2.6 / 8] * 2, color="#bcaed8", linewidth=0.6)
    ax.text(4.7, 3.65, f"PE array: {k} x {ms} multiply-accumulate cells", ha="center", fontsize=9, weight="bold")
    ax.text(4.7, 2.2, f"stationary operand\nx[K={k}, M<={ms}]\nheld in the array", ha="center", va="center",
            fontsize=8.5, color=COLORS["stationary"], bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
    _box(ax, 0.2, 0.9, 2.4, 2.6, "#deebf7", f"moving operand\ny[K={k}, N<={mv}]\n\nstreams through,\none column of N\nper cycle", 8)
    _arrow(ax, (2.7, 2.2), (3.3, 2.2), color=COLORS["moving"])
    _box(ax, 6.8, 0.9, 2.9, 2.6, COLORS["psum"], f"result [M={m}, N={n}]\nfloat32 in one PSUM bank\n"
         f"({m} partitions x {n} x 4 B\n= {_kib(n * 4)} per partition)\n\n+= adds into it\n(accumulate over K)", 8)
    _arrow(ax, (6.1, 2.2), (6.7, 2.2), color=COLORS["pe"])
    ax.text(4.7, 0.45, "K, the contraction, runs along the partitions of both operands: each cell multiplies and the "
            "column sums over K", ha="center", fontsize=8)
    ax.set_title(f"nl.matmul(x, y, transpose_x=True) = x.T @ y on the Tensor Engine ({target})", fontsize=10)
    return fig


# --------------------------------------------------------------------------- PSUM banks
def psum_banks(accumulators: Sequence[tuple[str, int, str]] = (("res_psum", 512, "float32"),),
               target: str = COURSE_TARGET) -> Any:
    """PSUM's banks per partition and which of them accumulators occupy: each ``(name, free size, dtype)``
    takes whole banks (a [128, 512] float32 tile is exactly one; lessons 6, 7)."""
    t = api.target(target)
    nb, bank = t.psum_banks, t.psum_bank_bytes
    fig, ax = _canvas(10, 3.4, nb + 3.2, 3.6)
    colors = ["#fdae6b", "#9ecae1", "#a1d99b", "#bcbddc", "#fdd0a2", "#c6dbef", "#c7e9c0", "#dadaeb"]
    b = 0
    placed = []
    for j, (name, free, dtype) in enumerate(accumulators):
        need = math.ceil(free * np.dtype(dtype if dtype != "bfloat16" else "float16").itemsize / bank)
        placed.append((name, b, min(b + need, nb), colors[j % len(colors)], free, dtype))
        b += need
    for i in range(nb):
        owner = next((p for p in placed if p[1] <= i < p[2]), None)
        _box(ax, 0.2 + i, 0.6, 0.9, 1.8, owner[3] if owner else "white", f"bank {i}\n{_kib(bank)}", 7.5)
    for j, (name, lo, hi, _c, free, dtype) in enumerate(placed):
        ax.text(0.2 + (lo + hi) / 2 - 0.05, 2.55 + 0.35 * (j % 2), f"{name}\n[{t.partitions}, {free}] {dtype}",
                ha="center", va="bottom", fontsize=7.5)
    ax.text(nb + 0.4, 1.5, f"x {t.partitions} partitions\n\n{nb} banks x {_kib(bank)}\n= {_kib(nb * bank)} per "
            f"partition\n\none bank holds\n{bank // 4} float32", fontsize=8, va="center")
    too_big = [name for name, lo, hi, *_ in placed if hi - lo > 1]
    if b > nb or too_big:
        why = (f"{', '.join(too_big)} spans more than one bank" if too_big else f"needs {b} banks of {nb}")
        ax.text(nb / 2, 0.25, f"{why}: the compiler refuses (a PSUM tile holds at most one bank per partition)",
                ha="center", color=COLORS["wrong"], fontsize=8.5)
    ax.set_title(f"PSUM banks ({target}): each accumulator takes whole banks", fontsize=10)
    return fig


# --------------------------------------------------------------------------- roofline
@dataclass(frozen=True)
class KernelPoint:
    """A kernel on the roofline: its FLOPs (TensorE), the bytes its DMAs moved, its estimated time."""

    label: str
    flops: float
    dma_bytes: float
    time_us: float

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved between HBM and SBUF."""
        return self.flops / self.dma_bytes if self.dma_bytes else 0.0

    @property
    def tflops(self) -> float:
        return self.flops / (self.time_us * 1e-6) / 1e12 if self.time_us else 0.0


def kernel_point(label: str, kernel: Any, *args: Any, target: str = COURSE_TARGET, grid: Any = None) -> KernelPoint:
    """Profile ``kernel`` on ``args`` (arrays or ``nki.typing`` placeholders) and make its roofline point; every
    number is the cost model's estimate for ``target``."""
    s = api.profile_kernel(kernel, *args, grid=grid, target=target).summary()
    return KernelPoint(label, float(s["flops"]), float(s["dma_transfer_bytes"]), float(s["total_time_us"]))


def roofline(points: Sequence[KernelPoint], target: str = COURSE_TARGET, dtype: str = "bfloat16") -> Any:
    """The roofline of one NeuronCore: what the DMA bandwidth allows at each arithmetic intensity, capped by the
    Tensor Engine's peak; each kernel a point at its intensity and achieved rate (lessons 6, 7)."""
    peak = api.target(target).params["peak"]
    gbps = float(peak["dma_gbps"])
    tflops = float(peak["pe_tflops_fp32" if dtype == "float32" else "pe_tflops_bf16"])
    ridge = tflops * 1e3 / gbps  # FLOP/byte where the two roofs meet
    xs = [p.intensity for p in points if p.intensity > 0]
    lo, hi = min([ridge / 30, *xs]) / 2, max([ridge * 10, *xs]) * 2
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    grid = np.geomspace(lo, hi, 200)
    ax.loglog(grid, np.minimum(grid * gbps / 1e3, tflops), color="#333333", linewidth=2)
    ax.axvline(ridge, color="#999999", linestyle=":", linewidth=1)
    ax.text(lo * 1.2, lo * 1.25 * gbps / 1e3, f"DMA bound: {gbps:g} GB/s x intensity", rotation=0, fontsize=8,
            va="bottom")
    ax.text(hi / 1.2, tflops * 1.08, f"Tensor Engine peak {tflops:g} TFLOPS ({dtype})", ha="right", fontsize=8)
    ax.text(ridge * 1.05, lo * gbps / 1e3 * 1.5, f"ridge: {ridge:.0f} FLOP/B", fontsize=8, color="#777777")
    marks = "osD^vP*X"
    for i, p in enumerate(points):
        if p.intensity <= 0:
            continue
        ax.loglog([p.intensity], [p.tflops], marks[i % len(marks)], markersize=9, label=f"{p.label}: "
                  f"{p.intensity:.0f} FLOP/B, {p.tflops:.1f} TFLOPS ({p.time_us:.0f} us)")
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _pos: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
    ax.set_ylim(top=tflops * 1.8)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte moved by DMA)")
    ax.set_ylabel("achieved TFLOPS")
    ax.set_title(f"Roofline of one NeuronCore ({target}, nkisim cost-model estimates)", fontsize=10)
    if points:
        ax.legend(fontsize=7.5, loc="lower right")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- which tiles are wrong (check)
def wrong_tiles(tile_map: np.ndarray, shape: Sequence[int], title: str = "", tile_rows: int | None = None) -> Any:
    """A heat map of ``tile_map`` (fraction of wrong elements per row tile x column block, ``compare.tile_map``) for
    an output of ``shape``: where in the output the kernel went wrong.  A row tile is ``tile_rows`` rows (the
    course target's partitions unless the map says otherwise)."""
    tile = tile_rows or api.target(COURSE_TARGET).partitions
    plt = _plt()
    rows, cols = tile_map.shape
    fig, ax = plt.subplots(figsize=(min(10.0, 2.5 + 0.25 * cols), min(6.0, 1.6 + 0.3 * rows)))
    from matplotlib.colors import LinearSegmentedColormap

    cmap = LinearSegmentedColormap.from_list("wrong", [COLORS["right"], "#fcae91", COLORS["wrong"]])
    im = ax.imshow(tile_map, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    shape = tuple(int(s) for s in shape)
    f = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    width = math.ceil(f / cols) if len(shape) > 1 else math.ceil(shape[0] / cols)
    if len(shape) > 1:
        ax.set_ylabel(f"row tile ({tile} rows each)")
        ax.set_xlabel(f"column block ({width} columns each)")
    else:
        ax.set_xlabel(f"element block ({width} elements each)")
    if len(shape) > 1 and rows <= 24:
        ax.set_yticks(range(rows))
        ax.set_yticklabels([f"{i} (rows {tile * i}-{min(shape[0], tile * (i + 1)) - 1})" for i in range(rows)],
                           fontsize=7)
    else:
        ax.set_yticks([])
    if cols <= 12 and rows <= 16:
        for i in range(rows):
            for j in range(cols):
                if tile_map[i, j] > 0:
                    ax.text(j, i, f"{100 * tile_map[i, j]:.0f}%", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="fraction of elements wrong", fraction=0.04)
    bad = int((tile_map > 0).sum())
    ax.set_title(title or f"Which tiles are wrong: {bad} of {rows * cols} blocks of the output "
                 f"{list(shape)} have wrong elements", fontsize=9)
    fig.tight_layout()
    return fig
