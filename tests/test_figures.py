"""nkilab.figures: the lessons' diagrams say what the target file and the cost model say, the roofline puts
kernels where their profiles put them (never above the roof), and check() shows which tiles are wrong.

Expected numbers are read here from the target TOML files directly (not through the simulator) or computed
from first principles (FLOPs of a matmul, queues of a tile), so a figure that drew a wrong number fails."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import tomllib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from course_testing import REPO, execute, write  # noqa: E402

import nkisim  # noqa: E402
from nkilab import check, figures  # noqa: E402
from nkilab.compare import tile_map  # noqa: E402

nkisim.install()
import neuronxcc.nki as nki  # noqa: E402
import neuronxcc.nki.language as nl  # noqa: E402
import neuronxcc.nki.typing as nt  # noqa: E402

from nkisim.api import profile_kernel  # noqa: E402


def toml(target: str) -> dict:
    return tomllib.loads((REPO / "nkisim" / "targets" / f"{target}.toml").read_text())


def texts(fig) -> str:
    out = [t.get_text() for ax in fig.axes for t in (*ax.texts, ax.title)]
    out += [t.get_text() for t in fig.texts] + [fig.get_suptitle()]
    return "\n".join(out)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --------------------------------------------------------------------------- diagrams from the target file
@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_memory_hierarchy_states_the_targets_sizes(target: str) -> None:
    t = toml(target)
    text = texts(figures.memory_hierarchy(target))
    p, sbuf = t["limits"]["partitions"], t["buffers"]["sbuf_partition_bytes"]
    assert f"{p} partitions × {sbuf / 1024:.0f} KiB each\n= {p * sbuf / 2**20:.3g} MiB" in text
    assert f"= {p * sbuf / 2**20:.3g} MiB" in text
    banks, bank = t["buffers"]["psum_banks"], t["buffers"]["psum_bank_bytes"]
    assert f"× {banks} banks × {bank // 1024} KiB\n= {p * banks * bank / 2**20:.3g} MiB" in text
    assert f"{t['dma']['queues']} queues, {t['peak']['dma_gbps']:g} GB/s" in text
    assert target in text


def test_partitions_and_free_shows_the_tiles_and_the_ragged_rest() -> None:
    text = texts(figures.partitions_and_free(rows=1000, cols=512))
    assert "HBM array [1000, 512] in 8 tiles of 128 rows" in text
    assert "last tile has 104 rows: mask the other 24" in text  # 1000 = 7 x 128 + 104
    assert "tile 7: rows 896..999" in text
    text = texts(figures.partitions_and_free(rows=40, cols=64))
    assert "one SBUF tile [40, 64]:\n40 of 128 partitions in use (the rest idle)" in text


@nki.jit
def rows_copy(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out


@pytest.mark.parametrize("rows", [1, 8, 9, 20, 128])
def test_dma_queue_diagram_matches_the_queues_a_profile_uses(rows: int) -> None:
    d = toml("trn2")["dma"]
    busy = min(d["queues"], math.ceil(rows / d["partitions_per_queue"]))
    assert f"a {rows}-row tile:\n{busy} of {d['queues']} queues\nmove data" in texts(figures.dma_queues((rows,)))
    # the cost model's timeline moves the same tile's data on exactly that many queues
    from nkisim.cost import timeline

    prof = profile_kernel(rows_copy, nt.tensor[[rows, 256], nl.float32], target="trn2")
    used = [lane for lane in timeline.lanes(prof, 0) if lane.engine == "queue" and lane.slices]
    assert len(used) == busy


def test_pe_array_and_psum_banks_follow_the_limits() -> None:
    t = toml("trn2")["limits"]
    text = texts(figures.pe_array(n=512))
    assert f"x[K={t['partitions']}, M<={t['gemm_stationary_free_max']}]" in text
    assert f"y[K={t['partitions']}, N<={t['gemm_moving_free_max']}]" in text
    assert "result [M=128, N=512]" in text and "= 2 KiB per partition" in text
    ok = texts(figures.psum_banks([("acc", 512, "float32")]))
    assert "refuses" not in ok and "bank 7" in ok and "one bank holds 512 float32" in ok
    too_big = texts(figures.psum_banks([("acc", 1024, "float32")]))
    assert "acc spans more than one bank: the compiler refuses" in too_big

    # ... as the simulator does
    @nki.jit
    def big_psum(a):
        acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(acc, dtype=a.dtype))
        return out

    with pytest.raises(Exception) as info:
        big_psum(np.zeros((128, 1024), np.float32))
    assert getattr(info.value, "error_id", "") == "err_psum_tile_exceed_bank_size"


# --------------------------------------------------------------------------- nothing hidden, at any width
DIAGRAMS = {"memory_hierarchy": lambda: figures.memory_hierarchy("trn2"),
            "memory_hierarchy trn1": lambda: figures.memory_hierarchy("trn1"),
            "partitions_and_free": lambda: figures.partitions_and_free(rows=128, cols=2048),
            "partitions_and_free ragged": lambda: figures.partitions_and_free(rows=1000, cols=512),
            "dma_queues": lambda: figures.dma_queues((1, 128)),
            "pe_array": lambda: figures.pe_array(n=512),
            "psum_banks": lambda: figures.psum_banks([("res_psum", 512, "float32")]),
            "psum_banks two": lambda: figures.psum_banks([("a", 512, "float32"), ("b", 1024, "float32")])}
#: a diagram is drawn narrow so a phone shows it nearly at its size: at most 4 inches wide as drawn (384 CSS px as
#: SVG; a phone's column at 400 px is about 350), with no label under 8.5 pt (11.3 px at that size, 10 px or more
#: in the column: tests/test_docs_site.py measures them in Chromium); the wide ones were 10 inches and 6.5 pt
WIDEST_IN, SMALLEST_PT = 4.05, 8.5


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_no_label_of_a_diagram_is_hidden(name: str) -> None:
    """As drawn: every label lies inside the picture, on no other label, and on no box unless inside it (its own
    box's label); "read and write SBUF" used to run into the HBM box. The picture is narrow and its labels no
    smaller than SMALLEST_PT."""
    from matplotlib.patches import FancyBboxPatch

    fig = DIAGRAMS[name]()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for ax in fig.axes for t in (*ax.texts, ax.title) if t.get_visible() and t.get_text().strip()]
    labels += [t for t in fig.texts if t.get_visible() and t.get_text().strip()]
    boxes = [p.get_window_extent(renderer) for ax in fig.axes for p in ax.patches if isinstance(p, FancyBboxPatch)]
    extents = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    whole = fig.bbox
    assert extents and (boxes or not name.startswith(("memory", "pe_", "psum")))
    for k, (text, e) in enumerate(extents):
        assert whole.x0 - 1 <= e.x0 and e.x1 <= whole.x1 + 1 and whole.y0 - 1 <= e.y0 and e.y1 <= whole.y1 + 1, text
        for other, o in extents[k + 1:]:
            assert not e.overlaps(o), (text, other)
        for b in boxes:
            inside = b.x0 <= e.x0 and e.x1 <= b.x1 and b.y0 <= e.y0 and e.y1 <= b.y1
            assert inside or not e.overlaps(b), (text, b)
    assert min(t.get_fontsize() for t in labels) >= SMALLEST_PT
    assert fig.get_tightbbox(renderer).width <= WIDEST_IN, fig.get_tightbbox(renderer)


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_a_diagram_is_svg_with_its_labels_as_text(name: str) -> None:
    """A notebook shows a diagram as SVG whose labels are text elements (they scale with the picture and a browser
    can measure them), every line of every label at its own size, and no PNG beside it."""
    import xml.etree.ElementTree as ET

    fig = DIAGRAMS[name]()
    svg = ET.fromstring(fig._repr_svg_())
    ns = "{http://www.w3.org/2000/svg}"
    drawn = {}
    for el in svg.iter(f"{ns}text"):
        size = re.search(r"font-size: ([\d.]+)px", el.get("style", ""))
        drawn.setdefault("".join(el.itertext()), set()).add(float(size.group(1)))
    labels = [t for ax in fig.axes for t in (*ax.texts, ax.title) if t.get_text().strip()]
    for label in labels:
        for line in label.get_text().split("\n"):
            if line.strip():
                assert label.get_fontsize() in drawn.get(line, set()), (line, drawn.get(line))
    width = float(svg.get("viewBox").split()[2])  # points: 72 to the inch
    assert width <= WIDEST_IN * 72 + 1, width
    # in a notebook, where the inline backend shows every figure as PNG, a Diagram shows as SVG only
    from IPython.core.formatters import DisplayFormatter
    from matplotlib_inline.backend_inline import select_figure_formats

    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    select_figure_formats(shell, {"png"})  # what the inline backend does when a kernel starts
    figures.diagrams_as_svg(shell)
    bundle, _ = shell.display_formatter.format(fig)
    assert "image/svg+xml" in bundle and "image/png" not in bundle, sorted(bundle)
    assert "image/png" in shell.display_formatter.format(plt.subplots()[0])[0]  # other figures as before


# --------------------------------------------------------------------------- roofline
def _solution(stage: str, name: str):
    scope: dict = {}
    path = REPO / "solutions" / stage / f"{name}.py"
    exec(compile(path.read_text(), str(path), "exec"), scope)
    return scope[name]


def test_roofline_places_kernels_from_their_profiles_under_the_roof() -> None:
    size = 1024
    a = nt.tensor[[size, size], nl.bfloat16]
    points = [figures.kernel_point(name, _solution("06_tensor_engine_matmul", name), a, a, target="trn2")
              for name in ("matmul_tiled", "matmul_fast")]
    peak = toml("trn2")["peak"]
    for p in points:
        assert p.flops == 2 * size**3  # the TensorE's work: 2 K M N
        assert p.intensity == pytest.approx(p.flops / p.dma_bytes)
        roof = min(p.intensity * peak["dma_gbps"] / 1e3, peak["pe_tflops_bf16"])
        assert 0 < p.tflops <= roof  # the cost model never prices work below what the hardware can do
    # blocking for reuse moves fewer bytes per FLOP: the fast kernel sits to the right of the tiled one
    assert points[1].intensity > points[0].intensity and points[1].time_us < points[0].time_us
    fig = figures.roofline(points, target="trn2")
    ax = fig.axes[0]
    drawn = [(line.get_xdata()[0], line.get_ydata()[0]) for line in ax.lines if line.get_marker() not in (None, "None")]
    assert drawn == [pytest.approx((p.intensity, p.tflops)) for p in points]
    assert "Tensor Engine peak 79 TFLOPS (bfloat16)" in texts(fig) and "368 GB/s" in texts(fig)


# --------------------------------------------------------------------------- which tiles are wrong
def test_tile_map_fractions_per_row_tile_and_column_block() -> None:
    wrong = np.zeros((300, 64), bool)
    wrong[128:256, :] = True  # row tile 1
    wrong[256:300, 0:2] = True  # part of the ragged last tile, first column block
    m = tile_map(wrong)
    assert m.shape == (300, 64) and m.fractions.shape == (3, 32)  # 64 columns in blocks of 2
    assert np.all(m.fractions[0] == 0) and np.all(m.fractions[1] == 1)
    assert m.fractions[2, 0] == 1 and np.all(m.fractions[2, 1:] == 0)  # the mean over the rows that exist
    vec = np.zeros(1000, bool)
    vec[:10] = True
    v = tile_map(vec)
    assert v.fractions.shape == (1, 32) and v.fractions[0, 0] == pytest.approx(10 / 32)
    cube = tile_map(np.ones((2, 3, 4), bool))  # trailing dimensions flattened into columns
    assert cube.fractions.shape == (1, 12) and np.all(cube.fractions == 1)


SECOND_TILE_WRONG = """
@nki.jit
def tiled_add(a, b):
    N, F = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(N // 128):
        x = nl.load(a[t * 128:(t + 1) * 128, :])
        y = nl.load(b[0:128, :])
        nl.store(out[t * 128:(t + 1) * 128, :], nl.add(x, y))
    return out
"""


@pytest.mark.processes
def test_check_draws_which_tiles_are_wrong(tmp_path: Path, capsys) -> None:
    result = check("tiled_add", write(tmp_path, "tiled_add.py", SECOND_TILE_WRONG))
    assert not result.passed
    fig = result.wrong_tiles_figure()
    image = fig.axes[0].images[0].get_array()
    assert image.shape[0] == 2  # the [256, 512] public case: two row tiles
    assert np.all(image[0] == 0) and np.all(image[1] == 1)  # tile 0 uses b's tile 0: right; tile 1: all wrong
    assert "Which tiles are wrong: public case 1" in fig.axes[0].get_title()
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["0 (rows 0-127)", "1 (rows 128-255)"]
    ref = check("tiled_add", REPO / "solutions" / "02_partition_tiling" / "tiled_add.py")
    assert ref.passed and ref.wrong_tiles_figure() is None


@pytest.mark.slow
def test_check_in_a_notebook_shows_the_picture(tmp_path: Path) -> None:
    """Under a real Jupyter kernel, a failing check cell has the picture among its outputs."""
    write(tmp_path, "tiled_add.py", SECOND_TILE_WRONG)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('from nkilab import check\ncheck("tiled_add", "tiled_add.py");')]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    done, _seconds = execute(nb, tmp_path)
    outputs = done.cells[0].outputs
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert "row tile 1" in "".join(o.get("text", "") for o in outputs)
