"""The program records and their JSON form.

Records are immutable.  Operand values inside a ``Call`` stay in their encoded form (plain JSON: see
``program.encode`` for the grammar), which is what both the serialiser and the validator read; the executor
decodes them against live tensors.  ``from_json`` parses the text into records and raises ``ProgramError``
for anything that is not shaped like a program; ``program.validate`` then checks what the records say.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

FORMAT = "nkisim-program/1"


class ProgramError(ValueError):
    """A program that is malformed or breaks a rule of the instruction set (the validator's verdict)."""


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
    and run for every iteration (they hold no ``LoopStep`` of this loop).  Otherwise the kernel's Python ran
    each iteration and the body is unrolled: a ``LoopStep`` starts each one."""

    loop: int
    kind: str
    start: int
    stop: int
    step: int
    once: bool = False


@dataclass(frozen=True, slots=True)
class LoopStep:
    """The loop runs its iteration ``value``."""

    loop: int
    value: int


@dataclass(frozen=True, slots=True)
class LoopLeave:
    loop: int


@dataclass(frozen=True, slots=True)
class Call:
    """One NKI call: its registered name, encoded arguments, the ids of the tensors its result holds (in walk
    order, see ``program.encode.result_tensors``), and the student's line it came from."""

    fn: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    out: tuple[int, ...]
    loc: tuple[str, int]


Event = Instance | LoopEnter | LoopStep | LoopLeave | Call


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
    outputs: Any
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

    def last_uses(self) -> dict[int, tuple[int, ...]]:
        """event index -> the tensor ids no later event (nor the outputs) refers to: the executor lets them go
        there, as the kernel's Python let its tiles go (a tile kept to the end of a long program is memory the
        next allocation has to fault in again)."""
        from nkisim.program.encode import tensor_ids

        outs = tensor_ids(self.outputs)
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
            "outputs": self.outputs,
        }, separators=(",", ":"))


def last_uses(body: tuple[Event, ...] | list[Event], keep: Callable[[int], bool]) -> dict[int, tuple[int, ...]]:
    """event index in ``body`` -> the tensor ids no later event refers to (``Program.last_uses``), leaving out
    those ``keep`` holds.  A tensor made before a body traced once and used in it lives until the body's last
    iteration ends."""
    from nkisim.program.encode import tensor_ids

    ends = once_bodies(body)
    made: dict[int, int] = {}
    last: dict[int, int] = {}
    bodies: list[tuple[int, int]] = []  # once-loop bodies open at event i: (enter index, leave index)
    for i, ev in enumerate(body):
        while bodies and bodies[-1][1] < i:
            bodies.pop()
        if isinstance(ev, Call):
            for pid in ev.out:
                made.setdefault(pid, i)
            for pid in (*tensor_ids([list(ev.args), [v for _, v in ev.kwargs]]), *ev.out):
                at = next((end for start, end in bodies if made.get(pid, -1) < start), i)
                last[pid] = max(last.get(pid, at), at)
        elif isinstance(ev, LoopEnter) and ev.once:
            bodies.append((i, ends[i]))
    drops: dict[int, list[int]] = {}
    for pid, i in last.items():
        if not keep(pid):
            drops.setdefault(i, []).append(pid)
    return {i: tuple(p) for i, p in drops.items()}


def once_bodies(body: tuple[Event, ...] | list[Event]) -> dict[int, int]:
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


def _event_json(e: Event) -> list:
    if isinstance(e, Call):
        return ["call", e.fn, list(e.args), [[k, v] for k, v in e.kwargs], list(e.out), [e.loc[0], e.loc[1]]]
    if isinstance(e, Instance):
        return ["instance", list(e.index), e.number, e.core]
    if isinstance(e, LoopEnter):
        return ["loop", e.loop, e.kind, e.start, e.stop, e.step, e.once]
    if isinstance(e, LoopStep):
        return ["iter", e.loop, e.value]
    return ["end", e.loop]


# --- parsing: shape only (types and lengths); meaning is program.validate's -------------------------
def _need(cond: bool, what: str) -> None:
    if not cond:
        raise ProgramError(f"malformed program: {what}")


def _int(x: Any, what: str) -> int:
    _need(type(x) is int, f"{what} must be an integer, got {type(x).__name__}")
    return x


def _ints(x: Any, what: str) -> tuple[int, ...]:
    _need(isinstance(x, list), f"{what} must be a list of integers")
    return tuple(_int(v, what) for v in x)


def _str(x: Any, what: str, limit: int = 4096) -> str:
    _need(isinstance(x, str) and len(x) <= limit, f"{what} must be a string of at most {limit} characters")
    return x


