"""Sphinx configuration of the course site: ``make docs`` -> build/site/ (warnings are errors).

The site is Sphinx with MyST-NB and the Furo theme; what is ours lives in ``_ext/nkidocs``: the lessons
(the student notebooks of ``assignments/``, reached through the ``lessons`` link, with the outputs of their
demo cells), one page per compiler error with a reproducer run during the build, the API pages from the op
registry, and formulas as MathML.  See docs/README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "NKI Kernel Lab"
author = "the NKI Kernel Lab authors"
copyright = "the NKI Kernel Lab authors"  # noqa: A001  (Sphinx's setting name)

extensions = ["myst_nb", "nkidocs"]

exclude_patterns = ["README.md", "_ext", "lessons/README.md", "lessons/legacy"]  # legacy twins: no pages

# MyST: $...$ and $$...$$ formulas, {.class} on a block, ::: fences
myst_enable_extensions = ["dollarmath", "attrs_block", "colon_fence", "substitution"]
myst_heading_anchors = 3
myst_substitutions = {
    "get_the_course": __import__("nkidocs").get_the_course(),
    "nki06_guide": "[Moving to NKI 0.6](nki06.md)",
}

# The lesson notebooks are never executed by MyST-NB: nkidocs.lessons puts in the outputs of their demo
# cells from running the authored lessons (cached in build/docs-cache) before MyST-NB reads them.
nb_execution_mode = "off"
nb_output_stderr = "remove"
nb_merge_streams = True

html_theme = "furo"
html_title = "NKI Kernel Lab"
html_static_path = ["_static"]
html_css_files = ["nkidocs.css"]
html_search_scorer = str(DOCS / "_static" / "search_scorer.js")  # lessons and guides above error pages for the words they teach
templates_path = ["_templates"]
html_copy_source = False  # no _sources/: the lessons' sources would repeat the pages
html_show_sourcelink = False
html_math_renderer = "mathml"  # nkidocs.mathml: formulas as MathML, no JavaScript, no network
html_theme_options = {"navigation_with_keys": True}
pygments_style = "friendly"
pygments_dark_style = "monokai"
smartquotes = False  # quotes in messages and docstrings stay as nkisim prints them
