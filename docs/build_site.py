"""Build the course site (static HTML) from the course's own sources: ``make docs`` -> build/site/.

Every page comes from a file that is already the source of truth, so the site cannot drift from the
course: the guides are the Markdown files in ``docs/`` and ``autograder/README.md``, the lessons are the
*student* notebooks in ``assignments/`` (so the site never shows a solution; the demo outputs, which come
from running the authored lessons, have every line of reference code they echo hidden), and the two reference
pages are generated from the simulator itself (its error catalogue and the names ``nl``, ``nisa`` and
``nki`` export).  The pages are plain HTML and one stylesheet: no JavaScript, no network, readable
from ``file://`` as well as from a web server.

    python docs/build_site.py [--out build/site]
"""

from __future__ import annotations

import argparse
import html
import inspect
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mistune
import nbformat
import numpy as np
from latex2mathml.converter import convert as latex_to_mathml
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from nkilab.redact import ANSI, HIDDEN, scrub_outputs

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SITE_NAME = "NKI Kernel Lab"
#: shown at the foot of every page: every latency on the site is a cost-model estimate
ESTIMATE_NOTE = ("Latencies quoted on this site are nkisim cost-model estimates for trn2 (or trn1 where "
                 "stated), not measurements on hardware.")


@dataclass
class Page:
    """One HTML page of the site."""

    slug: str  # file name in the site, e.g. "lessons/02_partition_tiling.html"
    title: str
    section: str  # navigation group
    body: str  # HTML of the main column
    source: str  # repository path the page is built from, shown at its foot
    hidden: int = 0  # lines of demo output hidden because they echo reference code (see scrub_outputs)


# ----------------------------------------------------------------------------------------------
# Markdown and code
# ----------------------------------------------------------------------------------------------
_FORMATTER = HtmlFormatter(cssclass="highlight", nowrap=False)


def code_html(code: str, language: str = "python") -> str:
    """Syntax-highlighted ``<pre>`` (Pygments; plain text for unknown languages)."""
    try:
        lexer = get_lexer_by_name(language) if language else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    return highlight(code, lexer, _FORMATTER)


def slugify(text: str) -> str:
    """Heading text -> anchor id (lower case, words joined by '-')."""
    text = re.sub(r"<[^>]+>", "", text)
    text = html.unescape(text).lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "section"


class _Renderer(mistune.HTMLRenderer):
    """Mistune's HTML with highlighted code blocks, anchored headings and ``.md`` links made ``.html``."""

    def __init__(self, link_map: dict[str, str], root: str) -> None:
        super().__init__(escape=False)
        self.link_map = link_map
        self.root = root
        self.headings: list[tuple[int, str, str]] = []  # (level, id, text) for the page's contents

    def block_code(self, code: str, info: str | None = None) -> str:
        language = (info or "").split()[0] if info else ""
        return code_html(code, language or "text")

    def heading(self, text: str, level: int, **attrs: object) -> str:
        anchor = slugify(text)
        taken = {h[1] for h in self.headings}
        base, n = anchor, 2
        while anchor in taken:
            anchor, n = f"{base}-{n}", n + 1
        self.headings.append((level, anchor, text))
        return f'<h{level} id="{anchor}">{text}<a class="anchor" href="#{anchor}">#</a></h{level}>\n'

    def block_math(self, text: str) -> str:
        """``$$ ... $$`` as MathML, which browsers render without JavaScript (Jupyter renders the same
        source with MathJax)."""
        return f'<div class="math">{latex_to_mathml(text, display="block")}</div>\n'

    def inline_math(self, text: str) -> str:
        return latex_to_mathml(text)

    def link(self, text: str, url: str, title: str | None = None) -> str:
        target = url.split("#")[0]
        if target in self.link_map:
            url = self.root + self.link_map[target] + url[len(target):]
        return super().link(text, url, title)


