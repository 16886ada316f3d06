"""The course site (Sphinx + MyST-NB, docs/conf.py and the nkidocs extension), built exactly as ``make docs``
builds it: warning-free, a page for every lesson, guide, compiler error and API module, links that resolve,
previous/next through all of it, no solution code anywhere in it, error pages whose messages are what
``python kernel.py`` prints, API pages that cover the op registry, and, in a real headless Chromium, search that
finds pages and layouts that work at 400 and 1280 px."""

from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import numpy as np
import pytest
import tomllib
from browser import Chromium, layout_probe, svg_labels

from nkilab import redact
from nkilab.release import MARKERS, reference_fingerprints, scan_for_leaks
from nkisim import api
from nkisim.core.errors import CATALOGUE, UNDOCUMENTED, error_page

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "_ext"))
import nkidocs  # noqa: E402  (docs/_ext/nkidocs)
from nkidocs import lessons  # noqa: E402
from nkidocs.errors import title_of  # noqa: E402

STAGES = sorted(nb.stem for nb in (REPO / "assignments").glob("[0-9][0-9]_*.ipynb"))
#: the first test to use the site builds it: from a fresh clone that runs every lesson (minutes on a busy machine)
pytestmark = pytest.mark.timeout(1800)


class _Page(HTMLParser):
    """Links, element ids and visible text of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)
            if name == "id" and value:
                self.ids.add(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)


def parse(markup: str) -> _Page:
    page = _Page()
    page.feed(markup)
    return page


def text_of(markup: str) -> str:
    return html.unescape("".join(parse(markup).text))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``make docs`` builds it (Sphinx with -W: any warning fails the build), into a scratch folder.
    The lessons' demo outputs come from build/docs-cache/ when nothing they depend on changed, else every lesson
    runs under a Jupyter kernel (about a minute)."""
    out = tmp_path_factory.mktemp("docs") / "site"
    run = subprocess.run(["make", "--no-print-directory", "docs", f"SITE={out}", f"DOCTREES={out.parent / 'doctrees'}"],
                         cwd=REPO, capture_output=True, text=True, timeout=1800)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-5000:]
    assert "build succeeded" in log and not re.search(r": WARNING: ", log), log[-5000:]
    return out


def html_pages(out: Path) -> list[Path]:
    return sorted(out.rglob("*.html"))


# ------------------------------------------------------------------------------------------------
# What the site holds
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_every_source_has_its_page(site):
    guides = {p.stem for p in (REPO / "docs").glob("*.md") if p.name != "README.md"}
    expected = {"index.html", "grading.html", *(f"{g}.html" for g in guides),
                *(f"lessons/{s}.html" for s in STAGES), "errors/index.html",
                *(f"errors/{e}.html" for e in CATALOGUE), "api/index.html", "api/nki.html", "api/nl.html",
                "api/nisa.html", *(f"api/legacy/{m}.html" for m in ("nki", "nl", "nisa", "tile")), "search.html",
                "genindex.html"}
    built = {str(p.relative_to(site)) for p in html_pages(site)}
    assert built == expected, (built ^ expected)
    assert len(STAGES) >= 7 and len(CATALOGUE) >= 56
    for path in html_pages(site):
        markup = path.read_text()
        assert re.search(r"<title>(.+ - )?NKI Kernel Lab</title>", markup), path
        assert "estimates for trn2" in markup, path  # every page says latencies are estimates, and for which target
    # no hand-written builder is left; the site's stylesheets are Furo's and ours
    assert not (REPO / "docs" / "build_site.py").exists()
    assert (site / "_static" / "nkidocs.css").is_file()


@pytest.mark.slow
def test_previous_and_next_walk_through_every_page(site):
    """Following "next" from the home page visits every page once (lessons, guides, errors, API), and "previous"
    leads back."""
    order = ["index.html"]
    while True:
        markup = (site / order[-1]).read_text()
        nxt = re.search(r'<a class="next-page" href="([^"]+)"', markup)
        if not nxt:
            break
        page = os.path.normpath(os.path.join(os.path.dirname(order[-1]), nxt.group(1)))
        prev = re.search(r'<a class="prev-page" href="([^"]+)"', (site / page).read_text())
        assert prev and os.path.normpath(os.path.join(os.path.dirname(page), prev.group(1))) == order[-1], page
        assert page not in order, page
        order.append(page)
    content = {str(p.relative_to(site)) for p in html_pages(site)} - {"search.html", "genindex.html"}
    assert set(order) == content, content ^ set(order)
    assert order[1:1 + len(STAGES)] == [f"lessons/{s}.html" for s in STAGES]  # the lessons come first, in order


@pytest.mark.slow
def test_internal_links_and_anchors_resolve(site):
    ids: dict[Path, set[str]] = {}
    for path in html_pages(site):
        for link in parse(path.read_text()).links:
            if link.startswith(("https://", "http://", "mailto:", "data:")):
                continue
            target, _, anchor = link.partition("#")
            dest = (path.parent / target.split("?")[0]).resolve() if target else path
            assert dest.is_file(), f"{path.relative_to(site)}: broken link {link}"
            assert dest.is_relative_to(site.resolve()), f"{path.relative_to(site)}: link leaves the site: {link}"
            if anchor and dest.suffix == ".html":
                if dest not in ids:
                    ids[dest] = parse(dest.read_text()).ids
                assert anchor in ids[dest], f"{path.relative_to(site)}: no #{anchor} in {target or path.name}"


