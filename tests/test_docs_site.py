"""The course site (docs/build_site.py): every page builds from the course's sources, links resolve, no
solution leaks onto it (also not through the demo outputs of the site `make docs` builds), the reference
pages cover the simulator, and a real headless Chromium renders it with its stylesheet."""

from __future__ import annotations

import functools
import html
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from nkilab import redact
from nkilab.release import reference_fingerprints, scan_for_leaks
from nkisim.core.errors import CATALOGUE, UNDOCUMENTED, docs_link

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs"))
import build_site as builder  # noqa: E402  (docs/build_site.py)


class _Links(HTMLParser):
    """Collects hrefs/srcs and element ids of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)
            if name == "id" and value:
                self.ids.add(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_markup(markup: str) -> _Links:
    p = _Links()
    p.feed(markup)
    return p


def parse(path: Path) -> _Links:
    return parse_markup(path.read_text())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """The site without demo outputs (``build_site.py --no-outputs``): quick, for its structure."""
    out = tmp_path_factory.mktemp("site") / "site"
    pages = builder.build(out)
    return out, pages


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """The site as ``make docs`` builds it (the call ``build_site.main`` makes): every lesson run under a
    Jupyter kernel with the reference answers in place, for its demo outputs.  About a minute, so once
    per module and only for tests marked slow."""
    out = tmp_path_factory.mktemp("docs") / "site"
    pages = builder.build(out, notebooks=REPO / "notebooks")
    return out, pages


def test_every_page_is_built_from_its_source(site):
    out, pages = site
    slugs = [p.slug for p in pages]
    lessons = sorted(f"lessons/{nb.stem}.html" for nb in (REPO / "assignments").glob("[0-9][0-9]_*.ipynb"))
    assert len(lessons) == 7
    assert slugs == ["index.html", *lessons, "simulator.html", "cost-model.html", "grading.html", "errors.html",
                     "api.html"]
    for page in pages:
        text = (out / page.slug).read_text()
        assert f"<title>{html.escape(page.title)} · NKI Kernel Lab</title>" in text
        assert "estimates for trn2" in text  # every page says latencies are estimates, and for which target
    # a lesson page holds its notebook's prose and code, captioned by what each cell is for
    stage2 = (out / "lessons/02_partition_tiling.html").read_text()
    assert "Stage 2 — Partition tiling" in stage2
    assert "your answer" in stage2 and "graded cell (3 points)" in stage2
    assert "saved as <code>tiled_add.py</code>" in stage2
    # formulas become MathML (rendered by the browser, no JavaScript); no raw TeX is left on a page
    for page in pages:
        assert "$$" not in (out / page.slug).read_text(), page.slug
    assert '<div class="math"><math' in (out / "lessons/04_masked_rmsnorm.html").read_text()
    assert (out / "notebooks/02_partition_tiling.ipynb").read_bytes() == \
        (REPO / "assignments/02_partition_tiling.ipynb").read_bytes()


def test_internal_links_and_anchors_resolve(site):
    out, pages = site
    for page in pages:
        path = out / page.slug
        for link in parse(path).links:
            if link.startswith(("https://", "http://", "mailto:")):
                continue
            target, _, anchor = link.partition("#")
            dest = (path.parent / target).resolve() if target else path
            assert dest.is_file(), f"{page.slug}: broken link {link}"
            assert dest.is_relative_to(out.resolve()), f"{page.slug}: link leaves the site: {link}"
            if anchor and dest.suffix == ".html":
                assert anchor in parse(dest).ids, f"{page.slug}: no #{anchor} in {target or page.slug}"


@pytest.mark.parametrize("built", ["site", pytest.param("docs_site", marks=pytest.mark.slow)])
def test_no_solution_reaches_the_site(built, request, tmp_path):
    # both builds: without outputs, and as `make docs` builds it, where the demo cells ran the reference
    # answers and show what they printed (stage 4's profile prints the kernel's source lines)
    out, pages = request.getfixturevalue(built)
    prints = reference_fingerprints()  # the release's: solution lines no student notebook shows
    # the text a reader sees (highlighting splits code into spans) against the reference kernels' lines,
    # whole or cut off (a table column), and lessons and notebooks against nbgrader's solution markers
    # too (the TA guide names the markers)
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    for page in pages:
        text = html.unescape("".join(parse(out / page.slug).text))
        assert redact.hide_reference_code(text, prints)[1] == 0, page.slug
        if page.section == "Lessons":
            (lessons / page.slug.replace("/", "_")).write_text(text)
        else:
            assert not [fp for fp in prints if fp in text], page.slug
    for nb in (out / "notebooks").iterdir():
        shutil.copy(nb, lessons / nb.name)
    assert len(list(lessons.iterdir())) == 2 * len(list((REPO / "assignments").glob("[0-9][0-9]_*.ipynb")))
    assert scan_for_leaks(lessons, prints) == []
    if built == "docs_site":
        # stage 4's profile is on the page, its table rows kept, the kernel's source column hidden
        hidden = {page.slug: page.hidden for page in pages if page.hidden}
        assert set(hidden) == {"lessons/04_masked_rmsnorm.html"}, hidden
        stage4 = html.unescape("".join(parse(out / "lessons/04_masked_rmsnorm.html").text))
        assert "Per-line engine time" in stage4 and "Vector Engine active" in stage4
        assert stage4.count(redact.HIDDEN) >= hidden["lessons/04_masked_rmsnorm.html"] >= 5
        reference = (REPO / "solutions/04_masked_rmsnorm/rmsnorm.py").read_text().splitlines()
        secret = [ln.strip() for ln in reference if ln.strip() in prints]
        assert len(secret) >= 10
        for line in secret:  # not whole, not cut to the profile's 70-character source column
            assert line not in stage4 and line[:70] not in stage4, line


def _profile_output(kernel: str) -> dict:
    """What stage 4's profile demo prints for ``kernel`` (a file of solutions/04_masked_rmsnorm/), as the
    stream output a notebook keeps.  A small input: the table's lines are the same."""
    import neuronxcc.nki.language as nl
    from neuronxcc.nki import typing as nt

    from nkilab.modules import load_kernel
    from nkisim.api import profile_kernel

    path = REPO / "solutions/04_masked_rmsnorm" / f"{kernel}.py"
    prof = profile_kernel(load_kernel(path, kernel), nt.tensor[[300, 2048], nl.float32], nt.tensor[[2048], nl.float32],
                          target="trn2")
    return {"output_type": "stream", "name": "stdout",
            "text": prof.summary_text() + "\n" + prof.line_table_text(top=8) + "\n"}


