"""``nki.jit`` and ``nki.simulate`` of NKI 0.6: a kernel is a function of ``NkiTensor``s, launched as one.

A 0.6 kernel is a runtime ``Kernel`` whose ``dialect`` is "0.6" (so the launch lets it write its inputs, checks
its outputs are ``shared_hbm`` tensors, and reads ``kernel[n]`` as the logical-core degree), whose function is
an ``Entry``: the kernel's own function behind a door that hands it ``NkiTensor`` views of its array
arguments and hands the launch the tensors it returns.  Everything else (arguments, recording a program,
the cost model) is the launch every kernel goes through, so latency, profiles and programs of 0.6 kernels come
from ``nkisim.api`` exactly as for legacy ones.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import math
import os
import textwrap
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nkisim.core import context
from nkisim.core import dtypes as dt
from nkisim.core.location import warn
from nkisim.core.tensor import Tensor
from nkisim.frontend.v06.adapters.errors import error
from nkisim.frontend.v06.adapters.known_issues import DocumentedRuleWarning, first_time
from nkisim.frontend.v06.adapters.order import scheduling
from nkisim.frontend.v06.adapters.tensor import NkiTensor
from nkisim.runtime import kernel as _runtime
from nkisim.runtime.kernel import GridLaunch, launch
from nkisim.runtime.order import MAX_EDGES


class Entry:
    """The kernel function as the launch calls it: array arguments become ``NkiTensor`` views, returned views
    become the launch's tensors.  A callable object rather than a closure: the launch reads ``__code__`` (the
    kernel's file, for error locations) and follows ``__wrapped__`` for the signature and the source."""

    def __init__(self, fn: Callable, schedule: Scheduled | None = None) -> None:
        #: the kernel's ``with_schedule`` edges, if any
        self.schedule = schedule
        functools.update_wrapper(self, fn)
        self.__code__ = fn.__code__
        try:  # ``nt.tensor[...]`` annotations under ``from __future__ import annotations`` are strings
            self.__annotations__ = inspect.get_annotations(fn, eval_str=True)
        except Exception:  # noqa: BLE001 - an annotation naming what the kernel's module lacks: left unchecked
            pass
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD):
                # rule: kernel.keyword_only
                raise error("err_kernel_argument",
                            f"kernel {fn.__name__}: parameter '{p.name}' is keyword-only; NKI 0.6 kernels take no "
                            f"'*' separator or **kwargs in their signature (NKI 0.3 dropped them): make it a plain "
                            f"parameter")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self.__wrapped__  # type: ignore[attr-defined]
        _check_python_subset(fn)
        ctx = context.current()
        state = scheduling(ctx)
        if self.schedule is not None and not state.edges:
            state.edges, state.where = dict(self.schedule.edges), self.schedule.where
        names = _parameter_names(fn)
        out = fn(*(_argument(a, names[k] if k < len(names) else f"#{k}") for k, a in enumerate(args)),
                 **{k: _argument(v, k) for k, v in kwargs.items()})
        state.finish(ctx.instance)
        return _result(out, fn)


@dataclasses.dataclass(frozen=True)
class Scheduled:
    """``kernel.with_schedule(edges)``: consumer name -> the names it runs after, and the line that said so."""

    edges: tuple[tuple[str, tuple[str, ...]], ...]
    where: tuple[str, int]


@functools.lru_cache(maxsize=512)
def _identity_tests(fn: Callable) -> tuple[int, ...]:
    """Lines of the kernel's ``is`` / ``is not`` comparisons (AWS's migration guide says the NKI 0.3+ compiler
    refuses them)."""
    try:
        lines, start = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return ()
    return tuple(sorted(start + node.lineno - 1 for node in ast.walk(tree) if isinstance(node, ast.Compare)
                        and any(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops)))


#: kernels whose ``is`` comparisons were warned about in this process (once per kernel function)
_WARNED_IDENTITY: set[Callable] = set()