@pytest.mark.slow
def test_home_page_says_how_to_get_the_course(site):
    text = " ".join(text_of((site / "index.html").read_text()).split())
    assert "<this repository>" not in text and not re.search(r"git clone <", text)
    assert "make lab" in text
    # the address from its one home, pyproject.toml, or where none is recorded (none is yet) where to ask for it
    assert " ".join(nkidocs.get_the_course().replace("`", "").replace("<", "").replace(">", "").split()) in text
    address = nkidocs.repository_address()
    assert (f"git clone {address} nki-kernel-lab" in text) if address else "address your instructor" in text
    # the stage table's markers survive for the generator that fills them from the course manifest
    source = (REPO / "docs" / "index.md").read_text()
    assert source.count("<!-- course:stages -->") == 1 and source.count("<!-- /course:stages -->") == 1
    for stage in STAGES:
        assert f'href="lessons/{stage}.html"' in (site / "index.html").read_text(), stage


@pytest.mark.processes  # makes a git checkout with an origin
def test_the_repository_address_has_one_home_in_pyproject(monkeypatch, tmp_path):
    """The home page's clone command names pyproject.toml's ``[project.urls] Repository`` and nothing else: not a
    checkout's ``origin`` nor the environment (they said it before, so a site built from a clone of a clone named a
    path on the builder's disk); a value that is no network address is left out, not printed as one."""
    monkeypatch.setenv("NKILAB_REPO_URL", "https://example.org/elsewhere.git")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", "https://example.org/origin.git"],
                   check=True)
    monkeypatch.chdir(tmp_path)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n[project.urls]\nRepository = "https://example.org/lab/nki-kernel-lab"\n')
    sentence = nkidocs.get_the_course(pyproject)
    assert "`git clone https://example.org/lab/nki-kernel-lab nki-kernel-lab`" in sentence
    assert "at <https://example.org/lab/nki-kernel-lab>:" in sentence  # the address itself, as a link
    assert "elsewhere" not in sentence and "origin" not in sentence
    for unrecorded in ('[project]\nname = "x"\n', '[project]\nname = "x"\n[project.urls]\nRepository = "../lab"\n'):
        pyproject.write_text(unrecorded)  # none recorded, or a local path: where to ask, no clone command
        sentence = nkidocs.get_the_course(pyproject)
        assert "git clone" not in sentence and "<" not in sentence and "clone it from the address" in sentence
    # the project's own pyproject.toml is that home: the site is built from it
    assert nkidocs.PYPROJECT == REPO / "pyproject.toml"
    assert "urls" in tomllib.loads(nkidocs.PYPROJECT.read_text())["project"]


#: a line of a picture drawn in text: an arrow, a branch, or a lone stem or arrowhead
_DRAWN = re.compile(r"-+>|<-+|\+-{2,}|^\s*[|v^]\s*$|^\s*[|v]\s{2,}\S")
#: the widest a text diagram may be: a phone's column at 400 px shows about 42 characters of code
TEXT_DIAGRAM_COLUMNS = 40


def test_diagrams_drawn_in_text_are_marked_and_narrow():
    """A picture drawn in text in the docs or a lesson is a ``{.diagram}`` block (the site lays it out whole,
    tests below measure it at 400 px) no wider than a phone shows; simulator.md's layers were 110 columns wide."""
    sources = sorted((REPO / "docs").rglob("*.md")) + sorted((REPO / "notebooks").glob("*.py"))
    drawn = []
    for path in sources:
        lines = [re.sub(r"^# ?", "", ln) if path.suffix == ".py" else ln for ln in path.read_text().splitlines()]
        k = 0
        while k < len(lines):
            if not re.match(r"\s*(```|~~~)", lines[k]):
                k += 1
                continue
            end = next(j for j in range(k + 1, len(lines)) if lines[j].strip() in ("```", "~~~"))
            block = lines[k + 1:end]
            if sum(bool(_DRAWN.search(ln)) for ln in block) >= 3:
                where = f"{path.relative_to(REPO)}:{k + 1}"
                drawn.append(where)
                assert k > 0 and lines[k - 1].strip() == "{.diagram}", where
                assert max(len(ln) for ln in block) <= TEXT_DIAGRAM_COLUMNS, where
            k = end + 1
    assert drawn == ["docs/simulator.md:43"], drawn  # the one there is (a new one joins this list)


@pytest.mark.slow
def test_nki06_migration_page(site):
    page = site / "nki06.html"
    text = text_of(page.read_text())
    assert "import nki" in text and "neuronxcc.nki" in text
    assert f'href="{page.name}"' in (site / "index.html").read_text()  # in the menu and the home page's guides


# ------------------------------------------------------------------------------------------------
# Lessons
# ------------------------------------------------------------------------------------------------
def _cells(markup: str) -> list[tuple[str, str]]:
    """(kind, HTML) of each code cell of a lesson page, the cell running to the next caption."""
    starts = [m for m in re.finditer(r'<div class="cell tag_nkidocs-(\w+)', markup)]
    return [(m.group(1), markup[m.start():(starts[k + 1].start() if k + 1 < len(starts) else len(markup))])
            for k, m in enumerate(starts)]


