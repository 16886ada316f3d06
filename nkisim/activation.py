"""Making ``import neuronxcc.nki`` and ``import nki`` resolve to the simulator, without ever shadowing the real thing.

Legacy: a meta-path finder maps the ``neuronxcc`` names onto ``nkisim.frontend``.  By default it is added at
the *end* of ``sys.meta_path``, so a real installed ``neuronxcc`` wins; it goes to the front when
``NKI_SIMULATOR=1`` is set or when the installed ``neuronxcc`` is PyPI's placeholder (whose import
raises "WRONG PACKAGE").

NKI 0.6: a second finder maps ``nki`` and its submodules onto ``nkisim.frontend.v06``.  It sits at the front
of ``sys.meta_path`` but claims ``nki`` only when no real package provides it: none is installed, or only
PyPI's placeholder ``nki`` (which raises "WRONG PACKAGE" too).  A real ``nki`` is never shadowed unless
``NKISIM_FORCE=1`` asks for nkisim (``NKI_SIMULATOR`` means AWS's own simulator in NKI 0.6, so it does not).
``NKISIM_FORCE=1`` forces the legacy names too.  Kept free of heavy imports: the course venv loads this module
from a .pth file.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
import types
from importlib._abc import Loader  # the base importlib.util itself uses: no import beyond abc
from typing import NamedTuple

_MAP = {
    "neuronxcc.nki": "nkisim.frontend.nki",
    "neuronxcc.nki.language": "nkisim.frontend.language",
    "neuronxcc.nki.isa": "nkisim.frontend.isa",
    "neuronxcc.nki.typing": "nkisim.frontend.typing",
    "neuronxcc.nki.compiler": "nkisim.frontend.compiler",
    "neuronxcc.nki.isa.constants": "nkisim.frontend.isa_constants",
    "neuronxcc.nki.language.constants": "nkisim.frontend.language_constants",
}


_NKI_MAP = {
    "nki": "nkisim.frontend.v06.nki",
    "nki.language": "nkisim.frontend.v06.language",
    "nki.isa": "nkisim.frontend.v06.isa",
    "nki.isa.constants": "nkisim.frontend.v06.isa_constants",
    "nki.typing": "nkisim.frontend.v06.typing",
    "nki.collectives": "nkisim.frontend.v06.collectives",
}

#: the nkisim-specific variable that makes the simulator provide ``nki`` and ``neuronxcc`` even over real ones
FORCE_ENV = "NKISIM_FORCE"


class Switch(NamedTuple):
    """How to choose the simulator for each dialect: a setting and what it does (one wording for ``python -m nkisim
    --help``, the README and the docs; ``tests/test_dialect_switch.py`` holds them to it)."""

    setting: str
    effect: str


SWITCHES = (
    Switch("(nothing set)", "`import nki` (NKI 0.6) and `import neuronxcc.nki` (legacy) run on nkisim wherever AWS's "
                            "package is missing or only PyPI's placeholder is installed; a real one is used"),
    Switch("NKISIM_FORCE=1", "both dialects run on nkisim even where AWS's packages are installed (`python -m nkisim` "
                             "always does this)"),
    Switch("NKI_SIMULATOR=1", "legacy `neuronxcc.nki` runs on nkisim even where the Neuron compiler is installed; for "
                              "`import nki` it keeps AWS's meaning, AWS's own simulator"),
)


def _forced() -> bool:
    return os.environ.get(FORCE_ENV, "") not in ("", "0")


def _spec(fullname: str) -> importlib.machinery.ModuleSpec:
    """A package spec served by ``_Loader`` (what ``importlib.util.spec_from_loader(..., is_package=True)`` makes)."""
    return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)


# The finders follow the import protocol by duck typing, as importlib's own finders do, and the loader derives from
# ``importlib._abc.Loader`` (the base ``importlib.util`` uses), rather than from ``importlib.abc``: this module is loaded by a .pth file in every Python process of the course venv
# (each sandboxed child, executor server, notebook kernel and nbgrader process: thousands per class), and
# importing ``importlib.abc`` pulls in ``importlib.resources`` -- about 20 ms of every process's start-up.
class _Loader(Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name == "neuronxcc":
            mod = types.ModuleType("neuronxcc", "Stand-in for the Neuron compiler package (nkisim simulator).")
            mod.__path__ = []
            mod.__version__ = "nkisim"  # type: ignore[attr-defined]
            return mod
        return importlib.import_module(_MAP.get(spec.name) or _NKI_MAP[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class SimulatorFinder:
    """Resolves ``neuronxcc`` and ``neuronxcc.nki[.*]`` to the simulator's front end."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == "neuronxcc" or fullname in _MAP:
            return _spec(fullname)
        return None


