"""NKI 0.6's scheduling edges are modelled: ``kernel.with_schedule``, ``NkiInstruction.depends_on`` and
``nl.no_reorder`` make the cost model wait, the program keeps them, and the validator refuses a forged one.

Source: AWS's ``nki/guides/how-to-scheduling-apis.rst`` (``with_schedule([("plus1", "recip")])`` runs ``plus1``
after ``recip``; a ``no_reorder`` block puts an edge between its consecutive instructions, dynamically scoped) and
``nki/api/nki/isa/__init__.py`` (``NkiInstruction.depends_on``).  The expected delays are derived from the
schedule of the kernel without the edge and the target's semaphore latency, not copied from a run with it.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os

import numpy as np
import pytest

import nkisim
from nkisim import api

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

from nkisim.core.target import resolve  # noqa: E402
from nkisim.cost.scheduler import schedule  # noqa: E402
from nkisim.program.ir import Call, LoopEnter, Order, ProgramError, from_json  # noqa: E402

HERE = os.path.abspath(__file__)
X = np.random.default_rng(0).random((128, 512), dtype=np.float32) + 0.5


def two_independent(x, mode="plain"):
    """exp(x) on ScalarE and 1/x on VectorE read the same tile and write different ones: without an edge they
    overlap; ``mode`` adds the edge "recip after act" one way or another."""
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    a = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    b = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    c = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    if mode == "no_reorder":
        with nl.no_reorder():
            nisa.activation(dst=a, data=t, op=nl.exp)
            nisa.reciprocal(dst=b, data=t)
    else:
        act = nisa.activation(dst=a, data=t, op=nl.exp, name="act")
        recip = nisa.reciprocal(dst=b, data=t, name="recip")
        if mode == "depends_on":
            recip.depends_on(act)
    nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=c)
    return out


def kernel(mode):
    return nki.jit(lambda x: two_independent(x, mode))


def spans(launch, op):
    """(start, end) in ns of the launch's one instruction ``op``, in the cost model's schedule."""
    trace = launch.record.ctx.trace
    sched = schedule(trace, resolve("trn2").params)
    (i,) = [k for k, ins in enumerate(trace) if ins.op == op]
    return sched.start[i], sched.end[i]


def test_an_edge_makes_its_consumer_wait_for_the_producer_on_another_engine():
    plain = api.launch(kernel("plain"), [X], target="trn2")
    act_start, act_end = spans(plain, "activation")
    recip_start, _ = spans(plain, "reciprocal")
    assert recip_start < act_end  # without an edge the two overlap (ScalarE and VectorE)
    sem_us = resolve("trn2").params.engine.sem_ns / 1000
    delay_us = (act_end - recip_start) / 1000 + sem_us  # the producer's remaining time plus the semaphore
    scheduled = api.launch(kernel("plain").with_schedule([("recip", "act")]), [X], target="trn2")
    assert spans(scheduled, "reciprocal")[0] == pytest.approx(act_end + sem_us * 1000)
    # the reciprocal is the longer of the two and the rest of the kernel waits for it: all of the delay shows
    assert scheduled.latency_us() == pytest.approx(plain.latency_us() + delay_us)
    for mode in ("depends_on", "no_reorder"):  # the same edge said another way: the same estimate
        other = api.launch(kernel(mode), [X], target="trn2")
        assert other.latency_us() == pytest.approx(scheduled.latency_us()), mode
    unrolled = api.launch(kernel("plain").with_schedule([("recip", ["act"])]), [X], target="trn2", record=False)
    assert unrolled.latency_us() == pytest.approx(scheduled.latency_us())
    assert api.estimate(scheduled.program).total_us == pytest.approx(scheduled.latency_us())
    np.testing.assert_allclose(scheduled.outputs, np.exp(X) + 1 / X, rtol=1e-5)  # values are untouched
    np.testing.assert_array_equal(scheduled.outputs, plain.outputs)


def test_the_program_keeps_the_edges_and_the_validator_refuses_a_forged_one():
    program = api.launch(kernel("depends_on"), [X], target="trn2").program
    orders = [c.order for c in program.calls if c.order is not None]
    assert orders == [Order("act"), Order("recip", ("act",))]
    again = from_json(program.to_json())
    assert again == program
    api.validate(again)

    def forged(change):
        body = list(program.body)
        k = next(i for i, e in enumerate(body) if isinstance(e, Call) and e.order and e.order.after)
        body[k] = dataclasses.replace(body[k], order=change(body[k].order))
        return from_json(dataclasses.replace(program, body=tuple(body)).to_json())

    with pytest.raises(ProgramError, match="waits for instruction 'nope', which no earlier call is labelled"):
        api.validate(forged(lambda o: Order(o.label, ("nope",))))
    with pytest.raises(ProgramError, match="waits for instruction 'recip'"):  # a producer after its consumer
        api.validate(forged(lambda o: Order(o.label, ("recip",))))
    raw = json.loads(program.to_json())
    call = next(e for e in raw["body"] if e[0] == "call" and len(e) == 7 and e[6][1])
    call[6] = ["recip", [True]]
    with pytest.raises(ProgramError, match="a label must be an integer"):
        from_json(json.dumps(raw))


def _looped(x, edge: str):
    """An ``nl.fori_loop`` (traced once) whose body issues an activation, then a reciprocal, of one loaded tile, with
    the scheduling edge ``edge`` between them: "" none, "recip after act" (in issue order), "act after recip" (the
    producer issued after its consumer, so the activation moves)."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)

    def step(i):
        t = nl.ndarray((128, 512), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        a = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
        b = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
        act = nisa.activation(dst=a, data=t, op=nl.exp, name="act")
        recip = nisa.reciprocal(dst=b, data=t, name="recip")
        if edge == "recip after act":
            recip.depends_on(act)
        elif edge == "act after recip":
            act.depends_on(recip)
        nisa.tensor_tensor(dst=t, data1=a, data2=b, op=nl.add)
        nisa.dma_copy(dst=out, src=t)

    nl.fori_loop(0, 4, step)
    return out


def test_edges_inside_a_loop_traced_once_hold_in_every_iteration():
    def body(x, edge):
        return _looped(x, "recip after act" if edge else "")

    plain = api.launch(nki.jit(lambda x: body(x, False)), [X], target="trn2")
    edged = api.launch(nki.jit(lambda x: body(x, True)), [X], target="trn2")
    assert any(isinstance(e, LoopEnter) and e.once for e in edged.program.body)  # the body is traced once
    assert sum(1 for c in edged.program.calls if c.order and c.order.after) == 1
    assert edged.latency_us() > plain.latency_us()
    assert api.estimate(edged.program).total_us == pytest.approx(edged.latency_us())
    unrolled = api.launch(nki.jit(lambda x: body(x, True)), [X], target="trn2", record=False)
    assert unrolled.latency_us() == pytest.approx(edged.latency_us())
    trace = edged.record.ctx.trace
    sched = schedule(trace, resolve("trn2").params)
    acts = [k for k, ins in enumerate(trace) if ins.op == "activation"]
    recips = [k for k, ins in enumerate(trace) if ins.op == "reciprocal"]
    assert len(acts) == len(recips) == 4
    for a, r in zip(acts, recips):  # each iteration's reciprocal waits for its own iteration's activation
        assert sched.start[r] >= sched.end[a]


def test_no_reorder_chains_every_instruction_of_the_block_also_in_helpers():
    def helper(dst, src):
        nisa.reciprocal(dst=dst, data=src)

    def body(x):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        a = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        b = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        with nl.no_reorder():
            nisa.activation(dst=a, data=t, op=nl.exp)
            helper(b, t)  # dynamically scoped: the helper's instruction is in the block
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
        nisa.dma_copy(dst=out, src=a)
        return out

    launch = api.launch(nki.jit(body), [X], target="trn2")
    (act, rec) = [c.order for c in launch.program.calls if c.order is not None]
    assert act.label is not None and rec.after == (act.label,)
    assert spans(launch, "reciprocal")[0] >= spans(launch, "activation")[1]


def line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return next(start + i for i, text in enumerate(lines) if text.rstrip().endswith(marker))


def test_a_name_no_instruction_carries_is_an_error_at_the_with_schedule_line():
    def launch_it():
        scheduled = kernel("plain").with_schedule([("recip", "nope")])  # ERR
        scheduled(X)

    with pytest.raises(ValueError, match="names instruction 'nope', but no instruction of the kernel") as info:
        launch_it()
    assert info.value.error_id == "err_schedule_unknown_instruction"
    loc = info.value.nki_location
    assert os.path.abspath(loc[0]) == HERE and loc[1] == line_of(launch_it, "# ERR")
    with pytest.raises(ValueError, match="names instruction 'nobody'"):
        kernel("plain").with_schedule([("nobody", "act")])(X)
    with pytest.raises(TypeError, match="pairs"):
        kernel("plain").with_schedule([("recip",)])


def test_a_producer_issued_after_its_consumer_moves_the_consumer_after_it():
    """AWS's scheduler may put an instruction after one issued later (how-to-scheduling-apis.rst: the edges
    "constrain the reordering that the automatic scheduler will do"): the simulator, which runs instructions in the
    order they are issued, issues the consumer again right after its producer when nothing between them touches
    what it touches; the values are those of the kernel without the edge, the program keeps the new order."""
    plain = api.launch(kernel("plain"), [X], target="trn2")
    sem_ns = resolve("trn2").params.engine.sem_ns
    for edged in (kernel("plain").with_schedule([("act", "recip")]), nki.jit(lambda x: backwards_act(x))):
        launch = api.launch(edged, [X], target="trn2")
        ops = [ins.op for ins in launch.record.ctx.trace]
        assert ops.index("reciprocal") < ops.index("activation")  # the activation was issued again after it
        assert spans(launch, "activation")[0] == pytest.approx(spans(launch, "reciprocal")[1] + sem_ns)
        np.testing.assert_array_equal(launch.outputs, plain.outputs)  # no hazard between them: the same values
        fns = [c.fn for c in launch.program.calls]
        assert fns.index("nisa.reciprocal") < fns.index("nisa.activation")
        api.validate(launch.program)
        assert api.estimate(launch.program).total_us == pytest.approx(launch.latency_us())
        again = api.execute(launch.program, [X])
        np.testing.assert_array_equal(again.outputs, plain.outputs)
        assert again.latency_us() == pytest.approx(launch.latency_us())
        unrecorded = api.launch(edged, [X], target="trn2", record=False)
        assert unrecorded.latency_us() == pytest.approx(launch.latency_us())


def test_a_consumer_moved_inside_a_loop_traced_once_moves_in_every_iteration():
    def body(x, edge):
        return _looped(x, "act after recip" if edge else "")

    plain = api.launch(nki.jit(lambda x: body(x, False)), [X], target="trn2")
    edged = api.launch(nki.jit(lambda x: body(x, True)), [X], target="trn2")
    assert any(isinstance(e, LoopEnter) and e.once for e in edged.program.body)
    trace = edged.record.ctx.trace
    assert [ins.op for ins in trace if ins.op in ("activation", "reciprocal")] == ["reciprocal", "activation"] * 4
    assert edged.latency_us() > plain.latency_us()
    unrolled = api.launch(nki.jit(lambda x: body(x, True)), [X], target="trn2", record=False)
    assert unrolled.latency_us() == pytest.approx(edged.latency_us())
    assert api.estimate(edged.program).total_us == pytest.approx(edged.latency_us())
    np.testing.assert_array_equal(edged.outputs, plain.outputs)
    np.testing.assert_array_equal(api.execute(edged.program, [X]).outputs, plain.outputs)


def backwards_act(x):
    """``two_independent`` with the edge "act after recip" given by depends_on after both were issued, and a handle
    on an instruction between them used after the move (its place in the trace shifted)."""
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    a = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    b = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    c = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    act = nisa.activation(dst=a, data=t, op=nl.exp)
    recip = nisa.reciprocal(dst=b, data=t)
    act.depends_on(recip)
    add = nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=c).depends_on(add)
    return out