@pytest.mark.slow
def test_lesson_pages_show_the_student_notebook_with_demo_outputs(site):
    stage2 = (site / "lessons/02_partition_tiling.html").read_text()
    text = text_of(stage2)
    assert "Stage 2 — Partition tiling" in text
    assert "your answer" in text and "graded cell (3 points)" in text and "saved as tiled_add.py" in text
    # the demo cells ran (reference answers in place) and show what they printed: the compiler's error, the sweep
    # table naming estimate and target, and the plots: tile heights, then (nkilab.figures) the DMA queues, the
    # timelines of 1-row and 128-row tiles and the ragged tiling
    assert "number of partitions in src[256, 4] of 'load' exceed architecture limitation of 128" in text
    assert "latency (estimate: nkisim cost model, trn2)" in text
    assert len(re.findall(r'<img alt="plot made by this cell" src="../_images/', stage2)) == 5
    assert "reference solutions in place" in text
    for stage in STAGES:
        markup = (site / f"lessons/{stage}.html").read_text()
        kinds = [kind for kind, _ in _cells(markup)]
        assert {"answer", "check", "graded", "demo"} <= set(kinds), (stage, kinds)
        for kind, cell in _cells(markup):  # only demos show outputs: the others would describe reference kernels
            assert ("cell_output" in cell) <= (kind == "demo"), (stage, kind)
        assert any("cell_output" in cell for kind, cell in _cells(markup) if kind == "demo"), stage
        # the student's notebook is what a reader downloads
        download = re.search(rf'href="(../_downloads/\w+/{stage}\.ipynb)"', markup)
        assert download, stage
        assert (site / "lessons" / download.group(1)).resolve().read_bytes() == \
            (REPO / "assignments" / f"{stage}.ipynb").read_bytes()
    # formulas are MathML (no JavaScript); no raw TeX is left on any page
    for path in html_pages(site):
        assert "$$" not in text_of(path.read_text()), path
    assert "<math" in (site / "lessons/04_masked_rmsnorm.html").read_text()


@pytest.mark.slow
def test_no_solution_reaches_the_site(site, tmp_path):
    """Every file of the site as built: pages (the text a reader sees, highlighting removed), the search index,
    the downloadable notebooks, anything else.  Stage 4's profile demo prints the reference kernel's lines: they
    are hidden, its table rows kept."""
    prints = reference_fingerprints()  # the release's: solution lines no student notebook shows
    lessons_dir = tmp_path / "lessons"
    lessons_dir.mkdir()
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        if path.suffix == ".png":
            continue
        if path.name == "objects.inv":  # a header, then zlib
            raw = zlib.decompress(raw.split(b"\n", 4)[4])
        text = raw.decode()
        if path.suffix == ".html":
            text = text_of(text)
        assert redact.hide_reference_code(text, prints)[1] == 0, path
        assert not [fp for fp in prints if fp in text], path
        rel = path.relative_to(site)
        if rel.parts[0] == "lessons" or path.suffix == ".ipynb":
            (lessons_dir / "_".join(rel.parts)).write_text(text)
    assert len(list(lessons_dir.iterdir())) == 2 * len(STAGES)
    assert scan_for_leaks(lessons_dir, prints) == []  # nbgrader's solution markers too (the TA guide names them)
    for path in html_pages(site):
        if "lessons" in path.parts:
            assert not [m for m in MARKERS if m in path.read_text()], path
    stage4 = text_of((site / "lessons/04_masked_rmsnorm.html").read_text())
    assert "Per-line engine time" in stage4 and "Vector Engine active" in stage4
    assert stage4.count(redact.HIDDEN) >= 6  # 5 rows and the note that says what the marker means
    reference = (REPO / "solutions/04_masked_rmsnorm/rmsnorm.py").read_text().splitlines()
    secret = [ln.strip() for ln in reference if ln.strip() in prints]
    assert len(secret) >= 10
    for line in secret:  # not whole, not cut to the profile's 70-character source column
        assert line not in stage4 and line[:70] not in stage4, line
    for stage in STAGES:
        if stage != "04_masked_rmsnorm":
            assert redact.HIDDEN not in text_of((site / f"lessons/{stage}.html").read_text()), stage


