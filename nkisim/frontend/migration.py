"""The adapter table: every NKI 0.6 call of the simulator's front end, the op-registry entry it adapts, and how its
spelling differs from the legacy call of that entry.

Each 0.6 function of ``nki``, ``nki.language`` and ``nki.isa`` is an adapter onto a registry entry of the same name
(``nki.isa.nc_matmul`` onto ``nisa.nc_matmul``, ``nki.language.load`` onto ``nl.load``) unless ``OTHER_ENTRY``
names another, or issues no instruction of its own (loops, launches, queries).  The table is computed from the two
front ends themselves -- their names and signatures -- so it cannot drift from them; ``docs/migration.md`` and the
API pages render it (``nkisim.api.adapters``), and ``tests/test_adapter_table.py`` checks each entry against the
registry entry its adapter really calls.

``CONCEPTS`` are the changes that are not one call's: loops, masks, launches, timing. Each cites the AWS page that
states it.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any

#: the 0.6 module of each public name prefix, and the legacy front-end module and prefix of the same calls
MODULES = {
    "nki": ("nkisim.frontend.v06.nki", "nkisim.frontend.nki", "nki"),
    "nki.language": ("nkisim.frontend.v06.language", "nkisim.frontend.language", "nl"),
    "nki.isa": ("nkisim.frontend.v06.isa", "nkisim.frontend.isa", "nisa"),
}
#: the short names the course writes (``import nki.language as nl``)
SHORT = {"nki": "nki", "nki.language": "nl", "nki.isa": "nisa"}

#: 0.6 calls whose registry entry is not the legacy call of the same name, and why
OTHER_ENTRY = {
    "nki.language.copy": ("nisa.tensor_copy", "NKI 0.6 runs nl.copy as the Vector engine's tensor_copy (bit-exact "
                                              "when the dtypes match); legacy nl.copy copies through the Scalar "
                                              "engine (AWS: nki.language.copy, SDK 2.32 release notes)"),
    "nki.language.rsqrt": ("nisa.tensor_scalar", "NKI 0.5 moved nl.rsqrt to the GpSimd engine (\"now runs on the "
                                                 "GpSimd Engine for higher numerical precision\", no PSUM input: "
                                                 "nki/migration/index.rst); legacy nl.rsqrt is a Scalar engine "
                                                 "activation"),
}
#: 0.6 calls with a registry entry that the legacy API never had: the names of AWS's 0.6 API files
#: (``nki/api/nki/{isa,language}/__init__.py``, SDK 2.32) missing from the legacy ones (tag v2.26.0,
#: ``general/nki/api/nki/{isa,language}/__init__.py``), compared on 2026-11-29
NEW_IN_06 = frozenset({
    "nki.language.abs_max", "nki.language.abs_min", "nki.language.gelu_apprx_sigmoid_dx",
    "nki.isa.activate2", "nki.isa.core_barrier", "nki.isa.dma_compute", "nki.isa.exponential", "nki.isa.nc_matmul_mx",
    "nki.isa.nc_n_gather", "nki.isa.nonzero_with_count", "nki.isa.quantize_mx", "nki.isa.rand2",
    "nki.isa.rand_get_state", "nki.isa.rand_set_state", "nki.isa.register_load", "nki.isa.register_store",
    "nki.isa.rng", "nki.isa.sendrecv", "nki.isa.set_rng_seed", "nki.isa.tensor_scalar_cumulative", "nki.isa.topk",
})
#: legacy parameters NKI 0.6 dropped everywhere, and what replaced them
DROPPED = {
    "mask": "no masks: slice the tile to the rows that exist",
    "dtype": "the result's dtype is dst's",
}


@dataclass(frozen=True)
class Adapter:
    """One NKI 0.6 call and the legacy call of the registry entry it adapts."""

    name: str  # "nki.isa.nc_matmul"
    short: str  # "nisa.nc_matmul", as the course writes it
    params: tuple[str, ...]  # its parameters, in AWS's order
    entry: str | None  # the registry entry it calls; None: it issues no instruction of its own
    legacy: str | None  # the legacy call of that entry ("nisa.nc_matmul"), where the legacy front end has one
    legacy_params: tuple[str, ...]  # that call's parameters
    note: str  # why the entry differs from the same-named one, or ""

    @property
    def added(self) -> tuple[str, ...]:
        """Parameters NKI 0.6 has and the legacy call has not (``dst`` first, for every instruction)."""
        return tuple(p for p in self.params if p not in self.legacy_params) if self.legacy else ()

    @property
    def removed(self) -> tuple[str, ...]:
        """Legacy parameters NKI 0.6 no longer takes (``mask``, ``dtype``...)."""
        return tuple(p for p in self.legacy_params if p not in self.params) if self.legacy else ()

    def changes(self) -> list[str]:
        """What changed, in words."""
        found = []
        if self.params[:1] == ("dst",):
            found.append("writes into `dst` (its first argument) and returns an `NkiInstruction`")
        for p in self.added:
            if p not in ("dst", "name"):
                found.append(f"new `{p}=`")
        for p in self.removed:
            found.append(f"no `{p}=`" + (f" ({DROPPED[p]})" if p in DROPPED else ""))
        if self.legacy is None and self.entry is not None:
            found.append("new in NKI 0.6")
        if self.note:
            found.append(self.note)
        return found


@dataclass(frozen=True)
class Concept:
    """A change between the dialects that is not one call's."""

    legacy: str
    nki: str
    source: str  # the AWS page that states it