def markdown_html(text: str, root: str = "") -> tuple[str, list[tuple[int, str, str]]]:
    """Markdown -> (HTML, headings) for a page ``root`` below the site's top ("" or "../").  Tables,
    strikethrough, URLs and ``$``/``$$`` math (as MathML) are understood; links to a guide's Markdown
    source go to its page."""
    renderer = _Renderer(LINK_MAP, root)
    md = mistune.create_markdown(renderer=renderer, plugins=["table", "strikethrough", "url", "math"])
    return str(md(text)), renderer.headings


# ----------------------------------------------------------------------------------------------
# Pages
# ----------------------------------------------------------------------------------------------
#: Markdown guides: (source, slug, section, title or "" for the source's first heading).
GUIDES = [
    ("docs/index.md", "index.html", "Start", ""),
    ("docs/simulator.md", "simulator.html", "Guides", ""),
    ("docs/cost-model.md", "cost-model.html", "Guides", ""),
    ("autograder/README.md", "grading.html", "Guides", "Grading a class (for TAs)"),
]


def _link_map() -> dict[str, str]:
    """Repository-relative Markdown links that have a page on the site."""
    out: dict[str, str] = {}
    for source, slug, _, _ in GUIDES:
        name = Path(source).name
        out[source] = slug
        out.setdefault(name, slug)
    return out


#: built once: every Markdown cell of every lesson is rendered with it
LINK_MAP = _link_map()


def guide_page(source: str, slug: str, section: str, title: str = "") -> Page:
    text = (REPO / source).read_text()
    body, headings = markdown_html(text)
    if not title:
        title = html.unescape(re.sub(r"<[^>]+>", "", headings[0][2])) if headings else Path(source).stem
    return Page(slug, title, section, body, source)


