"""Every kind of operand, held to its own table, and the trust boundary fed hostile records of every kind.

A kind of operand is one class (``program.kinds``, see ``program.operands``) with its JSON form, parser, encoder,
check, decoder and plan.  These tests know no kind by name beyond ``SAMPLES``: a kind added without a sample fails
``test_every_kind_has_a_sample``, and from there every sample is round-tripped through JSON and through
decode-then-encode, planned against its decoder, and mutated field by field into malformed records that the
parser, the validator or the executor must refuse with a ``ProgramError`` (or run, or refuse with the compiler's
``NKIError``) -- never another exception.  The caps of ``program.limits`` are each met by a program just past them.
"""

from __future__ import annotations

import copy
import dataclasses
import json

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim import api
from nkisim.core import buffers
from nkisim.core.access import Access
from nkisim.core.errors import NKIError
from nkisim.core.grids import DynSlice
from nkisim.core.indexing import Affine, Loop, MaskExpr
from nkisim.core.tensor import Tensor
from nkisim.program import limits, operands
from nkisim.program.encode import Decoder, Encoder
from nkisim.program.ir import Array, Call, ProgramError
from nkisim.program.kinds import constants, containers, indexing
from nkisim.program.operands import Kind, parse_operand
from nkisim.program.plan import CallPlan

RNG = np.random.default_rng(3)


def _x(const, terms=(), g=None, affine=True):
    return {"X": const, "t": [list(p) for p in terms], "g": g, "affine": affine,
            "loops": sorted(lp for lp, _ in terms)}


#: the arrays the samples name: an int64 index grid, a bool mask value, a float32 array
ARRAYS = (np.arange(4, dtype=np.int64).reshape(4, 1), np.ones((4, 1), bool), np.arange(6, dtype=np.float32),
          np.arange(8, dtype=np.int64).reshape(1, 8))
#: one sample of every kind, in its JSON form (tensor 0 is a (256, 64) tile, tensor 1 a (1, 1) int32 tile;
#: loop 0 runs; arrays as above)
SAMPLES = [
    [1, 2.5, "x", None, True], {"tuple": [128, 4]}, {"dict": [["a", 1], ["b", [2]]]}, {"float": "nan"},
    {"float": "-inf"}, {"slice": [0, 4, None]}, {"ds": [_x(0, [(0, 4)]), 4]}, {"ellipsis": 1}, {"par_dim": 128},
    {"dtype": "bfloat16"}, {"np": "float32", "v": 1.5}, {"np": "int64", "v": 3}, {"arr": 2}, {"fn": "add"},
    {"buf": "psum", "alloc": None}, {"buf": "sbuf", "alloc": ["sbuf", 0, 0, [1], [2], None]},
    {"T": 0}, {"W": 0}, _x(5, [(0, 2)]), _x(0, g=0, affine=True),
    {"A": 0, "c": [["slice", _x(0, [(0, 128)]), _x(128, [(0, 128)]), 1], ["int", _x(3)]]},
    {"A": 0, "c": [["adv", _x(0, [(0, 4)], g=0)], ["int", _x(1)]]},
    {"A": 0, "c": [["ind", {"W": 1}], ["adv", _x(0, g=3)]]},
    {"A": 0, "c": [["adv", _x(0, g=0)], ["dyn", {"D": {"A": 1, "c": [["int", _x(0)], ["int", _x(0)]]}, "off": _x(2)}]]},
    {"D": {"W": 1}, "off": _x(1)},
    {"M": ["cmp", "<", _x(0, [(0, 128)]), _x(200)]},
    {"M": ["and", {"M": ["cmp", ">=", _x(0, [(0, 1)]), _x(0)]}, {"mask": 1, "ok": True, "reason": None, "grid": True}]},
    {"M": ["or", {"M": ["cmp", "==", _x(0, [(0, 1)]), _x(0)]}, {"M": ["cmp", "!=", _x(0, [(0, 1)]), _x(1)]}]},
    {"M": ["not", {"M": ["cmp", "<=", _x(0, [(0, 1)]), _x(1)]}]},
    {"mask": 1, "ok": False, "reason": "nonaffine", "grid": False},
    {"OM": {"A": 0, "c": [["adv", _x(0, g=0)], ["adv", _x(0, g=3)]]},
     "m": {"M": ["cmp", "<", _x(0, g=3), _x(5)]}},
]


def _records(cls: type) -> set[type]:
    """Every record class of operand below ``cls`` (the slotted dataclasses: a kind's own records; a slotted
    dataclass replaces the class it was made from, which stays behind as a subclass)."""
    out = set()
    for sub in cls.__subclasses__():
        if dataclasses.is_dataclass(sub) and "__slots__" in sub.__dict__:
            out.add(sub)
        out |= _records(sub)
    return out