def _check_python_subset(fn: Callable) -> None:
    """Rule ``kernel.identity_operator`` (a warning): AWS's migration guide says the 0.3 compiler does not support
    ``is`` / ``is not``, yet nki-library's 2.29_release kernels, validated on that compiler, test ``x is None`` on
    hundreds of lines; identity against trace-time Python values is evaluated while tracing."""
    lines = _identity_tests(fn)
    if lines and fn not in _WARNED_IDENTITY:
        _WARNED_IDENTITY.add(fn)
        # rule: kernel.identity_operator
        warnings.warn_explicit(
            "the 'is' / 'is not' operators: AWS's migration guide says \"The NKI 0.3.0 compiler does not support "
            "Python's is / is not operators ... Use == / != instead\" (nki/migration/index.rst), but AWS's own "
            "kernels validated on that compiler (nki-library 2.29_release) compare trace-time values such as None "
            "this way; the simulator evaluates them while tracing. Prefer == / != where either works",
            DocumentedRuleWarning, fn.__code__.co_filename, lines[0])


@functools.lru_cache(maxsize=512)
def _parameter_names(fn: Callable) -> tuple[str, ...]:
    return tuple(inspect.signature(fn).parameters)


def _argument(value: Any, name: str) -> Any:
    if isinstance(value, Tensor):
        return NkiTensor.over(value)
    if isinstance(value, list):
        # rule: kernel.list_argument
        raise error("err_kernel_argument", "a list is not a valid NKI 0.6 kernel argument (NKI 0.3 dropped list "
                                            "arguments): pass a tuple")
    d = _dtype_argument(value)
    if d is not None:
        return _nki_dtype(d, value, name)
    return value


def _dtype_argument(value: Any) -> Any:
    """``value`` as a dtype NumPy knows if it is a dtype object (``np.float32``, ``np.dtype('float16')``, a torch or
    JAX dtype), else None.  AWS's ``nki.jit`` converts dtype arguments to NKI dtypes at the kernel's boundary."""
    if isinstance(value, np.dtype):
        return value
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value)
    module = type(value).__module__ or ""
    if module.startswith("torch") and type(value).__name__ == "dtype":
        return str(value).removeprefix("torch.")
    if module.startswith("jax") or (isinstance(value, type) and (value.__module__ or "").startswith("jax")):
        return getattr(value, "dtype", None)
    return None


def _nki_dtype(d: Any, value: Any, name: str) -> Any:
    """E32: a dtype argument becomes the NKI dtype it names; one NKI has no equivalent for is a ``TypeError``
    naming the argument, at the launch (NKI 0.4+)."""
    try:
        nd = dt.normalize(d)
    except TypeError:
        nd = None
    if nd is None or nd not in dt.SUPPORTED:
        # rule: kernel.dtype_argument
        raise error("err_dtype_argument",
                    f"argument '{name}' is the dtype {value!r}, which has no NKI equivalent: pass one of "
                    f"{', '.join(dt.name(x) for x in dt.SUPPORTED)} (nl.float32, nl.bfloat16, ...)")
    return nd


def _result(value: Any, fn: Callable) -> Any:
    """A returned view is the launch's output: the tensor itself, or a reshape of all of it (nki-library's kernels,
    validated on the compiler, ``return out.reshape(shape)``)."""
    if value.__class__ is NkiTensor:
        low = value.lower()
        if isinstance(low, Tensor):
            return low
        base = value.view_base()
        if value.offset == 0 and value.size == math.prod(base.shape) and value.is_contiguous() \
                and not value.is_indirect():
            return base.reshape(value.shape)
        # rule: limit.returned_part
        raise NotImplementedError(f"kernel {fn.__name__} returned a part of '{value.name}' (shape {list(value.shape)} "
                                  f"of {list(base.shape)}): the simulator returns whole tensors or reshapes of them; "
                                  f"return the tensor and slice it outside")
    if isinstance(value, (tuple, list)):
        return type(value)(_result(v, fn) for v in value)
    return value


