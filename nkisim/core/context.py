"""The kernel context: what is true while one kernel instance is being traced.

NKI APIs are only legal inside a kernel, so every API looks up the active context and raises the
compiler's ``err_nki_api_outside_of_nki_kernel`` when there is none (numba's simulator uses the same
gate).  The context holds the launch grid and instance id, the loop stack used for dependency and
bound checks, the shared_hbm tensors (one per allocation site for the whole grid), the target and
the instruction trace consumed by the cost model.  Every field is declared here: ops read and write
the context only through these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nkisim.core.errors import nki_error
from nkisim.core.indexing import Loop
from nkisim.core.target import Target


@dataclass(slots=True, eq=False)
class KernelContext:
    """State of one kernel launch (all SPMD instances share it; ``program`` changes per instance)."""

    target: Target
    grid: tuple[int, ...] = ()
    #: run the numerics (False: trace for the cost model only, e.g. nki.benchmark on placeholders)
    numerics: bool = True
    #: NeuronCores the launch spans
    cores: int = 1
    #: the SPMD instance being traced: its grid index, number and NeuronCore
    program: tuple[int, ...] = ()
    instance: int = 0
    core: int = 0
    #: enclosing NKI loops, outermost first
    loops: list[Loop] = field(default_factory=list)
    #: memo of tuple(loops) (tensors record where they were allocated) and of the loop state
    #: ((uid, kind, iteration), ...) every trace record carries; reset by the loop iterator
    loop_tuple: tuple[Loop, ...] = ()
    loop_state: tuple | None = ()
    #: shared_hbm tensors by allocation site (one per site for the whole grid), and how many times
    #: each instance has allocated at a site
    shared: dict[Any, Any] = field(default_factory=dict)
    shared_counts: dict[Any, int] = field(default_factory=dict)
    #: the instruction trace (a cost.trace.Trace, set by the launch)
    trace: list[Any] = field(default_factory=list)
    #: nesting of jit-decorated helpers called inside the kernel
    depth: int = 0
    #: the mask of the op being issued (operand reads may gather past a tile's end where masked off)
    op_mask: Any = None
    #: running accumulation of nisa.activation_reduce / activation(reduce_cmd=...) (Scalar engine) and of
    #: the Vector engine's accumulator registers (range_select, tensor_tensor_scan, ...: ops.outputs)
    act_accum: Any = None
    dve_accum: Any = None
    #: ``ncc.enable_stack_allocator``: live (instance, loop frame, space, bytes per partition) entries
    stack_allocator: bool = False
    stack: list[tuple] = field(default_factory=list)
    #: the kernel places some tensors itself (ncc.sbuf.mod_alloc), which restricts PE transposes
    direct_allocation: bool = False
    #: nl.rand's generator (seeded by nl.random_seed, else 0 on first use)
    rng: np.random.Generator | None = None
    #: the engines' XORWOW generator states of nisa.rng / rand2 (ops.rng): engine -> [lanes, words] uint32
    xorwow: dict[str, np.ndarray] = field(default_factory=dict)
    #: physical SBUF/PSUM bytes of directly allocated tensors, by space (core.physical)
    physical: dict[str, np.ndarray] = field(default_factory=dict)
    #: warnings given once per call site in this launch (NKI 0.6's known compile failures: keys of their own)
    warned: set[Any] = field(default_factory=set)
    #: NKI 0.6's scheduling edges of the launch (``frontend.v06.adapters.order.Scheduling``), made on first use
    schedule: Any = None

    def generator(self) -> np.random.Generator:
        """The kernel's random generator (nl.rand, nisa.dropout): seeded by nl.random_seed, else 0 on first use."""
        if self.rng is None:
            self.rng = np.random.default_rng(0)
        return self.rng

    def loops_changed(self) -> None:
        """A loop was entered or left: drop the memos derived from the loop stack."""
        self.loop_tuple = tuple(self.loops)
        self.loop_state = None

    def current_loop_state(self) -> tuple:
        """((loop uid, kind, iteration), ...) of the enclosing loops, outermost first."""
        state = self.loop_state
        if state is None:
            state = self.loop_state = tuple([(lp.uid, lp.kind, lp.current) for lp in self.loops])
        return state

    @property
    def nc_version(self) -> int:
        return self.target.nc_version


_current: list[KernelContext] = []


def current(api: str = "") -> KernelContext:
    """The active kernel context, or the compiler's error for an API used outside a kernel."""
    if not _current:
        raise nki_error("err_nki_api_outside_of_nki_kernel",
                        "calling NKI API outside of NKI kernels is not supported.")
    return _current[-1]


def active() -> KernelContext | None:
    return _current[-1] if _current else None


def push(ctx: KernelContext) -> None:
    _current.append(ctx)


def pop() -> None:
    _current.pop()
