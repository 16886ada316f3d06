"""The program records and their JSON form.

Records are immutable.  A ``Call``'s operands are typed records (``program.kinds``):
what the serialiser writes, the validator checks and the executor decodes against live tensors.  ``from_json``
parses the text into records and raises ``ProgramError`` for anything that is not shaped like a program (every
field typed and bounded, ``program.limits``); ``program.validate`` then checks what the records say.

The JSON text carries its format (``FORMAT``): a program written by another version of nkisim is refused with a
``ProgramError`` that says so, since a program is traced and executed by the same simulator.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from nkisim.program import kinds  # noqa: F401  (registers every kind of operand: a program's parser needs them)
from nkisim.program.kinds.indexing import Index
from nkisim.program.kinds.masks import Cmp, Symbolic
from nkisim.program.limits import (
    MAX_ARRAY_BYTES,
    MAX_DIMS,
    MAX_EDGES,
    MAX_EVENTS,
    MAX_INSTANCES,
    MAX_NAME,
    MAX_PROGRAM_BYTES,
    MAX_TENSORS,
    ProgramError,
    flag,
    integer,
    integers,
    need,
    text,
)
from nkisim.program.operands import ARRAY_DTYPES, DTYPES, Operand, operand_json, operand_tensors, parse_operand

#: this version's program format; ``from_json`` refuses any other
FORMAT = "nkisim-program/3"  # 3: calls carry scheduling edges, guards divided indices
_FORMAT_FAMILY = "nkisim-program/"

__all__ = ["FORMAT", "Array", "Call", "Event", "Guard", "Input", "Instance", "Label", "LoopEnter", "LoopKind", "LoopLeave",
           "LoopStep", "Order", "Path", "Program", "ProgramError", "exact_iteration", "from_json", "last_uses",
           "once_bodies"]


class LoopKind(str, Enum):
    """The NKI loops a program holds (``static_range`` loops are unrolled by the kernel's Python)."""

    AFFINE = "affine"
    SEQUENTIAL = "sequential"


#: the NKI dialects a program may be written in (``Program.dialect``)
DIALECTS = ("legacy", "0.6")


@dataclass(frozen=True, slots=True)
class Input:
    """A kernel argument that is a tensor: its parameter name, shape and dtype; ``mutable`` when the kernel
    may write it (``nki.trace`` kernels)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    mutable: bool = False


@dataclass(frozen=True, slots=True)
class Array:
    """A constant array the calls refer to (index grids, masks, array arguments) by its position."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes

    def value(self) -> np.ndarray:
        from nkisim.core import dtypes as dt

        arr = np.frombuffer(self.data, dtype=dt.storage_dtype(dt.normalize(self.dtype)))
        return arr.reshape(self.shape)


@dataclass(frozen=True, slots=True)
class Instance:
    """An SPMD instance starts: its grid index, its number and the NeuronCore it runs on."""

    index: tuple[int, ...]
    number: int
    core: int


@dataclass(frozen=True, slots=True)
class LoopEnter:
    """An NKI loop (affine/sequential range) starts; ``loop`` is the id its index expressions name.

    ``once``: the events up to its ``LoopLeave`` are the loop's body, traced once as the compiler traces it,
    and run for every iteration (they hold no ``LoopStep`` of this loop); a body whose Python branched on the
    loop's index is split into ``Path``s, one per way the branches went.  Otherwise the kernel's Python ran each
    iteration and the body is unrolled: a ``LoopStep`` starts each one."""

    loop: int
    kind: LoopKind
    start: int
    stop: int
    step: int
    once: bool = False

    def __post_init__(self) -> None:
        if self.kind.__class__ is not LoopKind:  # (a loop's kind given by its name: "affine", "sequential")
            object.__setattr__(self, "kind", LoopKind(self.kind))


@dataclass(frozen=True, slots=True)
class LoopStep:
    """The loop runs its iteration ``value``."""

    loop: int
    value: int


@dataclass(frozen=True, slots=True)
class LoopLeave:
    loop: int


@dataclass(frozen=True, slots=True)
class Guard:
    """A branch the kernel's Python took on a loop's index (``if i == 0:``): the condition, a mask predicate kept
    symbolic (``Cmp`` and the and/or/not of them), and whether it held."""

    condition: Symbolic
    held: bool


def exact_iteration(guard: Guard, lid: int) -> int | None:
    """The iteration of loop ``lid`` a guard ``i == value`` (held) picks, else None: a path that holds for one
    iteration only is looked up by its value rather than tried (``runtime.runner``)."""
    cond = guard.condition
    if not guard.held or not isinstance(cond, Cmp) or cond.op != "==":
        return None
    lhs, rhs = cond.lhs, cond.rhs
    if not isinstance(lhs, Index) or not isinstance(rhs, Index):
        return None
    if lhs.const == 0 and lhs.terms == ((lid, 1),) and lhs.grid is None and lhs.affine and lhs.loops == (lid,) \
            and not rhs.terms and rhs.grid is None and rhs.affine and not rhs.loops:
        return rhs.const
    return None


@dataclass(frozen=True, slots=True)
class Path:
    """In a loop body traced once, the events up to the next ``Path`` or the loop's end are the body for the
    iterations at which every guard holds as it did when they were traced (the first such path runs)."""

    guards: tuple[Guard, ...]


#: what names an instruction for scheduling edges: the ``name=`` the kernel gave it (a str), or a number the
#: launch gave an unnamed instruction that an edge refers to (``NkiInstruction.depends_on``, ``nl.no_reorder``)
Label = str | int


@dataclass(frozen=True, slots=True)
class Order:
    """A call's place in the scheduling edges of NKI 0.6 (``kernel.with_schedule``, ``depends_on``,
    ``nl.no_reorder``): the label its instructions carry, and the labels whose instructions they wait for.

    An edge is kept by label rather than by event index because a call traced once stands for every iteration
    of its loop: each instruction waits for the latest instruction issued before it (in its SPMD instance) that
    carries a label of ``after`` -- in a loop body, the same iteration's producer.  The validator requires such a
    producer to come earlier in the program than its consumer (the simulator issues in program order)."""

    label: Label | None = None
    after: tuple[Label, ...] = ()


@dataclass(frozen=True, slots=True)
class Call:
    """One NKI call: its registered name, its operands, the ids of the tensors its result holds (in walk
    order, see ``program.encode.result_tensors``), the student's line it came from, and its scheduling edges
    (``Order``; None for almost every call)."""

    fn: str
    args: tuple[Operand, ...]
    kwargs: tuple[tuple[str, Operand], ...]
    out: tuple[int, ...]
    loc: tuple[str, int]
    order: Order | None = None

    def tensors(self) -> set[int]:
        """The tensor ids its operands name."""
        out: set[int] = set()
        for a in self.args:
            operand_tensors(a, out)
        for _, v in self.kwargs:
            operand_tensors(v, out)
        return out


Event = Instance | LoopEnter | LoopStep | LoopLeave | Path | Call


@dataclass(frozen=True, slots=True)
class Program:
    """A traced kernel: everything the executor and the cost model need, nothing of the kernel's Python."""

    kernel: str
    target: str
    grid: tuple[int, ...]
    cores: int
    inputs: tuple[Input, ...]
    arrays: tuple[Array, ...]
    body: tuple[Event, ...]
    outputs: Operand
    skip_middle_end: bool = False
    stack_allocator: bool = False
    on_chip_outputs: bool = False
    #: tensors the program names (ids 0 .. tensors-1; inputs first)
    tensors: int = 0
    #: the NKI dialect the kernel was written in ("legacy" or "0.6"): its whole-kernel rules on inputs and outputs
    #: differ (0.6 kernels may write their inputs, and return shared_hbm tensors)
    dialect: str = "legacy"

    @property
    def calls(self) -> list[Call]:
        return [e for e in self.body if isinstance(e, Call)]

    # --- what a grader checks against its question --------------------------------------------
    def signature(self) -> tuple[tuple[str, tuple[int, ...], str], ...]:
        """The inputs it was traced for: (parameter name, shape, dtype) each, in the kernel's order."""
        return tuple((i.name, i.shape, i.dtype) for i in self.inputs)

    def output_ids(self) -> tuple[int, ...]:
        """The tensor ids its outputs name, in ascending order."""
        return tuple(sorted(operand_tensors(self.outputs, set())))

    def made_by(self) -> dict[int, Call]:
        """tensor id -> the first call that makes it (inputs are made by none): where an output was allocated
        (``nl.ndarray`` with its shape, dtype and buffer operands)."""
        made: dict[int, Call] = {}
        for ev in self.body:
            if ev.__class__ is Call:
                for pid in ev.out:
                    made.setdefault(pid, ev)
        return made

    def last_uses(self) -> dict[int, tuple[int, ...]]:
        """event index -> the tensor ids no later event (nor the outputs) refers to: the executor lets them go
        there, as the kernel's Python let its tiles go (a tile kept to the end of a long program is memory the
        next allocation has to fault in again)."""
        outs = operand_tensors(self.outputs, set())
        n_inputs = len(self.inputs)
        return last_uses(self.body, keep=lambda pid: pid < n_inputs or pid in outs)

    # --- JSON ---------------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps({
            "format": FORMAT, "kernel": self.kernel, "target": self.target, "grid": list(self.grid),
            "cores": self.cores, "tensors": self.tensors,
            "flags": {"skip_middle_end": self.skip_middle_end, "stack_allocator": self.stack_allocator,
                      "on_chip_outputs": self.on_chip_outputs, "dialect": self.dialect},
            "inputs": [[i.name, list(i.shape), i.dtype, i.mutable] for i in self.inputs],
            "arrays": [[a.dtype, list(a.shape), base64.b64encode(a.data).decode()] for a in self.arrays],
            "body": [_event_json(e) for e in self.body],
            "outputs": operand_json(self.outputs),
        }, separators=(",", ":"))