class Kernel(_runtime.Kernel):
    """``@nki.jit`` kernel of NKI 0.6: call it (``kernel(a, b)``), launch it on two logical cores
    (``kernel[2](a, b)``), or hand it to ``nki.simulate`` / ``nkisim.api``."""

    dialect = "0.6"

    def __init__(self, fn: Callable, schedule: Scheduled | None = None, **options: Any) -> None:
        super().__init__(Entry(fn, schedule), "auto", **options)
        self.original = fn
        #: decorated ``@nki.jit(mode="trace")``: called from inside another kernel it runs inline (rule
        #: ``kernel.trace_sub_kernel``)
        self.trace_mode = False

    def __repr__(self) -> str:
        return f"<nki kernel {self.original.__name__} (NKI 0.6, simulated)>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ctx = context.active()
        if ctx is not None and self.trace_mode:
            if first_time(ctx, ("trace sub-kernel", self.original.__qualname__)):
                # rule: kernel.trace_sub_kernel
                warn(f"kernel {self.original.__name__} is decorated with @nki.jit(mode='trace') and called from "
                     f"inside another kernel: AWS's migration guide says \"This decorator needs to be removed for the "
                     f"new NKI Compiler\" (nki/migration/index.rst, NKI 0.3.0), but AWS's own kernels validated on "
                     f"that compiler (nki-library 2.29_release, moe_cte/bwmm_shard_on_I.py) call such sub-kernels; the "
                     f"simulator runs it as a plain function of the calling kernel. Remove the decorator",
                     DocumentedRuleWarning)
            return self.original(*args, **kwargs)
        if ctx is not None:
            if first_time(ctx, ("sub-kernel", self.original.__qualname__)):
                # rule: kernel.sub_kernel
                warn(f"kernel {self.original.__name__} is decorated with @nki.jit and called from inside another "
                     f"kernel: AWS's migration guide says \"the nki.jit decorator will need to be removed from "
                     f"sub-kernels\" (nki/migration/index.rst), but AWS's own kernels validated on the NKI 0.3.0 "
                     f"compiler (nki-library 2.29_release, transformer_tkg calling attention_block_tkg) do this; the "
                     f"simulator runs it as a plain function of the calling kernel. Call the undecorated function "
                     f"here, and use nki.jit({self.original.__name__})(...) where it is launched on its own",
                     DocumentedRuleWarning)
            return self.original(*args, **kwargs)
        if not args and not kwargs:
            # rule: kernel.no_arguments
            raise error("err_no_arguments", f"kernel {self.original.__name__} called with no arguments: an NKI kernel "
                                            f"takes at least one argument")
        return launch(self, None, args, kwargs)

    def __getitem__(self, lnc: Any) -> GridLaunch:
        return GridLaunch(self, lnc)

    def with_schedule(self, edges: Any) -> Kernel:
        """``kernel.with_schedule([(consumer, producer_or_names), ...])``: the kernel again, in which the instruction
        named ``consumer`` (``name=``) runs after the named producers (``adapters.order``: the cost model waits,
        the program keeps the edges).  A name no instruction carries is an error at this line when the kernel
        runs; an edge across a dynamic loop's boundary is one at the consumer's line.  Edges replace any given
        before."""
        merged: dict[str, tuple[str, ...]] = {}
        for edge in edges:
            if not (isinstance(edge, tuple) and len(edge) == 2 and isinstance(edge[0], str)
                    and (isinstance(edge[1], str) or all(isinstance(n, str) for n in edge[1]))):
                # rule: python.argument_type
                raise TypeError(f"with_schedule takes (consumer name, producer name or names) pairs, got {edge!r}")
            producers = (edge[1],) if isinstance(edge[1], str) else tuple(edge[1])
            merged[edge[0]] = tuple(dict.fromkeys(merged.get(edge[0], ()) + producers))
            if len(merged[edge[0]]) > MAX_EDGES:
                # rule: limit.edges
                raise error("err_too_many_edges", f"with_schedule: instruction {edge[0]!r} would run after more "
                                                  f"than {MAX_EDGES} named instructions, more than a program holds")
        caller = inspect.currentframe()
        caller = caller.f_back if caller is not None else None
        where = (caller.f_code.co_filename, caller.f_lineno) if caller is not None else ("<unknown>", 0)
        schedule = Scheduled(tuple(merged.items()), where)
        return Kernel(self.original, schedule, **self.options)