def test_demo_outputs_hide_reference_code():
    prints = reference_fingerprints()
    # the fingerprints leave out what students see anyway: boilerplate the stubs share and trivial lines
    for public in ("return out", "import numpy as np", "@nki.jit", "i_p = nl.arange(128)[:, None]",
                   "for i in nl.affine_range(math.ceil(n_rows / 128)):"):
        assert public not in prints
    # the leak of issue 10: stage 4's profile of the reference rmsnorm, one row per source line, one of them
    # cut to the 70-character column
    raw = _profile_output("rmsnorm")
    rows = [ln for ln in raw["text"].splitlines() if re.match(r"\s+\d+\s+\d+\s+[\d.]+\s", ln)]
    assert len(rows) == 8
    whole = [fp for fp in prints if fp in raw["text"]]
    assert len(whole) == 7  # what a plain scan sees; the eighth row is cut off
    assert "out_tile = nl.multiply(normed, g_bcast, dtype=a.dtype, mask=(rows < n_" in raw["text"]
    # unscrubbed it reaches the page (the mutant the site test has to catch) ...
    page = html.unescape("".join(parse_markup(builder.outputs_html([raw])).text))
    assert [fp for fp in prints if fp in page] == whole
    assert redact.hide_reference_code(page, prints)[1] == 8
    # ... scrubbed, every row keeps its line number, count, time and engines, and no source
    (clean,), hidden = redact.scrub_outputs([raw], prints)
    assert hidden == 8 and raw["text"].count(redact.HIDDEN) == 0  # the original is left as it was
    page = html.unescape("".join(parse_markup(builder.outputs_html([clean])).text))
    assert not [fp for fp in prints if fp in page] and "(rows < n_" not in page
    assert redact.hide_reference_code(page, prints)[1] == 0
    assert page.count(redact.HIDDEN) == 8 and "Per-line engine time" in page and "total_time" in page
    for row in rows:
        assert row[:row.index("  ", 30)] in page  # "    24        3       12.99  dve" etc. stay


@pytest.mark.parametrize(("echo", "hidden"), [
    # a whole line, as a traceback or a print shows it, with the text around it kept
    ("  --> 19 a_tile = nl.load(a[rows, i_f], mask=(rows < n_rows))  <- here",
     f"  --> 19 {redact.HIDDEN}  <- here"),
    # spacing changed
    ("a_tile  =  nl.load(a[rows, i_f],   mask=(rows < n_rows))", redact.HIDDEN),
    # cut on the right, with and without an ellipsis, and on the left
    ("   7  dve  out_tile = nl.multiply(normed, g_bcast, dty", f"   7  dve  {redact.HIDDEN}"),
    ("src: out_tile = nl.multiply(normed, g_bcast, dtype=a.d...", f"src: {redact.HIDDEN}"),
    ("...y(normed, g_bcast, dtype=a.dtype, mask=(rows < n_rows)) (line 24)", f"{redact.HIDDEN} (line 24)"),
])
def test_hide_reference_code_catches_echoes(echo, hidden):
    prints = reference_fingerprints()
    text = f"before\n{echo}\nafter"
    assert redact.hide_reference_code(text, prints) == (f"before\n{hidden}\nafter", 1)


@pytest.mark.parametrize("text", [
    "i_p = nl.arange(128)[:, None]",  # boilerplate the student stub shows
    "    return out",
    "out_tile = nl.multiply(",  # the start of a reference line, too short to tell it from the lesson's text
    "ValueError: number of partitions 256 exceed architecture limitation of 128",
    "  total_time                      48.75 us",
    f"     19        3       10.82  dma            {redact.HIDDEN}",
])
def test_hide_reference_code_keeps_other_text(text):
    assert redact.hide_reference_code(text, reference_fingerprints()) == (text, 0)


