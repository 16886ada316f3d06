"""NKI 0.6 binds strictly (issue 20 scope 1): no call of the 0.6 namespaces swallows keywords it does not know.
Checked on every function the namespaces export, not on a sample: a ``**kwargs`` parameter is allowed only where
AWS's own 0.6 signature has one (``nki.jit``'s compiler options) and on the calls refused outright, which raise
whatever they are given; each registry implementation behind them takes named parameters only."""

from __future__ import annotations

import inspect

import pytest

import nkisim
from nkisim.frontend.v06 import status

nkisim.install()

import nki  # noqa: E402
import nki.collectives as ncc  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

#: 0.6 functions whose published signature ends in ``**kwargs`` (AWS's docs source, nki/api/nki/__init__.py)
AWS_VARARGS = {"nki.jit"}
MODULES = {"nki": nki, "nki.language": nl, "nki.isa": nisa, "nki.collectives": ncc}


def _functions():
    for modname, mod in MODULES.items():
        for name in sorted(dir(mod)):
            f = getattr(mod, name)
            if not name.startswith("_") and inspect.isfunction(f):
                yield f"{modname}.{name}", modname, name, f


def _swallows(f) -> bool:
    return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(f).parameters.values())


def test_no_implemented_06_call_swallows_unknown_keywords():
    loose = [full for full, modname, name, f in _functions()
             if full not in AWS_VARARGS and status.classify(modname, name)[0] != "refused" and _swallows(f)]
    assert loose == []
    assert sum(1 for _ in _functions()) > 100  # the namespaces were really walked


@pytest.mark.parametrize("full,modname,name,f", [x for x in _functions() if status.classify(x[1], x[2])[0] == "refused"
                                                  and _swallows(x[3])], ids=lambda v: v if isinstance(v, str) else "")
def test_a_refused_call_says_so_whatever_it_is_given(full, modname, name, f):
    with pytest.raises(NotImplementedError, match=rf"^{full}\b.* not supported by the nkisim simulator"):
        f(None, bogus=1)


def test_every_registry_implementation_takes_named_parameters():
    import neuronxcc.nki.isa  # noqa: F401  (both front ends register their calls)
    import neuronxcc.nki.language  # noqa: F401

    from nkisim.ops.registry import OPS

    # views declared on the tile class (t.reshape(*shape)) are methods, not instructions
    loose = [call for call, entry in OPS.items() if _swallows(entry.impl) and not call.startswith("tile.")]
    assert loose == [] and len(OPS) > 100