def last_uses(body: Sequence[Event], keep: Callable[[int], bool]) -> dict[int, tuple[int, ...]]:
    """event index in ``body`` -> the tensor ids no later event refers to (``Program.last_uses``), leaving out
    those ``keep`` holds.  A tensor made before a body traced once (or before one of its paths) and used in it
    lives until the body's last iteration ends."""
    ends = once_bodies(body)
    made: dict[int, int] = {}
    last: dict[int, int] = {}
    spans: list[tuple[int, int]] = []  # once-loop bodies and their paths open at event i: (start, end of body)
    for i, ev in enumerate(body):
        while spans and spans[-1][1] < i:
            spans.pop()
        cls = ev.__class__
        if cls is Call:
            for pid in ev.out:  # type: ignore[union-attr]
                made.setdefault(pid, i)
            for pid in (*ev.tensors(), *ev.out):  # type: ignore[union-attr]
                at = next((end for start, end in spans if made.get(pid, -1) < start), i)
                last[pid] = max(last.get(pid, at), at)
        elif cls is LoopEnter and ev.once:  # type: ignore[union-attr]
            spans.append((i, ends[i]))
        elif cls is Path and spans:
            spans.append((i, spans[-1][1]))
    drops: dict[int, list[int]] = {}
    for pid, i in last.items():
        if not keep(pid):
            drops.setdefault(i, []).append(pid)
    return {i: tuple(p) for i, p in drops.items()}


