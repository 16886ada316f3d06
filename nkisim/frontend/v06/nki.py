"""``nki`` (NKI 0.6) on the simulator: ``nki.jit``, ``nki.simulate`` and the submodules.

``import nki`` resolves here wherever AWS's ``nki`` package is not installed, or only PyPI's placeholder is
(``nkisim.activation``).  The legacy entry points ``nki.benchmark``, ``nki.profile``, ``nki.baremetal`` and
``nki.simulate_kernel`` do not exist in NKI 0.6; asking for one says where nkisim's latency and profile are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.frontend.v06 import collectives, isa, language, typing  # noqa: F401
from nkisim.frontend.v06.adapters.kernel import Kernel, cpu_simulate, jit, simulate  # noqa: F401

__path__: list[str] = []  # makes ``nki.<submodule>`` importable through the finder
SIMULATED = True
__version__ = "0.6.0"

#: ``nki.dtype``: the type of NKI dtypes, for annotations (``dtype: nki.dtype = nl.bfloat16``)
dtype = np.dtype

_LEGACY = ("benchmark", "profile", "baremetal", "simulate_kernel", "trace")


def __getattr__(name: str) -> Any:
    if name in _LEGACY:
        # rule: nki.legacy_entry_point
        raise AttributeError(f"module 'nki' has no attribute '{name}': NKI 0.6 has no nki.{name} (NKI 0.2 dropped the "
                             f"legacy entry points). On nkisim, run the "
                             f"script with `python -m nkisim --latency script.py` for each launch's estimated latency, "
                             f"or use nkisim.api.launch(kernel, args).latency_us() / .profile()")
    # rule: python.no_attribute
    raise AttributeError(f"module 'nki' has no attribute '{name}'")
