"""Which operators an engine computes in ``nisa.tensor_scalar``, as AWS documents them, in both dialects.

AWS's nki.isa docs (legacy and 0.6 alike): the GpSimd engine's ``tensor_scalar`` is "only allowed for rsqrt", and
"the Scalar Engine on trn2 only supports" multiply then add, multiply alone and add alone (NeuronCore-v2 runs add
and multiply on the Scalar engine not at all).  The simulator used to run any operator on any engine, so a course
reference saturated on GpSimd -- a kernel the compiler rejects -- and was estimated 0.85 of the bound.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkisim
from nkisim import api
from nkisim.core.errors import NKIError

nkisim.install()

import neuronxcc.nki as lnki  # noqa: E402
import neuronxcc.nki.isa as lnisa  # noqa: E402
import neuronxcc.nki.language as lnl  # noqa: E402
import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

X = np.linspace(-3.0, 3.0, 128 * 64, dtype=np.float32).reshape(128, 64)


def _legacy(op0, op1, engine):
    operand1 = None if op1 is None else 0.5

    @lnki.jit
    def k(a):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        t = lnisa.tensor_scalar(lnl.load(a), op0, 2.0, op1=op1, operand1=operand1, engine=engine)  # the call
        lnl.store(out, value=t)
        return out
    return k


def _06(op0, op1, engine):
    operand1 = None if op1 is None else 0.5  # decided outside: a 0.6 kernel may not use `is`
    op0, op1 = getattr(nl, op0.__name__), None if op1 is None else getattr(nl, op1.__name__)  # 0.6 takes nl operators

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=t, data=nl.load(a), op0=op0, operand0=2.0, op1=op1, operand1=operand1,
                           engine=engine)  # the call
        nl.store(out, value=t)
        return out
    return k


def _want(op0, op1):
    x = op0(X, np.float32(2.0))
    return x if op1 is None else op1(x, np.float32(0.5))


ENGINES = {"legacy": {"scalar": lnisa.scalar_engine, "gpsimd": lnisa.gpsimd_engine, "vector": lnisa.vector_engine},
           "nki": {"scalar": nisa.engine.scalar, "gpsimd": nisa.engine.gpsimd, "vector": nisa.engine.vector}}
BUILD = {"legacy": _legacy, "nki": _06}


@pytest.mark.parametrize("dialect", ["legacy", "nki"])
@pytest.mark.parametrize("op0, op1", [(np.multiply, np.add), (np.multiply, None), (np.add, None)])
def test_the_scalar_engine_of_trn2_computes_multiply_then_add(dialect, op0, op1):
    run = api.launch(BUILD[dialect](op0, op1, ENGINES[dialect]["scalar"]), [X], target="trn2")
    np.testing.assert_allclose(run.outputs, _want(op0, op1), rtol=1e-6)
    assert [i.engine for i in run.record.ctx.trace if i.engine in ("act", "dve", "pool")] == ["act"]


@pytest.mark.parametrize("dialect", ["legacy", "nki"])
@pytest.mark.parametrize("op0, op1", [(np.minimum, np.maximum), (np.add, np.multiply), (np.subtract, None),
                                      (np.maximum, None)])
def test_other_operators_on_trn2s_scalar_engine_are_refused(dialect, op0, op1):
    with pytest.raises(NKIError, match="on the Scalar engine of trn2 computes multiply then add, multiply, or add"):
        api.launch(BUILD[dialect](op0, op1, ENGINES[dialect]["scalar"]), [X], target="trn2")


@pytest.mark.parametrize("dialect", ["legacy", "nki"])
@pytest.mark.parametrize("op0, op1", [(np.minimum, np.maximum), (np.multiply, None), (np.power, None)])
def test_the_gpsimd_engine_computes_rsqrt_only(dialect, op0, op1):
    with pytest.raises(NKIError, match="on the GpSimd engine computes rsqrt only") as info:
        api.launch(BUILD[dialect](op0, op1, ENGINES[dialect]["gpsimd"]), [X], target="trn2")
    assert info.value.nki_location[1] in _call_lines()


def test_trn1s_scalar_engine_computes_no_tensor_scalar_and_trn3s_any():
    with pytest.raises(NKIError, match="on the Scalar engine of trn1 computes no operator"):
        api.launch(_legacy(np.multiply, None, lnisa.scalar_engine), [X], target="trn1")
    run = api.launch(_06(np.minimum, np.maximum, nisa.engine.scalar), [X], target="trn3")
    np.testing.assert_array_equal(run.outputs, _want(np.minimum, np.maximum))


@pytest.mark.parametrize("dialect", ["legacy", "nki"])
def test_the_vector_engine_computes_every_operator(dialect):
    run = api.launch(BUILD[dialect](np.minimum, np.maximum, ENGINES[dialect]["vector"]), [X], target="trn2")
    np.testing.assert_array_equal(run.outputs, _want(np.minimum, np.maximum))


def _call_lines() -> set[int]:
    lines = open(__file__).read().splitlines()
    return {n for n, text in enumerate(lines, 1) if text.rstrip().endswith("# the call")} | \
           {n - 1 for n, text in enumerate(lines, 1) if text.rstrip().endswith("# the call")}


def test_the_operator_lists_are_the_target_files():
    """One source per fact: the rules above read each target's ``[engine_ops]`` table, which cites AWS's docstring."""
    from nkisim import api

    assert api.target("trn2").engine_ops("tensor_scalar_scalar") == {"multiply+add", "multiply", "add"}
    assert api.target("trn1").engine_ops("tensor_scalar_scalar") == frozenset()
    assert api.target("trn3").engine_ops("tensor_scalar_scalar") is None  # every operator on NeuronCore-v4
    assert all(api.target(t).engine_ops("tensor_scalar_gpsimd") == {"rsqrt"} for t in ("trn1", "trn2", "trn3"))


POSITIVE = np.abs(X) + np.float32(0.25)


def _unary_legacy(op0, engine):
    @lnki.jit
    def k(a):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnisa.tensor_scalar(lnl.load(a), op0, 0.0, engine=engine))
        return out
    return k


def _unary_06(op0, engine):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=t, data=nl.load(a), op0=op0, operand0=0.0, engine=engine)
        nl.store(out, value=t)
        return out
    return k


@pytest.mark.parametrize("dialect", ["legacy", "nki"])
def test_tensor_scalar_takes_the_arithmetic_unary_operators(dialect):
    """AWS: "Reverse square root can run on GpSIMD Engine with nki.isa.tensor_scalar(op0=nl.rsqrt, operand0=0.0)"
    (nki.api.shared.rst:260); rsqrt, abs, square, relu and reciprocal are the operator table's "Arithmetic Unary"
    operators, computing op(x) and ignoring the scalar.  Refused before as "rsqrt is not supported"."""
    mod, build = (lnl, _unary_legacy) if dialect == "legacy" else (nl, _unary_06)
    run = api.launch(build(mod.rsqrt, ENGINES[dialect]["gpsimd"]), [POSITIVE], target="trn2")
    np.testing.assert_allclose(run.outputs, 1 / np.sqrt(POSITIVE), rtol=1e-6)
    assert [i.engine for i in run.record.ctx.trace if i.engine in ("act", "dve", "pool")] == ["pool"]
    for name, want in (("abs", np.abs(X)), ("square", X * X), ("relu", np.maximum(X, 0))):
        run = api.launch(build(getattr(mod, name), ENGINES[dialect]["vector"]), [X], target="trn2")
        np.testing.assert_allclose(run.outputs, want, rtol=1e-6)


def test_nl_rsqrt_runs_on_gpsimd_at_a_quarter_of_scalar_engines_rate():
    """NKI 0.5 moved nl.rsqrt to GpSimd (nki/migration/index.rst:162), whose rsqrt throughput "is 4x lower than
    Scalar Engine" (nki.api.shared.rst:262): the same values, the engine time about four times activation's."""

    def kernel(scalar: bool):
        @nki.jit
        def k(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            if scalar:
                r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
                nisa.activation(dst=r, op=nl.rsqrt, data=t)
            else:
                r = nl.rsqrt(t)
            nl.store(out, value=r)
            return out
        return k

    busy = {}
    wide = np.tile(POSITIVE, (1, 32))  # 2048 elements per partition: the per-element rate, not the fixed cost
    for scalar in (False, True):
        run = api.launch(kernel(scalar), [wide], target="trn2")
        np.testing.assert_allclose(run.outputs, 1 / np.sqrt(wide), rtol=1e-5)
        busy[scalar] = api.estimate(api.trace(kernel(scalar), [wide], target="trn2")).engine_busy_us
    assert busy[False]["act"] == 0 and busy[True]["pool"] == 0
    assert 3.0 < busy[False]["pool"] / busy[True]["act"] <= 4.0