def test_error_catalogue_page_lists_every_error(site):
    out, _ = site
    page = parse(out / "errors.html")
    text = (out / "errors.html").read_text()
    for error_id, cls in CATALOGUE.items():
        assert error_id in page.ids, error_id
        row = re.search(rf'<tr id="{error_id}">(.*?)</tr>', text).group(1)
        assert f"<code>{cls.__qualname__}</code>" in row  # the class a traceback shows
        if error_id in UNDOCUMENTED:
            assert "simulator only" in row
        else:
            assert f'href="{docs_link(error_id)}"' in row


def test_api_page_covers_the_core_api(site):
    out, _ = site
    page = parse(out / "api.html")
    text = (out / "api.html").read_text()
    for name in ("nki.jit", "nki.benchmark", "nl.load", "nl.store", "nl.matmul", "nl.affine_range", "nl.arange",
                 "nl.exp", "nisa.nc_matmul", "nisa.activation", "nisa.bn_stats"):
        assert name in page.ids, name
        summary = re.search(rf'<tr id="{re.escape(name)}"><td>.*?</td><td>(.*?)</td><td>', text).group(1)
        assert summary and summary not in ("function", "class"), (name, summary)
    # the engine column comes from the op registry: what each call may issue, on which engine
    for name, issues in (("nisa.nc_matmul", "nc_matmul (TensorE)"), ("nl.exp", "activation (ScalarE)"),
                         ("nl.load", "load (DMA)"), ("nisa.iota", "iota (GpSimd)"),
                         ("nl.ndarray", "none (a view, an allocation")):
        row = re.search(rf'<tr id="{re.escape(name)}">.*?</tr>', text).group(0)
        assert issues in row, (name, row)
    arange = re.search(r'<tr id="nl.arange">.*?</tr>', text).group(0)  # an index expression, not a call
    assert arange.endswith("<td></td></tr>"), arange


# ------------------------------------------------------------------------------------------------
# A real browser
# ------------------------------------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]


@pytest.fixture(scope="module")
def served(site, tmp_path_factory):
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs Debian's chromium for the site tests")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); CI installs it")
    out, _ = site
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path_factory.mktemp("chromium")
    finally:
        server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep the test output clean
        pass


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("slug", ["index.html", "lessons/04_masked_rmsnorm.html", "errors.html"])
def test_chromium_renders_pages(served, slug):
    base, profile = served
    run = chromium(profile, "--dump-dom", f"{base}/{slug}")
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    assert '<nav class="sidebar">' in dom and "<main>" in dom
    assert 'aria-current="page"' in dom  # the page is marked in the navigation
    assert "estimates for trn2" in dom


def test_chromium_applies_the_stylesheet(served):
    # a screenshot proves the page was laid out with style.css: the sidebar's tinted background fills the
    # left edge and the main column is white
    import matplotlib.image as mpimg

    base, profile = served
    shot = profile / "index.png"
    run = chromium(profile, f"--screenshot={shot}", "--window-size=1280,900", f"{base}/index.html")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    img = mpimg.imread(shot)[..., :3]
    assert img.shape[:2] == (900, 1280)
    nav_bg = np.array([0xFB, 0xFA, 0xF7]) / 255
    assert np.abs(img[880, 8] - nav_bg).max() < 2 / 255  # bottom-left: sidebar background, no text there
    assert np.abs(img[880, 1270] - 1.0).max() < 2 / 255  # bottom-right: the page's white background


@pytest.mark.slow
def test_lesson_pages_show_what_the_demos_print(docs_site):
    # the lesson runs under a real Jupyter kernel with the reference answers in place; its demo cells'
    # outputs (text, the compiler's error, a plot) appear under them, answers/checks/grades show none
    out, pages = docs_site
    (page,) = [p for p in pages if p.slug == "lessons/02_partition_tiling.html"]
    body = page.body
    assert "number of partitions in src[256, 4] of &#x27;load&#x27; exceed architecture limitation of 128" in body
    assert "latency (estimate: nkisim cost model, trn2)" in body  # the sweep's table names estimate and target
    # the tile-height plot, the DMA-queue diagram, two engine timelines and the ragged tiling (nkilab.figures)
    assert body.count('src="data:image/png;base64,') == 5
    for figure in re.findall(r'<figure class="cell (answer|check|graded)">(.*?)</figure>', body, re.S):
        assert 'class="outputs"' not in figure[1], figure[0]
    assert "reference solutions in place" in body
    # the demos ran with the reference answers in place, yet nothing of those answers shows
    text = html.unescape("".join(parse_markup(body).text))
    assert not [fp for fp in reference_fingerprints() if fp in text]
    assert page.hidden == 0 and redact.HIDDEN not in body  # and nothing needed hiding
    # stage 4's page says why its profile's source column reads as it does
    stage4 = (out / "lessons/04_masked_rmsnorm.html").read_text()
    assert f"read <code>{html.escape(redact.HIDDEN)}</code>" in stage4
