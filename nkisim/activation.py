"""Making ``import neuronxcc.nki`` resolve to the simulator, without ever shadowing the real thing.

A meta-path finder maps the ``neuronxcc`` names onto ``nkisim.frontend``.  By default it is added at
the *end* of ``sys.meta_path``, so a real installed ``neuronxcc`` wins; it goes to the front when
``NKI_SIMULATOR=1`` is set or when the installed ``neuronxcc`` is PyPI's placeholder (whose import
raises "WRONG PACKAGE").  Kept free of heavy imports: the course venv loads it from a .pth file.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

_MAP = {
    "neuronxcc.nki": "nkisim.frontend.nki",
    "neuronxcc.nki.language": "nkisim.frontend.language",
    "neuronxcc.nki.isa": "nkisim.frontend.isa",
    "neuronxcc.nki.typing": "nkisim.frontend.typing",
    "neuronxcc.nki.compiler": "nkisim.frontend.compiler",
    "neuronxcc.nki.isa.constants": "nkisim.frontend.isa_constants",
    "neuronxcc.nki.language.constants": "nkisim.frontend.language_constants",
}


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name == "neuronxcc":
            mod = types.ModuleType("neuronxcc", "Stand-in for the Neuron compiler package (nkisim simulator).")
            mod.__path__ = []  # type: ignore[attr-defined]
            mod.__version__ = "nkisim"  # type: ignore[attr-defined]
            return mod
        return importlib.import_module(_MAP[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class SimulatorFinder(importlib.abc.MetaPathFinder):
    """Resolves ``neuronxcc`` and ``neuronxcc.nki[.*]`` to the simulator's front end."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == "neuronxcc" or fullname in _MAP:
            return importlib.util.spec_from_loader(fullname, _Loader(), is_package=True)
        return None


_finder = SimulatorFinder()


def _real_neuronxcc_present() -> bool:
    """True when a genuine neuronxcc (not PyPI's placeholder) is importable."""
    spec = importlib.machinery.PathFinder.find_spec("neuronxcc")
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


def using_simulator() -> bool:
    return _finder in sys.meta_path


def install(force: bool | None = None) -> bool:
    """Route ``neuronxcc`` imports to the simulator where the real compiler is absent.

    Returns True when the simulator is (now) the provider of ``neuronxcc.nki``.
    """
    if force is None:
        force = os.environ.get("NKI_SIMULATOR", "") not in ("", "0")
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
        if os.environ.get("NKI_SIMULATOR", "") not in ("", "0"):
            install(force=True)
        elif _finder not in sys.meta_path:
            sys.meta_path.append(_finder)
    except Exception:  # pragma: no cover - a startup hook must not break the interpreter
        pass


def uninstall() -> None:
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [m for m in sys.modules if m == "neuronxcc" or m.startswith("neuronxcc.")]:
        del sys.modules[name]