_finder = SimulatorFinder()


class NkiFinder:
    """Resolves ``nki`` and its submodules to the NKI 0.6 front end where no real ``nki`` is installed.

    ``force``: provide ``nki`` even over a real installation (``NKISIM_FORCE=1``, ``python -m nkisim``)."""

    def __init__(self) -> None:
        self.force = False

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _NKI_MAP:
            return None
        if fullname == "nki":
            if not (self.force or _forced() or not _real_package_present("nki")):
                return None
        elif not _ours(sys.modules.get("nki")):
            return None  # a submodule of the real nki
        return _spec(fullname)


_nki_finder = NkiFinder()


def _ours(module: object) -> bool:
    """``module`` is one of the simulator's front-end modules (imported under an ``nki``/``neuronxcc`` name)."""
    return getattr(module, "__name__", "").startswith("nkisim.frontend")


def _real_package_present(name: str) -> bool:
    """True when a genuine ``name`` (not PyPI's "WRONG PACKAGE" placeholder) is importable."""
    spec = importlib.machinery.PathFinder.find_spec(name)
    if spec is None:
        return False
    if spec.origin is None:  # a namespace package: assume it is real
        return True
    try:
        with open(spec.origin, encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:
        return True
    return "WRONG PACKAGE" not in head


def _real_neuronxcc_present() -> bool:
    """True when a genuine neuronxcc (not PyPI's placeholder) is importable."""
    return _real_package_present("neuronxcc")


def _install_nki(force: bool) -> None:
    """Put the ``nki`` finder first on ``sys.meta_path`` (it claims ``nki`` only where no real one is, unless
    forced); a placeholder or stale ``nki`` already imported is dropped so the next import finds the simulator."""
    _nki_finder.force = force
    if _nki_finder in sys.meta_path:
        sys.meta_path.remove(_nki_finder)
    sys.meta_path.insert(0, _nki_finder)
    stale = sys.modules.get("nki")
    if stale is not None and not _ours(stale) and (
            force or _forced() or not _real_package_present("nki")):
        for name in [m for m in sys.modules if m == "nki" or m.startswith("nki.")]:
            del sys.modules[name]


def provides_nki() -> bool:
    """Whether ``import nki`` gives (or gave) the simulator's NKI 0.6 front end."""
    mod = sys.modules.get("nki")
    if mod is not None:
        return _ours(mod)
    return _nki_finder in sys.meta_path and (_nki_finder.force or _forced() or not _real_package_present("nki"))


def using_simulator() -> bool:
    return _finder in sys.meta_path


def install(force: bool | None = None) -> bool:
    """Route ``neuronxcc`` and ``nki`` imports to the simulator where the real packages are absent (or PyPI's
    placeholders); ``force`` routes them even over real ones.

    Returns True when the simulator is (now) the provider of ``neuronxcc.nki`` (``provides_nki()`` tells for
    ``nki``).  ``NKI_SIMULATOR=1`` forces ``neuronxcc`` only; ``NKISIM_FORCE=1`` forces both.
    """
    _install_nki(bool(force) or _forced())
    if force is None:
        force = os.environ.get("NKI_SIMULATOR", "") not in ("", "0") or _forced()
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    real = _real_neuronxcc_present()
    if force or not real:
        sys.meta_path.insert(0, _finder)
        stale = sys.modules.get("neuronxcc")
        if stale is not None and not isinstance(getattr(stale, "__loader__", None), _Loader):
            for name in [m for m in sys.modules if m == "neuronxcc" or m.startswith("neuronxcc.")]:
                del sys.modules[name]
        return True
    return False


def install_fallback() -> None:
    """Entry point for the venv's .pth hook: never raises, never shadows a real installation."""
    try:
        if _nki_finder not in sys.meta_path:
            sys.meta_path.insert(0, _nki_finder)
        if os.environ.get("NKI_SIMULATOR", "") not in ("", "0") or _forced():
            install(force=True)
        elif _finder not in sys.meta_path:
            sys.meta_path.append(_finder)
    except Exception:  # pragma: no cover - a startup hook must not break the interpreter
        pass


def uninstall() -> None:
    for finder in (_finder, _nki_finder):
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
    for name in [m for m in sys.modules if m == "neuronxcc" or m.startswith("neuronxcc.")]:
        del sys.modules[name]
    for name in [m for m in sys.modules if m == "nki" or m.startswith("nki.")]:
        if _ours(sys.modules[name]):
            del sys.modules[name]
