"""One registry, two dialects: NKI 0.6's calls are adapters onto the same op registry entries the legacy front end
uses, so no op's checks, numerics or cost exist twice.

Three kinds of evidence:

- the 0.6 front end's modules import nothing that computes a value or prices an instruction (no cost model, no
  tile storage, no op helpers, no operator tables), so an adapter cannot have numerics or a cost of its own;
- a 0.6 kernel's program names only registry entries, and executing that program (registry entries alone,
  no kernel Python) reproduces the eager launch's outputs and estimate bit for bit: anything an adapter did
  besides calling the registry would be missing there;
- the same algorithm written in both dialects issues the same instructions (kind, engine, shapes, dtypes, bytes)
  and gets the same estimate.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest

import nkisim
from nkisim import api
from nkisim.ops.registry import OPS

nkisim.install()

import neuronxcc.nki as lnki  # noqa: E402
import neuronxcc.nki.isa as lnisa  # noqa: E402
import neuronxcc.nki.language as lnl  # noqa: E402
import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

V06 = Path(nkisim.__file__).parent / "frontend" / "v06"
#: what an adapter may not reach: the cost model, tile values, the ops' helpers and operator tables
FORBIDDEN = ("nkisim.cost", "nkisim.core.storage", "nkisim.ops.base", "nkisim.ops.optable", "nkisim.ops.outputs",
             "nkisim.ops.elementwise", "nkisim.program")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


@pytest.mark.parametrize("module", sorted(str(p.relative_to(V06)) for p in V06.rglob("*.py")))
def test_the_06_front_end_neither_computes_nor_prices(module: str):
    imported = _imports(V06 / module)
    bad = sorted(m for m in imported if m.startswith(FORBIDDEN) or m == "nkisim.ops.registry.op")
    assert not bad, f"{module} imports {bad}: numerics and cost live in the op registry only"
    if module != "adapters/calls.py":  # the one door to the registry (binding re-exports its call)
        assert not any(m.startswith("nkisim.ops") for m in imported), module


def rand(*shape: int, seed: int = 0, dtype: object = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@nki.jit
def many_calls(x, w):
    """One 0.6 kernel that issues most implemented nisa instructions and nl functions."""
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    col = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=col, src=w)
    a = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=a, op=nl.exp, data=t, scale=0.5, bias=col)
    s = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=s, data=a, op0=nl.multiply, operand0=col, op1=nl.add, operand1=1.0)
    r = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r, op=nl.add, data=s, axis=1)
    q = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=q, data1=s, data2=t, op=nl.subtract)
    nisa.scalar_tensor_tensor(dst=q, data=q, op0=nl.multiply, operand0=r, op1=nl.maximum, operand1=a)
    rec = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=rec, data=a)
    z = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=z, value=0.5)
    scan = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(dst=scan, data0=z, data1=rec, initial=0.0, op0=nl.multiply, op1=nl.add)
    tp = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=tp, data=scan)
    ts = nl.copy(tp)
    ps = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=ts, moving=q, accumulate=False)
    e = nl.tanh(nl.copy(ps))
    m = nl.maximum(e, nl.load(x, dtype=nl.float32))
    mean = nl.mean(m, axis=[1])
    res = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=res, data=m, op0=nl.subtract, operand0=mean)
    nisa.dma_copy(dst=out, src=res)
    return out


def test_a_06_program_is_registry_calls_that_reproduce_the_launch():
    x, w = rand(128, 128), rand(128, 1, seed=1)
    launch = api.launch(many_calls, [x, w], target="trn2")
    assert np.isfinite(launch.outputs).all()
    calls = {c.fn for c in launch.program.calls}
    assert calls <= set(OPS), calls - set(OPS)
    assert {"nisa.activation", "nisa.tensor_scalar", "nisa.tensor_reduce", "nisa.tensor_tensor",
            "nisa.scalar_tensor_tensor", "nisa.reciprocal", "nisa.memset", "nisa.tensor_tensor_scan",
            "nisa.nc_transpose", "nisa.nc_matmul", "nisa.tensor_copy", "nisa.dma_copy", "nl.tanh", "nl.maximum",
            "nl.mean", "nl.load", "nl.ndarray"} <= calls
    program = api.program_from_json(launch.program.to_json())
    done = api.execute(program, [x, w])
    np.testing.assert_array_equal(done.outputs, launch.outputs)
    assert done.estimate() == launch.estimate()


def _calls(launch: api.Launch) -> list[tuple]:
    """The program's calls with their operands bound to the registry entry's parameters (defaults applied), so
    the same call spelled with positional or keyword arguments reads the same."""
    out = []
    for c in launch.program.calls:
        bound = inspect.signature(OPS[c.fn].impl).bind(*c.args, **dict(c.kwargs))
        bound.apply_defaults()
        out.append((c.fn, repr(sorted(bound.arguments.items())), c.out))
    return out


def _estimate(launch: api.Launch) -> tuple:
    """The estimate, with the time per source line as a list and each reason's mechanism, count and time without
    its line (the two kernels' lines are different lines)."""
    est = launch.estimate()
    reasons = tuple(dataclasses.replace(r, file="", line=0) for r in est.reasons)
    return dataclasses.replace(est, line_us={}, reasons=reasons), list(est.line_us.values())


def _instructions(launch: api.Launch) -> list[tuple]:
    return [(i.op, i.engine, i.p, i.n, i.dtypes, i.nbytes, i.acc) for i in launch.record.ctx.trace]


@lnki.jit
def add_legacy(a, b):
    out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    for i in range(a.shape[0] // 128):
        x = lnl.load(a[i * 128:(i + 1) * 128, :])
        y = lnl.load(b[i * 128:(i + 1) * 128, :])
        lnl.store(out[i * 128:(i + 1) * 128, :], value=lnl.add(x, y))
    return out


@nki.jit
def add_06(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(a.shape[0] // 128):
        x = nl.load(a[i * 128:(i + 1) * 128, :])
        y = nl.load(b[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(x, y))
    return out


def test_the_same_nl_kernel_in_both_dialects_is_the_same_program():
    a, b = rand(256, 512), rand(256, 512, seed=1)
    legacy = api.launch(add_legacy, [a, b], target="trn2")
    new = api.launch(add_06, [a, b], target="trn2")
    np.testing.assert_array_equal(legacy.outputs, new.outputs)
    assert _calls(legacy) == _calls(new)
    assert _instructions(legacy) == _instructions(new)
    assert _estimate(legacy) == _estimate(new)


@lnki.jit
def matmul_legacy(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = lnl.ndarray((M, N), dtype=lhsT.dtype, buffer=lnl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = lnl.zeros((128, 512), lnl.float32, buffer=lnl.psum)
            for k in range(K // 128):
                s = lnl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                v = lnl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += lnisa.nc_matmul(s, v)
            res = lnisa.tensor_copy(acc, dtype=out.dtype)
            lnl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out


@nki.jit
def matmul_06(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                s = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                v = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(acc, s, v, accumulate=True)
            res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out


def test_the_same_matmul_in_both_dialects_issues_the_same_instructions_and_estimate():
    """Legacy ``acc += nisa.nc_matmul(...)`` into a zeroed PSUM tile and 0.6 ``nc_matmul(acc, ..., accumulate=True)``
    are the same Tensor Engine instructions; the copy out is the Vector engine's ``tensor_copy`` in both."""
    lhsT, rhs = rand(256, 256), rand(256, 1024, seed=2)
    legacy = api.launch(matmul_legacy, [lhsT, rhs], target="trn2")
    new = api.launch(matmul_06, [lhsT, rhs], target="trn2")
    np.testing.assert_allclose(new.outputs, lhsT.T @ rhs, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(legacy.outputs, new.outputs)
    assert _instructions(legacy) == _instructions(new)
    assert _estimate(legacy) == _estimate(new)


def test_a_tool_asking_for_a_legacy_program_refuses_a_06_one():
    """A program's dialect sets the whole-kernel rules it runs under, so a grader asking for a legacy kernel's program
    refuses a 0.6 one (and the other way round)."""
    a, b = rand(256, 512), rand(256, 512, seed=1)
    new = api.launch(add_06, [a, b], target="trn2").program
    old = api.launch(add_legacy, [a, b], target="trn2").program
    sig = [((256, 512), "float32")] * 2
    with pytest.raises(api.ProgramError, match="NKI 0.6 kernel's, not the requested legacy one"):
        api.check_request(new, inputs=sig, target="trn2")
    api.check_request(new, inputs=sig, target="trn2", dialect="0.6")
    api.check_request(old, inputs=sig, target="trn2")
    with pytest.raises(api.ProgramError, match="legacy kernel's"):
        api.check_request(old, inputs=sig, target="trn2", dialect="0.6")
    two = api.launch(add_06, [a, b], grid=2, target="trn2").program
    api.check_request(two, inputs=sig, target="trn2", grid=2, dialect="0.6")  # kernel[2]: two logical cores