def _walk(rec) -> set[type]:
    """The record classes in an operand, nested ones included (access keys are not operands)."""
    found = {type(rec)} if isinstance(rec, Kind) else set()
    if dataclasses.is_dataclass(rec):
        for f in dataclasses.fields(rec):
            v = getattr(rec, f.name)
            for item in (v if isinstance(v, tuple) else (v,)):
                found |= _walk(item[1] if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                               else item)
    return found


def test_every_kind_has_a_sample():
    covered = set().union(*(_walk(parse_operand(s)) for s in SAMPLES))
    missing = sorted(c.__name__ for c in _records(Kind) - covered)
    assert not missing, f"kinds without a sample in SAMPLES: {missing}"
    assert set(operands.PARSERS) <= {k for s in SAMPLES if isinstance(s, dict) for k in s} | {"X"}


@pytest.mark.parametrize("raw", SAMPLES, ids=[json.dumps(s)[:40] for s in SAMPLES])
def test_a_sample_round_trips_through_json(raw):
    rec = parse_operand(raw)
    assert operands.operand_json(rec) == raw
    assert parse_operand(json.loads(json.dumps(operands.operand_json(rec)))) == rec


def _world():
    """Live tensors, a running loop and the arrays the samples name, as a decoder and an encoder see them."""
    tile = Tensor((256, 64), np.dtype(np.float32), buffers.sbuf, RNG.standard_normal((256, 64)).astype(np.float32),
                  "t")
    index = Tensor((1, 1), np.dtype(np.int32), buffers.sbuf, np.full((1, 1), 2, np.int32), "i")
    loop = Loop("affine", 0, 2, 1)
    arrays = tuple(Array(a.dtype.name, a.shape, a.tobytes()) for a in ARRAYS)
    dec = Decoder(arrays, {0: tile, 1: index}, {0: loop})
    enc = Encoder()
    for t in (tile, index):
        enc.new_tensor(t)
    enc.new_loop(loop)
    for a in ARRAYS:
        enc.array(a)
    return dec, enc, loop


@pytest.mark.parametrize("raw", [s for s in SAMPLES if not (isinstance(s, dict) and "fn" in s)],
                         ids=[json.dumps(s)[:40] for s in SAMPLES if not (isinstance(s, dict) and "fn" in s)])