def test_lesson_page_captions_each_cell_and_keeps_outputs_to_demos():
    nb = nbformat.read(REPO / "assignments/02_partition_tiling.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    fake = {c["id"]: [nbformat.v4.new_output("stream", name="stdout", text=f"out of {c['id']}\n")] for c in code}
    page = lessons.lesson_page(nb, "02_partition_tiling", fake)
    captions = [c.source for c in page.cells if c.cell_type == "markdown" and c.source.startswith("{.cell-caption")]
    assert len(captions) == len(code)
    assert "{.cell-caption .graded}\ngraded cell (3 points)" in captions
    assert "{.cell-caption .answer}\nyour answer; saved as `tiled_add.py` when run" in captions
    shown = [c for c in page.cells if c.cell_type == "code" and c.outputs]
    assert shown and all("nkidocs-demo" in c.metadata["tags"] for c in shown)
    assert all(c.outputs[0]["text"] == f"out of {c['id']}\n" for c in shown)
    assert "{download}`02_partition_tiling.ipynb`" in page.cells[1].source  # under the title
    quiet = lessons.lesson_page(nbformat.read(REPO / "assignments/02_partition_tiling.ipynb", as_version=4),
                                "02_partition_tiling", None)
    assert not [c for c in quiet.cells if c.cell_type == "code" and c.outputs]


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
    return nbformat.v4.new_output("stream", name="stdout",
                                  text=prof.summary_text() + "\n" + prof.line_table_text(top=8) + "\n")


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
    assert redact.hide_reference_code(raw["text"], prints)[1] == 8  # the mutant the site test has to catch
    # on a lesson page, the demo cell's output is scrubbed: every row keeps its line number, count, time and
    # engines, and no source
    nb = nbformat.read(REPO / "assignments/04_masked_rmsnorm.ipynb", as_version=4)
    demo = next(c for c in nb.cells if c.cell_type == "code" and lessons.is_demo(c))
    page = lessons.lesson_page(nb, "04_masked_rmsnorm", {demo["id"]: [raw]})
    (clean,) = next(c for c in page.cells if c.get("id") == demo["id"]).outputs
    assert raw["text"].count(redact.HIDDEN) == 0  # the original is left as it was
    text = clean["text"]
    assert not [fp for fp in prints if fp in text] and "(rows < n_" not in text
    assert redact.hide_reference_code(text, prints)[1] == 0
    assert text.count(redact.HIDDEN) == 8 and "Per-line engine time" in text and "total_time" in text
    for row in rows:
        assert row[:row.index("  ", 30)] in text  # "    24        3       12.99  dve" etc. stay
    assert f"read `{redact.HIDDEN}`" in page.cells[1].source  # the page says what the marker means


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


# ------------------------------------------------------------------------------------------------
# Compiler errors
# ------------------------------------------------------------------------------------------------
def _block(markup: str, kind: str) -> str:
    """The text of the ``nkidocs-<kind>`` code block of an error page."""
    found = re.search(rf'<div class="nkidocs-{kind} highlight-\w+ notranslate"><div class="highlight"><pre>(.*?)</pre>',
                      markup, re.S)
    assert found, kind
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


#: ``python kernel.py`` for many kernels: a fresh interpreter imports what every page's code imports (NumPy, the
#: simulator) once, then forks a child per kernel from that state, which runs it as ``__main__`` from its own folder
#: (``sys.argv``, ``sys.path[0]`` and ``__file__`` as Python sets them) and lets the interpreter print an uncaught
#: error itself; its exit status comes back a line per kernel. Starting Python and NumPy again for each of the
#: 112 kernels cost about 0.3 s of CPU apiece, most of this test's 37.
_PYTHON = r"""
import json, os, runpy, signal, sys
import numpy, nkisim.api
for line in sys.stdin:
    folder = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.chdir(folder)
        for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
            with open(name, "wb") as fh:
                os.dup2(fh.fileno(), fd)
        signal.alarm(120)
        sys.argv, sys.path[0], code = ["kernel.py"], folder, 0
        try:
            runpy.run_path(os.path.join(folder, "kernel.py"), run_name="__main__")
        except SystemExit as err:
            code = err.code if isinstance(err.code, int) else 1
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


class _Reader:
    """Runs kernels as a reader would, ``python kernel.py`` in a folder of their own, on the default target."""

    def __enter__(self) -> _Reader:
        env = {k: v for k, v in os.environ.items() if k != "NEURON_PLATFORM_TARGET_OVERRIDE"}
        self.proc = subprocess.Popen([sys.executable, "-c", _PYTHON], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()

    def run(self, source: str, folder: Path) -> subprocess.CompletedProcess:
        folder.mkdir()
        (folder / "kernel.py").write_text(source)
        self.proc.stdin.write(json.dumps(str(folder)) + "\n")
        self.proc.stdin.flush()
        status = int(self.proc.stdout.readline())
        return subprocess.CompletedProcess(["python", "kernel.py"], status, (folder / "stdout.txt").read_text(),
                                           (folder / "stderr.txt").read_text())


def _message(printed: str) -> list[str]:
    """The error lines at the end of a traceback: everything after its last indented line."""
    lines = printed.rstrip("\n").split("\n")
    last = max((k for k, ln in enumerate(lines) if ln.startswith(" ")), default=-1)
    return lines[last + 1:]


@pytest.mark.slow
def test_error_pages_show_what_python_prints(site, tmp_path):
    """Each page's reproducer, copied from the page and run as ``python kernel.py`` in a fresh process, prints the
    page's message and frames; its fix, copied the same way, runs clean.  The catalogue table links each page."""
    table = (site / "errors/index.html").read_text()
    with _Reader() as reader:
        _each_error_page_shows_what_python_prints(site, tmp_path, table, reader)


def _each_error_page_shows_what_python_prints(site: Path, tmp_path: Path, table: str, reader: _Reader) -> None:
    for error_id, cls in sorted(CATALOGUE.items()):
        markup = (site / f"errors/{error_id}.html").read_text()
        summary = re.search(r"^summary:\s*(.+)$", (REPO / "docs/errors" / f"{error_id}.md").read_text(), re.M)[1]
        title = html.escape(title_of(summary), quote=False).replace("`", "")
        assert re.search(rf'<h1>{re.escape(title)}<a class="headerlink"', re.sub(r"</?code[^>]*>|</?span[^>]*>",
                                                                                  "", markup)), (error_id, title)
        assert re.search(rf'<p class="nki-error-id"[^>]*>Error id <code[^>]*><span class="pre">{error_id}</span>',
                         markup), error_id  # the id: the subtitle, under the title
        assert f'id="{error_id.replace("_", "-")}"' in markup  # the anchor the id heading had
        assert "What it means on the hardware" in text_of(markup) and "The fix" in text_of(markup)
        printed = _block(markup, "printed")
        run = reader.run(_block(markup, "source"), tmp_path / error_id)
        stderr = run.stderr.replace(str(tmp_path / error_id / "kernel.py"), "kernel.py")
        if error_id == "err_leading_dimension_of_tensor_must_be_partition":  # a deprecation warning, as neuronx-cc
            assert run.returncode == 0 and printed.split("\n")[0] in stderr, stderr
            assert "DeprecationWarning: Block dimension is deprecated" in printed
        else:
            assert run.returncode == 1, (error_id, stderr)
            assert _message(printed) == _message(stderr), (error_id, printed, stderr)
            assert _message(printed)[0].startswith(cls.__qualname__ + ": "), printed
            assert error_page(error_id) in "\n".join(_message(printed))
            for frame in re.findall(r'  File "kernel.py", line \d+.*', printed):  # the reader's frames, as printed
                assert frame in stderr, (error_id, frame, stderr)
        fixed = reader.run(_block(markup, "fix"), tmp_path / f"{error_id}-fix")
        assert fixed.returncode == 0 and "Error" not in fixed.stderr and "Warning" not in fixed.stderr, \
            (error_id, fixed.stderr)
        row = re.search(rf'<a class="reference internal" href="{error_id}.html"><code[^>]*>.*?</li>', table, re.S)
        assert row, error_id
        assert "<code" in row.group(0) and cls.__qualname__ in row.group(0)
        assert ("simulator only" in row.group(0)) == (error_id in UNDOCUMENTED)


def _mini_site(tmp_path: Path, pages: dict[str, str]) -> subprocess.CompletedProcess:
    """Build a scratch Sphinx project with the nkidocs error directives and ``pages``."""
    src = tmp_path / "src"
    (src / "errors").mkdir(parents=True)
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(REPO / 'docs' / '_ext')!r})\n"
                                 "extensions = ['myst_parser', 'nkidocs.errors']\nmyst_enable_extensions = []\n")
    (src / "index.md").write_text("# x\n\n```{toctree}\n:glob:\n\nerrors/*\n```\n")
    for name, text in pages.items():
        (src / "errors" / f"{name}.md").write_text(text)
    env = {**os.environ, "NKIDOCS_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "-b", "html", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, env=env)


PAGE = """---
summary: x
---
# {eid}

```{{nki-reproducer}} {eid}
{code}
```

```{{nki-fix}}
{fix}
```
"""
CLEAN = """@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a))
    return out


kernel(np.ones((128, 8), dtype=np.float32))"""
TALL = CLEAN.replace("(128, 8)", "(256, 8)")


@pytest.mark.slow
@pytest.mark.parametrize(("code", "fix", "complaint"), [
    (CLEAN, CLEAN, "the reproducer of err_num_partition_exceed_arch_limit did not raise it: it ran clean"),
    ("kernel = nl.zeros((128, 1), dtype=nl.float32)", CLEAN, "did not raise it"),  # another error id
    (TALL, TALL, "the fix raises an error"),
    (TALL, CLEAN, "the error pages do not match nkisim's catalogue"),  # right page, but 55 ids have none
])
def test_the_build_fails_unless_each_reproducer_raises_its_error(tmp_path, code, fix, complaint):
    run = _mini_site(tmp_path, {"err_num_partition_exceed_arch_limit": PAGE.format(
        eid="err_num_partition_exceed_arch_limit", code=code, fix=fix)})
    assert run.returncode != 0 and complaint in run.stdout + run.stderr, (run.stdout + run.stderr)[-3000:]


# ------------------------------------------------------------------------------------------------
# API
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_api_pages_cover_the_op_registry(site):
    """Every call of the op registry has an entry on its legacy module's page (the legacy section), with the front
    end's signature, its docstring and what it issues, on which engine; the NKI 0.6 pages (api/nki, nl, nisa) come
    first, each 0.6 call with its registry entry's docstring and instructions (test_the_06_api_pages_...)."""
    import inspect

    from nkidocs.apiref import MODULES, module_entries

    legacy = {"nki": "neuronxcc.nki", "nl": "neuronxcc.nki.language", "nisa": "neuronxcc.nki.isa", "tile": "tile"}
    pages = {m: (site / f"api/legacy/{m}.html").read_text() for m in legacy}
    calls = api.calls()
    assert len(calls) > 100
    for call in calls:
        prefix, name = call.call.split(".", 1)
        found = re.search(rf'<dt class="sig sig-object py" id="{re.escape(legacy[prefix] + "." + name)}">(.*?)</dt>'
                          rf'\s*<dd>(.*?)</dd>', pages[prefix], re.S)
        assert found, call.call
        sig, body = text_of(found.group(1)), " ".join(text_of(found.group(2)).split())
        first = re.sub(r"^`*[\w.]+`*(\s*\([^)]*\))?:\s*", "", call.doc.split("\n")[0]).replace("`", "")
        assert " ".join(first.split())[1:40] in body, (call.call, first, body)
        assert "Issues" in body
        for ins in call.instructions:
            assert f"{ins.kind} ({ins.engine})" in body, (call.call, body)
        if prefix != "tile":
            params = inspect.signature(dict(module_entries(f"legacy-{prefix}"))[name]).parameters
            for p in params.values():
                assert p.name == "_" or p.name in sig, (call.call, p.name, sig)
    # the names that are not calls: loops, decorators, dtypes, buffers
    for page, spec in MODULES.items():
        markup = (site / f"api/{page.replace('legacy-', 'legacy/')}.html").read_text()
        for name, _ in module_entries(page):
            assert f'id="{spec.qualifier}.{name}"' in markup, f"{spec.qualifier}.{name}"
    for name in ("nki.jit", "nki.benchmark", "nl.affine_range", "nl.arange", "nl.sbuf", "nl.bfloat16"):
        short, rest = name.split(".", 1)
        assert f'id="{legacy[short]}.{rest}"' in pages[short], name


@pytest.mark.slow
def test_the_06_api_pages_come_from_the_registry_and_the_adapter_table(site):
    """Every NKI 0.6 call with a registry entry (the adapter table) has an entry on its 0.6 page: AWS's 0.6
    signature, the entry's docstring, what it issues with each instruction's engine and price, and what changed
    from the legacy call; the legacy dialect is a section of its own after them."""

    from nkidocs.apiref import MODULES

    calls = {c.call: c for c in api.calls()}
    pages = {spec.qualifier: (site / f"api/{page}.html").read_text() for page, spec in MODULES.items() if spec.v06}
    adapters = [a for a in api.adapters() if a.entry is not None]
    assert len(adapters) > 100
    for a in adapters:
        markup = pages[a.name.rsplit(".", 1)[0]]
        found = re.search(rf'<dt class="sig sig-object py" id="{re.escape(a.name)}">(.*?)</dt>\s*<dd>(.*?)</dd>',
                          markup, re.S)
        assert found, a.name
        sig, body = text_of(found.group(1)), " ".join(text_of(found.group(2)).split())
        assert sig.strip().startswith(a.name + "(") and all(p in sig for p in a.params), (a.name, sig)
        call = calls[a.entry]
        for ins in call.instructions:
            assert f"{ins.kind} ({ins.engine}): {ins.cost}" in body, (a.name, body)
        if a.changes():
            assert "From " in body and a.changes()[0].replace("`", "") in body, (a.name, body)
    index = text_of(re.search(r"<article.*?</article>", (site / "api/index.html").read_text(), re.S).group(0))
    assert index.index("nisa: nki.isa") < index.index("The legacy dialect") < index.index("neuronxcc.nki.isa")
    migration = text_of((site / "migration.html").read_text())
    assert "nki.isa.nc_matmul neuronxcc.nki.isa.nc_matmul writes into dst (its first argument)" in " ".join(
        migration.split())
    assert "for i in range(n)" in migration and "nki/get-started/about/lnc.rst" in migration


# ------------------------------------------------------------------------------------------------
# A real browser
# ------------------------------------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser(site, tmp_path_factory):
    """Headless Chromium (Debian's; .ci/run installs it) and the site served over HTTP on the loopback."""

    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs Debian's chromium for the site tests")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); CI installs it")
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory",
                               str(site)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = re.search(r"port (\d+)", server.stdout.readline()).group(1)
        with Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium")) as chromium:
            yield chromium, f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)
        server.stdout.close()


