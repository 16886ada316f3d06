"""The API pages: ``nki-api <module>`` lists what ``nki``, ``nl`` (``nki.language``) and ``nisa`` (``nki.isa``) hold
when a kernel runs on nkisim, and ``nki-api tile`` the operators and methods of tiles.

Every NKI call comes from the op registry (``nkisim.api.calls()``): its docstring, the instructions it may issue and
their engines, and the memories its tile operands may be in; its signature is the front-end function's.  The other
names of a module (loops, decorators, dtypes, buffers, constants) come from the front-end module itself.  Each
entry is a Python-domain object, so it is in the site's search and index and can be linked as
``{py:func}`nl.load```.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import numpy as np
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

#: the modules: name on the pages -> (front-end module, how a kernel imports it)
MODULES = {
    "nki": ("nkisim.frontend.nki", "import neuronxcc.nki as nki"),
    "nl": ("nkisim.frontend.language", "import neuronxcc.nki.language as nl"),
    "nisa": ("nkisim.frontend.isa", "import neuronxcc.nki.isa as nisa"),
}
#: names a module holds that are not part of NKI (its own imports)
NOT_API = {"Any", "Callable", "annotations", "np", "sys", "enum", "logging"}
FENCE = "::::::"


def registry() -> dict[str, Any]:
    """The op registry's entries by call name (``nl.add``, ``nisa.activation``, ``tile.reshape``)."""
    from nkisim import api

    return {c.call: c for c in api.calls()}


def module_entries(prefix: str) -> list[tuple[str, Any]]:
    """(name, object) of every NKI name the front-end module of ``prefix`` exports, sorted."""
    module = importlib.import_module(MODULES[prefix][0])
    return [(name, getattr(module, name)) for name in sorted(dir(module))
            if not name.startswith("_") and name not in NOT_API and not inspect.ismodule(getattr(module, name))]


def signature(obj: Any, name: str) -> str:
    """``name(a, b, *, dtype=None)``: the front end's signature without annotations and without the ``**_``
    catch-all that swallows keywords the simulator ignores."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{name}(...)"
    params = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD and p.name == "_":
            continue
        default = p.default
        if default is not p.empty and not isinstance(default, (bool, int, float, str, tuple, type(None))):
            default = _Literal(_value_name(default))
        params.append(p.replace(annotation=p.empty, default=default))
    return name + str(sig.replace(parameters=params, return_annotation=sig.empty))


class _Literal:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _value_name(value: Any) -> str:
    """How a kernel writes a default value that is an object: ``nl.uint32`` for a dtype."""
    try:
        return "nl." + np.dtype(value).name
    except TypeError:
        return getattr(value, "__name__", type(value).__name__)


def docstring(text: str | None, qualified: str) -> str:
    """A docstring as Markdown: its ``name: `` prefix (the registry's convention) dropped, paragraphs kept."""
    text = inspect.cleandoc(text or "")
    first, _, rest = text.partition("\n")
    head = re.sub(rf"^`*{re.escape(qualified)}`*(\s*\([^)]*\))?:\s*", "", first)
    text = (head[:1].upper() + head[1:] + ("\n" + rest if rest else "")).strip()
    # indented continuation lines would be code blocks in Markdown; they are prose in the docstrings
    return "\n".join(line.strip() for line in text.split("\n"))


def issues(call: Any) -> str:
    """What the registry says a call issues: its instructions with their engines, and its operands' memories."""
    if not call.instructions:
        return "**Issues** no instruction: a view, an allocation or trace-time state."
    kinds = ", ".join(f"`{i.kind}` ({i.engine})" for i in call.instructions)
    spaces = " or ".join(f"`{s}`" for s in call.spaces if s)
    return f"**Issues** {kinds}." + (f" Tile operands in {spaces}." if spaces else "")


def value_doc(obj: Any) -> str:
    """What a non-callable name is: its own class's docstring, or a dtype, a buffer, a constant."""
    from nkisim.core import dtypes
    from nkisim.core.buffers import Buffer

    if isinstance(obj, Buffer):
        where = "on chip" if obj.family != "hbm" else "device memory"
        return f"Memory space for `buffer=`: `{obj.space}` ({where})."
    if isinstance(obj, np.dtype) or (inspect.isclass(obj) and issubclass(obj, np.generic)):
        return f"Data type `{dtypes.name(np.dtype(obj))}`."
    own = type(obj).__dict__.get("__doc__") if type(obj).__module__.startswith("nkisim") else None
    if own:
        return docstring(own, "")
    if isinstance(obj, (bool, int, float, str)):
        return f"Constant `{obj!r}`."
    return f"A `{type(obj).__name__.lstrip('_')}`."


def entry(directive: str, sig: str, body: list[str]) -> list[str]:
    return [f"{FENCE}{{py:{directive}}} {sig}", "", *body, FENCE, ""]


def module_markdown(prefix: str) -> str:
    """The page body for ``nki``, ``nl`` or ``nisa``."""
    calls = registry()
    lines = [f"`{MODULES[prefix][1]}`", ""]
    missing = sorted(c for c in calls if c.startswith(prefix + ".")
                     and c.split(".", 1)[1] not in {n for n, _ in module_entries(prefix)})
    if missing:
        raise ExtensionError(f"registry calls missing from the front end's {prefix}: {missing}")
    for name, obj in module_entries(prefix):
        qualified = f"{prefix}.{name}"
        call = calls.get(qualified)
        if call is not None:
            lines += entry("function", signature(obj, qualified), [docstring(call.doc, qualified), "", issues(call)])
        elif inspect.isclass(obj) and not issubclass(obj, np.generic):
            own = obj.__dict__.get("__doc__")
            lines += entry("class", qualified, [docstring(own, qualified) if own else "A class."])
        elif inspect.isroutine(obj) or callable(obj) and not isinstance(obj, np.dtype):
            lines += entry("function", signature(obj, qualified),
                           [docstring(inspect.getdoc(obj), qualified) or "A function."])
        else:
            lines += entry("data", qualified, [value_doc(obj)])
    return "\n".join(lines)


def tile_markdown() -> str:
    """The page body for the operators and methods of tiles (the registry's ``tile.*`` calls)."""
    lines = []
    for name, call in sorted(registry().items()):
        if name.startswith("tile."):
            lines += entry("function", name, [docstring(call.doc, name), "", issues(call)])
    return "\n".join(lines)


class Api(SphinxDirective):
    """``nki-api nki|nl|nisa|tile``: the entries of one API page."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        which = self.arguments[0]
        if which != "tile" and which not in MODULES:
            raise ExtensionError(f"{self.get_location()}: no API module {which!r}")
        text = tile_markdown() if which == "tile" else module_markdown(which)
        return self.parse_text_to_nodes(text)


def setup(app: Sphinx) -> None:
    app.add_directive("nki-api", Api)
