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
