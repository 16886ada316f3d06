"""Formulas as MathML (``html_math_renderer = "mathml"``): browsers lay it out themselves, so the site needs
no JavaScript and no network for the lessons' ``$...$`` and ``$$...$$`` (Jupyter shows the same source
with MathJax)."""

from __future__ import annotations

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.application import Sphinx


def setup(app: Sphinx) -> None:
    app.add_html_math_renderer("mathml", (_inline, None), (_block, None))


def _inline(self, node: nodes.math) -> None:  # noqa: ANN001  (Sphinx's HTML translator)
    self.body.append(convert(node.astext()))
    raise nodes.SkipNode


def _block(self, node: nodes.math_block) -> None:  # noqa: ANN001
    ids = node.get("ids") or []
    anchor = f' id="{ids[0]}"' if ids else ""
    self.body.append(f'<div class="math"{anchor}>{convert(node.astext(), display="block")}</div>\n')
    raise nodes.SkipNode
