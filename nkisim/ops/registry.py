"""The op registry: one entry per NKI call, and the front-end namespaces generated from it.

An entry (``Op``) holds everything about one call in one place: the name a kernel calls it by
(``nisa.tensor_tensor``, ``nl.add``, ``tile.binary`` for ``t + u``), its implementation (the
compiler's trace-time checks at the student's line, then the numerics), the instructions it may issue
(``cost.instructions``: each with its engine and its cycle formula, so the cost of an op is the cost
of what it emits) and the address spaces its tile operands may live in.  Its docstring is the
implementation's.  Ops register where they are implemented (``@op(...)``); ``ops.catalog.namespace("nl")`` and
``namespace("nisa")`` are what the legacy front end exports, so a second dialect adds a namespace of
its own spellings over the same entries, never a second copy of an op.

Registering is also what makes a call recordable (``core.recording.recorded``): the program a launch
records, the executor and the validator name calls by these entries and nothing else.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from nkisim.core.context import active
from nkisim.core.indexing import Affine
from nkisim.core.recording import CALLS, call_name, recorded
from nkisim.cost.instructions import InstructionKind

F = TypeVar("F", bound=Callable[..., Any])

#: the address spaces a tile operand may live in unless the entry says otherwise
ON_CHIP = "psum|sbuf"
ON_CHIP_SPACES = ON_CHIP.split("|")


@dataclass(frozen=True, eq=False)
class Op:
    """One NKI call: its name, implementation, the instructions it may emit and its operands' spaces.

    ``emits`` is empty exactly for calls that issue no instruction: views (``t.reshape``), allocations
    (``nl.ndarray``), and the generator's state (``nl.random_seed``)."""

    call: str  # 'nl.add', 'nisa.tensor_tensor', 'tile.binary'
    impl: Callable[..., Any]  # checks and numerics, unwrapped but for noting its scalar arguments (cost.hoist)
    emits: tuple[InstructionKind, ...]
    spaces: str
    function: Callable[..., Any]  # what the front end exports: impl wrapped for recording

    @property
    def name(self) -> str:
        """The call's name without its namespace (what the compiler's messages call it)."""
        return self.call.split(".", 1)[1]

    @property
    def doc(self) -> str:
        return (self.impl.__doc__ or "").strip()


#: call name -> entry, for every call a kernel can make
OPS: dict[str, Op] = {}
#: an API's name in error messages -> the address spaces of its tile operands (first entry by that name; ops.base
#: reads it inline, once per instruction)
SPACES: dict[str, list[str]] = {}


def op(call: str, *, emits: Iterable[InstructionKind] = (), spaces: str = ON_CHIP,
       prepare: Callable[[tuple, dict], tuple[tuple, dict]] | None = None) -> Callable[[F], F]:
    """Register the decorated implementation as the NKI call ``call``; returns it wrapped for recording
    (the function the front end exports and other ops may call).

    ``prepare(args, kwargs) -> (args, kwargs)`` runs before the call is recorded: it turns a value of the
    kernel's own Python that a program cannot hold into data that can (``ncc.sbuf.alloc(func)`` into the
    placement it gives the tensor being allocated)."""

    def register(impl: F) -> F:
        if call in OPS:
            raise ValueError(f"NKI call {call!r} is registered twice")
        if call_name(impl) is not None:  # one implementation offered under a second name (nl.transpose, t.T)
            impl = impl.__wrapped__  # type: ignore[attr-defined]
        if emits and not getattr(impl, "__nki_scalars__", False):
            impl = _noting_scalars(impl)
        function = recorded(call)(impl)
        if prepare is not None:
            function = _prepared(function, prepare)
        entry = Op(call, impl, tuple(emits), spaces, function)
        OPS[call] = entry
        SPACES.setdefault(entry.name, spaces.split("|"))
        return function  # type: ignore[return-value]

    return register


_NUMBERS = (int, float, np.number)


def _scalar_values(args: tuple, kwargs: dict) -> tuple:
    """The values of a call's scalar arguments (numbers, and index expressions without a grid at this iteration)."""
    out = []
    for a in (*args, *kwargs.values()) if kwargs else args:
        cls = a.__class__
        if cls is Affine:
            if a.grid is None and a.loops:
                out.append(a.value())
        elif cls is not bool and isinstance(a, _NUMBERS):
            out.append(a)
    return tuple(out)


