"""The program validator: the trust boundary between whoever made a program and the executor.

A program that reaches the executor was either traced by the simulator or written by someone else (a hostile
grading child can send anything).  ``validate`` accepts only programs the executor can run safely: every
call is a registered NKI call (``core.recording.CALLS``), every operand follows the encoding grammar
(``program.encode``), tensors are used only after a call made them, index expressions name only loops that
are running, loops nest and iterate inside their ranges, SPMD instances fit the grid and the target's cores,
and sizes stay within fixed limits.  What only the ops know (an index out of a tensor's bounds, an illegal
shape or memory space) the executor checks on its own tensors with the ops' own checks, so those raise the
compiler's error there.
"""

from __future__ import annotations

import math
from typing import Any

from nkisim.core import dtypes as dt
from nkisim.core.buffers import SPACES
from nkisim.core.recording import CALLS
from nkisim.core.target import Target
from nkisim.ops.optable import is_operator
from nkisim.program.encode import ARRAY_DTYPES
from nkisim.program.ir import Call, Instance, LoopEnter, LoopLeave, LoopStep, Program, ProgramError

#: fixed limits on what a program may ask of the executor
MAX_EVENTS = 4_000_000
MAX_TENSORS = 2_000_000
MAX_INSTANCES = 4096
MAX_ARRAY_BYTES = 256 * 2**20
MAX_INPUT_ELEMENTS = 2**31
MAX_DEPTH = 24
MAX_INT = 2**62
LOOP_KINDS = ("affine", "sequential")
MASK_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_DTYPE_NAMES = frozenset(dt.name(d) for d in dt.SUPPORTED)
_FLOAT_WORDS = ("nan", "inf", "-inf")


def _fail(what: str) -> None:
    raise ProgramError(f"invalid program: {what}")


