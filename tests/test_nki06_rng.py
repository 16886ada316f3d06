"""NKI 0.6's random generators (``nkisim/ops/rng.py``): ``nisa.rng``, ``rand2``, ``set_rng_seed``, ``rand_set_state``
and ``rand_get_state``, against a plain-Python XORWOW written here (the simulator's generator is documented, not the
hardware's bits: the tests check the documented rules, determinism, ranges and statistics), every documented refusal
at the kernel's line and mutants; and one program of every instruction of ``test_nki06_isa_more.py`` and these
through the program format.
"""

from __future__ import annotations

import numpy as np
import pytest
from call_cases import xorwow  # Marsaglia's XORWOW in Python ints: the one reference
from test_nki06_isa_more import BF16, CMD, F32, _snake_input, load, new, out, refused

import nkisim
from nkisim import api
from nkisim.ops import rng as rng_op

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(2061)


@pytest.fixture(autouse=True)
def _trn3(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")


# --- the random generators ---------------------------------------------------------------------------------------
def _lane_draws(state, n):
    """Draws of a lane holding ``len(state) // 6`` generators: element j from generator j % G."""
    g = len(state) // 6
    per = [xorwow(state[6 * i:6 * i + 6], len(range(i, n, g))) for i in range(g)]
    return [per[j % g][0][j // g] for j in range(n)], [u for _, after in per for u in after]


@pytest.mark.parametrize("engine, words", [(nisa.engine.gpsimd, 6), (nisa.engine.vector, 24)])
def test_rng_is_xorwow_from_the_loaded_state(engine, words):
    """rand_set_state loads each lane's words, rng draws XORWOW (low bits for narrow dtypes), rand_get_state returns
    the advanced words; a lane that was not loaded keeps drawing from its own state."""
    seeds = RNG.integers(1, 2**32, (16, words), dtype=np.uint64).astype(np.uint32)

    def kernel(s):
        st = new((16, words), nl.uint32)
        nisa.dma_copy(dst=st, src=s)
        nisa.rand_set_state(src_seeds=st, engine=engine)
        wide = new((16, 10), nl.uint32)
        nisa.rng(dst=wide, engine=engine)
        narrow = new((16, 10), nl.int8)
        nisa.rng(dst=narrow, engine=engine)
        after = new((16, words), nl.uint32)
        nisa.rand_get_state(dst=after, engine=engine)
        return out(wide), out(narrow), out(after)

    wide, narrow, after = nki.jit(kernel)(seeds)
    for p in range(16):  # each rng call starts its row at generator 0 of the lane
        first, state = _lane_draws(list(seeds[p]), 10)
        second, state = _lane_draws(state, 10)
        assert list(wide[p]) == first
        assert [int(v) for v in narrow[p].view(np.uint8)] == [u & 0xFF for u in second]
        assert list(after[p]) == state


def test_set_rng_seed_is_deterministic_and_seeds_differ():
    def kernel(s):
        seed = new((1, 1), nl.uint32)
        nisa.dma_copy(dst=seed, src=s)
        nisa.set_rng_seed(src_seeds=seed)
        a = new((128, 64), nl.uint32)
        nisa.rng(dst=a)
        nisa.set_rng_seed(src_seeds=seed)
        b = new((128, 64), nl.uint32)
        nisa.rng(dst=b)
        return out(a), out(b)

    a1, b1 = nki.jit(kernel)(np.array([[7]], np.uint32))
    a2, _ = nki.jit(kernel)(np.array([[7]], np.uint32))
    a3, _ = nki.jit(kernel)(np.array([[8]], np.uint32))
    np.testing.assert_array_equal(a1, b1)  # reseeding restarts the sequence
    np.testing.assert_array_equal(a1, a2)  # a launch draws the same values every time
    assert np.mean(a1 == a3) < 0.01 and len(np.unique(a1)) > 0.99 * a1.size
    bits = np.unpackbits(a1.view(np.uint8))
    assert 0.49 < bits.mean() < 0.51  # every bit fair


def test_rand2_is_uniform_in_range_and_cast_to_dst():
    lo = RNG.uniform(-5, 0, (128, 1)).astype(F32)
    hi = lo + RNG.uniform(0.5, 3, (128, 1)).astype(F32)

    def kernel(a, b):
        x = new((128, 512))
        nisa.rand2(dst=x, min=load(a), max=load(b))
        y = new((128, 512), nl.bfloat16)
        nisa.rand2(dst=y, min=-1.0, max=1.0)
        return out(x), out(y)

    x, y = nki.jit(kernel)(lo, hi)
    assert x.dtype == np.float32 and y.dtype == BF16
    assert np.all(x >= lo) and np.all(x < hi)
    u = (x - lo) / (hi - lo)
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert np.all(np.abs(y.astype(F32)) <= 1) and abs(y.astype(F32).mean()) < 0.01


def test_rng_refusals(monkeypatch):
    def float_dst(a):
        nisa.rng(dst=new((32, 8)))  # ERR
    refused(float_dst, Exception, "'dst' of 'rng' has dtype float32")

    def gpsimd_psum(a):
        nisa.rng(dst=nl.ndarray((32, 8), dtype=nl.uint32, buffer=nl.psum), engine=nisa.engine.gpsimd)  # ERR
    refused(gpsimd_psum, Exception, "GpSimd cannot access PSUM")

    def empty_range(a):
        nisa.rand2(dst=new((32, 8)), min=1.0, max=1.0)  # ERR
    refused(empty_range, Exception, "min must be below max")

    def wide_seed(a):
        nisa.set_rng_seed(src_seeds=new((1, 2), nl.uint32))  # ERR
    refused(wide_seed, Exception, r"the seed is a \[1, 1\] tensor")

    def short_state(a):
        nisa.rand_set_state(src_seeds=new((32, 5), nl.uint32))  # ERR
    refused(short_state, Exception, r"6 uint32 words per lane on the GpSimd engine")

    def scalar_engine(a):
        nisa.rand_get_state(dst=new((32, 6), nl.uint32), engine=nisa.engine.scalar)  # ERR
    refused(scalar_engine, Exception, "Vector and GpSimd engines only")

    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")

    def rand2_on_trn2(a):
        nisa.rand2(dst=new((32, 8)), min=0.0, max=1.0)  # ERR
    refused(rand2_on_trn2, Exception, "requires min target gen4")

    def vector_state_on_trn2(a):
        nisa.rand_set_state(src_seeds=new((32, 24), nl.uint32), engine=nisa.engine.vector)  # ERR
    refused(vector_state_on_trn2, Exception, "on the Vector engine requires min target gen4")

    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")

    def gpsimd_rng_on_trn1(a):
        nisa.rng(dst=new((32, 8), nl.uint32), engine=nisa.engine.gpsimd)  # ERR
    refused(gpsimd_rng_on_trn1, Exception, "on the GpSimd engine requires min target gen3")


def test_mutants_of_the_generator_fail_the_references(monkeypatch):
    seeds = RNG.integers(1, 2**32, (16, 6), dtype=np.uint64).astype(np.uint32)

    def kernel(s):
        st = new((16, 6), nl.uint32)
        nisa.dma_copy(dst=st, src=s)
        nisa.rand_set_state(src_seeds=st)
        a = new((16, 4), nl.uint32)
        nisa.rng(dst=a, engine=nisa.engine.gpsimd)
        return out(a)

    want = [_lane_draws(list(seeds[p]), 4)[0] for p in range(16)]
    assert nki.jit(kernel)(seeds).tolist() == want
    with monkeypatch.context() as m:  # Marsaglia's Weyl increment mistyped
        m.setattr(rng_op, "WEYL", 362436)
        assert nki.jit(kernel)(seeds).tolist() != want
    with monkeypatch.context() as m:  # the draws of narrow dtypes taken from the high bits
        m.setattr(rng_op, "low_bits", lambda bits, dtype: (bits >> (32 - 8 * np.dtype(dtype).itemsize)).astype(np.int64))
        with pytest.raises(AssertionError):
            test_rng_is_xorwow_from_the_loaded_state(nisa.engine.gpsimd, 6)


# --- the program format -------------------------------------------------------------------------------------------
def test_a_kernel_of_every_new_instruction_compiles_to_a_program_that_replays_and_prices_the_same():
    """Each instruction here survives the program format: JSON, validation, replay (the generators' state included)
    and estimate."""
    x = RNG.uniform(-2, 2, (32, 16)).astype(F32)
    snakes = _snake_input(32, 4)
    state = RNG.integers(1, 2**32, (32, 6), dtype=np.uint64).astype(np.uint32)
    table = RNG.uniform(-1, 1, (32, 64)).astype(F32)

    def kernel(a, s, st, tb):
        src = load(a)
        e, z, r = new((32, 16)), new((32, 16)), new((32, 1))
        nisa.exponential(dst=e, src=src, max_value=0.5, reduce_res=r, reduce_cmd=CMD.reset_reduce)
        nisa.activate2(dst=z, op=nl.exp, data=src, imm0=0.5, imm1=1.0, op0=nl.multiply, op1=nl.add,
                       reduce_op=nl.maximum, reduce_res=r, reduce_cmd=CMD.reset_reduce)
        nz = new((32, 17), nl.int32)
        nisa.memset(dst=nz, value=0)
        nisa.nonzero_with_count(dst=nz, src=src, index_offset=2)
        v, i = new((32, 8), nl.bfloat16), new((32, 8), nl.uint32)
        nisa.topk(val_dst=v, idx_dst=i, src=load(s), n=60)
        g = new((32, 8))
        nisa.nc_n_gather(dst=g, data=load(tb), indices=i)
        total = new((32, 16))
        nisa.dma_compute(dst=total, srcs=[a, e, z], reduce_op=nl.add)
        nisa.rand_set_state(src_seeds=load(st))
        bits = new((32, 8), nl.uint32)
        nisa.rng(dst=bits, engine=nisa.engine.gpsimd)
        uni = new((32, 8))
        nisa.rand2(dst=uni, min=0.0, max=2.0)
        return out(total), out(r), out(nz), out(g), out(bits), out(uni)

    launch = api.launch(nki.jit(kernel), [x, snakes, state, table], target="trn3")
    program = api.program_from_json(launch.program.to_json())
    api.validate(program, target="trn3")
    replay = api.execute(program, [x, snakes, state, table], target="trn3")
    for got, want in zip(replay.outputs, launch.outputs, strict=True):
        np.testing.assert_array_equal(got, want)
    assert replay.estimate().total_us == launch.latency_us()
    assert [int(b) for b in launch.outputs[4][3]] == _lane_draws(list(state[3]), 8)[0]
