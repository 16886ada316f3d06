"""The kernel context: what is true while one kernel instance is being traced.

NKI APIs are only legal inside a kernel, so every API looks up the active context and raises the
compiler's ``err_nki_api_outside_of_nki_kernel`` when there is none (numba's simulator uses the same
gate).  The context holds the launch grid and instance id, the loop stack used for dependency and
bound checks, the shared_hbm tensors (one per allocation site for the whole grid), the target
(trn1/trn2) and the instruction trace consumed by the cost model.
"""

from __future__ import annotations

from typing import Any

from nkisim.core.errors import nki_error
from nkisim.core.indexing import Loop

TARGETS = ("trn1", "trn2")


class KernelContext:
    """State of one kernel launch (all SPMD instances share it; ``program`` changes per instance)."""

    def __init__(self, target: str = "trn2", grid: tuple[int, ...] = (), numerics: bool = True,
                 cores: int = 1) -> None:
        self.target = target
        self.grid = grid
        self.program: tuple[int, ...] = ()
        self.core = 0
        self.cores = cores
        self.numerics = numerics
        self.loops: list[Loop] = []
        #: memo of tuple(loops) (tensors record where they were allocated) and of the loop state
        #: ((uid, kind, iteration), ...) every trace record carries; reset by the loop iterator
        self.loop_tuple: tuple[Loop, ...] = ()
        self.loop_state: tuple | None = ()
        self.shared: dict[Any, Any] = {}
        self.trace: list[Any] = []
        self.depth = 0  # nesting of jit-decorated helpers called inside the kernel
        self.params: set[int] = set()  # ids of tensors passed in as immutable parameters
        self.instance = 0

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
        return 2 if self.target == "trn1" else 3


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
