"""Pictures for the lessons and ``check()``, drawn by code so every number in them comes from the target file.

Diagrams of the hardware the lessons teach: the memory hierarchy (HBM, SBUF, PSUM and the engines between
them), a tile's partitions and free dimension (and a tall array cut into 128-row tiles), the 16 DMA queues and
the partitions each serves, the Tensor Engine's PE array with its stationary and moving operands, and PSUM's
banks.  Then measurements: a roofline with kernels as points (their FLOPs, the bytes their DMAs moved and their
estimated time, from the simulator's profile), and the map of which tiles of an output are wrong that
``check()`` shows.  Each function returns a matplotlib ``Figure``; a notebook shows it (``plt.show()``).

The diagrams are drawn narrow (``NARROW_IN`` inches wide, labels no smaller than ``SMALLEST_PT``), top to bottom,
and a notebook shows them as SVG with their labels as text (``Diagram``): on a phone the site shrinks a diagram to
the column's width and its labels stay readable (tests/test_docs_site.py measures them in Chromium at 400 px); a
wide picture shrunk to a phone put its labels at 4 px, and one kept at its size had to be panned sideways.

Hardware numbers (partitions, bytes per partition, banks, queues, peaks) are read through ``nkisim.api.target``
from ``nkisim/targets/<target>.toml``, the one place they live, and are labelled with the target.
"""

from __future__ import annotations

import io
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from nkilab.course import manifest
from nkisim import api

#: the colours of the lessons' pictures: memories, engines, DMA
COLORS = {"hbm": "#c7d7ea", "sbuf": "#d8ecd0", "psum": "#f7dfc0", "pe": "#d62728", "dve": "#1f77b4",
          "act": "#2ca02c", "pool": "#9467bd", "dma": "#ff7f0e", "idle": "#e6e6e6", "wrong": "#d62728",
          "right": "#e8f4e4", "stationary": "#6a51a3", "moving": "#3182bd"}
COURSE_TARGET = manifest.course().target  # the course's (course.toml); a picture may be drawn for another
#: a diagram's width: 4 inches is 384 CSS px as SVG, about a phone's column, so the site barely shrinks it there
NARROW_IN = 4.0
#: the smallest label of a diagram (11.3 CSS px at its natural size)
SMALLEST_PT = 8.5
LABEL_PT, HEAD_PT = 9.0, 10.0


class Diagram(Figure):
    """A lesson's diagram: a notebook shows it as SVG with its labels as text (``svg.fonttype: none``), so they
    scale with the picture, stay sharp at any zoom, and a browser can measure them."""

    def svg(self) -> str:
        import matplotlib

        out = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "nkilab"}):
            self.savefig(out, format="svg", bbox_inches="tight", pad_inches=0.02, metadata={"Date": None})
        return out.getvalue()

    def _repr_svg_(self) -> str:
        return self.svg()


def _plt() -> Any:
    import matplotlib

    if "ipykernel" not in sys.modules and "MPLBACKEND" not in os.environ:
        matplotlib.use("Agg")  # headless: tests, scripts, the docs build; a notebook keeps its inline backend
    import matplotlib.pyplot as plt

    diagrams_as_svg()
    return plt


def diagrams_as_svg(shell: Any = None) -> None:
    """In a notebook (``shell``: IPython's, by default the running one), a ``Diagram`` is shown as SVG only: the
    inline backend would show a PNG of it too, as it does of every other figure."""
    if shell is None:
        if "IPython" not in sys.modules:
            return
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    formatters = shell.display_formatter.formatters
    formatters["image/png"].for_type(Diagram, lambda fig: None)
    formatters["image/svg+xml"].for_type(Diagram, Diagram.svg)


def _kib(n: float) -> str:
    return f"{n / 1024:.0f} KiB" if n < 2**20 else f"{n / 2**20:.3g} MiB"


def _box(ax: Any, x: float, y: float, w: float, h: float, color: str, text: str = "", size: float = LABEL_PT,
         **kw: Any) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", facecolor=color, edgecolor="#444444",
                                linewidth=1.0, **kw))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)


def _arrow(ax: Any, xy0: tuple[float, float], xy1: tuple[float, float], both: bool = False,
           color: str = "#333333") -> None:
    ax.annotate("", xy=xy1, xytext=xy0, arrowprops={"arrowstyle": "<->" if both else "->", "color": color,
                                                     "linewidth": 1.4, "shrinkA": 0, "shrinkB": 0})


def _canvas(h: float, title: str) -> tuple[Any, Any]:
    """A narrow diagram ``h`` inches tall whose data units are inches (x from 0 to ``NARROW_IN``)."""
    head = 0.5  # the title's two lines, inside the figure
    fig, ax = _plt().subplots(figsize=(NARROW_IN, h + head), FigureClass=Diagram)
    fig.subplots_adjust(0, 0, 1, h / (h + head))
    ax.set_xlim(0, NARROW_IN)
    ax.set_ylim(0, h)
    ax.axis("off")
    ax.set_title(title, fontsize=HEAD_PT)
    return fig, ax