def once_bodies(body: Sequence[Event]) -> dict[int, int]:
    """index of each ``LoopEnter(once=True)`` -> index of its ``LoopLeave`` (a loop left unclosed ends with the
    body; the validator refuses such programs)."""
    ends: dict[int, int] = {}
    open_: list[tuple[int, bool]] = []
    for i, ev in enumerate(body):
        if isinstance(ev, LoopEnter):
            open_.append((i, ev.once))
        elif isinstance(ev, LoopLeave) and open_:
            start, once = open_.pop()
            if once:
                ends[start] = i
    for start, once in open_:
        if once:
            ends[start] = len(body)
    return ends


def _event_json(e: Event) -> list[Any]:
    if isinstance(e, Call):
        call = ["call", e.fn, [operand_json(a) for a in e.args], [[k, operand_json(v)] for k, v in e.kwargs],
                list(e.out), [e.loc[0], e.loc[1]]]
        if e.order is not None:
            call.append([e.order.label, list(e.order.after)])
        return call
    if isinstance(e, Instance):
        return ["instance", list(e.index), e.number, e.core]
    if isinstance(e, LoopEnter):
        return ["loop", e.loop, e.kind.value, e.start, e.stop, e.step, e.once]
    if isinstance(e, LoopStep):
        return ["iter", e.loop, e.value]
    if isinstance(e, Path):
        return ["path", [[g.condition.json(), g.held] for g in e.guards]]
    return ["end", e.loop]


