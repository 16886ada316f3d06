"""NKI 0.6 (``import nki``) on the simulator: kernels written as AWS documents the 0.6 dialect run unmodified
through ``nki.simulate(kernel)(...)`` and a plain ``kernel(...)`` call, against NumPy; nkisim's API gives their
latency, profile and program; the 0.6 binding rules (dst-first ``nisa`` calls, enum members only, no unknown
keyword) hold at the kernel's own line.

The kernels are this project's own, written from the 0.6 API reference (``nki/api/nki/*/__init__.py`` in
AWS's docs source); AWS's own examples run from a clone in ``bench/conformance.py --aws-examples``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkisim
from nkisim import api

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402
import nki.typing as nt  # noqa: E402

BF16 = ml_dtypes.bfloat16


def rand(*shape: int, dtype: object = np.float32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@nki.jit
def add_whole(a, b):
    x = nl.load(a)
    y = nl.load(b)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(x, y))
    return out


@nki.jit
def add_tiled(a, b):
    """dst-first nisa calls over 128 x 256 tiles, loops as Python ranges (and the deprecated alias)."""
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(rows // 128):
        for j in nl.affine_range(cols // 256):
            ta = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray((128, 256), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=ta, src=a[i * 128:(i + 1) * 128, j * 256:(j + 1) * 256])
            nisa.dma_copy(tb, b[i * 128:(i + 1) * 128, j * 256:(j + 1) * 256])  # dst first, positionally
            tc = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(tc, ta, tb, nl.add)
            nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, j * 256:(j + 1) * 256], src=tc)
    return out


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Tensor Engine matmul accumulating over K in PSUM (accumulate=None: the first matmul starts the group),
    evacuated with a casting tensor_copy."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                s = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                v = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=s, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                nisa.dma_copy(dst=v, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=s, moving=v)
            res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=res)
    return out


def test_simulate_and_a_plain_call_run_a_kernel_on_numpy_inputs():
    a, b = rand(128, 512), rand(128, 512, seed=1)
    np.testing.assert_array_equal(nki.simulate(add_whole)(a, b), a + b)
    np.testing.assert_array_equal(add_whole(a, b), a + b)
    assert nki.simulate(add_whole.original) is not None  # a plain function is jitted by simulate


def test_tiled_add_with_dst_first_isa_calls():
    a, b = rand(256, 512), rand(256, 512, seed=2)
    np.testing.assert_array_equal(add_tiled(a, b), a + b)


def test_matmul_accumulates_in_psum_and_casts_on_the_copy_out():
    lhsT, rhs = rand(256, 256, dtype=BF16), rand(256, 1024, dtype=BF16, seed=3)
    ref = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    out = matmul_tiled(lhsT, rhs)
    assert out.dtype == BF16
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    a, b = torch.ones(128, 64), torch.full((128, 64), 2.0)
    out = nki.simulate(add_whole)(a, b)
    assert isinstance(out, torch.Tensor) and torch.equal(out, a + b)


def test_latency_profile_and_program_through_the_api():
    lhsT, rhs = rand(256, 256, dtype=BF16), rand(256, 1024, dtype=BF16, seed=3)
    launch = api.launch(matmul_tiled, [lhsT, rhs], target="trn2")
    est = launch.estimate()
    assert est.target == "trn2" and est.total_us > 0 and est.instructions > 0
    # 8 matmuls, 16 loads, 2 copies, 2 stores
    assert est.dma_count == 2 * 2 * 2 * 2 + 2 * 2
    profile = launch.profile()
    assert profile.estimate.total_us == est.total_us and len(profile.events) == est.instructions
    program = api.program_from_json(launch.program.to_json())
    assert program.dialect == "0.6"
    done = api.execute(program, [lhsT, rhs])
    np.testing.assert_array_equal(done.outputs, launch.outputs)
    assert done.latency_us() == est.total_us == api.estimate(program).total_us
    traced = api.trace(matmul_tiled, [lhsT, rhs], target="trn2")  # cost only: no values read
    assert api.estimate(traced).total_us == est.total_us


def test_inputs_are_writable_and_the_callers_arrays_see_the_writes():
    """AWS's simulator updates input arrays in place when the kernel writes its HBM tensors; NKI 0.6 has no
    immutable-parameter rule, and a written input need not be returned."""

    @nki.jit
    def double_in_place(x):
        t = nl.load(x)
        nl.store(x, nl.add(t, t))

    x = rand(128, 64)
    before = x.copy()
    assert double_in_place(x) is None
    np.testing.assert_array_equal(x, before * 2)


def test_the_legacy_entry_points_are_gone_with_a_pointer():
    with pytest.raises(AttributeError, match="python -m nkisim"):
        nki.benchmark  # noqa: B018


# --- strict binding -------------------------------------------------------------------------------------
def _line_of(marker: str, fn: object) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def test_an_unknown_keyword_is_an_error_at_the_users_line():
    def body(x):
        t = nl.load(x)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        c = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=c, src=t, dtype=nl.float32)  # LINE: legacy dtype= is not a 0.6 argument
        nl.store(out, c)
        return out

    with pytest.raises(TypeError, match=r"nki\.isa\.tensor_copy\(\) got an unexpected keyword argument 'dtype'") as e:
        nki.jit(body)(rand(128, 8))
    assert e.traceback[-1].lineno + 1 == _line_of("LINE", body)


def test_nl_functions_take_no_mask():
    def body(x):
        t = nl.load(x)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(t, mask=None))
        return out

    with pytest.raises(TypeError, match=r"nki\.language\.exp\(\) got an unexpected keyword argument 'mask'"):
        nki.jit(body)(rand(128, 8))


@pytest.mark.parametrize("engine", [5, "vector"])
def test_an_enum_parameter_refuses_raw_values(engine):
    def body(x):
        t = nl.load(x)
        c = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=c, src=t, engine=engine)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, c)
        return out

    with pytest.raises(TypeError, match="must be a member of nki.isa.engine"):
        nki.jit(body)(rand(128, 8))


def test_enum_members_are_normalised_for_the_registry():
    """``nisa.dge_mode`` was renumbered in 0.6 (hwdge is 2, the registry's 3): hwdge must still be hwdge."""

    def body(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, dge_mode=nisa.dge_mode.hwdge, oob_mode=nisa.oob_mode.error)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t, dge_mode=nisa.dge_mode.swdge)
        return out

    x = rand(128, 8)
    np.testing.assert_array_equal(nki.jit(body)(x), x)
    with pytest.raises(Exception, match="hwdge requires min target gen3"):
        api.launch(nki.jit(body), [x], target="trn1")


def test_operators_are_nl_functions_not_numpy_ufuncs():
    def body(x):
        t = nl.load(x)
        c = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=c, data1=t, data2=t, op=np.add)
        return c

    with pytest.raises(TypeError, match="must be an operator from nki.language"):
        nki.jit(body)(rand(128, 8))


@nki.jit
def annotated(x: nt.tensor[128, 8]):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(x))
    return out


def test_nki_isa_constants_and_typing_import():
    from nki.isa.constants import dge_mode, engine  # noqa: F401
    from nki.typing import tensor

    assert engine.vector is nisa.engine.vector and dge_mode.hwdge.value == 2
    assert isinstance(nki.dtype(np.float32), nki.dtype)
    assert tensor is nt.tensor
    np.testing.assert_array_equal(annotated(np.ones((128, 8), np.float32)), 1)
    with pytest.raises(TypeError, match="does not match the expected shape"):
        annotated(np.ones((128, 9), np.float32))
