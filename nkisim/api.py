"""The simulator's public API for tools (the grader, the lessons' helpers, benchmarks): the one door into nkisim.

Tools need these things from the simulator: make any kernel function a launchable kernel, launch it on NumPy
inputs (optionally insisting that it returns only NKI tensors, as a device would), read the cost-model estimate
of that very launch, profile a kernel (the lessons' timelines), read a target's numbers, and recognise an NKI
tensor.  Everything else in nkisim is private to it; an
import-linter contract (``make lint``) keeps ``nkilab`` on this module, so the simulator's insides can change
(the compile-then-execute core of issue 11) without touching the grader.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from nkisim.core import target as _target
from nkisim.core.errors import NKIError
from nkisim.core.location import attach_location, trim_traceback
from nkisim.core.target import Target
from nkisim.core.tensor import Tensor
from nkisim.frontend import isa as _isa  # noqa: F401  (registers the nisa.* calls a program may name)
from nkisim.frontend import language as _language  # noqa: F401  (and the nl.* calls)
from nkisim.frontend.lint import AFFINE_BRANCH_ADVICE, AffineBranch, affine_branches  # noqa: F401  (for check())
from nkisim.frontend.migration import CONCEPTS, Adapter, Concept  # noqa: F401  (the migration table's records)
from nkisim.frontend.migration import adapters as _adapters
from nkisim.ops.registry import OPS as _OPS
from nkisim.program.ir import Program, ProgramError  # noqa: F401
from nkisim.program.ir import from_json as _from_json
from nkisim.program.limits import MAX_PROGRAM_BYTES  # noqa: F401  (what a grader may read from a child)
from nkisim.program.validate import validate as _validate
from nkisim.runtime.arguments import Placeholder
from nkisim.runtime.execute import execute as _execute
from nkisim.runtime.kernel import OBSERVERS as _OBSERVERS
from nkisim.runtime.kernel import GridLaunch, Kernel, LaunchResult, run
from nkisim.runtime.kernel import launch as _launch

if TYPE_CHECKING:  # the cost model is imported where an estimate is asked for: a process that only traces (a
    # grading child, nkilab.isolate._child) never loads it (a tenth of ``import nkisim.api``)
    from nkisim.cost.model import Estimate
    from nkisim.cost.report import Profile


class Dialect(str, Enum):
    """The NKI dialect a kernel is written in, which sets its launch rules: ``LEGACY`` (``import neuronxcc.nki``, Neuron
    SDK 2.29 and earlier, CS149's) or ``NKI`` (NKI 0.6, ``import nki``, SDK 2.32+).  Its value is the simulator's own
    word (a program's and a kernel's ``dialect``); course files and folders (``course.toml``, a lesson cell's
    metadata, ``solutions/<stage>/nki/``) spell it ``word``, as ``str()`` and f-strings print it.  ``named`` reads
    either: the one place both spellings meet."""

    LEGACY = "legacy"
    NKI = "0.6"

    @property
    def word(self) -> str:
        """How course files and folders name it: ``legacy``, ``nki``."""
        return self.name.lower()

    def __str__(self) -> str:
        return self.word

    def __format__(self, spec: str) -> str:
        return format(self.word, spec)

    @classmethod
    def named(cls, text: object) -> Dialect:
        """The dialect ``text`` names (its value or its word); ``ValueError`` for anything else."""
        for dialect in cls:
            if text in (dialect.value, dialect.word):
                return dialect
        raise ValueError(f"{text!r} is not an NKI dialect (one of {', '.join(d.word for d in cls)})")


class NotATensor(TypeError):
    """A kernel returned something a device kernel cannot: a host value instead of an NKI tensor."""


def error_class_names() -> frozenset[str]:
    """The names of the exception classes the simulator raises at a kernel (as ``type(err).__name__`` reads
    them): the compiler's error catalogue, the 0.6 front end's validation and collectives errors, a program's
    errors and a returned host value.  A grader may name these to a student; any other class a kernel raised is
    one the kernel defined, and its name is the kernel's text."""
    from nkisim.core import errors
    from nkisim.frontend.v06.adapters.instruction import NkiValidationError
    from nkisim.frontend.v06.collectives import CollectivesNotSupported

    return frozenset(cls.__name__ for cls in (
        errors.NKIError, errors.NKIValueError, errors.NKITypeError, errors.NKIIndexError, errors.NKIRuntimeError,
        errors.NKISyntaxError, NotATensor, ProgramError, NkiValidationError, CollectivesNotSupported))


def as_kernel(fn: Callable | Kernel) -> Kernel:
    """``fn`` as a launchable kernel: a jitted kernel as it is, a plain function jitted."""
    return fn if isinstance(fn, Kernel) else Kernel(fn)


def is_tensor(value: object) -> bool:
    return isinstance(value, Tensor)


@dataclass(frozen=True)
class Launch:
    """What one launch produced: its outputs (NumPy), the record the cost model reads and, when the launch
    recorded, the instruction program the kernel compiled to."""

    outputs: Any
    record: LaunchResult

    @property
    def target(self) -> str:
        return self.record.ctx.target.name

    @property
    def target_label(self) -> str:
        """The target as estimates name it: ``trn2``, or ``trn3 (uncalibrated)``."""
        return self.record.ctx.target.label

    @property
    def program(self) -> Program | None:
        return self.record.program

    def estimate(self) -> Estimate:
        """The cost model's estimate of this launch on its target: total latency, per-engine busy time, DMA
        count and bytes, time per source line (all estimates, not measurements)."""
        from nkisim.cost.model import estimate as _estimate

        ctx = self.record.ctx
        return _estimate(ctx.trace, ctx.target, cores=ctx.cores)

    def latency_us(self) -> float:
        """The cost model's estimate of this launch's NeuronCore latency on its target (an estimate)."""
        return self.estimate().total_us

    def profile(self) -> Profile:
        """The launch's profile: the estimate with its timeline (Perfetto trace, figure) and per-line table."""
        from nkisim.cost.report import Profile

        return Profile.from_launch(self.record)


def target(name: str) -> Target:
    """The named target's limits and cost-model parameters (``nkisim/targets/<name>.toml``), read-only."""
    return _target.get(name)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


class _TensorsOnly:
    """A kernel function that fails unless it returns NKI tensors (or None, left to the usual checks).

    A callable object rather than a closure: the simulator reads ``func.__code__`` (the kernel's file, for
    error locations) and follows ``__wrapped__`` for the source and the signature."""

    def __init__(self, inner: Callable) -> None:
        import functools

        functools.update_wrapper(self, inner)
        self.__code__ = inner.__code__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.__wrapped__(*args, **kwargs)
        for leaf in _leaves(out):
            if leaf is not None and not isinstance(leaf, Tensor):
                kind = f"{type(leaf).__module__}.{type(leaf).__name__}".replace("builtins.", "")
                raise NotATensor(f"the kernel returned a {kind}, not an NKI tensor: return the nl.shared_hbm tensor "
                                 "you stored the result into (values computed outside NKI do not count)")
        return out


def _tensors_only(k: Kernel) -> Kernel:
    """``k`` held to returning NKI tensors (``_TensorsOnly``), in its own dialect: an NKI 0.6 kernel keeps 0.6's
    launch rules (``kernel[2]`` is two logical cores, inputs writable), a legacy one legacy's."""
    if isinstance(k.func, _TensorsOnly):
        return k
    held = Kernel(_TensorsOnly(k.func), k.mode, **k.options)
    held.dialect = k.dialect
    return held


def launch(kernel: Callable | Kernel, args: list | tuple, *, grid: Any = None, target: str | None = None,
           tensors_only: bool = False, record: bool = True) -> Launch:
    """Run ``kernel`` (``kernel[grid]`` when a grid is given) on ``args`` for ``target``.

    ``record``: the launch compiles to a program as it runs (``Launch.program``), each loop body traced once as
    the compiler traces it; False runs the kernel's Python for every iteration (a reference for tests).

    ``tensors_only``: fail, at the kernel's own line, when it returns anything but NKI tensors -- the simulator
    hands kernels tensors backed by NumPy arrays, so a kernel could otherwise compute ``a + b`` in NumPy and
    return that array, which would "pass" here and fail to compile on a device."""
    k = as_kernel(kernel)
    if tensors_only:
        k = _tensors_only(k)
    outputs = _launch(k, grid, tuple(args), {}, target=target, record=record)
    done = k.last_launch
    assert done is not None
    return Launch(outputs, done)


def trace(kernel: Callable | Kernel, args: list | tuple, *, grid: Any = None, target: str | None = None,
          tensors_only: bool = False) -> Program:
    """Compile ``kernel`` for ``args`` into its instruction program: the kernel's Python runs once, for the cost
    model only (no values: ``args`` may be ``nki.typing`` placeholders or arrays, whose values are not read)."""
    placeholders = [a if isinstance(a, Placeholder) else Placeholder(a.shape, a.dtype) for a in args]
    k = as_kernel(kernel)
    if tensors_only:
        k = _tensors_only(k)
    _launch(k, grid, tuple(placeholders), {}, target=target, record=True, numerics=False)
    done = k.last_launch
    assert done is not None and done.program is not None
    return done.program


def execute(program: Program, inputs: list | tuple, *, target: str | None = None, numerics: bool = True) -> Launch:
    """Run a program (validated first) on ``inputs``: outputs and the trace the cost model reads (``latency_us``).
    Raises ``ProgramError`` for a program the validator refuses, ``NKIError`` for one an op's check refuses."""
    res = _execute(program, inputs, target=target, numerics=numerics)
    return Launch(res.outputs, res)


def estimate(program: Program, *, target: str | None = None) -> Estimate:
    """The cost model's estimate of ``program`` on ``target`` (default: the program's own), computed from the
    program alone: it runs without values on inputs of its declared shapes and dtypes."""
    placeholders = [Placeholder(i.shape, i.dtype, i.mutable) for i in program.inputs]
    return execute(program, placeholders, target=target, numerics=False).estimate()


#: an engine's name in the hardware documentation
ENGINE_NAMES = {"pe": "TensorE", "act": "ScalarE", "dve": "VectorE", "pool": "GpSimd", "dma": "DMA"}


@dataclass(frozen=True)
class InstructionKind:
    """An instruction kind an NKI call may issue, the engine it runs on unless the call names another, and how the
    cost model prices it (the kind's own description of its cycle formula, or the DMA queue model)."""

    kind: str
    engine: str  # "TensorE", "ScalarE", "VectorE", "GpSimd" or "DMA"
    cost: str = ""


@dataclass(frozen=True)
class CallInfo:
    """What the op registry says about one NKI call (``nl.add``, ``nisa.tensor_tensor``, ``tile.binary``)."""

    call: str
    instructions: tuple[InstructionKind, ...]  # empty for views and allocations
    spaces: tuple[str, ...]  # address spaces its tile operands may live in
    doc: str


def calls() -> list[CallInfo]:
    """Every NKI call a kernel can make, from the op registry (for tools and the docs' API page)."""
    return [CallInfo(e.call, tuple(InstructionKind(k.name, ENGINE_NAMES[k.engine], k.doc) for k in e.emits),
                     tuple(e.spaces.split("|")), e.doc)
            for e in sorted(_OPS.values(), key=lambda e: e.call)]


def adapters() -> list[Adapter]:
    """The NKI 0.6 front end's adapter table: each 0.6 call, the registry entry it adapts and how its spelling
    differs from the legacy call (``nkisim.frontend.migration``; the docs' migration page renders it)."""
    return _adapters()


def program_from_json(text: str | bytes) -> Program:
    """Parse a serialised program (``Program.to_json``); a malformed one is a ``ProgramError``."""
    return _from_json(text)


def validate(program: Program, target: str | None = None) -> None:
    """Raise ``ProgramError`` unless ``program`` may run on ``target`` (default: the program's own)."""
    _validate(program, _target.get(target or program.target))


def check_request(program: Program, *, inputs: list[tuple[tuple[int, ...], str]], grid: Any = None,
                  target: str, on_chip_outputs: bool = False, dialect: str = "legacy") -> None:
    """Raise ``ProgramError`` unless ``program`` is the launch a tool asked for: traced for ``target``, launched
    on ``grid`` (sizes and cores as ``kernel[grid]`` gives them), taking exactly ``inputs`` (shape, dtype) in
    order, in the NKI ``dialect`` asked for (whose whole-kernel rules it runs under), and -- unless
    ``on_chip_outputs`` -- returning only HBM tensors.

    ``validate`` checks that a program is well formed; this checks it against the request.  A grader hands a
    sandboxed child only shapes and dtypes and gets a program back: every field of it is the child's word, so a
    program traced for two cores on a one-core question, or for other shapes, or flagged to return an SBUF
    tile, must be refused here rather than believed."""
    from nkisim.runtime.grid import cores as _cores
    from nkisim.runtime.grid import parse_grid, parse_lnc

    tgt = _target.get(target)
    if program.dialect != dialect:
        raise ProgramError(f"the program is an NKI {program.dialect} kernel's, not the requested {dialect} one")
    if program.target != tgt.name:
        raise ProgramError(f"the program was traced for {program.target!r}, not {tgt.name!r}")
    sizes, specs = (parse_lnc if dialect == "0.6" else parse_grid)(grid, tgt) if grid is not None else ((), [])
    if tuple(program.grid) != tuple(sizes) or program.cores != _cores(specs):
        raise ProgramError(f"the program was launched on grid {list(program.grid)} with {program.cores} core(s), "
                           f"not the requested grid {list(sizes)} with {_cores(specs)} core(s)")
    got = [(tuple(i.shape), str(i.dtype)) for i in program.inputs]
    want = [(tuple(int(d) for d in s), str(d)) for s, d in inputs]
    if got != want:
        raise ProgramError("the program's inputs are not the requested shapes and dtypes")
    if program.on_chip_outputs and not on_chip_outputs:
        raise ProgramError("the program returns on-chip tensors; outputs must be HBM tensors here")


def profile_kernel(kernel: Any, *args: Any, grid: Any = None, target: str | None = None, **kwargs: Any) -> Profile:
    """Trace ``kernel`` on ``args`` (arrays or ``nki.typing`` placeholders) for the cost model only and return
    its ``Profile``: summary, per-line table, Perfetto trace and timeline figure, all estimates for the target."""
    if isinstance(kernel, GridLaunch):
        kernel, grid = kernel.kernel, kernel.grid
    k = as_kernel(kernel)
    try:
        res = run(k, grid, args, kwargs, numerics=False, target=target)
    except NKIError as err:
        raise err.with_traceback(attach_location(err)) from None
    from nkisim.cost.report import Profile

    return Profile.from_launch(res)


def cycles_per_element(target_name: str, instruction: str, engine: str, dtype: str, alu: str | None = None,
                       broadcast: bool = False) -> float:
    """The cost model's engine cycles per element of a large ``instruction`` (``"tensor_tensor"``...) on ``engine``
    with every operand ``dtype`` in SBUF (``broadcast``: one input repeated along the free axis), on ``target_name``."""
    from nkisim.cost.instructions import element_cycles

    return element_cycles(instruction, engine, dtype, target(target_name).params, alu, broadcast)


def dma_queues_used(target_name: str, partitions: int) -> int:
    """The DMA queues the cost model spreads a transfer over ``partitions`` partitions across on ``target_name``
    (``nkisim.cost.costs.dma_queues``: one per ``[dma] partitions_per_queue`` partitions, at most ``queues``)."""
    from nkisim.cost.costs import dma_queues

    return dma_queues(types.SimpleNamespace(p=partitions), target(target_name).params)  # (it reads the partitions)


def pe_peak_tflops(target_name: str, dtype: str) -> float:
    """The Tensor Engine's peak (TFLOPS, one NeuronCore) for matmul inputs of ``dtype`` on ``target_name``, as its
    target file states it (``[peak]``): float32 at the fp32 rate, an 8-bit float at the fp8 rate where the target
    has one, any other input (bfloat16, float16) at the bf16 rate."""
    return target(target_name).params.peak.pe_tflops(dtype)


def targets() -> tuple[str, ...]:
    """The names of the targets the simulator models (one ``nkisim/targets/<name>.toml`` each)."""
    return _target.names()


@contextlib.contextmanager
def watching(callback: Callable[[str, Launch], None] | None = None) -> Iterator[list[Launch]]:
    """Every kernel launch that completes inside the block (a script's ``kernel(...)`` or
    ``nki.simulate(kernel)(...)`` calls, either dialect), as ``Launch`` records with their estimate and profile:
    ``callback(kernel name, launch)`` is called for each; without a callback the list yielded collects them."""
    seen: list[Launch] = []

    def observe(kernel: Kernel, result: LaunchResult) -> None:
        done = Launch(result.outputs, result)
        if callback is None:
            seen.append(done)
        else:
            name = getattr(getattr(kernel, "original", None), "__name__", None) or getattr(kernel.func, "__name__",
                                                                                            "kernel")
            callback(name, done)

    _OBSERVERS.append(observe)
    try:
        yield seen
    finally:
        _OBSERVERS.remove(observe)


def user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without the simulator's frames: what a student's script should show for any error it raised."""
    return trim_traceback(tb)
