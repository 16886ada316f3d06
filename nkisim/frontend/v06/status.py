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

#: names that run with limits, and the limits
PARTIAL = {
    "nki.language.rand": "SBUF only",
    "nki.language.abs_max": "NeuronCore-v4 (trn3) only: refused on trn1/trn2 targets",
    "nki.language.abs_min": "NeuronCore-v4 (trn3) only: refused on trn1/trn2 targets",
    "nki.language.gather_flattened": "axis=0 only",
    "nki.language.no_reorder": "a chain of edges the cost model waits on; instructions are never reordered",
    "nki.language.NkiTensor.ap": "a tile as scalar_offset: HBM only, its pattern inside one slice of "
                                 "indirect_dim (a register works anywhere); vector_offset: as vector_select",
    "nki.language.NkiTensor.vector_select": "a view starting at a row that is not a multiple of its row count "
                                            "(data[b] works, data[2:40] does not), free positions leaving the selected "
                                            "row and a view with no free dimension are refused",
    "nki.language.NkiTensor.select": "a tile index is refused (an int or a register works)",
    "nki.isa.dma_compute": "static form only: the scatter/gather read-modify-write through vector_offset views is "
                           "refused",
    "nki.isa.rng": "a documented XORWOW generator of the simulator's own (seed expansion, lane order): not the "
                   "hardware's bits",
    "nki.isa.rand2": "a documented XORWOW generator of the simulator's own: not the hardware's bits",
    "nki.isa.core_barrier": "orders the barrier tensor's accesses; no cross-core edge in the cost model",
    "nki.isa.NkiInstruction": "depends_on edges are modelled; one on an instruction issued later is refused "
                              "(the simulator issues in program order)",
    "nki.jit": "kernel.with_schedule edges are modelled; a producer issued after its consumer is refused",
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
