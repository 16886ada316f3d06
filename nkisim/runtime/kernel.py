"""``nki.jit`` and friends: turn a Python function into a kernel that runs on the simulator.

A launch binds the arguments, wraps arrays as immutable HBM tensors, runs every SPMD instance in a
fresh kernel context, checks the outputs were written, and converts the results back to NumPy (or
torch when torch tensors came in).  Errors raised for a kernel-programming mistake are re-raised
with the simulator's frames removed, so the traceback ends on the student's line.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import inspect
import os
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from nkisim.core import context
from nkisim.core import target as target_mod
from nkisim.core.context import KernelContext
from nkisim.core.errors import NKIError, nki_error
from nkisim.core.location import attach_location, user_frame
from nkisim.core.recording import HOOK
from nkisim.core.target import Target
from nkisim.core.tensor import Tensor
from nkisim.cost.trace import Trace
from nkisim.program.ir import Program
from nkisim.runtime import arguments, heap, lnc
from nkisim.runtime import grid as gridmod
from nkisim.runtime.recording import ProgramRecorder

MODES = ("auto", "simulation", "baremetal", "benchmark", "profile", "jax", "torchxla")


def default_target(explicit: Target | str | None = None) -> Target:
    """The launch's target: ``platform_target=`` if given, else NEURON_PLATFORM_TARGET_OVERRIDE (as the
    real nki.jit), else the default (trn2).  The one place a target is read from the environment."""
    return target_mod.resolve(explicit or os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE") or target_mod.DEFAULT)


class LaunchResult:
    """What one launch produced: the outputs, the trace (for the cost model) and, when the launch recorded,
    the instruction program it compiled to."""

    def __init__(self, outputs: Any, ctx: KernelContext, program: Program | None = None) -> None:
        self.outputs = outputs
        self.ctx = ctx
        self.program = program


class Kernel:
    """A jitted NKI kernel: call it directly, index it with a grid, or hand it to nki.benchmark."""

    #: the NKI dialect the kernel is written in ("legacy" or "0.6"), which sets its launch rules: 0.6 kernels may
    #: write their inputs (the caller's arrays see it), return shared_hbm tensors, and take ``kernel[n]`` as the
    #: logical-core degree (1 or 2) instead of an SPMD grid
    dialect = "legacy"

    def __init__(self, func: Callable, mode: str = "auto", **options: Any) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown nki.jit mode {mode!r}; expected one of {', '.join(MODES)}")
        self.func = func
        #: what a call from inside another kernel runs (inlined, as the compiler traces it)
        self.inlined = func
        self.mode = mode
        self.options = options
        self.last_launch: LaunchResult | None = None
        functools.update_wrapper(self, func)

    def __repr__(self) -> str:
        return f"<nki kernel {self.func.__name__} (simulated)>"

    def __getitem__(self, grid: Any) -> GridLaunch:
        gridmod.check_nonempty(grid)
        return GridLaunch(self, grid)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ctx = context.active()
        if ctx is not None:  # a jitted helper called from inside a kernel is inlined
            ctx.depth += 1
            try:
                return self.inlined(*args, **kwargs)
            finally:
                ctx.depth -= 1
        return launch(self, None, args, kwargs)


class GridLaunch:
    """``kernel[grid]`` waiting for its arguments."""

    def __init__(self, kernel: Kernel, grid: Any) -> None:
        self.kernel = kernel
        self.grid = grid

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if context.active() is not None:
            raise nki_error("err_nested_kernel_with_spmd_grid",
                            f"{self.kernel.func.__name__}[{self.grid}]) inside another kernel is not supported.")
        return launch(self.kernel, self.grid, args, kwargs)


#: called as ``observer(kernel, result)`` after every completed ``launch`` (``python -m nkisim --benchmark`` /
#: ``--profile`` register one through ``nkisim.api.watching``); empty otherwise
OBSERVERS: list[Callable[[Kernel, LaunchResult], None]] = []


def launch(kernel: Kernel, grid: Any, args: tuple, kwargs: dict, *, numerics: bool | None = None,
           target: str | None = None, record: bool = True) -> Any:
    """Run all SPMD instances of ``kernel`` and return converted outputs (see LaunchResult)."""
    try:
        result = run(kernel, grid, args, kwargs, numerics=numerics, target=target, record=record)
    except NKIError as err:
        tb = attach_location(err)
        if err.nki_location is None:  # raised by the launch itself (arguments, outputs): the student's call
            f = user_frame()
            if f is not None:
                err.nki_location = (f.f_code.co_filename, f.f_lineno)
                if isinstance(err, SyntaxError):
                    err.filename, err.lineno = err.nki_location
        raise err.with_traceback(tb) from None
    for observe in OBSERVERS:
        observe(kernel, result)
    return result.outputs


def _run_instances(kernel: Kernel, bound: Any, ctx: KernelContext, instances: list, specs: list,
                   recorder: ProgramRecorder | None, sizes: tuple[int, ...]) -> Any:
    """The SPMD instances one after another (legacy grids, and NKI 0.6 on one logical core)."""
    out: Any = None
    for i, idx in enumerate(instances):
        ctx.program = tuple(int(v) for v in idx)
        ctx.instance = i
        ctx.core = gridmod.core_of(ctx.program, specs)
        if recorder is not None:
            recorder.instance(ctx.program, i, ctx.core)
        try:
            out = kernel.func(*bound.args, **bound.kwargs)
        except NKIError as err:
            if len(instances) > 1:
                err.add_note(f"(raised in SPMD instance {list(ctx.program)} of grid {list(sizes)})")
            raise
    return out


def _run_cores(kernel: Kernel, bound: Any, ctx: KernelContext, instances: list, specs: list,
               recorder: ProgramRecorder | None) -> Any:
    """An NKI 0.6 LNC2 launch: each logical core's Python in its own thread, one at a time (``runtime.lnc``); every
    switch is an ``Instance`` event of the program, so executing it interleaves the cores the same way."""

    def switch_to(i: int) -> None:
        ctx.program = tuple(int(v) for v in instances[i])
        ctx.instance = i
        ctx.core = gridmod.core_of(ctx.program, specs)
        if recorder is not None:
            recorder.instance(ctx.program, i, ctx.core)

    outs = lnc.Cores(len(instances), switch_to).run(lambda i: kernel.func(*bound.args, **bound.kwargs))
    return outs[-1]


def run(kernel: Kernel, grid: Any, args: tuple, kwargs: dict, *, numerics: bool | None = None,
        target: Target | str | None = None, record: bool = True) -> LaunchResult:
    """The launch itself (errors not yet trimmed).  ``record``: compile the launch into a ``Program``
    (``runtime.recording``), returned as ``LaunchResult.program``, tracing each loop body once as the compiler
    does; False runs the kernel's Python for every iteration (the unrolled reference ``tests/program_check.py``
    holds recorded launches to)."""
    tgt = default_target(target or kernel.options.get("platform_target"))
    nki06 = kernel.dialect == "0.6"
    if grid is None:
        sizes, specs = (), []
    else:
        sizes, specs = gridmod.parse_lnc(grid, tgt) if nki06 else gridmod.parse_grid(grid, tgt)
    if not nki06:  # NKI 0.6 unrolls Python while loops on compile-time values like any Python
        _check_while_loops(kernel.func)
    bound = arguments.bind(kernel.func, args, kwargs)
    annotations = getattr(kernel.func, "__annotations__", {})
    converted: dict[str, Any] = {}
    to_torch = False
    any_placeholder = False
    for name, value in bound.arguments.items():
        if isinstance(value, arguments.Placeholder):
            any_placeholder = True
        conv, from_torch = arguments.to_tensor(name, value, annotations.get(name), writable=nki06,
                                               space="hbm" if nki06 and not sizes else "shared_hbm")
        to_torch |= from_torch
        _check_annotation(name, conv, annotations.get(name))
        converted[name] = conv
        bound.arguments[name] = conv
    if numerics is None:
        numerics = not any_placeholder and kernel.mode != "benchmark"
    if any_placeholder and numerics:
        raise TypeError("nki.typing placeholders carry no values: use nki.benchmark / nki.profile (cost only), or "
                        "pass NumPy arrays to run the kernel")
    trace = Trace()
    trace.skip_middle_end = bool(getattr(kernel.func, "__nki_skip_middle_end__", False))
    trace.dialect = kernel.dialect
    ctx = KernelContext(tgt, sizes, numerics, gridmod.cores(specs), trace=trace,
                        stack_allocator=bool(getattr(kernel.func, "__nki_stack_allocator__", False)))
    recorder = ProgramRecorder() if record else None
    if recorder is not None:
        if HOOK.recorder is not None:
            raise RuntimeError("a launch is already being recorded")
        for name, conv in converted.items():
            if isinstance(conv, Tensor):
                recorder.add_input(name, conv)
    context.push(ctx)
    out: Any = None
    HOOK.recorder = recorder
    try:
        instances = list(np.ndindex(*sizes)) if sizes else [()]
        with engine_numerics(numerics):
            if nki06 and len(instances) > 1:  # logical cores run concurrently, taking turns where they wait
                out = _run_cores(kernel, bound, ctx, instances, specs, recorder)
            else:
                out = _run_instances(kernel, bound, ctx, instances, specs, recorder, sizes)
        check_outputs(out, converted, kernel.func, on_chip_ok=kernel.mode == "simulation", dialect=kernel.dialect)
    finally:
        HOOK.recorder = None
        context.pop()
    program = None
    if recorder is not None:
        program = recorder.program(getattr(kernel.func, "__name__", "kernel"), tgt.name, sizes, ctx.cores, out,
                                   skip_middle_end=trace.skip_middle_end, stack_allocator=ctx.stack_allocator,
                                   on_chip_outputs=kernel.mode == "simulation", dialect=kernel.dialect)
    result = LaunchResult(arguments.from_tensor(out, to_torch), ctx, program)
    kernel.last_launch = result
    return result


@contextlib.contextmanager
def engine_numerics(numerics: bool) -> Iterator[None]:
    """NumPy settings for one launch, set once instead of around every op.

    Engines raise no floating-point exceptions (inf/NaN propagate silently), so NumPy stays quiet.
    BLAS is pinned to one thread: a kernel issues many small (128x512) matmuls, which a multi-threaded
    BLAS serves slowly (and erratically on a busy machine); results are also reproducible this way.
    Tile memory is recycled within the launch (``runtime.heap``).  Shared by launches and the executor.
    """
    with contextlib.ExitStack() as stack:
        stack.enter_context(np.errstate(all="ignore"))
        if numerics:
            stack.enter_context(_blas_controller().limit(limits=1, user_api="blas"))
            stack.enter_context(heap.recycling())
        stack.enter_context(_no_cycle_collection())
        yield


_BLAS: list[Any] = []


def _blas_controller() -> Any:
    """threadpoolctl's view of the loaded BLAS libraries, made once: ``threadpool_limits`` scans every loaded
    library again on each call (~0.3 ms a launch, a tenth of a small program's execution).  NumPy, whose BLAS
    the ops use, is imported before any launch, so its library is among those found."""
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0]


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while a kernel runs.

    Tracing allocates a few long-lived objects per instruction (trace records, tiles), and every
    collection re-scans all of them plus the whole interpreter heap: a third of the launch time on
    small tiles.  The simulator creates no reference cycles in its hot path, so nothing piles up;
    whatever cyclic garbage a kernel makes is collected as usual once the launch ends.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _unconditional_entry(prev: ast.stmt | None, test: ast.expr) -> bool:
    """``while True:`` or the do-while pattern ``cond = True`` / ``cond = scalar(True)`` right before."""
    if isinstance(test, ast.Constant) and test.value is True:
        return True
    if not (isinstance(test, ast.Name) and isinstance(prev, ast.Assign) and len(prev.targets) == 1):
        return False
    target, value = prev.targets[0], prev.value
    if isinstance(value, ast.Call) and len(value.args) == 1:
        value = value.args[0]
    return isinstance(target, ast.Name) and target.id == test.id and isinstance(value, ast.Constant) \
        and value.value is True


@functools.lru_cache(maxsize=512)
def _while_loop_lines(func: Callable) -> tuple[int, ...]:
    """Lines of the kernel's traditional while loops (the compiler rejects them by parsing the source)."""
    try:
        lines, start = inspect.getsourcelines(func)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return ()
    bad = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                bad += [start + stmt.lineno - 1 for i, stmt in enumerate(block) if isinstance(stmt, ast.While)
                        and not _unconditional_entry(block[i - 1] if i else None, stmt.test)]
    return tuple(sorted(bad))


def _check_while_loops(func: Callable) -> None:
    lines = _while_loop_lines(func)
    if lines:
        err = nki_error("err_while_loop_requires_unconditional_entry",
                        "Traditional while loops are not supported in NKI. Use the do-while pattern instead: start "
                        "with 'cond = scalar(True)' right before 'while cond:' and update cond at the end of the "
                        "body, or loop with nl.sequential_range.")
        err.nki_location = (func.__code__.co_filename, lines[0])
        raise err


def _check_annotation(name: str, value: Any, ann: Any) -> None:
    shape = getattr(ann, "shape", None)
    if shape is None or not isinstance(value, Tensor):
        return
    if tuple(shape) != value.shape:
        raise nki_error("err_annotation_shape_mismatch",
                        f"shape of `{name}{list(value.shape)}` does not match the expected shape of {list(shape)}")


def _flatten(out: Any) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    return []


@dataclass(frozen=True)
class ReturnSite:
    """The kernel's ``return`` statement: its line and the student's variable for each returned value
    (flattened like the outputs; None where the value is not a plain name)."""

    line: int
    names: tuple[str | None, ...]


def _returned_names(node: ast.expr | None) -> tuple[str | None, ...]:
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(n for elt in node.elts for n in _returned_names(elt))
    return (None,)


@functools.lru_cache(maxsize=512)
def return_site(func: Callable) -> ReturnSite | None:
    """The kernel's one ``return`` statement (None when it has several, or no source): whole-kernel errors
    about the outputs point at it and name the student's variables."""
    try:
        lines, start = inspect.getsourcelines(func)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    found: list[ast.Return] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    if len(found) != 1:
        return None
    return ReturnSite(start + found[0].lineno - 1, _returned_names(found[0].value))


def _blame(err: NKIError, filename: str | None, line: int | None) -> NKIError:
    """Point ``err`` at the student's ``line`` (a whole-kernel error is found after the kernel returned);
    without a line it keeps the launch's."""
    if line is not None:
        err.nki_location = (filename, line)
        if isinstance(err, SyntaxError):
            err.filename, err.lineno = filename, line
    return err


def check_outputs(out: Any, params: dict[str, Any], func: Callable | None, on_chip_ok: bool = False,
                  dialect: str = "legacy") -> None:
    """Whole-kernel rules on the outputs, blamed on the student's own lines: an output never written at
    its allocation, an output not in HBM and a mutable parameter not returned at the return statement.
    The kernel's source is read (``return_site``) only once a rule is broken.  ``func`` is None for an
    executed program (``runtime.execute``): there is no source, and an allocation's recorded line is the blame.

    ``on_chip_ok``: an ``nki.jit(mode="simulation")`` kernel may return an SBUF tile, as the legacy CPU
    simulator allowed (AWS's range_select test does); every other launch keeps the compiler's rule.

    ``dialect`` "0.6": a kernel output it allocated must be in ``shared_hbm`` (NKI 0.3+), and its inputs, which it
    may write, need not be returned (the caller's arrays hold what it wrote)."""
    returned = _flatten(out)
    filename = func.__code__.co_filename if func is not None else None

    def return_line() -> int | None:
        site = return_site(func) if func is not None else None
        return None if site is None else site.line

    def label(i: int) -> str:  # the student's variable at the return statement, else the tensor's own name
        site = return_site(func) if func is not None else None
        if site is not None and len(site.names) == len(returned) and site.names[i]:
            return site.names[i]
        return returned[i].label()

    for i, t in enumerate(returned):
        if dialect == "0.6" and t.space == "hbm" and not t.root.argument and t.root.buffer.space != "shared_hbm":
            raise _blame(nki_error("err_unsupported_memory",
                                   f"Expected kernel output `{label(i)}` to be in address space 'shared_hbm', but got "
                                   f"a tensor in '{t.root.buffer.space}' instead: NKI 0.6 kernel outputs are allocated "
                                   f"with nl.ndarray(..., buffer=nl.shared_hbm)"), filename, return_line())
        if t.space != "hbm" and not on_chip_ok:
            raise _blame(nki_error("err_unsupported_memory",
                                   f"Expected kernel output `{label(i)}` to be in address space 'hbm', but got a tile "
                                   f"in '{t.buffer.space}' instead. Store results into an nl.shared_hbm tensor and "
                                   f"return it."), filename, return_line())
        if not t.root.written:
            err = nki_error("err_tensor_output_not_written_to",
                            f"Output tensor `{label(i)}` is never written to: store results into it with nl.store "
                            f"before returning it")
            alloc = t.root.site
            raise _blame(err, *alloc) if alloc is not None and (func is None or alloc[0] == filename) else \
                _blame(err, filename, return_line())
    if dialect == "0.6":
        return
    roots = {t.root.uid for t in returned}
    for name, p in params.items():
        if isinstance(p, Tensor) and not p.param and p.root.uid not in roots:
            raise _blame(nki_error("err_mutable_parameter_not_returned",
                                   f"Mutable kernel parameter `{name}` not returned by `return` statement"),
                         filename, return_line())


def jit(func: Callable | None = None, mode: str = "auto", **options: Any) -> Any:
    """``@nki.jit`` / ``nki.jit(f, mode=...)``: compile (here: simulate) a kernel."""
    if func is None:
        return lambda f: Kernel(_unwrap(f), mode, **options)
    return Kernel(_unwrap(func), mode, **options)


def _unwrap(f: Any) -> Callable:
    return f.func if isinstance(f, Kernel) else f


def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """``nki.simulate_kernel``: run a kernel (or kernel[grid]) on the CPU with NumPy arrays."""
    if isinstance(kernel, GridLaunch):
        return kernel(*args, **kwargs)
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel, "simulation")
    return k(*args, **kwargs)


def baremetal(kernel: Any = None, **options: Any) -> Any:
    """``nki.baremetal``: on the simulator this runs the kernel with NumPy inputs and outputs."""
    if kernel is None:
        return lambda k: baremetal(k, **options)
    if isinstance(kernel, (Kernel, GridLaunch)):
        return kernel
    return Kernel(kernel, "baremetal", **options)
