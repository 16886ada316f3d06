"""Tracing's shortcuts give what the long way gives.

A kernel whose Python loops unroll (as students' kernels do) makes one NKI call per instruction, indexing the same
views again and again, so tracing takes shortcuts for the common case: an NKI 0.6 view indexed with integers and
unit-step slices skips the general checks (``layout.plain_index``); a view lowered to an access of constant
bounds is normalised once per key and made again from its parts (``Access.again``); a PSUM region every element of
which has started accumulating is not tested again (``Tensor.matmul_accumulated``); and a process that only traces
never imports the cost model.  Each is checked against the long way: the same views and errors, the same accesses,
the same accumulation as NumPy's, no module of the cost model's scheduling loaded.
"""

from __future__ import annotations

import subprocess
import sys

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np
import pytest

from nkisim import api
from nkisim.core.access import Access
from nkisim.frontend.v06.adapters import layout
from nkisim.frontend.v06.adapters import tensor as views
from nkisim.frontend.v06.adapters.tensor import NkiTensor


def _keys(shape: tuple[int, ...], rng: np.random.Generator, count: int) -> list[tuple]:
    """Keys of every kind a kernel writes, most of them the common kind, some out of bounds or of other types."""
    keys: list[tuple] = [(), (Ellipsis,), (0,), (-1,), (slice(None),), (1, Ellipsis)]
    for _ in range(count):
        key: list = []
        for n in shape[:int(rng.integers(1, len(shape) + 2))]:  # (one index too many, now and then)
            r = rng.random()
            lo, hi = sorted(int(v) for v in rng.integers(-n - 1, n + 2, size=2))
            if r < 0.3:
                key.append(int(rng.integers(-n - 1, n + 1)))
            elif r < 0.6:
                key.append(slice(None if rng.random() < 0.2 else lo, None if rng.random() < 0.2 else hi))
            elif r < 0.75:
                key.append(nl.ds(int(rng.integers(-n, n)), int(rng.integers(0, n + 1))))
            elif r < 0.85:
                key.append(slice(lo, hi, int(rng.integers(-1, 3))))
            elif r < 0.9:
                key.append(np.int64(rng.integers(0, n)))
            elif r < 0.95:
                key.append(True)
            else:
                key.append(1.0)
        keys.append(tuple(key))
    return keys


def _outcome(view: NkiTensor, key: tuple) -> tuple:
    try:
        v = view[key]
    except Exception as err:  # the long way's errors, exactly (a tensor's name numbers the launch's tensors)
        return (type(err).__name__, str(err).replace(view.name, "NAME"))
    return ("view", v.offset, v.get_pattern(), v.view_base() is view.view_base())


def _index_everything(seed: int) -> list[tuple]:
    """What indexing an HBM tensor, an SBUF tensor and a view of each with many keys gives, inside a kernel."""
    got: list[tuple] = []
    rng = np.random.default_rng(seed)

    @nki.jit
    def probe(a):
        t = nl.ndarray((128, 6, 5), dtype=nl.float32, buffer=nl.sbuf)
        for view in (a, t, a[:, 1:5, :], t[3:100, 2, 1:4]):
            for key in _keys(view.shape, rng, 150):
                got.append(_outcome(view, key))
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out

    api.trace(probe, [np.zeros((128, 6, 5), np.float32)])
    return got


def test_a_plain_index_gives_the_view_and_the_error_the_checked_path_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = []
    plain = layout.plain_index

    def counting(*args: object) -> object:
        got = plain(*args)  # type: ignore[arg-type]
        taken.append(got is not None)
        return got

    monkeypatch.setattr(views, "plain_index", counting)
    fast = _index_everything(34)
    monkeypatch.setattr(views, "plain_index", lambda *args: None)
    slow = _index_everything(34)
    assert fast == slow
    assert sum(taken) > 200 and not all(taken)  # both ways were taken
    assert sum(o[0] == "view" for o in fast) > 200 and sum(o[0] != "view" for o in fast) > 100


def _parts(acc: Access) -> tuple:
    comps = [tuple(int(v.value()) if hasattr(v, "value") else v for v in c) for c in acc.comps]
    return (acc.tensor, comps, acc.loops, acc.shape, acc.par_axis, acc.np_index(), acc.box, acc.advanced,
            acc.is_whole, acc.done)


def test_a_view_lowered_again_is_the_access_its_key_makes() -> None:
    seen = []

    @nki.jit
    def probe(a):
        t = nl.ndarray((128, 6, 5), dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray((128, 6, 5), dtype=nl.bfloat16, buffer=nl.sbuf)
        for base in (a, t, u, t):
            for view in (base[:, 2, 1:4], base[5:70, :, 3], base[:, 0:6:2, :], base[0, 4, :]):
                key = layout.basic_key(view.view_base().shape, view.offset, tuple(map(tuple, view.get_pattern())))
                first, again = view.lower(), view[...].lower()
                seen.append((_parts(first), _parts(again), _parts(Access(view.view_base(), key))))
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out

    layout._CONSTANT.clear()  # noqa: SLF001 - the memo of normalised keys, the test's subject
    api.trace(probe, [np.zeros((128, 6, 5), np.float32)])
    assert len(seen) == 16
    for first, again, fresh in seen:
        assert first == again == fresh
    assert len(layout._CONSTANT) >= 4  # noqa: SLF001 - (the keys were normalised once)


@nki.jit
def ragged_accumulation(s, m):
    """Three matmuls into the first 44 rows of a PSUM tile, then one into all 128: the rows the first three started
    add the fourth, the others start with it."""
    sb, mb = nl.load(s), nl.load(m)
    acc = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.psum)
    for _ in range(3):
        nisa.nc_matmul(dst=acc[:44, :], stationary=sb[:, :44], moving=mb)
    nisa.nc_matmul(dst=acc[:128, :], stationary=sb, moving=mb)
    res = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=res)
    return out


def test_a_region_whose_accumulation_started_adds_and_the_rest_starts() -> None:
    rng = np.random.default_rng(3)
    s = rng.standard_normal((32, 128)).astype(np.float32)
    m = rng.standard_normal((32, 8)).astype(np.float32)
    product = s.astype(np.float64).T @ m
    want = product.copy()
    want[:44] *= 4
    got = api.launch(ragged_accumulation, [s, m]).outputs
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.processes
def test_tracing_a_kernel_does_not_import_the_cost_model() -> None:
    code = ("import sys, numpy as np; from nkisim import api; import nki, nki.language as nl\n"
            "@nki.jit\n"
            "def k(a):\n"
            "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
            "    nl.store(out, value=nl.load(a))\n"
            "    return out\n"
            "api.trace(k, [np.zeros((128, 4), np.float32)]).to_json()\n"
            "print(sorted(m for m in sys.modules if m.startswith('nkisim.cost.')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(done.stdout.strip().splitlines()[-1])
    assert loaded and "nkisim.cost.model" not in loaded and "nkisim.cost.scheduler" not in loaded
