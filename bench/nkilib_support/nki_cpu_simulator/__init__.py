"""Stand-in for ``nki_cpu_simulator``, AWS's CPU simulator, which nki-library's ``--test-mode simulation`` imports
(test/utils/simulation_setup.py) and aliases onto ``nki``, ``nki.language``, ``nki.isa`` ... : here those names are
nkisim's NKI 0.6 front end, so every kernel of the library runs on nkisim through ``nki.cpu_simulate``.

The harness's ``nki``/``nki.language`` are copies of nkisim's modules with the few submodules the harness imports
and nkisim does not have (``builtin``, ``compiler``, ``tensor``, ``language.dtypes``: nki-library's kernels use
none of them) attached as empty modules, so nkisim's own modules are left as they are.
"""

from __future__ import annotations

import sys
import types

import nkisim

nkisim.install(force=True)

import nki as _nki  # noqa: E402 - after install: nkisim's front end
import nki.isa  # noqa: E402, F401
import nki.isa.constants  # noqa: E402, F401
import nki.language  # noqa: E402, F401
import nki.typing  # noqa: E402, F401


def _copy(module: types.ModuleType) -> types.ModuleType:
    twin = types.ModuleType(module.__name__, module.__doc__)
    twin.__dict__.update(module.__dict__)
    return twin


nki = _copy(_nki)
_language = _copy(sys.modules["nki.language"])
nki.language = _language
_modules = {"nki": nki, "nki.language": _language, "nki.isa": sys.modules["nki.isa"],
            "nki.isa.constants": sys.modules["nki.isa.constants"], "nki.typing": sys.modules["nki.typing"]}
for _name in ("builtin", "compiler", "tensor"):
    _modules[f"nki.{_name}"] = types.ModuleType(f"nki_cpu_simulator.nki.{_name}")
    setattr(nki, _name, _modules[f"nki.{_name}"])
_modules["nki.language.dtypes"] = types.ModuleType("nki_cpu_simulator.nki.language.dtypes")
_language.dtypes = _modules["nki.language.dtypes"]
for _name, _module in _modules.items():
    sys.modules[f"nki_cpu_simulator.{_name}"] = _module