@pytest.mark.slow
@pytest.mark.parametrize(("query", "expected"), [
    ("partition", "lessons/02_partition_tiling.html"),
    ("err_psum_tile_exceed_bank_size", "errors/err_psum_tile_exceed_bank_size.html"),
    ("nki.language.load", "api/nl.html#nki.language.load"),
    ("nki.isa.nc_matmul", "api/nisa.html#nki.isa.nc_matmul"),
    ("bubblewrap", "grading.html"),
])
def test_search_finds_pages(browser, query, expected):
    chromium, base = browser
    page = chromium.open(f"{base}/search.html?q={query}", 1280, 900)
    try:
        done = page.wait_for("(document.querySelector('#search-results .search-summary') || {}).textContent")
        assert done and "found" in done and not done.startswith("Your search did not match"), done
        hrefs = page.evaluate("[...document.querySelectorAll('#search-results li a')].map(a => a.getAttribute('href'))")
        assert any(h.split("?")[0] == expected or h.startswith(expected) for h in hrefs), hrefs
    finally:
        page.close()


def _search(chromium, base: str, query: str) -> list[str]:
    page = chromium.open(f"{base}/search.html?q={query}", 1280, 900)
    try:
        done = page.wait_for("(document.querySelector('#search-results .search-summary') || {}).textContent")
        assert done and "found" in done and not done.startswith("Your search did not match"), done
        return page.evaluate("[...document.querySelectorAll('#search-results li a')].map(a => a.getAttribute('href'))")
    finally:
        page.close()