def _stripe(x: float, y: float, w: float, color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, 0.07, facecolor=color, edgecolor="none")


def _rect(x: float, y: float, w: float, h: float, color: str, **kw: Any) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, facecolor=color, edgecolor="#555555", linewidth=0.6, **kw)


# --------------------------------------------------------------------------- the memory hierarchy
def memory_hierarchy(target: str = COURSE_TARGET) -> Any:
    """HBM, SBUF, the engines and PSUM, top to bottom, with the data paths between them (lessons 1, 6)."""
    t = api.target(target)
    dma, peak = t.params.dma, t.params.peak
    fig, ax = _canvas(6.0, f"Where a kernel's data lives\n({target}; sizes from nkisim's {target} target file)")
    _box(ax, 0.05, 5.05, 3.9, 0.9, COLORS["hbm"], "HBM (device memory, off chip)\nkernel inputs and outputs "
         "live here;\nno engine can read it")
    _arrow(ax, (0.9, 4.97), (0.9, 4.28), both=True, color=COLORS["dma"])
    ax.text(1.05, 4.62, f"DMA: nl.load / nl.store\n{dma.queues} queues, {peak.dma_gbps:g} GB/s",
            va="center", fontsize=LABEL_PT, color="#b35806")
    sbuf_total = t.partitions * t.sbuf_partition_bytes
    _box(ax, 0.05, 2.6, 3.9, 1.6, COLORS["sbuf"])
    ax.text(2.0, 3.95, "SBUF (on chip)", ha="center", va="center", fontsize=HEAD_PT, weight="bold")
    for k in range(16):  # 128 partitions, drawn 8 to a stripe
        ax.plot([0.2, 3.8], [2.72 + k * 0.065] * 2, color="#8fbf80", linewidth=0.6)
    ax.text(2.0, 3.2, f"{t.partitions} partitions × {_kib(t.sbuf_partition_bytes)} each\n= {_kib(sbuf_total)}",
            ha="center", va="center", fontsize=LABEL_PT, bbox={"facecolor": COLORS["sbuf"], "edgecolor": "none"})
    for name, key, x, w in (("Vector\nEngine", "dve", 0.05, 0.78), ("Scalar\nEngine", "act", 0.93, 0.78),
                            ("GpSimd\nEngine", "pool", 1.81, 0.78), ("Tensor Engine\n(PE array)", "pe", 2.75, 1.2)):
        _box(ax, x, 1.55, w, 0.52, "white", name, SMALLEST_PT)
        ax.add_patch(_stripe(x, 1.55, w, COLORS[key]))
    _arrow(ax, (2.2, 2.55), (2.2, 2.11), both=True)
    ax.text(2.1, 2.33, "read and write SBUF", fontsize=SMALLEST_PT, ha="right", va="center")
    _arrow(ax, (3.45, 2.55), (3.45, 2.11), color=COLORS["pe"])
    ax.text(3.35, 2.33, "operands", fontsize=SMALLEST_PT, ha="right", va="center", color=COLORS["pe"])
    psum_pp = t.psum_bank_bytes * t.psum_banks
    _box(ax, 1.75, 0.05, 2.2, 1.05, COLORS["psum"])
    ax.text(2.85, 0.9, "PSUM (on chip)", ha="center", va="center", fontsize=HEAD_PT, weight="bold")
    for b in range(t.psum_banks + 1):
        ax.plot([1.9 + b * 1.9 / t.psum_banks] * 2, [0.12, 0.72], color="#d9a868", linewidth=0.6)
    ax.text(2.85, 0.42, f"{t.partitions} partitions\n× {t.psum_banks} banks × {_kib(t.psum_bank_bytes)}\n"
            f"= {_kib(t.partitions * psum_pp)}", ha="center", va="center", fontsize=SMALLEST_PT,
            bbox={"facecolor": COLORS["psum"], "edgecolor": "none", "pad": 1})
    _arrow(ax, (3.45, 1.5), (3.45, 1.16), color=COLORS["pe"])
    ax.text(3.35, 1.33, "results accumulate", fontsize=SMALLEST_PT, ha="right", va="center", color=COLORS["pe"])
    _arrow(ax, (1.7, 0.75), (1.0, 1.5))
    ax.text(0.05, 0.5, "nl.copy back to\nSBUF (Vector or\nScalar Engine)", fontsize=SMALLEST_PT, va="center")
    return fig


