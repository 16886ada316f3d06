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


#: where the project's public address lives: pyproject.toml's ``[project.urls] Repository`` (its one home)
PYPROJECT = __import__("pathlib").Path(__file__).resolve().parents[3] / "pyproject.toml"
_ADDRESS = r"^(https://|ssh://|git@)[\w.@:/~-]+$"


def repository_address(pyproject: object = None) -> str:
    """The address a reader clones the course from: ``[project.urls] Repository`` in pyproject.toml, its one home
    (a fork sets its own there), or "" when none is recorded. A local path is no address: a reader elsewhere
    cannot clone it. Nothing else is asked (not the checkout's ``origin``, not the environment): the site says
    what the repository records, wherever it is built."""
    import re
    from pathlib import Path

    import tomllib

    path = Path(str(pyproject)) if pyproject is not None else PYPROJECT
    urls = tomllib.loads(path.read_text()).get("project", {}).get("urls", {}) if path.is_file() else {}
    url = str(urls.get("Repository", ""))
    return url if re.match(_ADDRESS, url) else ""


def get_the_course(pyproject: object = None) -> str:
    """The home page's sentence on how to get the course: the clone command with the repository's address
    (``repository_address``), or, where none is recorded, where to ask for it."""
    url = repository_address(pyproject)
    if url:
        at = f"<{url}>" if url.startswith("https://") else f"`{url}`"  # a web address is a link too
        return (f"The course is one git repository, with the lessons, the simulator and the grader, at {at}: "
                f"`git clone {url} nki-kernel-lab`, then `cd nki-kernel-lab`.")
    return ("The course is one git repository, with the lessons, the simulator and the grader: clone it from the "
            "address your instructor or the project's page gives (the one this site was built from), or download "
            "it as a zip from there and unpack it.")
