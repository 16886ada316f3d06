"""The course site (docs/build_site.py): every page builds from the course's sources, links resolve, no
solution leaks onto it, the reference pages cover the simulator, and a real headless Chromium renders
it with its stylesheet."""

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
    out = tmp_path_factory.mktemp("site") / "site"
    pages = builder.build(out)
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


def test_no_solution_reaches_the_site(site, tmp_path):
    out, pages = site
    prints = reference_fingerprints()
    # the text a reader sees (highlighting splits code into spans) against the reference kernels' lines,
    # and lessons and notebooks against nbgrader's solution markers too (the TA guide names the markers)
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    for page in pages:
        text = html.unescape("".join(parse(out / page.slug).text))
        if page.section == "Lessons":
            (lessons / page.slug.replace("/", "_")).write_text(text)
        else:
            assert not [fp for fp in prints if fp in text], page.slug
    for nb in (out / "notebooks").iterdir():
        shutil.copy(nb, lessons / nb.name)
    assert len(list(lessons.iterdir())) == 2 * len(list((REPO / "assignments").glob("[0-9][0-9]_*.ipynb")))
    assert scan_for_leaks(lessons, prints) == []


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
        summary = re.search(rf'<tr id="{re.escape(name)}"><td>.*?</td><td>(.*?)</td></tr>', text).group(1)
        assert summary and summary not in ("function", "class"), (name, summary)


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
def test_lesson_pages_show_what_the_demos_print(tmp_path):
    # the lesson runs under a real Jupyter kernel with the reference answers in place; its demo cells'
    # outputs (text, the compiler's error, a plot) appear under them, answers/checks/grades show none
    assignments = tmp_path / "assignments"
    assignments.mkdir()
    shutil.copy(REPO / "assignments/02_partition_tiling.ipynb", assignments)
    (page,) = builder.lesson_pages(assignments, REPO / "notebooks")
    body = page.body
    assert "number of partitions in src[256, 4] of &#x27;load&#x27; exceed architecture limitation of 128" in body
    assert "latency (estimate: nkisim cost model, trn2)" in body  # the sweep's table names estimate and target
    assert body.count('src="data:image/png;base64,') == 1  # the tile-height plot
    for figure in re.findall(r'<figure class="cell (answer|check|graded)">(.*?)</figure>', body, re.S):
        assert 'class="outputs"' not in figure[1], figure[0]
    assert "reference solutions in place" in body
    # the demos ran with the reference answers in place, yet nothing of those answers shows
    text = html.unescape("".join(parse_markup(body).text))
    assert not [fp for fp in reference_fingerprints() if fp in text]