@pytest.mark.slow
@pytest.mark.parametrize("query", ["affine_range", "PSUM", "mask", "partition"])
def test_search_ranks_lessons_and_guides_above_error_pages(browser, query):
    """Sphinx scores a page by where a word occurs, not how much the page is about it: an error page naming
    ``affine_range`` once ranked above the lessons teaching it (the first of them 21st of 28). Every lesson and
    guide found now ranks above every error page, and the lessons lead the pages that only mention the word."""
    chromium, base = browser
    hrefs = [h.split("#")[0] for h in _search(chromium, base, query)]
    errors = [k for k, h in enumerate(hrefs) if h.startswith("errors/")]
    taught = [k for k, h in enumerate(hrefs) if h.startswith("lessons/") or "/" not in h]
    assert errors and taught and max(taught) < min(errors), hrefs
    lessons = [k for k, h in enumerate(hrefs) if h.startswith("lessons/")]
    assert lessons and lessons[0] < 6, hrefs


@pytest.mark.slow
def test_searching_an_error_id_finds_its_page_first(browser):
    chromium, base = browser
    for error_id in ("err_psum_dtype", "err_tensor_access_out_of_bound"):
        assert _search(chromium, base, error_id)[0].split("#")[0] == f"errors/{error_id}.html"


#: an error page's title and subtitle as a phone shows them: the words of the title a line breaks inside (a line may
#: break at the hyphen of "on-chip", as in print)
TITLE = """(() => {
  const h1 = document.querySelector('article h1'), broken = [];
  const walker = document.createTreeWalker(h1, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest('a.headerlink')) continue;
    for (const m of node.data.matchAll(/[^\\s-]+/g)) {  // a line may break after a hyphen, in no word
      const r = document.createRange();
      r.setStart(node, m.index);
      r.setEnd(node, m.index + m[0].length);
      if (new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1) broken.push(m[0]);
    }
  }
  const sub = h1.nextElementSibling;
  return {title: h1.innerText.replace('\u00b6', '').trim(), broken, right: h1.getBoundingClientRect().right,
          sub: sub ? sub.className + ': ' + sub.innerText : ''};
})()"""


