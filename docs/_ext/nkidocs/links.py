"""Links written as a page of the site (``grading.html``, ``lessons/01_vector_add.html#masks``) go to that
page: MyST resolves links to a page's *source* (``grading.md``), and the course's Markdown, the generated stage
table on the home page included, may name either."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

_PAGE = re.compile(r"^(?P<page>[\w./-]+)\.html(?:#(?P<anchor>[\w-]+))?$")


class HtmlPageLinks(SphinxPostTransform):
    """Turn a MyST link to ``<page>.html`` into a link to the document ``<page>`` when there is one; runs
    just before MyST's own resolver (priority 9), which then treats it as a link to that document."""

    default_priority = 8

    def run(self, **kwargs: Any) -> None:
        for node in self.document.findall(addnodes.pending_xref):
            if node.get("reftype") != "myst" or node.get("refdomain"):
                continue
            match = _PAGE.match(node["reftarget"])
            if not match:
                continue
            here = posixpath.dirname(node.get("refdoc", self.env.docname))
            docname = posixpath.normpath(posixpath.join(here, match["page"]))
            if docname in self.env.all_docs:
                node["refdomain"], node["reftarget"] = "doc", docname
                node["reftargetid"] = match["anchor"]


def setup(app: Sphinx) -> None:
    app.add_post_transform(HtmlPageLinks)