def _bool(x: Any, what: str) -> bool:
    _need(isinstance(x, bool), f"{what} must be true or false")
    return x


def _event(raw: Any, i: int) -> Event:
    where = f"body[{i}]"
    _need(isinstance(raw, list) and raw and isinstance(raw[0], str), f"{where} is not an event")
    kind, rest = raw[0], raw[1:]
    if kind == "call":
        _need(len(rest) == 5, f"{where}: a call has 5 fields")
        fn, args, kwargs, out, loc = rest
        _need(isinstance(args, list), f"{where}: arguments must be a list")
        _need(isinstance(kwargs, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                               for p in kwargs), f"{where}: keyword arguments must be [name, value]")
        _need(isinstance(loc, list) and len(loc) == 2, f"{where}: location must be [file, line]")
        return Call(_str(fn, f"{where} name", 128), tuple(args), tuple((k, v) for k, v in kwargs),
                    _ints(out, f"{where} outputs"), (_str(loc[0], f"{where} file"), _int(loc[1], f"{where} line")))
    if kind == "instance":
        _need(len(rest) == 3, f"{where}: an instance has 3 fields")
        return Instance(_ints(rest[0], f"{where} index"), _int(rest[1], f"{where} number"),
                        _int(rest[2], f"{where} core"))
    if kind == "loop":
        _need(len(rest) == 6, f"{where}: a loop has 6 fields")
        return LoopEnter(_int(rest[0], where), _str(rest[1], where, 16), _int(rest[2], where), _int(rest[3], where),
                         _int(rest[4], where), _bool(rest[5], where))
    if kind == "iter":
        _need(len(rest) == 2, f"{where}: an iteration has 2 fields")
        return LoopStep(_int(rest[0], where), _int(rest[1], where))
    if kind == "end":
        _need(len(rest) == 1, f"{where}: a loop end has 1 field")
        return LoopLeave(_int(rest[0], where))
    raise ProgramError(f"malformed program: {where} has unknown kind {kind!r}")


def from_json(text: str | bytes) -> Program:
    """Parse a program; anything not shaped like one is a ProgramError (never another exception)."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ProgramError(f"malformed program: not JSON ({err})") from None
    _need(isinstance(raw, dict), "the top level must be an object")
    _need(raw.get("format") == FORMAT, f"format must be {FORMAT!r}")
    flags = raw.get("flags")
    _need(isinstance(flags, dict), "flags must be an object")
    dialect = flags.get("dialect", "legacy")
    _need(dialect in DIALECTS, f"flags.dialect must be one of {DIALECTS}")
    inputs = raw.get("inputs")
    _need(isinstance(inputs, list), "inputs must be a list")
    ins = []
    for k, item in enumerate(inputs):
        _need(isinstance(item, list) and len(item) == 4, f"inputs[{k}] must be [name, shape, dtype, mutable]")
        ins.append(Input(_str(item[0], "input name", 256), _ints(item[1], "input shape"),
                         _str(item[2], "input dtype", 32), _bool(item[3], "input mutable")))
    arrays = raw.get("arrays")
    _need(isinstance(arrays, list), "arrays must be a list")
    arrs = []
    for k, item in enumerate(arrays):
        _need(isinstance(item, list) and len(item) == 3, f"arrays[{k}] must be [dtype, shape, base64]")
        try:
            data = base64.b64decode(_str(item[2], f"arrays[{k}] data", 1 << 28), validate=True)
        except ValueError:
            raise ProgramError(f"malformed program: arrays[{k}] data is not base64") from None
        arrs.append(Array(_str(item[0], "array dtype", 32), _ints(item[1], "array shape"), data))
    body = raw.get("body")
    _need(isinstance(body, list), "body must be a list")
    try:
        return Program(
            kernel=_str(raw.get("kernel"), "kernel", 256), target=_str(raw.get("target"), "target", 32),
            grid=_ints(raw.get("grid"), "grid"), cores=_int(raw.get("cores"), "cores"), inputs=tuple(ins),
            arrays=tuple(arrs), body=tuple(_event(e, i) for i, e in enumerate(body)), outputs=raw.get("outputs"),
            skip_middle_end=_bool(flags.get("skip_middle_end"), "skip_middle_end"),
            stack_allocator=_bool(flags.get("stack_allocator"), "stack_allocator"),
            on_chip_outputs=_bool(flags.get("on_chip_outputs"), "on_chip_outputs"),
            tensors=_int(raw.get("tensors"), "tensors"), dialect=dialect)
    except RecursionError:
        raise ProgramError("malformed program: nested too deeply") from None