# --- parsing: every field typed and bounded; meaning is program.validate's ----------------------------------
def _event(raw: Any, i: int) -> Event:
    where = f"body[{i}]"
    need(isinstance(raw, list) and bool(raw) and isinstance(raw[0], str), f"{where} is not an event")
    word, rest = raw[0], raw[1:]
    if word == "call":
        need(len(rest) in (5, 6), f"{where}: a call has 5 fields, or 6 with its scheduling edges")
        fn, args, kwargs, out, loc = rest[:5]
        need(isinstance(args, list), f"{where}: arguments must be a list")
        need(isinstance(kwargs, list) and all(isinstance(p, list) and len(p) == 2 for p in kwargs),
             f"{where}: keyword arguments must be [name, value]")
        need(isinstance(loc, list) and len(loc) == 2, f"{where}: location must be [file, line]")
        return Call(text(fn, f"{where} name", MAX_NAME), tuple([parse_operand(a) for a in args]),
                    tuple([(text(k, f"{where} keyword", MAX_NAME), parse_operand(v)) for k, v in kwargs]),
                    integers(out, f"{where} outputs", 0, MAX_TENSORS - 1, MAX_TENSORS),
                    (text(loc[0], f"{where} file"), integer(loc[1], f"{where} line", 0, 2**31)),
                    _order(rest[5], where) if len(rest) == 6 else None)
    if word == "instance":
        need(len(rest) == 3, f"{where}: an instance has 3 fields")
        return Instance(integers(rest[0], f"{where} index", 0, MAX_INSTANCES), integer(rest[1], f"{where} number"),
                        integer(rest[2], f"{where} core"))
    if word == "loop":
        need(len(rest) == 6, f"{where}: a loop has 6 fields")
        need(isinstance(rest[1], str) and rest[1] in LoopKind._value2member_map_, f"{where}: a loop is affine or sequential")
        return LoopEnter(integer(rest[0], where, 0), LoopKind(rest[1]), integer(rest[2], where),
                         integer(rest[3], where), integer(rest[4], where), flag(rest[5], where))
    if word == "iter":
        need(len(rest) == 2, f"{where}: an iteration has 2 fields")
        return LoopStep(integer(rest[0], where, 0), integer(rest[1], where))
    if word == "end":
        need(len(rest) == 1, f"{where}: a loop end has 1 field")
        return LoopLeave(integer(rest[0], where, 0))
    if word == "path":
        need(len(rest) == 1 and isinstance(rest[0], list) and len(rest[0]) <= MAX_EVENTS,
             f"{where}: a path has a list of guards")
        guards = []
        for g in rest[0]:
            need(isinstance(g, list) and len(g) == 2, f"{where}: a guard is [condition, held]")
            cond = parse_operand(g[0])
            need(isinstance(cond, Symbolic), f"{where}: a guard's condition is a mask predicate")
            guards.append(Guard(cond, flag(g[1], f"{where}: held")))  # type: ignore[arg-type]
        return Path(tuple(guards))
    need(False, f"{where} has unknown kind {text(word, 'an event kind', MAX_NAME)!r}")
    raise AssertionError  # (need raised)


def _label(raw: Any, where: str) -> Label:
    if isinstance(raw, str):
        return text(raw, f"{where}: a label", MAX_NAME)
    return integer(raw, f"{where}: a label", 0, MAX_EVENTS)


def _order(raw: Any, where: str) -> Order:
    """``[label or null, [label, ...]]``: a call's scheduling edges (``Order``)."""
    need(isinstance(raw, list) and len(raw) == 2 and isinstance(raw[1], list) and len(raw[1]) <= MAX_EDGES,
         f"{where}: scheduling edges are [label, [label, ...]] with at most {MAX_EDGES} labels waited for")
    return Order(None if raw[0] is None else _label(raw[0], where), tuple(_label(a, where) for a in raw[1]))