class _State:
    """What is defined at the current point of the body: tensors made, loops open, arrays available."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.defined: set[int] = set(range(len(program.inputs)))
        self.open: list[int] = []  # loop ids, outermost first
        self.loops: dict[int, LoopEnter] = {}
        self.last_value: dict[int, int] = {}


def _int(x: Any, where: str) -> int:
    if type(x) is not int or not -MAX_INT <= x <= MAX_INT:
        _fail(f"{where}: expected an integer")
    return x


def _check_value(x: Any, st: _State, where: str, depth: int = 0) -> None:  # noqa: C901 - the grammar, case by case
    if depth > MAX_DEPTH:
        _fail(f"{where}: operands nested too deeply")
    if x is None or isinstance(x, (bool, str)):
        if isinstance(x, str) and len(x) > 4096:
            _fail(f"{where}: string too long")
        return
    if type(x) is int:
        _int(x, where)
        return
    if type(x) is float:
        if not math.isfinite(x):
            _fail(f"{where}: a float must be finite (or encoded as {{'float': ...}})")
        return
    if isinstance(x, list):
        for v in x:
            _check_value(v, st, where, depth + 1)
        return
    if not isinstance(x, dict) or not x:
        _fail(f"{where}: not an operand")
    key = next(iter(x))
    keys = set(x)

    def shape(*expected: str) -> None:
        if keys != set(expected):
            _fail(f"{where}: operand {key!r} must have exactly the fields {sorted(expected)}")

    if key in ("T", "W"):
        shape(key)
        _tensor(x[key], st, where)
    elif key == "A":
        shape("A", "c")
        _access(x, st, where, depth)
    elif key == "X":
        shape("X", "t", "g", "affine", "loops")
        _affine(x, st, where)
    elif key in ("tuple",):
        shape(key)
        if not isinstance(x[key], list):
            _fail(f"{where}: a tuple holds a list")
        _check_value(x[key], st, where, depth + 1)
    elif key == "dict":
        shape("dict")
        items = x["dict"]
        if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                                  for p in items):
            _fail(f"{where}: a dict holds [key, value] pairs with string keys")
        for _, v in items:
            _check_value(v, st, where, depth + 1)
    elif key == "float":
        shape("float")
        if x["float"] not in _FLOAT_WORDS:
            _fail(f"{where}: float words are nan, inf and -inf")
    elif key == "par_dim":
        shape("par_dim")
        _int(x["par_dim"], where)
    elif key == "slice":
        shape("slice")
        if not isinstance(x["slice"], list) or len(x["slice"]) != 3:
            _fail(f"{where}: a slice has three parts")
        _check_value(x["slice"], st, where, depth + 1)
    elif key == "ds":
        shape("ds")
        if not isinstance(x["ds"], list) or len(x["ds"]) != 2:
            _fail(f"{where}: nl.ds has a start and a size")
        _check_value(x["ds"][0], st, where, depth + 1)
        _int(x["ds"][1], where)
    elif key == "ellipsis":
        shape("ellipsis")
    elif key == "D":
        shape("D", "off")
        _check_value(x["D"], st, where, depth + 1)
        if not isinstance(x["D"], dict) or next(iter(x["D"]), None) not in ("T", "A", "W"):
            _fail(f"{where}: a dynamic index reads a tile")
        _affine(x["off"], st, where)
    elif key == "mask":
        shape("mask", "ok", "reason", "grid")
        _array(x["mask"], st, where)
        if not isinstance(x["ok"], bool) or not isinstance(x["grid"], bool) or \
                not (x["reason"] is None or isinstance(x["reason"], str)):
            _fail(f"{where}: malformed mask")
    elif key == "M":
        shape("M")
        _mask(x["M"], st, where, depth)
    elif key == "buf":
        shape("buf", "alloc")
        _buffer(x, where)
    elif key == "arr":
        shape("arr")
        _array(x["arr"], st, where)
    elif key == "np":
        shape("np", "v")
        if x["np"] not in _DTYPE_NAMES and x["np"] != "float64":
            _fail(f"{where}: unknown dtype {x['np']!r}")
        if not (isinstance(x["v"], (int, float, bool)) or (isinstance(x["v"], dict) and set(x["v"]) == {"float"})):
            _fail(f"{where}: a NumPy scalar holds a number")
        _check_value(x["v"], st, where, depth + 1)
    elif key == "dtype":
        shape("dtype")
        if x["dtype"] not in _DTYPE_NAMES:
            _fail(f"{where}: unknown dtype {x['dtype']!r}")
    elif key == "fn":
        shape("fn")
        if not isinstance(x["fn"], str) or not is_operator(x["fn"]):
            _fail(f"{where}: unknown operator {x['fn']!r}")
    else:
        _fail(f"{where}: unknown operand kind {key!r}")


def _mask(m: Any, st: _State, where: str, depth: int) -> None:
    """A predicate kept symbolic: a comparison of two index expressions, or and/or/not of predicates."""
    if depth > MAX_DEPTH:
        _fail(f"{where}: operands nested too deeply")
    if not isinstance(m, list) or not m:
        _fail(f"{where}: malformed mask expression")
    kind = m[0]
    if kind == "cmp" and len(m) == 4 and m[1] in MASK_COMPARISONS:
        _affine(m[2], st, where)
        _affine(m[3], st, where)
    elif kind in ("and", "or") and len(m) == 3 or kind == "not" and len(m) == 2:
        for sub in m[1:]:
            if not isinstance(sub, dict) or next(iter(sub), None) not in ("M", "mask"):
                _fail(f"{where}: {kind} joins mask expressions")
            _check_value(sub, st, where, depth + 1)
    else:
        _fail(f"{where}: malformed mask expression")


def _tensor(pid: Any, st: _State, where: str) -> None:
    if type(pid) is not int or pid not in st.defined:
        _fail(f"{where}: tensor {pid!r} is used before any call made it")


def _array(k: Any, st: _State, where: str) -> None:
    if type(k) is not int or not 0 <= k < len(st.program.arrays):
        _fail(f"{where}: no array {k!r}")


def _loop_ids(ids: Any, st: _State, where: str) -> None:
    if not isinstance(ids, list):
        _fail(f"{where}: loop ids must be a list")
    for lid in ids:
        if type(lid) is not int or lid not in st.open:
            _fail(f"{where}: an index expression names loop {lid!r}, which is not running here")


def _affine(x: Any, st: _State, where: str) -> None:
    if not isinstance(x, dict) or set(x) != {"X", "t", "g", "affine", "loops"}:
        _fail(f"{where}: malformed index expression")
    _int(x["X"], where)
    if not isinstance(x["t"], list) or not all(isinstance(p, list) and len(p) == 2 for p in x["t"]):
        _fail(f"{where}: index terms are [loop, coefficient] pairs")
    _loop_ids([p[0] for p in x["t"]], st, where)
    for p in x["t"]:
        _int(p[1], where)
    if x["g"] is not None:
        _array(x["g"], st, where)
        if st.program.arrays[x["g"]].dtype != "int64":
            _fail(f"{where}: an index grid holds int64")
    if not isinstance(x["affine"], bool):
        _fail(f"{where}: malformed index expression")
    _loop_ids(x["loops"], st, where)


def _access(x: dict, st: _State, where: str, depth: int) -> None:
    _tensor(x["A"], st, where)
    comps = x["c"]
    if not isinstance(comps, list) or len(comps) > 8:
        _fail(f"{where}: an access has one component per dimension")
    for c in comps:
        if not isinstance(c, list) or not c:
            _fail(f"{where}: malformed access component")
        kind = c[0]
        if kind == "slice" and len(c) == 4:
            _affine(c[1], st, where)
            _affine(c[2], st, where)
            if _int(c[3], where) == 0:
                _fail(f"{where}: a slice step cannot be zero")
        elif kind in ("int", "adv") and len(c) == 2:
            _affine(c[1], st, where)
        elif kind == "ind" and len(c) == 2 and isinstance(c[1], dict) and set(c[1]) == {"W"}:
            _tensor(c[1]["W"], st, where)
        elif kind == "ind" and len(c) == 2 and isinstance(c[1], dict) and set(c[1]) == {"A", "c"}:
            if depth > MAX_DEPTH:
                _fail(f"{where}: accesses nested too deeply")
            _access(c[1], st, where, depth + 1)
        elif kind == "dyn" and len(c) == 2 and isinstance(c[1], dict) and set(c[1]) == {"D", "off"}:
            _check_value(c[1], st, where, depth + 1)
        else:
            _fail(f"{where}: malformed access component {kind!r}")


def _buffer(x: dict, where: str) -> None:
    if x["buf"] not in SPACES:
        _fail(f"{where}: unknown memory space {x['buf']!r}")
    a = x["alloc"]
    if a is None:
        return
    if not (isinstance(a, list) and len(a) == 6 and a[0] in ("sbuf", "psum") and isinstance(a[3], list)
            and isinstance(a[4], list) and (a[5] is None or type(a[5]) is int)):
        _fail(f"{where}: malformed direct allocation")
    for v in (a[1], a[2], *a[3], *a[4]):
        _int(v, where)


def _check_header(program: Program, target: Target) -> None:
    if program.target != target.name:
        _fail(f"traced for {program.target!r}, not {target.name!r}")
    if any(type(g) is not int or g < 1 for g in program.grid) or math.prod(program.grid) > MAX_INSTANCES:
        _fail(f"grid {list(program.grid)} is not a launch grid of at most {MAX_INSTANCES} instances")
    if not 1 <= program.cores <= max(target.spmd_cores, 1):
        _fail(f"{program.cores} cores requested, {target.name} has {target.spmd_cores}")
    if not 0 <= program.tensors <= MAX_TENSORS or program.tensors < len(program.inputs):
        _fail("tensor count out of range")
    if len(program.body) > MAX_EVENTS:
        _fail(f"more than {MAX_EVENTS} events")
    for i in program.inputs:
        if i.dtype not in _DTYPE_NAMES or any(s < 1 for s in i.shape) or not i.shape or \
                math.prod(i.shape) > MAX_INPUT_ELEMENTS:
            _fail(f"input {i.name!r} has no valid shape and dtype")
    total = 0
    for k, a in enumerate(program.arrays):
        if a.dtype not in ARRAY_DTYPES or any(s < 0 for s in a.shape) or len(a.shape) > 8:
            _fail(f"array {k} has no valid dtype and shape")
        size = math.prod(a.shape) * dt.storage_dtype(dt.normalize(a.dtype)).itemsize
        if size != len(a.data):
            _fail(f"array {k} holds {len(a.data)} bytes, its shape needs {size}")
        total += size
    if total > MAX_ARRAY_BYTES:
        _fail("constant arrays too large")


def validate(program: Program, target: Target) -> None:
    """Raise ``ProgramError`` unless ``program`` is one the executor may run for ``target``."""
    _check_header(program, target)
    st = _State(program)
    instances = 0
    for i, ev in enumerate(program.body):
        where = f"event {i}"
        if isinstance(ev, Call):
            where = f"event {i} ({ev.fn}, line {ev.loc[1]})"
            if ev.fn not in CALLS:
                _fail(f"{where}: {ev.fn!r} is not an NKI call")
            for a in ev.args:
                _check_value(a, st, where)
            for _, v in ev.kwargs:
                _check_value(v, st, where)
            for pid in ev.out:
                if not 0 <= pid < program.tensors:
                    _fail(f"{where}: result tensor id {pid} out of range")
                st.defined.add(pid)
        elif isinstance(ev, LoopStep):
            if not st.open or st.open[-1] != ev.loop:
                _fail(f"{where}: iteration of loop {ev.loop}, which is not the innermost running loop")
            lp = st.loops[ev.loop]
            if lp.once:
                _fail(f"{where}: loop {ev.loop} is traced once and has no iteration events")
            if ev.value not in range(lp.start, lp.stop, lp.step):
                _fail(f"{where}: iteration {ev.value} is outside the loop's range")
            last = st.last_value.get(ev.loop)
            if last is not None and (ev.value - last) * lp.step <= 0:
                _fail(f"{where}: loop iterations must follow the loop's order")
            st.last_value[ev.loop] = ev.value
        elif isinstance(ev, LoopEnter):
            if ev.loop != len(st.loops) or ev.kind not in LOOP_KINDS or ev.step == 0:
                _fail(f"{where}: malformed loop {ev.loop}")
            if len(range(ev.start, ev.stop, ev.step)) > MAX_EVENTS:
                _fail(f"{where}: loop too long")
            st.loops[ev.loop] = ev
            st.open.append(ev.loop)
        elif isinstance(ev, LoopLeave):
            if not st.open or st.open[-1] != ev.loop:
                _fail(f"{where}: loop {ev.loop} ends but is not the innermost running loop")
            st.open.pop()
        elif isinstance(ev, Instance):
            if st.open:
                _fail(f"{where}: an SPMD instance starts inside a loop")
            resumed = program.dialect == "0.6" and ev.number < instances  # LNC2 cores take turns (runtime.lnc)
            if (ev.number != instances and not resumed) or len(ev.index) != len(program.grid) or \
                    any(not 0 <= v < g for v, g in zip(ev.index, program.grid)) or not 0 <= ev.core < program.cores:
                _fail(f"{where}: SPMD instance {list(ev.index)} does not fit grid {list(program.grid)}")
            instances += not resumed
        else:
            _fail(f"{where}: unknown event")
    if st.open:
        _fail("loops still running at the end of the program")
    if instances != max(math.prod(program.grid), 1):
        _fail(f"{instances} SPMD instances for a grid of {math.prod(program.grid)}")
    _check_value(program.outputs, st, "outputs")
