"""The API pages: ``nki-api <page>`` lists what a module holds when a kernel runs on nkisim -- NKI 0.6 first
(``nki``, ``nl`` = ``nki.language``, ``nisa`` = ``nki.isa``), then the legacy dialect in its own section
(``legacy-nki``, ``legacy-nl``, ``legacy-nisa``: ``neuronxcc.nki``; ``tile``: the legacy tiles' operators and
methods) -- and ``nki-migration`` renders the adapter table (``docs/migration.md``).

Every NKI call comes from the op registry (``nkisim.api.calls()``): its docstring, the instructions it may issue,
their engines and how the cost model prices each, and the memories its tile operands may be in; its signature is
the front-end function's (a 0.6 call's is AWS's 0.6 signature, and the adapter table, ``nkisim.api.adapters()``,
says which registry entry it adapts and what changed from the legacy call).  The other names of a module (loops,
decorators, dtypes, buffers, constants) come from the front-end module itself.  Each entry is a Python-domain object
named by its real module (``nki.isa.nc_matmul``, ``neuronxcc.nki.language.load``), so it is in the site's search and
index and can be linked as ``{py:func}`nki.language.load```.
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


class Page:
    """One API page: the front-end module, how a kernel imports it, the name its entries carry, the registry's
    prefix for its calls, and whether it is NKI 0.6's."""

    def __init__(self, module: str, imports: str, qualifier: str, prefix: str, v06: bool) -> None:
        self.module, self.imports, self.qualifier, self.prefix, self.v06 = module, imports, qualifier, prefix, v06


#: the pages: NKI 0.6 first, then the legacy dialect
MODULES = {
    "nki": Page("nkisim.frontend.v06.nki", "import nki", "nki", "nki", True),
    "nl": Page("nkisim.frontend.v06.language", "import nki.language as nl", "nki.language", "nl", True),
    "nisa": Page("nkisim.frontend.v06.isa", "import nki.isa as nisa", "nki.isa", "nisa", True),
    "legacy-nki": Page("nkisim.frontend.nki", "import neuronxcc.nki as nki", "neuronxcc.nki", "nki", False),
    "legacy-nl": Page("nkisim.frontend.language", "import neuronxcc.nki.language as nl", "neuronxcc.nki.language",
                      "nl", False),
    "legacy-nisa": Page("nkisim.frontend.isa", "import neuronxcc.nki.isa as nisa", "neuronxcc.nki.isa", "nisa", False),
}
#: names a module holds that are not part of NKI (its own imports)
NOT_API = {"Any", "Callable", "annotations", "np", "sys", "enum", "logging"}
FENCE = "::::::"


def registry() -> dict[str, Any]:
    """The op registry's entries by call name (``nl.add``, ``nisa.activation``, ``tile.reshape``)."""
    from nkisim import api

    return {c.call: c for c in api.calls()}


def module_entries(page: str) -> list[tuple[str, Any]]:
    """(name, object) of every NKI name the front-end module of ``page`` exports, sorted."""
    module = importlib.import_module(MODULES[page].module)
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
    """What the registry says a call issues: its instructions with their engines and how each is priced, and its
    operands' memories."""
    if not call.instructions:
        return "**Issues** no instruction: a view, an allocation or trace-time state."
    kinds = "; ".join(f"`{i.kind}` ({i.engine})" + (f": {i.cost}" if i.cost else "") for i in call.instructions)
    spaces = " or ".join(f"`{s}`" for s in call.spaces if s)
    return f"**Issues** {kinds}." + (f" Tile operands in {spaces}." if spaces else "")


def changes(adapter: Any) -> str:
    """What an NKI 0.6 call changes from the legacy call of the registry entry it adapts (the adapter table)."""
    found = adapter.changes()
    if not found:
        return ""
    legacy = f"legacy `{adapter.legacy}`" if adapter.legacy else "the legacy API"
    return f"**From {legacy}:** " + "; ".join(found) + "."


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


def entry_lines(directive: str, sig: str, body: list[str]) -> list[str]:
    return [f"{FENCE}{{py:{directive}}} {sig}", "", *body, FENCE, ""]


