"""The engines' random number generators of NKI 0.6: ``nisa.rng``, ``rand2``, ``set_rng_seed``, ``rand_set_state``
and ``rand_get_state``.

AWS documents the generator as XORWOW (``rand2``) whose per-lane state is 6 uint32 words on GpSimd and 24 on the
Vector engine (``rand_set_state``), but not how a seed expands into that state, how the Vector engine's 24 words are
used, nor the order in which lanes draw.  The simulator therefore runs a documented generator of its own, never
claiming bit-equality with the hardware:

- each lane (partition) of an engine holds ``words / 6`` generators of Marsaglia's XORWOW (five xorshift words and a
  Weyl counter, 6 uint32 words each): one on GpSimd, four on the Vector engine;
- element ``j`` of a partition (counted from 0 in each instruction) comes from generator ``j % G`` of that partition's
  lane (G generators per lane), each generator stepping once per element it gives, in row-major order of the
  destination's free elements;
- a 32-bit seed (``set_rng_seed``, or 0 before any seeding) expands into every word with a 32-bit integer hash of
  the seed, the lane, the generator and the word (``expand``);
- ``rng`` keeps the low bits of each 32-bit draw (AWS: "taking the least significant bits"); ``rand2`` maps the top
  24 bits of a draw to ``[0, 1)`` in fp32 and scales it to ``[min, max)``.

The states live on the kernel context, so a launch (and its program's replay) draws the same values every time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.context import KernelContext, current
from nkisim.core.errors import nki_error
from nkisim.core.storage import read
from nkisim.core.tensor import Access, as_access, is_tile, shape_str
from nkisim.cost.instructions import RAND2, RNG, RNG_STATE
from nkisim.ops.base import dtype_in, emit, operand, operands, write_dst
from nkisim.ops.mx import needs_v4
from nkisim.ops.outputs import per_partition
from nkisim.ops.registry import op

U32 = np.dtype(np.uint32)
#: words of one XORWOW generator: x, y, z, w, v and the Weyl counter d (Marsaglia 2003)
WORDS = 6
#: Marsaglia's Weyl increment
WEYL = 362437
#: the engine each enum number names, for the instructions that choose one
_ENGINES = {3: "pool", 5: "dve"}
_RNG_DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")


def _hash32(x: np.ndarray) -> np.ndarray:
    """A 32-bit integer mixing function (xorshift-multiply, the "lowbias32" constants)."""
    x = x.astype(np.uint64) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    x ^= x >> 16
    return x.astype(U32)


def expand(seed: int, lanes: int, words: int) -> np.ndarray:
    """The ``[lanes, words]`` uint32 state a 32-bit ``seed`` gives every lane: each word a hash of the seed and the
    word's position; a generator whose five xorshift words all hash to 0 gets x = 1 (XORWOW needs one bit set)."""
    pos = np.arange(lanes * words, dtype=np.uint64).reshape(lanes, words) + 1
    state = _hash32(np.uint64(seed & 0xFFFFFFFF) ^ _hash32(pos).astype(np.uint64))
    gens = state.reshape(lanes, words // WORDS, WORDS)
    dead = ~gens[..., :5].any(axis=-1)
    gens[..., 0][dead] = 1
    return gens.reshape(lanes, words)


def draw(state: np.ndarray, lanes: int, n: int) -> np.ndarray:
    """``n`` 32-bit draws for each of the first ``lanes`` lanes of ``state`` (``[L, G * 6]``, advanced in place):
    element ``j`` from generator ``j % G``."""
    gens = state[:lanes].reshape(lanes, -1, WORDS)
    g = gens.shape[1]
    rounds = -(-n // g)
    out = np.empty((lanes, rounds * g), U32)
    x, y, z, w, v, d = (gens[..., i].copy() for i in range(WORDS))
    for r in range(rounds):
        t = x ^ (x >> np.uint32(2))
        nv = (v ^ (v << np.uint32(4))) ^ (t ^ (t << np.uint32(1)))
        nd = d + np.uint32(WEYL)
        step = (r * g + np.arange(g) < n)[None, :]  # the last round steps only the generators that give an element
        x, y, z, w, v, d = (np.where(step, new, old) for new, old in ((y, x), (z, y), (w, z), (v, w), (nv, v), (nd, d)))
        out[:, r * g:(r + 1) * g] = v + d
    for i, word in enumerate((x, y, z, w, v, d)):
        gens[..., i] = word
    state[:lanes] = gens.reshape(lanes, -1)
    return out[:, :n]


def _words(ctx: KernelContext, engine: str) -> int:
    lim = ctx.target.limits
    return lim.rng_state_words_vector if engine == "dve" else lim.rng_state_words_gpsimd


def state_of(ctx: KernelContext, engine: str) -> np.ndarray:
    """The engine's generator state on this launch (seed 0 until the kernel seeds or loads it)."""
    held = ctx.xorwow.get(engine)
    if held is None:
        held = ctx.xorwow[engine] = expand(0, ctx.target.partitions, _words(ctx, engine))
    return held


def _engine(api: str, engine: Any, ctx: KernelContext, vector_from: int) -> str:
    """The engine an instruction runs its generator on: GpSimd, or the Vector engine from NeuronCore-v``vector_from``."""
    eng = _ENGINES.get(int(engine or 0))
    if eng is None:
        raise nki_error("err_instruction_unsupported_op",
                        f"engine={engine!r} of '{api}': the generators are on the Vector and GpSimd engines only")
    need = vector_from if eng == "dve" else 3
    if ctx.nc_version < need:
        raise nki_error("err_min_arch_support_for_inst",
                        f"inst {api} on the {'Vector' if eng == 'dve' else 'GpSimd'} engine requires min target "
                        f"gen{need}, got {ctx.target}")
    return eng


def _no_gpsimd_psum(api: str, acc: Access, eng: str) -> None:
    if eng == "pool" and acc.space == "psum":
        raise nki_error("err_unsupported_memory",
                        f"Expected operand 'dst' of '{api}' to be in address space 'sbuf', but got a tile in 'psum' "
                        f"instead. (GpSimd cannot access PSUM)")


def low_bits(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """32-bit draws truncated to ``dtype``'s width (its least significant bits), as that dtype's values."""
    width = np.dtype(dtype).itemsize * 8
    kept = bits.astype(np.uint64) & ((1 << width) - 1)
    if np.dtype(dtype).kind == "i":
        kept = kept.astype(np.int64) - ((kept >> (width - 1)).astype(np.int64) << width)
    return kept.astype(np.int64)


@op("nisa.rng", emits=(RNG,))
def rng(*, dst: Any, engine: Any = 5, name: str = "") -> None:
    """``nisa.rng``: 32 random bits per element of ``dst`` (an integer tile), truncated to its width, from the
    Vector engine's generators (or GpSimd's, NeuronCore-v3+; SBUF only)."""
    ctx = current()
    api = "rng"
    eng = _engine(api, engine, ctx, 2)
    d = as_access(operand(api, "dst", dst, ["psum", "sbuf"], ctx))
    _no_gpsimd_psum(api, d, eng)
    dtype_in(api, "dst", d, _RNG_DTYPES)
    parts, n = d.shape[0], int(np.prod(d.shape[1:] or (1,)))
    vals = low_bits(draw(state_of(ctx, eng), parts, n), d.dtype) if ctx.numerics else None
    emit(ctx, RNG, eng, writes=[write_dst(ctx, api, dst, d.shape, vals)])


@op("nisa.rand2", emits=(RAND2,))
def rand2(min: Any, max: Any, *, dst: Any, name: str = "") -> None:  # noqa: A002  (AWS's parameter names)
    """``nisa.rand2`` (NeuronCore-v4): uniform fp32 values in ``[min, max)`` from the Vector engine's generators
    (``min``/``max`` scalars or one value per partition), cast once to ``dst``'s dtype."""
    ctx = current()
    api = "rand2"
    needs_v4(api)
    d = as_access(operand(api, "dst", dst, ["psum", "sbuf"], ctx))
    if dt.is_packed(d.dtype):
        raise nki_error("err_supported_operand_dtype", f"'dst' of '{api}' cannot have dtype {dt.name(d.dtype)}")
    if not is_tile(min) and not is_tile(max) and not float(min) < float(max):
        raise nki_error("err_unsupported_dtype_value", f"min={min!r} and max={max!r} of '{api}': min must be below max")
    parts, n = d.shape[0], int(np.prod(d.shape[1:] or (1,)))
    lo, hi = (per_partition(api, k, v, parts, ctx, 2) for k, v in (("min", min), ("max", max)))
    vals = None
    if ctx.numerics:
        if np.any(np.asarray(lo) >= np.asarray(hi)):
            raise nki_error("err_unsupported_dtype_value", f"'min' of '{api}' must be below 'max' in every partition")
        unit = (draw(state_of(ctx, "dve"), parts, n) >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)
        vals = (lo + unit * (hi - lo)).astype(np.float32)
        vals = np.minimum(vals, np.nextafter(np.asarray(hi, np.float32), np.float32(-np.inf)))  # fp32 rounding: < max
    reads = [as_access(v) for v in (min, max) if is_tile(v)]
    emit(ctx, RAND2, reads=reads, writes=[write_dst(ctx, api, dst, d.shape, vals)])


@op("nisa.set_rng_seed", emits=(RNG_STATE,))
def set_rng_seed(src_seeds: Any, *, name: str = "") -> None:
    """``nisa.set_rng_seed``: seed every lane of the Vector engine's generators from one 32-bit value (``expand``)."""
    ctx = current()
    api = "set_rng_seed"
    s = operands(api, src_seeds=src_seeds)["src_seeds"]
    if s.shape != (1, 1) and not (len(s.shape) == 1 and s.shape[0] == 1):
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str('src_seeds', s.shape)}) of '{api}' has mismatched shapes: the "
                        f"seed is a [1, 1] tensor")
    if s.itemsize != 4 or dt.is_packed(s.dtype):
        raise nki_error("err_supported_operand_dtype",
                        f"'src_seeds' of '{api}' has dtype {dt.name(s.dtype)}: the seed is a 32-bit value")
    if ctx.numerics:
        raw = np.ascontiguousarray(np.asarray(read(s)).astype(s.dtype)).view(np.uint32).ravel()
        ctx.xorwow["dve"] = expand(int(raw[0]), ctx.target.partitions, _words(ctx, "dve"))
    emit(ctx, RNG_STATE, "dve", reads=[s])


