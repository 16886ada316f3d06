"""Every NKI call the simulator registers is checked twice: its numbers, and its refusal of a misuse.

The registry (``nkisim.core.recording.CALLS``) is what a kernel can call and what a recorded program may
contain; ``call_cases.CASES`` holds one case per name.  A call registered without a case fails
``test_every_registered_call_has_a_case``, so a new API cannot land untested.  Each numerics test runs
the case's kernel on NumPy inputs and compares with a reference written independently of nkisim (NumPy,
or torch for activations), or checks properties for random calls.  Each error test runs a kernel that
misuses the call and checks what a student reads: the builtin exception class, the error id, a key
phrase of the compiler's message, and that ``err.nki_location`` names the kernel's own ``# ERR`` line.
"""

import inspect
import os
import traceback
from typing import Any

import call_cases
import neuronxcc.nki as nki
import numpy as np
import pytest
from call_cases import CASES, CallCase

import nkisim.api  # noqa: F401  (registers every front end, so CALLS is complete)
from nkisim.core.errors import NKIError
from nkisim.core.recording import CALLS

CASES_FILE = os.path.abspath(call_cases.__file__)


def marker_line(fn: Any, marker: str = "# ERR") -> int:
    """Line number (in call_cases.py) of the one source line of ``fn`` that carries ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if line.rstrip().endswith(marker)]
    assert len(hits) == 1, f"expected exactly one '{marker}' line in {fn.__name__}, found {len(hits)}"
    return hits[0]


def jitted(fn: Any, target: str | None) -> Any:
    return nki.jit(fn) if target is None else nki.jit(fn, platform_target=target)


def param(name: str, xfail: str | None) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(name, id=name, marks=marks)


def test_every_registered_call_has_a_case() -> None:
    """The table and the registry name the same calls: no call goes untested, no case tests a ghost."""
    missing, extra = sorted(set(CALLS) - set(CASES)), sorted(set(CASES) - set(CALLS))
    assert not missing and not extra, f"registered calls without a case: {missing}; cases for no call: {extra}"


def test_calls_without_a_refusal_say_why() -> None:
    """A case with no error kernel must carry its reason, and only such cases may carry one."""
    for name, case in CASES.items():
        if case.refusal is None:
            assert case.no_refusal and len(case.no_refusal) > 20, name
        else:
            assert case.no_refusal is None, name


def compare(got: Any, expected: Any, case: CallCase) -> None:
    got_t = got if isinstance(got, tuple) else (got,)
    exp_t = expected if isinstance(expected, tuple) else (expected,)
    assert len(got_t) == len(exp_t), (len(got_t), len(exp_t))
    for g, e in zip(got_t, exp_t):
        e = np.asarray(e)
        assert g.shape == e.shape, (g.shape, e.shape)
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("name", [param(n, c.xfail) for n, c in sorted(CASES.items())])
def test_numerics(name: str) -> None:
    """The call computes what its independent reference says (or has the properties a random call must)."""
    case = CASES[name]
    got = jitted(case.kernel, case.target)(*case.inputs)
    if case.check is not None:
        case.check(got, case.inputs)
    else:
        assert case.reference is not None, name
        compare(got, case.reference(*case.inputs), case)


REFUSED = sorted((n, c) for n, c in CASES.items() if c.refusal is not None)


@pytest.mark.parametrize("name", [param(n, c.refusal.xfail) for n, c in REFUSED])
def test_refusal(name: str) -> None:
    """The misuse is refused with the spec's class, id and phrase, blamed on the kernel's own line (in
    ``nki_location`` and as the traceback's last frame), as neuronx-cc shows it."""
    r = CASES[name].refusal
    kernel = jitted(r.kernel, r.target)
    with pytest.raises(Exception) as info:
        kernel(*r.inputs)
    err = info.value
    assert isinstance(err, r.exc), f"{type(err).__mro__} is not a {r.exc}: {err}"
    assert r.phrase in str(err), str(err)
    if r.error_id is not None:
        assert isinstance(err, NKIError), f"{type(err).__name__}: {err}"
        assert err.error_id == r.error_id, str(err)
    line = marker_line(r.kernel)
    assert getattr(err, "nki_location", None) == (CASES_FILE, line), str(err)
    last = traceback.extract_tb(err.__traceback__)[-1]  # the traceback a student reads ends on their line too
    assert (os.path.abspath(last.filename), last.lineno) == (CASES_FILE, line), (last.filename, last.lineno)