def test_a_producer_after_its_consumer_with_a_hazard_between_is_refused_at_the_consumers_line():
    def hazard(x, edge):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        a = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        b = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        act = nisa.activation(dst=a, data=t, op=nl.exp, name="act")
        nisa.tensor_copy(dst=b, src=a)  # reads what act writes: act cannot move past it
        recip = nisa.reciprocal(dst=b, data=t, name="recip")
        if edge:
            act.depends_on(recip)  # ERR
        return x

    with pytest.raises(ValueError, match="'act' is issued before 'recip'.*tensor_copy at line .*reads what it "
                                         "writes") as info:
        nki.jit(lambda x: hazard(x, False)).with_schedule([("act", "recip")])(X)
    assert info.value.error_id == "err_schedule_against_program_order"
    assert info.value.nki_location[1] == line_of(hazard, 'name="act")')
    with pytest.raises(ValueError, match="depends_on: instruction 'act' is issued before instruction 'recip'.*"
                                         "tensor_copy at line") as info:
        nki.jit(lambda x: hazard(x, True))(X)
    assert info.value.nki_location[1] == line_of(hazard, "# ERR")

    def writes_its_input(x):  # the producer itself overwrites what the consumer reads
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        a = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        first = nisa.activation(dst=a, data=t, op=nl.exp)
        second = nisa.reciprocal(dst=t, data=t)
        first.depends_on(second)  # ERR
        return x

    with pytest.raises(ValueError, match="reciprocal at line .*writes what it reads") as info:
        nki.jit(writes_its_input)(X)
    assert info.value.nki_location[1] == line_of(writes_its_input, "# ERR")

    def itself(x):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        first = nisa.dma_copy(dst=t, src=x)
        first.depends_on(first)  # ERR
        return x

    with pytest.raises(ValueError, match="cannot depend on itself") as info:
        nki.jit(itself)(X)
    assert info.value.nki_location[1] == line_of(itself, "# ERR")