def from_json(data: str | bytes) -> Program:
    """Parse a program; anything not shaped like one is a ProgramError (never another exception)."""
    need(isinstance(data, (str, bytes)), "a program is JSON text")
    if len(data) > MAX_PROGRAM_BYTES:  # (a str's characters are at least its bytes' count of ASCII JSON)
        raise ProgramError(f"malformed program: {len(data)} bytes, more than the {MAX_PROGRAM_BYTES} a program may "
                           "have (limits.MAX_PROGRAM_BYTES)")
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as err:
        raise ProgramError(f"malformed program: not JSON ({str(err)[:200]})") from None
    need(isinstance(raw, dict), "the top level must be an object")
    fmt = raw.get("format")
    if fmt != FORMAT:
        if isinstance(fmt, str) and fmt.startswith(_FORMAT_FAMILY):
            raise ProgramError(f"program format {text(fmt, 'format', MAX_NAME)!r} is not this nkisim's "
                               f"({FORMAT!r}): trace the kernel again with this version")
        raise ProgramError(f"malformed program: format must be {FORMAT!r} (not an nkisim program)")
    flags = raw.get("flags")
    need(isinstance(flags, dict), "flags must be an object")
    dialect = flags.get("dialect", "legacy")
    need(dialect in DIALECTS, f"flags.dialect must be one of {DIALECTS}")
    inputs = raw.get("inputs")
    need(isinstance(inputs, list) and len(inputs) <= 4096, "inputs must be a list")
    ins = []
    for k, item in enumerate(inputs):
        need(isinstance(item, list) and len(item) == 4, f"inputs[{k}] must be [name, shape, dtype, mutable]")
        need(isinstance(item[2], str) and item[2] in DTYPES, f"inputs[{k}] has no NKI dtype")
        ins.append(Input(text(item[0], "input name", MAX_NAME), integers(item[1], "input shape", 1),
                         item[2], flag(item[3], "input mutable")))
    arrays = raw.get("arrays")
    need(isinstance(arrays, list), "arrays must be a list")
    arrs = []
    total = 0
    for k, item in enumerate(arrays):
        need(isinstance(item, list) and len(item) == 3, f"arrays[{k}] must be [dtype, shape, base64]")
        need(isinstance(item[0], str) and item[0] in ARRAY_DTYPES, f"arrays[{k}] has no array dtype")
        need(isinstance(item[2], str), f"arrays[{k}] data must be base64 text")
        try:
            data = base64.b64decode(item[2], validate=True)
        except ValueError:
            raise ProgramError(f"malformed program: arrays[{k}] data is not base64") from None
        total += len(data)
        need(total <= MAX_ARRAY_BYTES, f"constant arrays hold at most {MAX_ARRAY_BYTES} bytes")
        arrs.append(Array(item[0], integers(item[1], "array shape", 0, MAX_ARRAY_BYTES, MAX_DIMS), data))
    body = raw.get("body")
    need(isinstance(body, list) and len(body) <= MAX_EVENTS, f"body must be a list of at most {MAX_EVENTS} events")
    return Program(
        kernel=text(raw.get("kernel"), "kernel", MAX_NAME), target=text(raw.get("target"), "target", MAX_NAME),
        grid=integers(raw.get("grid"), "grid", 1, MAX_INSTANCES), cores=integer(raw.get("cores"), "cores", 1, 64),
        inputs=tuple(ins), arrays=tuple(arrs), body=tuple(_event(e, i) for i, e in enumerate(body)),
        outputs=parse_operand(raw.get("outputs")),
        skip_middle_end=flag(flags.get("skip_middle_end"), "skip_middle_end"),
        stack_allocator=flag(flags.get("stack_allocator"), "stack_allocator"),
        on_chip_outputs=flag(flags.get("on_chip_outputs"), "on_chip_outputs"),
        tensors=integer(raw.get("tensors"), "tensors", 0, MAX_TENSORS), dialect=dialect)