# --------------------------------------------------------------------------- partitions and free dimension
def partitions_and_free(rows: int = 128, cols: int = 512, target: str = COURSE_TARGET) -> Any:
    """A ``[rows, cols]`` array as the hardware sees it: up to 128 rows side by side on the partitions (top), and
    when there are more rows, the array cut into 128-row tiles, the last one ragged (below; lesson 2)."""
    p = api.target(target).partitions
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(NARROW_IN, 7.0), FigureClass=Diagram,
                             gridspec_kw={"height_ratios": [1, 1.15]})
    ax = axes[0]
    ax.set_xlim(-0.42, 1.45)
    ax.set_ylim(-0.04, 1.22)
    ax.axis("off")
    tile_rows = min(rows, p)
    for k in range(16):
        shade = COLORS["sbuf"] if k * p // 16 < tile_rows else COLORS["idle"]
        ax.add_patch(_rect(0, 1 - (k + 1) / 16, 1, 1 / 16, shade))
    ax.annotate("", xy=(-0.05, 0), xytext=(-0.05, 1), arrowprops={"arrowstyle": "<->"})
    ax.text(-0.1, 0.5, f"partition dim P (at most {p}):\nlanes working side by side", rotation=90, ha="right",
            va="center", fontsize=SMALLEST_PT)
    ax.annotate("", xy=(1, 1.04), xytext=(0, 1.04), arrowprops={"arrowstyle": "->"})
    ax.text(0.5, 1.07, f"free dim F = {cols}: each lane\ngoes along it over time", ha="center", va="bottom",
            fontsize=SMALLEST_PT)
    ax.text(1.03, 1 - 0.5 / 16, "partition 0", fontsize=SMALLEST_PT, va="center")
    ax.text(1.03, 0.5 / 16, f"partition {p - 1}", fontsize=SMALLEST_PT, va="center")
    used = f"{tile_rows} of {p} partitions in use" + ("" if tile_rows == p else " (the rest idle)")
    ax.set_title(f"one SBUF tile [{tile_rows}, {cols}]:\n{used}", fontsize=LABEL_PT)
    ax = axes[1]
    ax.axis("off")
    n_tiles = max(1, math.ceil(rows / p))
    ax.set_xlim(-0.1, 1.85)
    ax.set_ylim(-0.02, 1.02)
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
        ax.text(1.05, y + h / 2, label, fontsize=SMALLEST_PT, va="center")
    ragged = rows % p
    note = (f"last tile has {ragged} rows: mask the other {p - ragged}" if ragged else "every tile is full")
    ax.set_title(f"HBM array [{rows}, {cols}] in {n_tiles} tile{'s' if n_tiles > 1 else ''} of {p} rows\n{note}",
                 fontsize=LABEL_PT)
    fig.tight_layout(h_pad=2.0)
    return fig


# --------------------------------------------------------------------------- DMA queues
def dma_queues(tile_rows: Sequence[int] = (1, 128), target: str = COURSE_TARGET) -> Any:
    """Which of the 16 DMA queues move a tile of each height, a column per height (one queue per 8 partitions;
    lessons 2, 5)."""
    t = api.target(target)
    nq, per = int(t.params.dma.queues), int(t.params.dma.partitions_per_queue)
    row, head = 0.22, 0.62
    fig, ax = _canvas(nq * row + head, f"DMA queues of one NeuronCore ({target}):\neach serves {per} partitions")
    left = 1.95  # the queues' names, then a column per tile height
    width = (NARROW_IN - left) / len(tile_rows)
    for q in range(nq):
        ax.text(left - 0.08, (nq - q - 0.5) * row, f"queue {q}: partitions {q * per}-{q * per + per - 1}",
                ha="right", va="center", fontsize=SMALLEST_PT)
    for c, r in enumerate(tile_rows):
        x = left + c * width + 0.05
        busy = api.dma_queues_used(target, r)  # the cost model's own rule
        for q in range(nq):
            y = (nq - q - 1) * row + 0.03
            ax.add_patch(_rect(x, y, width - 0.1, row - 0.06, COLORS["dma"] if q < busy else COLORS["idle"]))
            rows_here = max(0, min(per, r - q * per))
            if rows_here:
                ax.add_patch(_rect(x, y, (width - 0.1) * rows_here / per, row - 0.06, "#b35806"))
        ax.text(x + (width - 0.1) / 2, nq * row + 0.05, f"a {r}-row tile:\n{busy} of {nq} queues\nmove data",
                ha="center", va="bottom", fontsize=SMALLEST_PT)
    return fig