def test_decoding_then_encoding_gives_the_record_back(raw):
    """What the executor decodes is what a recording encodes from it (``Fn`` decodes to the op-table name the ops
    take, a plain string, and is left out)."""
    dec, enc, _ = _world()
    rec = parse_operand(raw)
    assert enc.value(dec.value(rec)) == rec


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, Tensor):
        return a is b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, Access):
        return a.tensor is b.tensor and a.shape == b.shape and all(
            np.array_equal(x, y) for x, y in zip(a.np_index(), b.np_index()))
    if isinstance(a, Affine):
        return np.array_equal(a.value(), b.value()) and a.affine == b.affine and a.loops == b.loops
    if isinstance(a, MaskExpr):
        return np.array_equal(a.value, b.value) and (a.ok, a.reason, a.has_grid) == (b.ok, b.reason, b.has_grid)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, slice):
        return _same((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    if isinstance(a, DynSlice):
        return _same(a.start, b.start) and a.size == b.size
    if hasattr(a, "element") and hasattr(a, "offset"):  # a dynamic index
        return _same(a.element, b.element) and _same(a.offset, b.offset)
    return a == b


@pytest.mark.parametrize("raw", SAMPLES, ids=[json.dumps(s)[:40] for s in SAMPLES])
def test_a_samples_plan_builds_what_its_decoder_builds_at_every_iteration(raw):
    dec, _, loop = _world()
    rec = parse_operand(raw)
    plan = CallPlan(Call("f", ("lead", rec), (("k", rec),), (), ("x", 1)), dec, lambda *a, **k: (a, k))
    for v in (0, 1):
        loop.current = v
        (_, got), kw = plan.run()
        assert _same(got, dec.value(rec)) and _same(kw["k"], dec.value(rec))


# --------------------------------------------------------------------------- hostile records of every kind


def _mutations(raw):
    """Malformed variants of a JSON value: each field dropped, an extra field, every leaf replaced by values of
    the wrong type or range, lists emptied and doubled."""
    bad_leaves = [None, True, -1, 2**70, 1.5, "", "a\nb", "\x1b[31m", "\u202e", "x" * 5000, [], {}, [[]], {"T": 99}]
    if isinstance(raw, dict):
        for k in raw:
            yield {q: v for q, v in raw.items() if q != k}
            for sub in _mutations(raw[k]):
                yield {**raw, k: sub}
        yield {**raw, "zz": 1}
        yield dict(reversed(list(raw.items())))
    elif isinstance(raw, list):
        yield []
        yield raw + raw
        for i, v in enumerate(raw):
            for sub in _mutations(v):
                yield raw[:i] + [sub] + raw[i + 1:]
    else:
        yield from bad_leaves


@nki.jit
def _host(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


def _host_json() -> tuple[dict, int]:
    """A real program, and the index of a call inside its loop body where a sample operand is put."""
    raw = json.loads(api.trace(_host, [np.zeros((256, 64), np.float32)]).to_json())
    at = next(i for i, ev in enumerate(raw["body"]) if ev[0] == "call" and ev[1] == "nl.load")
    return raw, at


def _outcome(raw: dict) -> str:
    try:
        program = api.program_from_json(json.dumps(raw))
        api.execute(program, [RNG.standard_normal((256, 64)).astype(np.float32)], target="trn2")
    except ProgramError:
        return "refused"
    except NKIError:
        return "compiler"
    return "ran"


@pytest.mark.parametrize("raw", SAMPLES, ids=[json.dumps(s)[:40] for s in SAMPLES])
def test_malformed_records_of_every_kind_are_refused_never_crash(raw):
    """Each sample, and every malformed variant of it, as an operand of a call in a real program: the parser, the
    validator or the executor refuses it (``ProgramError``, or the op's ``NKIError``), or it runs."""
    host, at = _host_json()
    seen = {"refused": 0, "compiler": 0, "ran": 0}
    for variant in [raw, *_mutations(raw)]:
        program = copy.deepcopy(host)
        program["body"][at][2].append(variant)  # (an extra argument of nl.load)
        seen[_outcome(program)] += 1
        program = copy.deepcopy(host)
        program["body"][at][3].append(["mask", variant])
        seen[_outcome(program)] += 1
    assert seen["refused"] > 0, seen


def test_hostile_text_anywhere_is_refused():
    """A string from a program may reach feedback or a TA's table: none may hold a newline, an escape sequence or
    a bidirectional override, or run past its cap."""
    host, at = _host_json()
    places = [lambda r, s: r.__setitem__("kernel", s), lambda r, s: r["inputs"][0].__setitem__(0, s),
              lambda r, s: r["body"][at].__setitem__(1, s), lambda r, s: r["body"][at][5].__setitem__(0, s),
              lambda r, s: r["body"][at][3].append([s, 1]), lambda r, s: r["body"][at][2].append(s),
              lambda r, s: r.__setitem__("target", s)]
    for place in places:
        for s in ("two\nlines", "\x1b[2J", "\u202edecoy", "tab\there", "x" * (limits.MAX_TEXT + 1)):
            raw = copy.deepcopy(host)
            place(raw, s)
            with pytest.raises(ProgramError, match="printable characters on one line|must be"):
                api.program_from_json(json.dumps(raw))


def test_each_cap_refuses_a_program_just_past_it():
    host, at = _host_json()

    def refused(raw, words):
        with pytest.raises(ProgramError, match=words):
            api.validate(api.program_from_json(json.dumps(raw)), "trn2")

    # bytes: refused before it is parsed
    with pytest.raises(ProgramError, match="more than the 8388608 a program may have"):
        api.program_from_json(" " * (limits.MAX_PROGRAM_BYTES + 1))
    # events
    raw = copy.deepcopy(host)
    raw["body"] += [["iter", 0, 0]] * (limits.MAX_EVENTS + 1 - len(raw["body"]))
    refused(raw, "at most 500000 events")
    # tensors (the allocations a program may name)
    raw = copy.deepcopy(host)
    raw["tensors"] = limits.MAX_TENSORS + 1
    refused(raw, "tensors must be an integer")
    # operand nesting
    raw = copy.deepcopy(host)
    deep: object = 1
    for _ in range(limits.MAX_DEPTH + 1):
        deep = [deep]
    raw["body"][at][2].append(deep)
    refused(raw, "nest at most 24 deep")
    # loop nesting: 33 loops open at once
    raw = copy.deepcopy(host)
    first = raw["body"].index(next(e for e in raw["body"] if e[0] == "loop"))
    loops = [["loop", k, "affine", 0, 1, 1, True] for k in range(1, limits.MAX_LOOP_DEPTH + 1)]
    raw["body"][first + 1:first + 1] = loops + [["end", k] for k in range(limits.MAX_LOOP_DEPTH, 0, -1)]
    for ev in raw["body"][first + 1 + 2 * limits.MAX_LOOP_DEPTH:]:
        if ev[0] == "end":
            ev[1] = 0
    refused(raw, "loops nest at most 32 deep")
    # trips, and calls run: the body's two calls in an inner loop traced once, inside an outer loop of 8
    raw = copy.deepcopy(host)
    loop = next(e for e in raw["body"] if e[0] == "loop")
    loop[4] = limits.MAX_TRIP + 1
    refused(raw, "loop of more than")
    raw = copy.deepcopy(host)
    enter = raw["body"].index(next(e for e in raw["body"] if e[0] == "loop"))
    leave = raw["body"].index(next(e for e in raw["body"] if e[0] == "end"))
    raw["body"][enter][4] = 8
    inner = ["loop", 1, "sequential", 0, limits.MAX_EXECUTED_CALLS // 16 + 1, 1, True]
    raw["body"][enter + 1:leave] = [inner, *raw["body"][enter + 1:leave], ["end", 1]]
    refused(raw, "would run more than 16777216 calls")
    inner[4] -= 2  # (just under the cap, the top-level allocation counted: valid)
    api.validate(api.program_from_json(json.dumps(raw)), "trn2")
    # guards tried: 5,000 paths of one guard each, in a loop of 4,000 iterations, run no call but would try 20M guards
    raw = copy.deepcopy(host)
    enter = raw["body"].index(next(e for e in raw["body"] if e[0] == "loop"))
    raw["body"][enter][4] = 4000
    path = ["path", [[{"M": ["cmp", "<", _x(0, [(0, 1)]), _x(5)]}, True]]]
    raw["body"][enter + 1:enter + 1] = [path] * 5000
    refused(raw, "would run more than 16777216 calls")
    # constant arrays
    raw = copy.deepcopy(host)
    import base64
    raw["arrays"].append(["int64", [limits.MAX_ARRAY_BYTES // 8 + 1],
                          base64.b64encode(bytes(limits.MAX_ARRAY_BYTES + 8)).decode()])
    with pytest.raises(ProgramError, match="constant arrays hold at most"):
        api.program_from_json(json.dumps(raw))


def test_a_program_of_another_format_is_refused_by_name():
    raw, _ = _host_json()
    for fmt, words in (("nkisim-program/1", "is not this nkisim's .*trace the kernel again"),
                       ("nkisim-program/99", "is not this nkisim's"), (None, "not an nkisim program")):
        raw["format"] = fmt
        with pytest.raises(ProgramError, match=words):
            api.program_from_json(json.dumps(raw))


def test_a_kernel_passing_an_unprintable_string_cannot_be_recorded():
    """The encoder keeps the parser's rule for strings, so a traced program is never one the parser refuses."""
    @nki.jit
    def named(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm, name="two\nlines")
        nl.store(out, value=nl.load(a))
        return out

    with pytest.raises(Exception, match="printable characters on one line"):
        api.trace(named, [np.zeros((128, 4), np.float32)])


def test_the_accessors_a_grader_reads():
    program = api.trace(_host, [np.zeros((256, 64), np.float32)])
    assert program.signature() == (("a", (256, 64), "float32"),)
    (out,) = program.output_ids()
    maker = program.made_by()[out]
    assert maker.fn == "nl.ndarray" and dict(maker.kwargs)["buffer"] == constants.Buf(buffers.Space.SHARED_HBM, None)
    assert isinstance(maker.args[0], containers.TupleOf) and maker.args[0].items == (256, 64)
    assert indexing.TensorRef(out) == program.outputs


def test_programs_shaped_to_make_the_parser_work_are_refused_before_it_does():
    """Nesting to the byte cap, and bodies or tables far past their caps, are refused by a check on their length
    or depth, before any record is made of them."""
    for text in ("[" * limits.MAX_PROGRAM_BYTES, '{"a":' * (limits.MAX_PROGRAM_BYTES // 5)):
        with pytest.raises(ProgramError, match="not JSON"):
            api.program_from_json(text)
    raw, _ = _host_json()
    raw["body"] = [0] * (limits.MAX_EVENTS + 1)
    with pytest.raises(ProgramError, match="at most 500000 events"):
        api.program_from_json(json.dumps(raw))
    raw, at = _host_json()
    raw["body"][at][4] = list(range(limits.MAX_TENSORS + 1))
    with pytest.raises(ProgramError, match="outputs must be a list of at most"):
        api.program_from_json(json.dumps(raw))