def module_markdown(page: str) -> str:
    """The page body for an NKI 0.6 or legacy module."""
    from nkisim import api

    spec = MODULES[page]
    calls = registry()
    table = {a.name: a for a in api.adapters()} if spec.v06 else {}
    lines = [f"`{spec.imports}`", ""]
    names = {n for n, _ in module_entries(page)}
    if not spec.v06:
        missing = sorted(c for c in calls if c.startswith(spec.prefix + ".") and c.split(".", 1)[1] not in names)
        if missing:
            raise ExtensionError(f"registry calls missing from the front end's {spec.prefix}: {missing}")
    for name, obj in module_entries(page):
        qualified = f"{spec.qualifier}.{name}"
        adapter = table.get(qualified)
        entry = adapter.entry if adapter is not None else (None if spec.v06 else f"{spec.prefix}.{name}")
        call = calls.get(entry) if entry else None
        if call is not None:
            body = [docstring(call.doc, call.call), "", issues(call)]
            if adapter is not None and changes(adapter):
                body += ["", changes(adapter)]
            lines += entry_lines("function", signature(obj, qualified), body)
        elif inspect.isclass(obj) and not issubclass(obj, np.generic):
            own = obj.__dict__.get("__doc__")
            lines += entry_lines("class", qualified, [docstring(own, qualified) if own else "A class."])
        elif inspect.isroutine(obj) or callable(obj) and not isinstance(obj, np.dtype):
            lines += entry_lines("function", signature(obj, qualified),
                                 [docstring(inspect.getdoc(obj), qualified) or "A function."])
        else:
            lines += entry_lines("data", qualified, [value_doc(obj)])
    return "\n".join(lines)


def tile_markdown() -> str:
    """The page body for the operators and methods of tiles (the registry's ``tile.*`` calls)."""
    lines = []
    for name, call in sorted(registry().items()):
        if name.startswith("tile."):
            lines += entry_lines("function", name, [docstring(call.doc, name), "", issues(call)])
    return "\n".join(lines)


def migration_markdown() -> str:
    """The migration page's tables, from the adapter table: the changes that are not one call's, then every NKI 0.6
    call with the legacy call it replaces and what changed."""
    from nkisim import api

    lines = ["| legacy (`neuronxcc.nki`) | NKI 0.6 (`nki`) | AWS's source |", "|---|---|---|"]
    lines += [f"| {c.legacy} | {c.nki} | `{c.source}` |" for c in api.CONCEPTS]
    lines += ["", "(calls)=", "## Call by call", "",
              "Every NKI 0.6 call the simulator provides, the legacy call of the op-registry entry it adapts (the same "
              "checks, numerics and cost), and what changed. A call that issues no instruction of its own (loops, "
              "launches, queries) has no legacy counterpart here.", "",
              "| NKI 0.6 | legacy | what changed |", "|---|---|---|"]
    for a in api.adapters():
        new = f"{{py:obj}}`{a.name}`"
        old = f"{{py:obj}}`neuronxcc.{a.name}`" if a.legacy else "--"  # the legacy call's own page entry
        what = "; ".join(a.changes()) or ("the same call" if a.legacy else "no instruction of its own")
        lines.append(f"| {new} | {old} | {what.replace('|', '/')} |")
    return "\n".join(lines)


class Api(SphinxDirective):
    """``nki-api nki|nl|nisa|legacy-nki|legacy-nl|legacy-nisa|tile``: the entries of one API page."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        which = self.arguments[0]
        if which != "tile" and which not in MODULES:
            raise ExtensionError(f"{self.get_location()}: no API module {which!r}")
        text = tile_markdown() if which == "tile" else module_markdown(which)
        return self.parse_text_to_nodes(text)


class Migration(SphinxDirective):
    """``nki-migration``: the legacy -> NKI 0.6 tables, rendered from the adapter table."""

    def run(self) -> list[nodes.Node]:
        return self.parse_text_to_nodes(migration_markdown())


def setup(app: Sphinx) -> None:
    app.add_directive("nki-api", Api)
    app.add_directive("nki-migration", Migration)
