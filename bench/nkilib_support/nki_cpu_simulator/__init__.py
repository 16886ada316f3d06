"""Stand-in for ``nki_cpu_simulator``, AWS's CPU simulator, which nki-library's ``--test-mode simulation`` imports
(test/utils/simulation_setup.py) and aliases onto ``nki``, ``nki.language``, ``nki.isa`` ... : here those names are
nkisim's NKI 0.6 front end, so every kernel of the library runs on nkisim through ``nki.cpu_simulate``.

The harness's ``nki``/``nki.language`` are copies of nkisim's modules with the few submodules the harness imports
and nkisim does not have (``builtin``, ``compiler``, ``tensor``, ``language.dtypes``: nki-library's kernels use
none of them) attached as empty modules, so nkisim's own modules are left as they are.
"""

from __future__ import annotations

import json
import os
import sys
import time
import types
from typing import Any

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


# --- what each simulated launch cost, for the full-size row of ``make bench`` (bench/nkilib_suite.py) -------------
#: ``NKILIB_SIM_LOG``: a file to which each ``nki.cpu_simulate(...)(...)`` call appends one JSON line: the pytest case
#: running it, the simulator's seconds (the launch, values included), the cost model's latency estimate for the
#: launch's target and the seconds that estimate took; the harness's own work (torch references, input generation,
#: comparisons) is not in them
_LOG = os.environ.get("NKILIB_SIM_LOG", "")


class _TimedSimulation:
    """``nki.cpu_simulate(kernel)`` whose calls are timed and estimated into ``NKILIB_SIM_LOG``."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim

    def __getitem__(self, lnc: Any) -> _TimedSimulation:
        return _TimedSimulation(self.sim[lnc])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from nkisim import api

        with api.watching() as seen:
            t0 = time.perf_counter()
            out = self.sim(*args, **kwargs)
            seconds = time.perf_counter() - t0
        entry: dict[str, Any] = {"case": os.environ.get("PYTEST_CURRENT_TEST", ""), "sim_s": seconds}
        if seen:
            t0 = time.perf_counter()
            entry["estimate_us"] = sum(launch.latency_us() for launch in seen)
            entry["estimate_s"] = time.perf_counter() - t0
            entry["target"] = seen[-1].target_label
        with open(_LOG, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
        return out


if _LOG:
    _untimed = nki.cpu_simulate

    def _cpu_simulate(kernel: Any) -> _TimedSimulation:
        return _TimedSimulation(_untimed(kernel))

    _cpu_simulate.__doc__ = _untimed.__doc__
    nki.cpu_simulate = _cpu_simulate