@pytest.mark.slow
def test_error_pages_are_titled_in_words_on_a_phone(browser):
    """At 400 px every error page's title is its summary in words, no word broken across lines (the ids used as
    titles broke mid-word), and its id is the subtitle."""
    chromium, base = browser
    page = chromium.open(f"{base}/errors/index.html", 400, 900)
    try:
        for error_id in sorted(CATALOGUE):
            page.goto(f"{base}/errors/{error_id}.html")
            shown = page.evaluate(TITLE)
            summary = re.search(r"^summary:\s*(.+)$", (REPO / "docs/errors" / f"{error_id}.md").read_text(), re.M)[1]
            assert shown["title"] == title_of(summary).replace("`", "") and "err_" not in shown["title"], shown
            assert shown["broken"] == [] and shown["right"] <= 400, (error_id, shown)
            assert shown["sub"] == f"nki-error-id: Error id {error_id}", shown
    finally:
        page.close()


#: what a screen shows: nothing wider than the window unless it scrolls sideways inside a box that fits
LAYOUT = layout_probe("article pre, article table, article img, article math, article dl", extra={
    # a lesson's plots (PNG) are shown at their natural size, panning sideways; its diagrams (SVG) fit the column
    "shrunk": """[...document.querySelectorAll('article div.cell_output img:not([src$=".svg"])')].filter(
                 img => !img.naturalWidth || img.getBoundingClientRect().width < img.naturalWidth - 1).map(img => img.src)""",
    "pictures": "document.querySelectorAll('article div.cell_output img').length",
    "drawerLeft": "document.querySelector('.sidebar-drawer').getBoundingClientRect().left",
    "drawerRight": "document.querySelector('.sidebar-drawer').getBoundingClientRect().right",
    "h1Top": "document.querySelector('article h1').getBoundingClientRect().top",
    # a diagram drawn in text (a {.diagram} code block): its font size and whether it fits its box unscrolled
    "textDiagrams": """[...document.querySelectorAll('article .diagram pre')].map(pre => ({
                       px: parseFloat(getComputedStyle(pre).fontSize), fits: pre.scrollWidth <= pre.clientWidth + 1,
                       right: pre.getBoundingClientRect().right}))""",
})
PAGES = ["index.html", "lessons/01_vector_add.html", "lessons/02_partition_tiling.html",
         "lessons/04_masked_rmsnorm.html", "lessons/06_tensor_engine_matmul.html", "errors/index.html",
         "errors/err_num_partition_exceed_arch_limit.html", "api/nl.html", "api/nisa.html", "migration.html",
         "grading.html", "simulator.html"]
#: the smallest a diagram's label may be shown at 400 px, in CSS pixels (the site's body text is 16 px, its
#: smallest print 12 px; a 10-inch diagram shrunk to a phone had 4 px labels, one kept at its size had to pan)
LEGIBLE_PX = 10.0


def _not_blank(png: bytes, width: int, height: int) -> None:
    import matplotlib.image as mpimg

    img = mpimg.imread(io.BytesIO(png))[..., :3]
    assert img.shape[:2] == (height, width)
    grey = img.mean(axis=2)
    background = np.median(grey)
    ink = np.abs(grey - background) > 0.25  # text, code, rules: far from the background
    assert 0.01 < ink.mean() < 0.6, ink.mean()
    assert grey.std() > 0.05


@pytest.mark.slow
@pytest.mark.parametrize("slug", PAGES)
def test_phone_layout(browser, slug, tmp_path):
    """At 400 px the menu is behind its button (the page's title is on the first screen), the button opens it,
    and nothing is cut off: wide tables and code scroll sideways in their own box, but a diagram drawn in text fits
    its box. A lesson's plots are shown at their natural size, panning sideways, so their smallest labels stay 9 px
    (tests/test_figures.py); its diagrams fit the column (test_diagrams_are_legible_on_a_phone)."""
    chromium, base = browser
    page = chromium.open(f"{base}/{slug}", 400, 900)
    try:
        layout = page.evaluate(LAYOUT)
        assert layout["bad"] == [] and layout["pageWidth"] <= 400, layout
        assert layout["shrunk"] == [], layout
        assert len(layout["textDiagrams"]) == (1 if slug == "simulator.html" else 0), layout  # the layers, drawn
        for drawn in layout["textDiagrams"]:  # whole at a readable size, no sideways scrolling
            assert drawn["fits"] and drawn["right"] <= 400 and drawn["px"] >= LEGIBLE_PX, drawn
        assert layout["pictures"] >= (2 if slug in ("lessons/01_vector_add.html", "lessons/06_tensor_engine_matmul.html")
                                      else 0), layout  # the memory hierarchy, the PE array and PSUM's banks
        assert layout["drawerRight"] <= 0 and 0 <= layout["h1Top"] < 250, layout
        png = page.screenshot()
        (tmp_path / "phone.png").write_bytes(png)
        _not_blank(png, 400, 900)
        page.evaluate("document.querySelector('label[for=\"__navigation\"]').click()")
        assert page.wait_for("document.querySelector('.sidebar-drawer').getBoundingClientRect().left >= 0", 10)
    finally:
        page.close()


