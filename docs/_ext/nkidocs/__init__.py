"""The course site's own Sphinx extension (docs/conf.py loads it).

- ``lessons``: the student notebooks with the outputs of their demo cells, no solution code.
- ``errors``: ``nki-error`` pages, one per compiler error; their reproducers run during the build, which
  fails unless each raises its error (and each fix runs clean).
- ``apiref``: the API pages, from the op registry (``nkisim.api.calls()``) and the front-end modules.
- ``mathml``: formulas as MathML, no JavaScript.
- ``links``: Markdown links written as ``page.html`` go to the page of that name.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def setup(app: Sphinx) -> dict[str, object]:
    from . import apiref, errors, lessons, links, mathml

    for module in (apiref, errors, lessons, links, mathml):
        module.setup(app)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


def get_the_course() -> str:
    """The home page's sentence on how to get the course: the clone command when the repository's public address
    is known (``NKILAB_REPO_URL``, else the checkout's ``origin`` if it is a network address)."""
    import os
    import re
    import subprocess
    from pathlib import Path

    url = os.environ.get("NKILAB_REPO_URL", "")
    if not url:
        try:
            url = subprocess.run(["git", "remote", "get-url", "origin"], capture_output=True, text=True, timeout=10,
                                 cwd=Path(__file__).resolve().parents[2]).stdout.strip()
        except OSError:
            url = ""
    if re.match(r"^(https://|ssh://|git@)[\w.@:/~-]+$", url):
        return (f"The course is one git repository, with the lessons, the simulator and the grader: "
                f"`git clone {url} nki-kernel-lab`, then `cd nki-kernel-lab`.")
    return ("The course is one git repository, with the lessons, the simulator and the grader: clone it from the "
            "address your instructor or the project's page gives (the one this site was built from), or download "
            "it as a zip from there and unpack it.")