def test_depends_on_for_an_instruction_of_a_dynamic_loop_that_has_ended_is_refused():
    def late(x):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        first = nisa.memset(dst=t, value=1.0)
        made = []
        nl.fori_loop(0, 3, lambda i: made.append(nisa.dma_copy(dst=x, src=t)))
        made[0].depends_on(first)  # ERR
        return x

    with pytest.raises(ValueError, match="was issued inside a dynamic loop that has ended") as info:
        nki.jit(late)(np.zeros((128, 8), np.float32))
    assert info.value.nki_location[1] == line_of(late, "# ERR")


def test_each_logical_core_of_an_lnc2_launch_keeps_its_own_edges():
    def body(x):
        c = nl.program_id(0)
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        rows = x[c * 128:(c + 1) * 128, :]
        return two_independent_into(rows, out[c * 128:(c + 1) * 128, :], out)

    def two_independent_into(x, dst, out):
        t = nl.ndarray((128, 512), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        a = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
        b = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
        nisa.activation(dst=a, data=t, op=nl.exp, name="act")
        nisa.reciprocal(dst=b, data=t, name="recip")
        nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
        nisa.dma_copy(dst=dst, src=a)
        return out

    x2 = np.concatenate([X, X + 1.0])
    plain = api.launch(nki.jit(body), [x2], grid=2, target="trn2")
    edged = api.launch(nki.jit(body).with_schedule([("recip", "act")]), [x2], grid=2, target="trn2")
    one = api.launch(kernel("depends_on"), [X], target="trn2")
    one_plain = api.launch(kernel("plain"), [X], target="trn2")
    grew = {c: edged.estimate().core_us[c] - plain.estimate().core_us[c] for c in (0, 1)}
    assert grew[0] == pytest.approx(one.latency_us() - one_plain.latency_us())
    assert grew[1] == pytest.approx(grew[0])  # the other core's reciprocal waits for its own activation
    assert api.estimate(edged.program).total_us == pytest.approx(edged.latency_us())
    back = api.launch(nki.jit(body).with_schedule([("act", "recip")]), [x2], grid=2, target="trn2")
    one_back = api.launch(kernel("plain").with_schedule([("act", "recip")]), [X], target="trn2")
    for c in (0, 1):  # each core's activation moved after its own reciprocal
        assert back.estimate().core_us[c] - plain.estimate().core_us[c] == pytest.approx(
            one_back.latency_us() - one_plain.latency_us())
    np.testing.assert_array_equal(back.outputs, plain.outputs)


def test_an_instruction_waits_for_at_most_max_edges_others():
    from nkisim.program.limits import MAX_EDGES

    with pytest.raises(ValueError, match=f"more than {MAX_EDGES} named instructions") as info:
        kernel("plain").with_schedule([("recip", [f"p{k}" for k in range(MAX_EDGES + 1)])])
    assert info.value.error_id == "err_too_many_edges"

    def many(x):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        made = [nisa.memset(dst=t, value=float(k)) for k in range(MAX_EDGES + 1)]
        nisa.dma_copy(dst=x, src=t).depends_on(*made)  # ERR
        return x

    with pytest.raises(ValueError, match=f"would wait for more than {MAX_EDGES} instructions") as info:
        nki.jit(many)(np.zeros((128, 8), np.float32))
    assert info.value.nki_location[1] == line_of(many, "# ERR")
    program = api.launch(kernel("depends_on"), [X], target="trn2").program
    raw = json.loads(program.to_json())
    call = next(e for e in raw["body"] if e[0] == "call" and len(e) == 7 and e[6][1])
    call[6][1] = ["act"] * (MAX_EDGES + 1)
    with pytest.raises(ProgramError, match=f"at most {MAX_EDGES} labels waited for"):
        from_json(json.dumps(raw))