CONCEPTS = (
    Concept("`import neuronxcc.nki as nki`, `neuronxcc.nki.language`, `neuronxcc.nki.isa`",
            "`import nki`, `nki.language`, `nki.isa`; `neuronxcc.nki` inside a kernel is a compile error since SDK 2.30",
            "nki/migration/index.rst"),
    Concept("`for i in nl.affine_range(n)` / `nl.sequential_range(n)`, a symbolic loop index",
            "`for i in range(n)`: the kernel's Python runs at compile time and the loop is unrolled (the old names are "
            "deprecated aliases of `range`)", "nki/get-started/nki-language-guide.rst, \"Compilation Model\""),
    Concept("`nl.arange` index grids and `mask=(rows < n)` for a ragged tile",
            "slices and views (`t[lo:hi, :]`, `.ap(...)`): a smaller tile, its size a Python int",
            "nki/migration/index.rst, \"block dimension\"; nki/deep-dives/nki-aps.rst"),
    Concept("`t = nisa.tensor_tensor(a, b, op=np.add)`: each call returns a new tile",
            "`nisa.tensor_tensor(dst=t, data1=a, data2=b, op=nl.add)`: the output first, operators from `nl`",
            "nki/api/nki/isa/__init__.py"),
    Concept("`acc += nl.matmul(x, y, transpose_x=True)` on a zeroed PSUM tile",
            "`nisa.nc_matmul(dst=acc, stationary=x, moving=y)`: the first matmul into a PSUM location overwrites it, "
            "later ones add (`accumulate=None`)", "nki/api/nki/isa/__init__.py, nc_matmul"),
    Concept("`kernel[4](...)`, `kernel[nl.nc(2)](...)`: an SPMD grid of instances",
            "`kernel[2](...)`: the logical-core degree (1 or 2); a grid in turn on one core is the kernel's own loop",
            "nki/get-started/about/lnc.rst"),
    Concept("`nki.benchmark(kernel)` and `nki.profile(...)`",
            "none in `nki`: compile with `NEURON_FRAMEWORK_DEBUG=1` and time the NEFF with nrtpy or `neuron-explorer "
            "capture` (on nkisim: `python -m nkisim --latency`, `nkisim.api`)",
            "nki/guides/use-neuron-profile.rst; neuron-runtime/nrtpy/tutorial-validate-benchmark.rst"),
    Concept("`nki.jit(kernel, platform_target=\"trn1\")`",
            "`NEURON_PLATFORM_TARGET_OVERRIDE=trn1` (the keyword is an error since 0.3)", "nki/migration/index.rst"),
)


def _params(fn: Any) -> tuple[str, ...]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in sig.parameters.values() if not (p.kind is p.VAR_KEYWORD and p.name == "_"))


def _callables(module: Any) -> list[tuple[str, Any]]:
    return [(n, getattr(module, n)) for n in sorted(dir(module)) if not n.startswith("_")
            and (inspect.isfunction(getattr(module, n)) or callable(getattr(module, n)) and
                 type(getattr(module, n)).__module__.startswith("nkisim.ops"))
            and not inspect.isclass(getattr(module, n)) and not inspect.ismodule(getattr(module, n))]


def adapters() -> list[Adapter]:
    """The table, one row per NKI 0.6 function of ``nki``, ``nki.language`` and ``nki.isa``, sorted by name."""
    from nkisim.ops.registry import OPS

    rows = []
    for prefix, (v06, legacy_module, short) in MODULES.items():
        module, old = importlib.import_module(v06), importlib.import_module(legacy_module)
        for name, fn in _callables(module):
            qualified = f"{prefix}.{name}"
            entry, note = OTHER_ENTRY.get(qualified, (f"{short}.{name}", ""))
            if entry not in OPS:
                entry = None
            legacy_fn = getattr(old, name, None) if entry is not None and qualified not in NEW_IN_06 else None
            legacy = f"{short}.{name}" if legacy_fn is not None and callable(legacy_fn) else None
            rows.append(Adapter(qualified, f"{short}.{name}", _params(fn), entry, legacy,
                                _params(legacy_fn) if legacy else (), note))
    return rows
