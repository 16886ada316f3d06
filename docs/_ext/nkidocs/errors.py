"""The compiler-error pages: ``docs/errors/<error id>.md``, one per id of nkisim's catalogue
(``nkisim.core.errors.CATALOGUE``).

A page says what the error means on the hardware, shows a minimal kernel that raises it and the fix.  Both
are directives whose code runs while the site builds, as the file ``kernel.py`` a reader would save:

- ``nki-reproducer <error id>`` must raise exactly that error; the page shows the code and the end of the
  traceback it printed (the frames in ``kernel.py`` and the message, verbatim);
- ``nki-fix`` must run without any error.

Anything else stops the build, and so does an id of the catalogue without a page (or a page for an id the
catalogue does not have).  ``nki-error-list`` is the catalogue on the index page, from the pages' front matter
(``summary:``).

A page is titled in words, its summary without the closing parenthesis (``a PSUM tile ... (not 4-byte, not bf16)``
-> "A PSUM tile ..."), with its id as the subtitle and an index entry, so searching for the id finds the page
first (``_titled``, on the source as Sphinx reads it: the Markdown keeps ``# <id>`` as written).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

from nkisim.core.errors import CATALOGUE, UNDOCUMENTED

from .lessons import CACHE, cache_key

FILE = "kernel.py"
RUNNER = Path(__file__).with_name("runexample.py")
TIMEOUT_S = 300  # per example
#: the imports a reproducer gets, each when its code uses the name
IMPORTS = (("np", "import numpy as np"), ("nki", "import neuronxcc.nki as nki"),
           ("nl", "import neuronxcc.nki.language as nl"), ("nisa", "import neuronxcc.nki.isa as nisa"),
           ("nt", "import neuronxcc.nki.typing as nt"), ("ncc", "import neuronxcc.nki.compiler as ncc"))


@dataclass
class Outcome:
    """What running one example printed: the traceback's end (empty if it ran clean), the id of its error in
    nkisim's catalogue (None for none or another error), and its warnings."""

    text: str
    error_id: str | None
    error_class: str | None
    warnings: list[dict]


def full_source(code: str) -> str:
    """``code`` with the imports it uses put on top: the whole ``kernel.py``."""
    used = [line for name, line in IMPORTS if re.search(rf"\b{name}\.", code)]
    return "\n".join(used) + "\n\n\n" + code.strip("\n") + "\n"