# --------------------------------------------------------------------------- the PE array
def pe_array(n: int = 512, target: str = COURSE_TARGET) -> Any:
    """``nl.matmul(x, y, transpose_x=True)`` on the Tensor Engine, top to bottom: the moving operand (``y``,
    [K, N]) streams through the 128 x 128 PE array that holds the stationary operand (``x``, [K, M]), and the
    [M, N] result lands in a PSUM bank (lesson 6)."""
    t = api.target(target)
    k = m = t.partitions
    ms, mv = t.gemm_stationary_free_max, t.gemm_moving_free_max
    n = min(n, mv)
    fig, ax = _canvas(6.4, f"nl.matmul(x, y, transpose_x=True)\n= x.T @ y on the Tensor Engine ({target})")
    _box(ax, 0.05, 5.55, 3.9, 0.8, "#deebf7", f"moving operand y[K={k}, N<={mv}]\nstreams through, one column "
         "of N per cycle")
    _arrow(ax, (2.0, 5.5), (2.0, 5.0), color=COLORS["moving"])
    _box(ax, 0.45, 2.55, 3.1, 2.4, "#f3eef8")
    for i in range(1, 8):
        ax.plot([0.45 + i * 3.1 / 8] * 2, [2.55, 4.45], color="#bcaed8", linewidth=0.6)
        ax.plot([0.45, 3.55], [2.55 + i * 1.9 / 8] * 2, color="#bcaed8", linewidth=0.6)
    ax.text(2.0, 4.7, f"PE array: {k} x {ms}\nmultiply-accumulate cells", ha="center", va="center",
            fontsize=LABEL_PT, weight="bold")
    ax.text(2.0, 3.5, f"stationary operand\nx[K={k}, M<={ms}]\nheld in the array", ha="center", va="center",
            fontsize=LABEL_PT, color=COLORS["stationary"],
            bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none"})
    _arrow(ax, (2.0, 2.5), (2.0, 2.0), color=COLORS["pe"])
    _box(ax, 0.05, 0.75, 3.9, 1.2, COLORS["psum"], f"result [M={m}, N={n}] float32\nin one PSUM bank "
         f"({m} partitions x {n} x 4 B\n= {_kib(n * 4)} per partition)\n+= adds into it (accumulate over K)")
    ax.text(2.0, 0.3, "K, the contraction, runs along the partitions of\nboth operands: each cell multiplies and "
            "the\ncolumn sums over K", ha="center", va="center", fontsize=SMALLEST_PT)
    return fig


# --------------------------------------------------------------------------- PSUM banks
def psum_banks(accumulators: Sequence[tuple[str, int, str]] = (("res_psum", 512, "float32"),),
               target: str = COURSE_TARGET) -> Any:
    """PSUM's banks per partition, top to bottom, and which of them accumulators occupy: each
    ``(name, free size, dtype)`` takes whole banks (a [128, 512] float32 tile is exactly one; lessons 6, 7)."""
    t = api.target(target)
    nb, bank = t.psum_banks, t.psum_bank_bytes
    colors = ["#fdae6b", "#9ecae1", "#a1d99b", "#bcbddc", "#fdd0a2", "#c6dbef", "#c7e9c0", "#dadaeb"]
    b = 0
    placed = []
    for j, (name, free, dtype) in enumerate(accumulators):
        need = math.ceil(free * np.dtype(dtype if dtype != "bfloat16" else "float16").itemsize / bank)
        placed.append((name, b, min(b + need, nb), colors[j % len(colors)], free, dtype))
        b += need
    too_big = [name for name, lo, hi, *_ in placed if hi - lo > 1]
    refused = b > nb or too_big
    row, foot = 0.34, 0.62 + (0.55 if refused else 0.0)
    fig, ax = _canvas(nb * row + foot, f"PSUM banks ({target}):\neach accumulator takes whole banks")
    top = nb * row + foot
    for i in range(nb):
        owner = next((p for p in placed if p[1] <= i < p[2]), None)
        _box(ax, 0.05, top - (i + 1) * row + 0.04, 1.5, row - 0.08, owner[3] if owner else "white",
             f"bank {i}: {_kib(bank)}", SMALLEST_PT)
    for name, lo, hi, _c, free, dtype in placed:
        ax.text(1.7, top - (lo + hi) / 2 * row, f"{name}\n[{t.partitions}, {free}] {dtype}", va="center",
                fontsize=SMALLEST_PT)
    ax.text(0.05, foot - 0.05, f"{nb} banks × {_kib(bank)} = {_kib(nb * bank)} per partition,\nin each of the "
            f"{t.partitions} partitions; one bank holds {bank // 4} float32", va="top", fontsize=SMALLEST_PT)
    if refused:
        why = (f"{', '.join(too_big)} spans more than one bank" if too_big else f"needs {b} banks of {nb}")
        ax.text(0.05, 0.05, f"{why}: the compiler refuses\n(a PSUM tile holds at most one bank per partition)",
                color=COLORS["wrong"], fontsize=SMALLEST_PT)
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
    peak = api.target(target).params.peak
    gbps = float(peak.dma_gbps)
    tflops = api.pe_peak_tflops(target, dtype)
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
