"""How much of NKI 0.6 the simulator runs: each name of AWS's 0.6 API is implemented, partial, refused or missing.

``classify`` answers for one name from the front end itself: a name the front end lacks is missing; a callable that
carries ``__nki06_refused__`` (it raises a clear "not supported by the simulator yet" error) is refused; a name in
``PARTIAL`` runs with the limits noted there; anything else is implemented.  ``bench/nki06_api_status.py`` walks
AWS's API files with it to build the table in ``docs/nki06.md``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: the simulator's module for each public 0.6 module
MODULES = {
    "nki": "nkisim.frontend.v06.nki",
    "nki.language": "nkisim.frontend.v06.language",
    "nki.isa": "nkisim.frontend.v06.isa",
    "nki.collectives": "nkisim.frontend.v06.collectives",
}

#: names that run with limits, and the limits, each with the line of AWS's 0.6 API files (nki/api/nki/<module>/
#: __init__.py of the docs source) that documents what is not run.  A name whose only limit is one AWS documents
#: (abs_max on NeuronCore-v4 only, no_reorder's program order) is implemented, not partial.
PARTIAL = {
    "nki.language.gather_flattened": "axis=0 only, the one axis AWS's docs define: the index selects 'from the free "
                                     "dimension of data' (language:2289), all free dimensions flattened as one row "
                                     "(SDK 2.26's docstring); what axis (language:2297) does otherwise is undocumented",
    "nki.isa.rng": "a documented XORWOW generator of the simulator's own (seed expansion, lane order): AWS's docs "
                   "do not give the hardware's bits (isa:2087)",
    "nki.isa.rand2": "a documented XORWOW generator of the simulator's own: AWS's docs do not give the hardware's "
                     "bits (isa:2242)",
    "nki.isa.core_barrier": "holds the engine it names on each core until the later core arrives (isa:2627 'The "
                            "barrier will block execution on this engine'); engine=sync or dma holds none: the cost "
                            "model has no Sync engine sequencer, which AWS's docs say triggers DMAs 'without "
                            "interfering with compute engine instruction scheduling' (trainium_inferentia2_arch.rst:58)",
    "nki.isa.NkiInstruction": "depends_on edges are modelled; a producer issued after its consumer moves the "
                              "consumer after it, but not past an instruction touching what it touches or waiting "
                              "for it (refused: the simulator runs instructions in the order they are issued), which "
                              "AWS's docs allow (isa:149 'self (consumer) runs after each producer')",
    "nki.jit": "kernel.with_schedule edges are modelled; a producer issued after its consumer moves the consumer "
               "after it, but not past an instruction touching what it touches or waiting for it (refused: the "
               "simulator runs instructions in the order they are issued), which AWS's scheduling edges allow "
               "(isa:149)",
}

MISSING = object()


def simulator_object(module: str, name: str) -> Any:
    """The simulator's object for ``module.name`` (``name`` may be ``Class.member``), or ``MISSING``."""
    obj: Any = importlib.import_module(MODULES[module])
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return MISSING
    return obj


def classify(module: str, name: str) -> tuple[str, str]:
    """(state, note) of ``module.name``: state is implemented, partial, refused or missing."""
    obj = simulator_object(module, name)
    if obj is MISSING:
        return "missing", ""
    refused = getattr(obj, "__nki06_refused__", None)
    if refused:
        return "refused", refused
    note = PARTIAL.get(f"{module}.{name}")
    return ("partial", note) if note else ("implemented", "")