class _Server:
    """``runexample.py --serve``: one per build process (Sphinx's parallel readers are forked processes, each
    starts its own), ending when that process does (its stdin closes)."""

    proc: subprocess.Popen | None = None
    owner: int | None = None

    @classmethod
    def run(cls, folder: str) -> int:
        """Run ``folder/kernel.py`` in a child of the server; its exit status."""
        if cls.proc is None or cls.owner != os.getpid() or cls.proc.poll() is not None:
            env = {k: v for k, v in os.environ.items() if k != "NEURON_PLATFORM_TARGET_OVERRIDE"}
            cls.proc = subprocess.Popen([sys.executable, str(RUNNER), "--serve", str(TIMEOUT_S)], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            cls.owner = os.getpid()
        assert cls.proc.stdin is not None and cls.proc.stdout is not None
        cls.proc.stdin.write(json.dumps({"dir": folder}) + "\n")
        cls.proc.stdin.flush()
        answer = cls.proc.stdout.readline()
        if not answer:
            raise ExtensionError(f"the error-example server stopped (exit status {cls.proc.wait()})")
        return int(json.loads(answer)["status"])


def run_example(source: str) -> Outcome:
    """Run ``source`` as ``python kernel.py`` in a scratch folder, in a fresh child of ``runexample.py --serve``, on
    the default target whatever the builder's environment says.  The record is cached in build/docs-cache/
    under the source and everything else it depends on (``lessons.cache_key``)."""
    cached = CACHE / "examples" / f"{cache_key(source.encode())}.json"
    if cached.is_file():
        os.utime(cached)  # still in use: _prune keeps it
        return Outcome(**json.loads(cached.read_text()))
    with tempfile.TemporaryDirectory(prefix="nkidocs-error-") as tmp:
        (Path(tmp) / FILE).write_text(source)
        status = _Server.run(tmp)
        record = Path(tmp) / "record.json"
        if status != 0 or not record.is_file():
            printed = Path(tmp) / "output.txt"
            raise ExtensionError("could not run an error example (exit status "
                                 f"{status}):\n{printed.read_text() if printed.is_file() else ''}")
        text = record.read_text()
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(text)
    partial.replace(cached)
    return Outcome(**json.loads(text))


def _code_block(text: str, language: str, caption: str, kind: str) -> nodes.container:
    """A code block under a caption; ``kind`` (source, printed, fix) is its class ``nkidocs-<kind>``."""
    block = nodes.literal_block(text, text, language=language)
    block["classes"].append(f"nkidocs-{kind}")
    container = nodes.container("", literal_block=True, classes=["literal-block-wrapper"])
    container += nodes.caption(caption, "", nodes.Text(caption))
    container += block
    return container


class Reproducer(SphinxDirective):
    """``nki-reproducer <error id>``: a kernel that must raise that error; the code and what it printed."""

    required_arguments = 1
    has_content = True

    def run(self) -> list[nodes.Node]:
        error_id = self.arguments[0]
        if error_id not in CATALOGUE:
            raise ExtensionError(f"{self.get_location()}: {error_id} is not in nkisim's error catalogue")
        source = full_source("\n".join(self.content))
        outcome = run_example(source)
        shown = outcome.text
        if error_id in WARNS:  # an error the compiler, like nkisim, gives as a deprecation warning first
            hits = [w for w in outcome.warnings if w["category"] == "DeprecationWarning" and w["in_kernel"]
                    and WARNS[error_id] in w["message"]]
            if not hits:
                raise ExtensionError(f"{self.get_location()}: the reproducer of {error_id} gave no deprecation "
                                     f"warning ({outcome.text or 'it ran clean'})")
            warning = hits[0]
            # the form Python's default warning display takes: file:line: Category: message, then the line
            line = warnings.formatwarning(warning["message"], DeprecationWarning, FILE, warning["lineno"],
                                          source.splitlines()[warning["lineno"] - 1]).rstrip("\n")
            shown = line + ("\n" + outcome.text if outcome.text else "")
        elif outcome.error_id != error_id:
            raise ExtensionError(f"{self.get_location()}: the reproducer of {error_id} did not raise it: "
                                 f"{outcome.text or 'it ran clean'}")
        self.env.nkidocs_errors[self.env.docname] = error_id  # type: ignore[attr-defined]
        return [_code_block(source, "python", FILE, "source"),
                _code_block(shown, "text", f"What python {FILE} prints", "printed")]


#: ids nkisim reports as a DeprecationWarning, as neuronx-cc 2.23+ does, with a phrase of the warning
WARNS = {"err_leading_dimension_of_tensor_must_be_partition": "Block dimension is deprecated"}


class Fix(SphinxDirective):
    """``nki-fix``: the corrected kernel, which must run without any error."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        source = full_source("\n".join(self.content))
        outcome = run_example(source)
        if outcome.error_class is not None:
            raise ExtensionError(f"{self.get_location()}: the fix raises an error:\n{outcome.text}")
        bad = [w for w in outcome.warnings if w["in_kernel"]]
        if bad:
            raise ExtensionError(f"{self.get_location()}: the fix still warns: {bad[0]['message']}")
        return [_code_block(source, "python", f"{FILE}, fixed", "fix")]


class ErrorListPlaceholder(nodes.General, nodes.Element):
    """Where ``nki-error-list`` goes; filled in once every page's front matter is known."""


class ErrorList(SphinxDirective):
    """``nki-error-list``: every error id, its page, the class a traceback shows, when it happens, and the
    compiler documentation's entry."""

    def run(self) -> list[nodes.Node]:
        return [ErrorListPlaceholder()]


def _fill_lists(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """The catalogue as a list (it reads at any width): each id linked to its page, the class a traceback
    shows, when it happens, and whether only the simulator names it."""
    for placeholder in list(doctree.findall(ErrorListPlaceholder)):
        listing = nodes.bullet_list(classes=["nkidocs-errors"])
        for error_id in sorted(CATALOGUE):
            page = f"errors/{error_id}"
            ref = nodes.reference("", "", internal=True, refuri=app.builder.get_relative_uri(docname, page))
            ref += nodes.literal(error_id, error_id)
            shown = CATALOGUE[error_id].__qualname__
            para = nodes.paragraph("", "", nodes.strong("", "", ref), nodes.Text(" "),
                                   nodes.literal(shown, shown), nodes.Text(": "))
            para += _inline(str(app.env.metadata.get(page, {}).get("summary", "")))
            if error_id in UNDOCUMENTED:  # (AWS removed the compiler's error guide in SDK 2.27: no link to it)
                para += nodes.Text(" (simulator only)")
            listing += nodes.list_item("", para)
        placeholder.replace_self(listing)


def _inline(text: str) -> list[nodes.Node]:
    """A front-matter summary with its `code` spans as code."""
    parts = text.split("`")
    return [nodes.literal(p, p) if k % 2 else nodes.Text(p) for k, p in enumerate(parts) if p]


def _check_catalogue(app: Sphinx, env: Any) -> None:
    """Every id of the catalogue has its page with a reproducer of that id, and no page is for another id."""
    pages = {doc: eid for doc, eid in env.nkidocs_errors.items() if doc in env.all_docs}
    problems = [f"errors/{doc.split('/')[-1]}.md reproduces {eid}" for doc, eid in pages.items()
                if doc != f"errors/{eid}"]
    missing = sorted(set(CATALOGUE) - set(pages.values()))
    if missing:
        problems.append("no page with a reproducer for " + ", ".join(missing))
    for error_id in sorted(CATALOGUE):
        if not str(env.metadata.get(f"errors/{error_id}", {}).get("summary", "")):
            problems.append(f"errors/{error_id}.md has no `summary:` in its front matter")
    if problems:
        raise ExtensionError("the error pages do not match nkisim's catalogue:\n  " + "\n  ".join(problems))


_FRONT = re.compile(r"\A---\n(?P<front>.*?)\n---\n", re.S)


def title_of(summary: str) -> str:
    """An error page's title, from its summary: the parenthesis at the end dropped, the first word capitalised
    when it is a plain word (not a name such as ``nisa.activation`` or ``negate=``)."""
    words = re.sub(r"\s*\([^()]*\)$", "", summary.strip()) or summary.strip()
    first, _, rest = words.partition(" ")
    if re.fullmatch(r"[a-z]+", first):
        first = first.capitalize()
    return f"{first} {rest}".strip()


def _titled(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: an error page's ``# <id>`` heading becomes its title in words, the id its subtitle."""
    error_id = docname.rpartition("/")[2]
    if not docname.startswith("errors/") or error_id not in CATALOGUE:
        return
    front = _FRONT.match(source[0])
    summary = re.search(r"^summary:\s*(.+)$", front["front"], re.M) if front else None
    if summary:
        heading = re.compile(rf"^# {re.escape(error_id)}\s*$", re.M)
        anchor = error_id.replace("_", "-")  # the anchor the id heading had: links made to it still land
        page_head = (f"({anchor})=\n# {title_of(summary[1])}\n\n```{{index}} {error_id}\n```\n\n"
                     f"{{.nki-error-id}}\nError id `{error_id}`\n")
        source[0] = heading.sub(lambda _m: page_head, source[0], count=1)


def _started(app: Sphinx) -> None:
    app.nkidocs_started = time.time()  # type: ignore[attr-defined]


def _prune(app: Sphinx, exception: Exception | None) -> None:
    """After a good build, drop the example records it did not use (old sources, an older simulator)."""
    if exception is None:
        for record in (CACHE / "examples").glob("*.json"):
            if record.stat().st_mtime < app.nkidocs_started - 1:  # type: ignore[attr-defined]
                record.unlink(missing_ok=True)


def _init(app: Sphinx, env: Any, docnames: list[str]) -> None:
    if not hasattr(env, "nkidocs_errors"):
        env.nkidocs_errors = {}


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "nkidocs_errors", {}).pop(docname, None)


def _merge(app: Sphinx, env: Any, docnames: list[str], other: Any) -> None:
    env.nkidocs_errors.update({d: e for d, e in other.nkidocs_errors.items() if d in docnames})


def setup(app: Sphinx) -> None:
    app.add_directive("nki-reproducer", Reproducer)
    app.add_directive("nki-fix", Fix)
    app.add_directive("nki-error-list", ErrorList)
    app.add_node(ErrorListPlaceholder)
    app.connect("env-before-read-docs", _init)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check_catalogue)
    app.connect("doctree-resolved", _fill_lists)
    app.connect("builder-inited", _started)
    app.connect("source-read", _titled)
    app.connect("build-finished", _prune)
