"""Two logical NeuronCores (NKI 0.6's ``kernel[2]``) running one kernel concurrently.

AWS's simulator runs the two cores of an LNC2 launch as two Python threads, so that ``nisa.sendrecv`` and
``nisa.core_barrier`` can wait for the other core.  Here too each core's kernel Python runs in a thread of its
own, but only one runs at a time and the turn passes only where a core waits for the other (a rendezvous) or
finishes: the launch's context, its recorder and the trace are shared, and every switch is a point the program
records (an ``Instance`` event), so a launch interleaves its cores the same way every time and its program
replays that interleaving.

``meet(key, payload)`` is the rendezvous: the core that arrives first waits; the last to arrive gets every core's
payload (by core) and does the work that needs both sides (the transfers of a ``sendrecv``) while the others
wait, then all continue.  A core that waits for a partner that has finished (divergent control flow, which is
undefined on the device) is an error naming both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from nkisim.core.context import KernelContext

#: the running launch's cores (None outside an LNC2 launch): what ``meet`` synchronises
_ACTIVE: list[Cores | None] = [None]


class Aborted(BaseException):
    """Unwinds a waiting core's thread when the other core failed (not an error of its own)."""


class Cores:
    """The logical cores of one launch; ``run`` calls ``body(core)`` for each, taking turns."""

    def __init__(self, n: int, switch_to: Callable[[int], None]) -> None:
        self.n = n
        self.switch_to = switch_to  # makes core ``i`` the one the context and the recorder see
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False] * n
        self.waiting: dict[int, Any] = {}  # core -> the key it waits at
        self.arrived: dict[Any, dict[int, Any]] = {}
        self.released: dict[Any, bool] = {}
        self.count: dict[tuple[int, Any], int] = {}  # (core, key) -> how many times it met at key before
        self.error: BaseException | None = None

    # --- the baton ----------------------------------------------------------------------------------------------
    def _pass(self, me: int) -> None:
        """Give the turn to the next core that can run (neither finished nor waiting), or fail: every core left
        waits for one that finished."""
        for k in range(1, self.n + 1):
            j = (me + k) % self.n
            if not self.done[j] and j not in self.waiting:
                self.turn = j
                self.cond.notify_all()
                return
        if any(not d for d in self.done):
            stuck = ", ".join(f"core {c} at {key[0]} #{key[-1]}" for c, key in sorted(self.waiting.items()))
            finished = [c for c, d in enumerate(self.done) if d]
            self.error = self.error or RuntimeError(
                f"logical cores wait for each other forever ({stuck}; core(s) {finished} finished): both cores of "
                f"an LNC2 kernel must reach the same sendrecv / core_barrier calls in the same order")
        self.turn = -1
        self.cond.notify_all()

    def _wait_turn(self, me: int) -> None:
        while self.turn != me and self.error is None:
            self.cond.wait()
        if self.error is not None:
            raise Aborted()
        self.switch_to(me)

    # --- rendezvous ------------------------------------------------------------------------------------------------
    def meet(self, me: int, key: Any, payload: Any, work: Callable[[dict[int, Any]], None]) -> None:
        with self.cond:
            n = self.count[(me, key)] = self.count.get((me, key), 0) + 1
            key = (*key, n)  # the n-th meeting at this key: every core meets there in the same order
            got = self.arrived.setdefault(key, {})
            got[me] = payload
            if len(got) < self.n:
                self.waiting[me] = key
                self._pass(me)
                while not self.released.get(key) and self.error is None:
                    self.cond.wait()
                self._wait_turn(me)
                return
            del self.arrived[key]
            work(got)
            self.released[key] = True
            for c in [c for c, k in self.waiting.items() if k == key]:
                del self.waiting[c]
            self.cond.notify_all()

    # --- running -----------------------------------------------------------------------------------------------------
    def run(self, body: Callable[[int], Any]) -> list[Any]:
        results: list[Any] = [None] * self.n

        def main(core: int) -> None:
            try:
                with self.cond:
                    self._wait_turn(core)
                with np.errstate(all="ignore"):  # (errstate is per thread: as the launch sets it)
                    results[core] = body(core)
            except Aborted:
                pass
            except BaseException as err:  # noqa: BLE001 - handed to the launching thread
                with self.cond:
                    self.error = self.error or err
                    self.cond.notify_all()
            finally:
                with self.cond:
                    self.done[core] = True
                    if self.error is None:
                        self._pass(core)
                    self.cond.notify_all()

        _ACTIVE[0] = self
        threads = [threading.Thread(target=main, args=(c,), name=f"nki-core-{c}", daemon=True) for c in range(self.n)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            _ACTIVE[0] = None
        if self.error is not None:
            raise self.error
        return results


def current_core(ctx: KernelContext) -> int:
    """The logical core the kernel's Python runs as (0 outside an LNC2 launch)."""
    return ctx.core if _ACTIVE[0] is not None else 0


def meet(ctx: KernelContext, key: Any, payload: Any, work: Callable[[dict[int, Any]], None]) -> bool:
    """Wait for every core at ``key`` (see the module docstring); False outside an LNC2 launch (one core: nothing to
    wait for)."""
    cores = _ACTIVE[0]
    if cores is None:
        return False
    if ctx.loops:
        raise NotImplementedError(f"{key[0]} inside a dynamic loop is not supported by the simulator")
    cores.meet(ctx.core, key, payload, work)
    return True