def _state_tile(api: str, pname: str, acc: Access, ctx: KernelContext, eng: str) -> int:
    words = _words(ctx, eng)
    dtype_in(api, pname, acc, ("uint32",))
    if len(acc.shape) != 2 or acc.shape[1] != words:
        raise nki_error("err_param_shape_mismatch",
                        f"Parameter shapes ({shape_str(pname, acc.shape)}) of '{api}' has mismatched shapes: XORWOW "
                        f"state is {words} uint32 words per lane on the {'Vector' if eng == 'dve' else 'GpSimd'} "
                        f"engine, so [lanes, {words}]")
    return words


@op("nisa.rand_set_state", emits=(RNG_STATE,), spaces="sbuf")
def rand_set_state(src_seeds: Any, *, engine: Any = 3, name: str = "") -> None:
    """``nisa.rand_set_state`` (NeuronCore-v3+; the Vector engine from v4): partition ``p`` of ``src_seeds`` becomes
    the generator state of lane ``p`` (6 words on GpSimd, 24 on the Vector engine); other lanes keep theirs."""
    ctx = current()
    api = "rand_set_state"
    eng = _engine(api, engine, ctx, 4)
    s = operands(api, src_seeds=src_seeds)["src_seeds"]
    _state_tile(api, "src_seeds", s, ctx, eng)
    if ctx.numerics:
        state = state_of(ctx, eng)
        state[:s.shape[0]] = np.asarray(read(s)).astype(np.uint64).astype(U32)
    emit(ctx, RNG_STATE, eng, reads=[s])


@op("nisa.rand_get_state", emits=(RNG_STATE,))
def rand_get_state(*, dst: Any, engine: Any = 3, name: str = "") -> None:
    """``nisa.rand_get_state`` (NeuronCore-v3+; the Vector engine from v4): lane ``p``'s generator state into
    partition ``p`` of ``dst`` (SBUF; PSUM too from the Vector engine)."""
    ctx = current()
    api = "rand_get_state"
    eng = _engine(api, engine, ctx, 4)
    d = as_access(operand(api, "dst", dst, ["psum", "sbuf"] if eng == "dve" else ["sbuf"], ctx))
    _state_tile(api, "dst", d, ctx, eng)
    vals = state_of(ctx, eng)[:d.shape[0]].astype(np.int64) if ctx.numerics else None
    emit(ctx, RNG_STATE, eng, writes=[write_dst(ctx, api, dst, d.shape, vals)])
