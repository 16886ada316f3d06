"""The op registry (``nkisim/ops/registry.py``) and the instruction set (``nkisim/cost/instructions.py``).

One entry per NKI call holds its implementation, the instructions it may issue and its operands' spaces;
each instruction kind holds its engine and its cycle formula.  These tests hold the pieces to each other:
the front ends export exactly the registry's calls, every kind an op may issue has a price and is issued by
some op, and an entry that understates what its op issues is caught at the first launch that records it.
(Per-call numerics and errors against NumPy are ``tests/test_every_call.py``.)
"""

from __future__ import annotations

import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim.core import target
from nkisim.core.recording import CALLS, call_name
from nkisim.cost import costs
from nkisim.cost.instructions import (
    ACTIVATION,
    INSTRUCTION_KINDS,
    RELOAD,
    SPILL,
    TENSOR_COPY,
    TENSOR_SCALAR,
    TENSOR_TENSOR,
    InstructionKind,
)
from nkisim.cost.trace import Instruction
from nkisim.ops import registry
from nkisim.ops.catalog import namespace
from nkisim.ops.registry import OPS

#: Calls that issue no instruction: views of a tile, allocations without a fill, the generator's seed and HBM
#: constants.
#: Listed so that a new call emitting nothing is a decision the test makes visible.
NO_INSTRUCTION = {
    "tile.reshape", "tile.view", "tile.assert_shape", "tile.expand_dims", "tile.subaccess", "tile.reshape_access",
    "nl.expand_dims", "nl.ndarray", "nl.empty_like", "nl.random_seed", "nl.shared_constant",
    "nl.shared_identity_matrix",
}


def test_every_call_has_one_registry_entry_and_the_front_ends_export_exactly_the_registry():
    """A program may name only registered calls (``CALLS``); each is one registry entry, and ``nl`` / ``nisa``
    export the entries' own functions under their names (generated, not listed by hand)."""
    assert set(OPS) == set(CALLS)
    for module, prefix in ((nl, "nl"), (nisa, "nisa")):
        exported = {name: getattr(module, name) for name in dir(module) if call_name(getattr(module, name))}
        assert exported == namespace(prefix), prefix
        for name, fn in exported.items():
            assert call_name(fn) == f"{prefix}.{name}"
            assert OPS[f"{prefix}.{name}"].impl is fn.__wrapped__
    assert {e.call.split(".")[0] for e in OPS.values()} == {"nl", "nisa", "tile"}
    assert not [e.call for e in OPS.values() if not e.doc]


def test_calls_that_issue_no_instruction_are_exactly_the_listed_views_and_allocations():
    assert {e.call for e in OPS.values() if not e.emits} == NO_INSTRUCTION


#: instruction kinds only NeuronCore-v4 (trn3) has
V4_ONLY = ("nc_matmul_mx", "quantize_mx")


def _sample(kind: InstructionKind) -> Instruction:
    """One instruction of ``kind`` on 128 partitions x 512 fp32 elements (a matmul of 128x128 by 128x512)."""
    extra = {"m": 128, "n": 512, "k": 128} if kind.name == "nc_matmul" else \
        {"m": 128, "n": 512, "k": 128, "pack": 4} if kind.name == "nc_matmul_mx" else {}
    return Instruction(kind=kind, engine=kind.engine, loc=("kernel.py", 1), p=128, n=512, dtypes=("float32", "float32"),
                 nbytes=128 * 512 * 4, extra=extra)


@pytest.mark.parametrize("name", sorted(INSTRUCTION_KINDS))
def test_every_instruction_kind_has_a_price_on_every_target(name):
    """Compute kinds cost ``max(MIN_II, cycles) + overhead`` at their engine's clock, DMA kinds their queue
    time: a positive, finite number of ns on every target (no kind falls through to a default).  NeuronCore-v4's
    MX kinds are priced on the targets that have them (trn3; the ops refuse them earlier, tests/test_nki06_mx.py)."""
    kind = INSTRUCTION_KINDS[name]
    for tname in target.names():
        if name in V4_ONLY and target.get(tname).nc_version < 4:
            continue
        prm = target.get(tname).params
        ins = _sample(kind)
        if kind.engine == "dma":
            ns = costs.dma_queue_ns(ins, costs.dma_queues(ins, prm), prm)
        else:
            ns = costs.compute_ns(ins, ("sbuf", "sbuf"), prm)
        assert math.isfinite(ns) and ns > 0, (tname, ns)


def test_every_instruction_kind_is_issued_by_some_op_and_every_op_issues_known_kinds():
    """No price is kept for an instruction nothing issues (spill and reload are the cost model's own DMAs)."""
    issued = {k for e in OPS.values() for k in e.emits}
    assert issued <= set(INSTRUCTION_KINDS.values())
    assert set(INSTRUCTION_KINDS.values()) - issued == {SPILL, RELOAD}


def test_an_entry_that_understates_what_its_op_issues_fails_at_the_first_recorded_launch(monkeypatch):
    """Mutant: an op declared to issue an activation that issues an engine copy.  The recorder checks every
    recorded call's instructions against its entry: the test suite fails (``NKISIM_STRICT_REGISTRY=1``, set by
    conftest); a user's launch warns once and computes the same values (the miss is the simulator's)."""
    from nkisim.ops.movement import tensor_copy

    liar = registry.op("nisa.lying_copy", emits=(ACTIVATION,))(tensor_copy.__wrapped__)
    honest = registry.op("nisa.honest_copy", emits=(TENSOR_COPY,))(tensor_copy.__wrapped__)
    try:
        def kernel_with(copy_fn):
            @nki.jit
            def k(a):
                out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
                nl.store(out, copy_fn(nl.load(a)))
                return out
            return k

        x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
        np.testing.assert_array_equal(kernel_with(honest)(x), x)
        with pytest.raises(AssertionError, match="lying_copy.*tensor_copy.*does not declare"):
            kernel_with(liar)(x)
        monkeypatch.setenv("NKISIM_STRICT_REGISTRY", "0")
        with pytest.warns(RuntimeWarning, match="lying_copy.*results are unaffected"):
            np.testing.assert_array_equal(kernel_with(liar)(x), x)
    finally:
        for call in ("nisa.lying_copy", "nisa.honest_copy"):
            OPS.pop(call, None)
            CALLS.pop(call, None)


def test_an_assignment_declares_each_instruction_it_can_combine_with():
    """``dst[...] = nl.loop_reduce(t, ...)`` combines into ``dst`` with a tensor_tensor, or with a tensor_scalar
    when there is one element per partition (found by nki-samples' flash attention backward kernel): both are
    in ``tile.assign``'s entry, and the column case computes the sum over the loop."""

    @nki.jit
    def column_sums(a):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            t = nl.load(a[:, i:i + 1])
            acc[...] = nl.loop_reduce(t, op=np.add, loop_indices=[i])
        nl.store(out, acc)
        return out

    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4) / 8
    np.testing.assert_allclose(column_sums(x), x.sum(axis=1, keepdims=True), rtol=1e-6)
    kinds = {i.op for i in column_sums.last_launch.ctx.trace}
    assert "tensor_scalar" in kinds
    assert {TENSOR_SCALAR, TENSOR_TENSOR} <= set(OPS["tile.assign"].emits)