def without_scalar_notes(fn: Callable[..., Any], constants: Iterable[Any]) -> Callable[..., Any]:
    """``fn`` (a call's implementation, ``core.recording.CALLS``) without the wrapper that notes its scalar
    arguments on its instructions, when ``constants`` (every argument it will ever be passed that is not a tile,
    as the executor's plan holds them) hold no scalar: the wrapper would note nothing, at the cost of a call and
    a scan of the arguments per instruction.  ``fn`` itself otherwise."""
    impl = _NOTED.get(fn)
    if impl is None:
        return fn
    for a in constants:
        cls = a.__class__
        if cls is Affine or (cls is not bool and isinstance(a, _NUMBERS)):
            return fn
    return impl


#: id of an instruction's extra facts -> (those facts, the scalars noted, the facts with them), the last merge
#: ``_noting_scalars`` made for it (never mutated: an instruction's ``extra`` is replaced, not changed)
_MERGED: dict[int, tuple[dict, tuple, dict]] = {}

#: ``_noting_scalars``'s wrappers -> the implementations they wrap
_NOTED: dict[Callable[..., Any], Callable[..., Any]] = {}


def _noting_scalars(impl: Callable[..., Any]) -> Callable[..., Any]:
    """``impl``, noting on each instruction it issues the values of the call's scalar arguments
    (``extra["scalars"]``): an operand of the instruction like its tiles, so the cost model hoists an instruction
    out of a loop only when they do not change with the loop either (``cost.hoist``: ``x * (j + 1)`` computes
    another product in every iteration)."""

    @functools.wraps(impl)
    def call(*args: Any, **kwargs: Any) -> Any:
        scalars = _scalar_values(args, kwargs)
        if not scalars:
            return impl(*args, **kwargs)
        ctx = active()
        if ctx is None:
            return impl(*args, **kwargs)
        trace = ctx.trace
        start = len(trace)
        out = impl(*args, **kwargs)
        for ins in trace[start:]:
            extra = ins.extra
            # an op's extra facts are often one dict shared by its instructions (``ops.elementwise``), and its
            # scalars the same every iteration: the merged dict is then shared too, not built per instruction
            hit = _MERGED.get(id(extra))
            if hit is not None and hit[0] is extra and hit[1] == scalars:
                ins.extra = hit[2]
                continue
            merged = dict(extra, scalars=extra.get("scalars", ()) + scalars) if extra else {"scalars": scalars}
            if len(_MERGED) > 1024:
                _MERGED.clear()
            _MERGED[id(extra)] = (extra, scalars, merged)  # (holding ``extra``: no other dict takes its id)
            ins.extra = merged
        return out

    call.__nki_scalars__ = True  # type: ignore[attr-defined]
    _NOTED[call] = impl
    return call


def _prepared(function: Callable[..., Any], prepare: Callable[[tuple, dict], tuple[tuple, dict]]) -> Callable[..., Any]:
    """``function`` (a recorded call) with its arguments passed through ``prepare`` first."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = prepare(args, kwargs)
        return function(*args, **kwargs)

    call.__wrapped__ = function.__wrapped__  # type: ignore[attr-defined]  (the implementation, as for every call)
    return call


def declare(call: str, *, emits: Iterable[InstructionKind] = (), spaces: str = ON_CHIP) -> Op:
    """An entry for a call core registered itself (``Tensor.reshape`` & co: core cannot import ops)."""
    impl = CALLS[call]
    entry = Op(call, impl, tuple(emits), spaces, impl)
    OPS[call] = entry
    return entry


def spaces_of(name: str) -> list[str]:
    """The address spaces the operands of API ``name`` (as error messages name it) may live in."""
    return SPACES.get(name) or ON_CHIP_SPACES


def check_emits(call: str, trace: list[Any], start: int) -> None:
    """The instructions ``call`` appended to ``trace`` from ``start`` on are ones its entry declares (the
    recorder asks after every recorded call, so an entry cannot understate what its op costs).

    A miss is the simulator's bug, not the kernel's, and cannot change a value or a price (the cost model
    prices each instruction by its own kind): with ``NKISIM_STRICT_REGISTRY=1`` (the test suite) it is an
    error, otherwise a warning, once per call and kind, asking for a report."""
    emits = OPS[call].emits
    for ins in trace[start:]:
        if ins.kind not in emits and (call, ins.kind) not in _MISSES:
            message = (f"internal error: NKI call {call!r} issued {ins.kind!r}, which its registry entry does not "
                       f"declare (ops.registry: emits={[k.name for k in emits]}); results are unaffected, please "
                       f"report it")
            if os.environ.get("NKISIM_STRICT_REGISTRY") == "1":
                raise AssertionError(message)
            _MISSES.add((call, ins.kind))
            warnings.warn(message, RuntimeWarning, stacklevel=2)


#: (call, kind) misses already warned about
_MISSES: set[tuple[str, InstructionKind]] = set()