def lesson_pages(assignments: Path, notebooks: Path | None = None,
                 log: Callable[[str], object] = lambda s: None) -> list[Page]:
    """One page per student notebook, in stage order.  With ``notebooks`` (the authored lessons), each
    lesson is run first and its demo cells show their outputs: plots, tables, the compiler's errors, with
    every line of reference code they echo hidden (``scrub_outputs``)."""
    prints: set[str] = set()
    if notebooks is not None:
        from nkilab.release import reference_fingerprints

        prints = reference_fingerprints(notebooks)
    pages = []
    for nb_path in sorted(assignments.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        outputs: dict[str, list] = {}
        hidden = 0
        if notebooks is not None:
            log(f"  running {nb_path.stem} for its demo outputs ...")
            for cell_id, cell_outputs in demo_outputs(notebooks / f"{nb_path.stem}.py").items():
                outputs[cell_id], n = scrub_outputs(cell_outputs, prints)
                hidden += n
            if hidden:
                log(f"    {hidden} line(s) of reference code hidden from its demo outputs")
        parts: list[str] = []
        title = nb_path.stem
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                html_text, headings = markdown_html(cell.source, "../")
                if title == nb_path.stem and headings and headings[0][0] == 1:
                    title = html.unescape(re.sub(r"<[^>]+>", "", headings[0][2]))
                parts.append(html_text)
            elif cell.cell_type == "code":
                parts.append(_code_cell(cell, outputs.get(cell.get("id"), [])))
        shown = ("Demo cells show what they print when the lesson runs with the reference solutions in "
                 "place; in your copy, run them to see your own kernels' results." if outputs else
                 "Outputs are not shown here: run the cells to see them.")
        if hidden:
            shown += (" Lines of the reference solutions that a demo prints (a profile's source column, say) "
                      f"read <code>{html.escape(HIDDEN)}</code>.")
        download = (f'<p class="download">Work through it in Jupyter: <a href="../notebooks/{nb_path.name}" '
                    f'download>{nb_path.name}</a> (or <code>make lab</code> in the repository). {shown}</p>\n')
        pages.append(Page(f"lessons/{nb_path.stem}.html", title, "Lessons", download + "".join(parts),
                          f"assignments/{nb_path.name}", hidden))
    return pages


def _is_demo(cell: nbformat.NotebookNode) -> bool:
    """A cell every reader runs as it is: not an answer, not graded, not a self-check of an answer."""
    meta = cell.metadata.get("nbgrader", {})
    return not (meta.get("solution") or meta.get("grade") or re.match(r"\s*check\(", cell.source))


def demo_outputs(source: Path, timeout: float = 600) -> dict[str, list]:
    """Run an authored lesson (reference answers in place) in a scratch folder under a real Jupyter
    kernel; the outputs of its demo cells by cell id.  Answers, checks and grades are left out: the
    page shows the student's version, and their outputs would describe the reference kernels."""
    from nbclient import NotebookClient

    from nkilab.release import load_source

    nb = load_source(source)
    with tempfile.TemporaryDirectory(prefix="nkilab-site-") as tmp:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": tmp}}).execute()
    return {cell["id"]: cell.outputs for cell in nb.cells if cell.cell_type == "code" and _is_demo(cell)}


def outputs_html(outputs: list) -> str:
    """Notebook outputs as HTML: text in ``<pre>``, plots as inline PNGs, errors by name and message.
    Stderr is left out (warnings about the reader's set-up are not part of the lesson)."""
    parts = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream" and out.get("name") == "stdout":
            parts.append(f'<pre class="output">{html.escape(ANSI.sub("", out["text"]))}</pre>')
        elif kind in ("display_data", "execute_result"):
            data = out.get("data", {})
            if "image/png" in data:
                png = data["image/png"].replace("\n", "")
                parts.append(f'<img class="output" alt="plot made by this cell" src="data:image/png;base64,{png}">')
            elif "text/plain" in data:
                parts.append(f'<pre class="output">{html.escape(ANSI.sub("", data["text/plain"]))}</pre>')
        elif kind == "error":
            parts.append(f'<pre class="output error">{html.escape(out["ename"])}: '
                         f'{html.escape(ANSI.sub("", out["evalue"]))}</pre>')
    return f'<div class="outputs">{"".join(parts)}</div>' if parts else ""


def _code_cell(cell: nbformat.NotebookNode, outputs: list) -> str:
    """A code cell with a caption saying what it is for (answer, check, graded, demo) and, for demos,
    what it printed when the lesson ran."""
    meta = cell.metadata.get("nbgrader", {})
    source = cell.source
    caption = ""
    first = source.split("\n", 1)[0]
    if first.startswith("%%writefile"):
        caption = f"saved as <code>{html.escape(first.split()[-1])}</code> when run"
        source = source.split("\n", 1)[1] if "\n" in source else ""
    if meta.get("solution"):
        kind, label = "answer", "your answer"
    elif meta.get("grade"):
        points = meta.get("points")
        kind, label = "graded", f"graded cell ({points:g} points)" if points else "graded cell"
    elif not _is_demo(cell):
        kind, label = "check", "check your answer on the public cases"
    else:
        kind, label = "demo", "run me"
    caption = label + (f"; {caption}" if caption else "")
    return (f'<figure class="cell {kind}"><figcaption>{caption}</figcaption>'
            f'{highlight(source, PythonLexer(), _FORMATTER)}{outputs_html(outputs)}</figure>\n')


def errors_page() -> Page:
    """Every error id the simulator raises, with the class a traceback shows and the compiler docs link."""
    from nkisim.core.errors import CATALOGUE, UNDOCUMENTED, docs_link

    rows = []
    for error_id in sorted(CATALOGUE):
        shown = CATALOGUE[error_id].__qualname__
        if error_id in UNDOCUMENTED:
            where = "simulator only (the compiler's message has no documentation link)"
        else:
            where = f'<a href="{docs_link(error_id)}">nki.errors: {error_id}</a>'
        rows.append(f'<tr id="{error_id}"><td><code>{error_id}</code></td><td><code>{shown}</code></td>'
                    f"<td>{where}</td></tr>")
    intro, _ = markdown_html(ERRORS_INTRO)
    table = ("<table><thead><tr><th>error id</th><th>shown as</th><th>documentation</th></tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table>")
    return Page("errors.html", "Error catalogue", "Reference", intro + table, "nkisim/core/errors.py")


ERRORS_INTRO = """# Error catalogue

When a kernel breaks a hardware or language rule, the simulator raises the error the Neuron compiler
would: the same exception class in the traceback, the compiler's key phrase, and its error id. The
traceback ends at **your** line of the kernel, and the message ends with the compiler's
*Info on how to fix* link for that id. For example, a tile of 256 rows gives

```text
ValueError: number of partitions 256 exceed architecture limitation of 128. Info on how to fix: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/api/nki.errors.html#err-num-partition-exceed-arch-limit
```

The table lists every id the simulator can raise. Ids marked *simulator only* are checks the
compiler also makes but documents under no id of its own; their messages carry no link.
"""


#: the modules of the API page: (heading, import path, how students import it)
API_MODULES = [
    ("nki", "nkisim.frontend.nki", "import neuronxcc.nki as nki"),
    ("nl", "nkisim.frontend.language", "import neuronxcc.nki.language as nl"),
    ("nisa", "nkisim.frontend.isa", "import neuronxcc.nki.isa as nisa"),
]


def api_page() -> Page:
    """The names each NKI module has on the simulator, with the first line of each docstring."""
    import importlib

    from nkisim import api

    issued = {c.call: c.instructions for c in api.calls()}  # the op registry: what each call issues
    intro, _ = markdown_html(API_INTRO)
    parts = [intro]
    for heading, module_name, how in API_MODULES:
        module = importlib.import_module(module_name)
        rows = []
        for name in sorted(n for n in dir(module) if not n.startswith("_")):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or name in {"annotations", "Any"}:
                continue
            qualified = f"{heading}.{name}"
            rows.append(f'<tr id="{qualified}"><td><code>{heading}.{html.escape(name)}</code></td>'
                        f"<td>{html.escape(_summary(obj, qualified))}</td>"
                        f"<td>{html.escape(_issues(issued.get(qualified)))}</td></tr>")
        parts.append(f'<h2 id="{heading}">{heading}<a class="anchor" href="#{heading}">#</a></h2>'
                     f"<p><code>{how}</code></p><table><thead><tr><th>name</th><th>what it does</th>"
                     f"<th>instructions it issues (engine)</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return Page("api.html", "API on the simulator", "Reference", "".join(parts), "nkisim/frontend/")


API_INTRO = """# API on the simulator

The names `neuronxcc.nki`, `neuronxcc.nki.language` and `neuronxcc.nki.isa` have when your kernel runs
on nkisim, generated from the simulator itself. For each NKI call the last column says which instructions
it may issue and on which engine (from the simulator's op registry): that is what the cost model charges
for it. The legacy `neuronxcc.nki` dialect is the one of the
NKI tutorials up to SDK 2.27 and of Stanford CS149's Trainium assignments; see the
[simulator guide](simulator.md) for what each supports and what it does not do yet.
"""


def _issues(instructions: tuple | None) -> str:
    """The instructions an NKI call may issue, with their engines; empty for names that are not calls."""
    if instructions is None:
        return ""
    if not instructions:
        return "none (a view, an allocation or trace-time state)"
    return ", ".join(f"{i.kind} ({i.engine})" for i in instructions)


def _summary(obj: object, qualified: str) -> str:
    """First line of an object's own docstring (without a leading "nl.name: "), or what kind of value
    it is."""
    own = inspect.isroutine(obj) or inspect.isclass(obj)
    if own:
        doc = inspect.getdoc(obj)
    else:  # an instance of a simulator class: that class's own docstring (not one it inherits)
        doc = type(obj).__dict__.get("__doc__") if type(obj).__module__.startswith("nkisim") else None
        doc = inspect.cleandoc(doc) if doc else None
    if doc and not (inspect.isclass(obj) and doc == inspect.getdoc(type)):
        line = doc.strip().split("\n", 1)[0].replace("``", "")
        if line.lstrip("@").startswith(qualified) and ": " in line:
            line = line.split(": ", 1)[1]
        return line[:1].upper() + line[1:]
    if inspect.isroutine(obj):
        return "Function"
    from nkisim.core import dtypes
    from nkisim.core.buffers import Buffer

    if isinstance(obj, np.dtype) or (inspect.isclass(obj) and issubclass(obj, np.generic)):
        return f"Data type {dtypes.name(np.dtype(obj))}"
    if isinstance(obj, Buffer):
        return f"Memory space for buffer= ({obj.space}: {'on chip' if obj.family != 'hbm' else 'device memory'})"
    if inspect.isclass(obj):
        return "Class"
    return f"Constant {obj!r}" if isinstance(obj, (bool, int, float, str)) else f"A {type(obj).__name__.lstrip('_')}"


# ----------------------------------------------------------------------------------------------
# Layout
# ----------------------------------------------------------------------------------------------
SECTIONS = ["Start", "Lessons", "Guides", "Reference"]
CURRENT = ' aria-current="page"'


def render(page: Page, pages: list[Page]) -> str:
    """The whole HTML document of ``page``, with the navigation of ``pages``."""
    depth = page.slug.count("/")
    root = "../" * depth
    nav = []
    for section in SECTIONS:
        items = [p for p in pages if p.section == section]
        if not items:
            continue
        links = "".join(
            f'<li><a href="{root}{p.slug}"{CURRENT if p is page else ""}>{html.escape(p.title)}</a></li>'
            for p in items)
        nav.append(f"<h2>{section}</h2><ul>{links}</ul>")
    return TEMPLATE.format(title=html.escape(page.title), site=SITE_NAME, root=root, nav="".join(nav),
                           body=page.body, source=html.escape(page.source), note=ESTIMATE_NOTE)


TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · {site}</title>
<link rel="stylesheet" href="{root}style.css">
</head>
<body>
<nav class="sidebar"><a class="brand" href="{root}index.html">{site}</a>{nav}</nav>
<main>
{body}
<footer><p>{note}</p><p>Built from <code>{source}</code>.</p></footer>
</main>
</body>
</html>
"""


def build(out: Path, assignments: Path | None = None, notebooks: Path | None = None,
          log: Callable[[str], object] = lambda s: None) -> list[Page]:
    """Write the site to ``out`` (emptied first) and return its pages.  ``notebooks``: the authored
    lessons to run for the demo outputs (slow: a minute or two); None leaves outputs out."""
    assignments = assignments or REPO / "assignments"
    pages = [guide_page(*GUIDES[0]), *lesson_pages(assignments, notebooks, log),
             *(guide_page(*g) for g in GUIDES[1:]), errors_page(), api_page()]
    if out.exists():
        shutil.rmtree(out)
    (out / "lessons").mkdir(parents=True)
    (out / "notebooks").mkdir()
    for nb_path in sorted(assignments.glob("[0-9][0-9]_*.ipynb")):
        shutil.copy(nb_path, out / "notebooks" / nb_path.name)
    style = (DOCS / "style.css").read_text() + "\n/* Pygments */\n" + _FORMATTER.get_style_defs(".highlight")
    (out / "style.css").write_text(style)
    for page in pages:
        (out / page.slug).write_text(render(page, pages))
        log(f"  {page.slug:40s} {page.title}")
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "site")
    parser.add_argument("--no-outputs", action="store_true", help="do not run the lessons for their demo outputs")
    args = parser.parse_args(argv)
    pages = build(args.out, notebooks=None if args.no_outputs else REPO / "notebooks", log=print)
    print(f"{len(pages)} pages in {args.out} (open {args.out / 'index.html'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