@pytest.mark.slow
@pytest.mark.parametrize("slug", PAGES)
def test_desktop_layout(browser, slug, tmp_path):
    """At 1280 px the menu is beside the page and nothing is cut off."""
    chromium, base = browser
    page = chromium.open(f"{base}/{slug}", 1280, 900)
    try:
        layout = page.evaluate(LAYOUT)
        assert layout["bad"] == [] and layout["pageWidth"] <= 1280, layout
        assert layout["drawerLeft"] >= 0 and layout["drawerRight"] > 150, layout
        png = page.screenshot()
        (tmp_path / "desktop.png").write_bytes(png)
        _not_blank(png, 1280, 900)
    finally:
        page.close()


#: the lessons' diagrams (nkilab.figures): how many each lesson page shows
DIAGRAM_PAGES = {"lessons/01_vector_add.html": 2,  # the memory hierarchy, a tile's partitions
                 "lessons/02_partition_tiling.html": 2,  # the DMA queues, a ragged tiling
                 "lessons/06_tensor_engine_matmul.html": 2}  # the PE array, PSUM's banks


def _overlapping(labels: list[dict]) -> list[tuple[str, str]]:
    def meet(a: dict, b: dict) -> bool:
        return min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5 and \
            min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5
    return [(a["text"], b["text"]) for k, a in enumerate(labels) for b in labels[k + 1:] if meet(a, b)]


@pytest.mark.slow
@pytest.mark.parametrize("width", [400, 1280])
def test_diagrams_are_legible_on_a_phone_and_whole_on_a_desktop(browser, width):
    """Each diagram of a lesson, as Chromium shows it: SVG, no wider than the column (nothing to pan), every label
    at LEGIBLE_PX or more at 400 px (measured: its font size times the scale the picture is drawn at), inside the
    picture, and on no other label. At 1280 px a diagram is shown at its natural size. (They were 10-inch PNGs:
    at 400 px, shrunk, their labels were 4 px; kept at their size they panned sideways.)"""
    chromium, base = browser
    page = chromium.open(f"{base}/index.html", width, 900)
    try:
        for slug, count in DIAGRAM_PAGES.items():
            page.goto(f"{base}/{slug}")
            pictures = page.evaluate("[...document.querySelectorAll('article div.cell_output img')].map(i => i.src)")
            diagrams = page.evaluate(svg_labels('article div.cell_output img[src$=".svg"]'))
            assert len(diagrams) == count and len(pictures) >= count, (slug, pictures)
            for d in diagrams:
                where = (slug, d["src"])
                assert not d["pans"] and d["left"] >= 0 and d["right"] <= width, (where, d)
                if width > 400:
                    assert d["right"] - d["left"] >= d["natural"] - 1, (where, d)  # not shrunk on a desktop
                labels = [x for x in d["labels"] if x["text"].strip()]
                assert len(labels) >= 8, where
                smallest = min(labels, key=lambda x: x["px"])
                assert smallest["px"] >= LEGIBLE_PX, (where, smallest)
                outside = [x["text"] for x in labels if x["left"] < d["left"] - 1 or x["right"] > d["right"] + 1
                           or x["top"] < d["top"] - 1 or x["bottom"] > d["bottom"] + 1]
                assert outside == [], (where, outside)
                assert _overlapping(labels) == [], where
    finally:
        page.close()


@pytest.mark.slow
def test_a_browser_shows_nc_matmul_with_its_06_signature_and_cost(browser):
    """Opened in Chromium, the NKI 0.6 API page shows ``nki.isa.nc_matmul`` with AWS's 0.6 signature (``dst`` first)
    and what it costs: the Tensor Engine instruction and the cost model's price for it, with the change from the
    legacy call."""
    chromium, base = browser
    page = chromium.open(f"{base}/api/nisa.html#nki.isa.nc_matmul", 1280, 900)
    try:
        shown = page.wait_for("""(() => {
          const dt = document.getElementById('nki.isa.nc_matmul');
          if (!dt) return null;
          const r = dt.getBoundingClientRect();
          return {sig: dt.innerText, body: dt.nextElementSibling.innerText, visible: r.height > 0 && r.width > 0};
        })()""")
        assert shown and shown["visible"], shown
        sig = " ".join(shown["sig"].split())
        assert sig.startswith("nki.isa.nc_matmul(dst, stationary, moving, is_stationary_onezero=False"), sig
        assert "accumulate=None" in sig and "perf_mode=" in sig, sig
        body = " ".join(shown["body"].split())
        nc_matmul = next(c for c in api.calls() if c.call == "nisa.nc_matmul")
        cost = next(i for i in nc_matmul.instructions if i.kind == "nc_matmul")
        assert f"nc_matmul (TensorE): {cost.cost}" in body, body
        assert "From legacy nisa.nc_matmul: writes into dst (its first argument)" in body, body
    finally:
        page.close()