def jit(fn: Callable | None = None, **kwargs: Any) -> Any:
    """``@nki.jit`` / ``@nki.jit()`` / ``nki.jit(f)``: an NKI 0.6 kernel on the simulator.

    ``mode=`` is ignored since NKI 0.3 (a warning says so); ``platform_target=`` is an error since 0.3 (set
    ``NEURON_PLATFORM_TARGET_OVERRIDE`` instead)."""
    if "platform_target" in kwargs:
        # rule: jit.platform_target
        raise error("err_platform_target_argument",
                    "nki.jit(platform_target=...) is not supported (NKI 0.3 dropped it): set the "
                    "NEURON_PLATFORM_TARGET_OVERRIDE environment variable (trn1, trn2, trn3) instead")
    trace = False
    if "mode" in kwargs:
        trace = kwargs.pop("mode") == "trace"
        warnings.warn("nki.jit(mode=...) is ignored since NKI 0.3: the framework is detected from the arguments",
                      DeprecationWarning, stacklevel=2)

    def make(f: Any) -> Kernel:
        k = Kernel(_function(f), **kwargs)
        k.trace_mode = trace
        return k

    if fn is None:
        return make
    return make(fn)


def _function(f: Any) -> Callable:
    if isinstance(f, Kernel):
        return f.original
    if isinstance(f, _runtime.Kernel):  # a legacy kernel handed to NKI 0.6: its function
        return f.func
    if not callable(f):
        # rule: python.argument_type
        raise TypeError(f"nki.jit expects a function, got {type(f).__name__}")
    return f


def simulate(kernel: Any) -> Callable[..., Any]:
    """``nki.simulate(kernel)(*args)`` / ``nki.simulate(kernel[2])(*args)``: run the kernel on the CPU; NumPy or
    torch in, the same out.  Every launch here is a simulation, so this is the kernel itself (a plain function
    is jitted first)."""
    if isinstance(kernel, GridLaunch):
        if not isinstance(kernel.kernel, Kernel):
            return GridLaunch(Kernel(_function(kernel.kernel)), kernel.grid)
        return kernel
    if isinstance(kernel, Kernel):
        return kernel
    return Kernel(_function(kernel))


#: ``NKI_NC_VERSION`` (the variable nki-library's harness sets for AWS's CPU simulator from its platform target,
#: test/utils/simulation_setup.py and common_dataclasses.Platforms.get_nc_gen) -> the target it names
_NC_TARGET = {"gen2": "trn1", "gen3": "trn2", "gen4": "trn3"}


class _CpuSimulation:
    """``nki.cpu_simulate(kernel)``: call it, or index it with the logical-core degree first."""

    def __init__(self, kernel: Kernel, lnc: Any = None) -> None:
        self.kernel, self.lnc = kernel, lnc

    def __getitem__(self, lnc: Any) -> _CpuSimulation:
        return _CpuSimulation(self.kernel, lnc)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        gen = os.environ.get("NKI_NC_VERSION", "")
        target = _NC_TARGET.get(gen.removeprefix("nc_version.")) if gen else None
        if gen and target is None:
            # rule: limit.nc_version_variable
            raise ValueError(f"NKI_NC_VERSION={gen!r} names no NeuronCore generation: gen2 (trn1), gen3 (trn2) "
                             f"or gen4 (trn3)")
        return launch(self.kernel, self.lnc, args, kwargs, target=target)


def cpu_simulate(kernel: Any) -> _CpuSimulation:
    """``nki.cpu_simulate(kernel)[lnc](**inputs)``, as nki-library's ``--test-mode simulation`` calls AWS's CPU
    simulator (its test/utils/simulation_setup.py): the kernel on the simulator, NumPy in and out.  The target is
    the one ``NKI_NC_VERSION`` names when that harness set it (gen2 trn1, gen3 trn2, gen4 trn3), else the launch's
    usual one (``NEURON_PLATFORM_TARGET_OVERRIDE``, default trn2)."""
    sim = simulate(kernel)
    if isinstance(sim, GridLaunch):
        return _CpuSimulation(sim.kernel, sim.grid)
    return _CpuSimulation(sim)
