"""NKI 0.6's sequencer registers and the dynamic loops they live in: ``VirtualRegister``, ``register_value`` (an int
or a register's value, where an operand may be either) and the stack of dynamic loops the kernel's Python is inside.

The lowest of the adapters that know about registers: ``tensor`` reads a register as a scalar offset, ``control``
writes registers and runs the loops, ``instruction`` asks which dynamic loops an instruction sits in; none of them is
imported here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from nkisim.core.indexing import Affine
from nkisim.frontend.v06.adapters.errors import error

#: the dynamic loops the kernel is inside, outermost first (one id per loop): an instruction's scheduling edges
#: may not cross them (``NkiInstruction.depends_on``)
_DYNAMIC: list[int] = []
_NEXT_LOOP = [0]
#: the ids in ``_DYNAMIC`` of loops written ``for i in nl.dynamic_range(...)`` (E22 concerns those)
_RANGES: set[int] = set()


def dynamic_scope() -> tuple[int, ...]:
    """The dynamic loops an instruction issued now sits in (outermost first)."""
    return tuple(_DYNAMIC)


@contextlib.contextmanager
def _dynamic_loop(dynamic_range: bool = False) -> Iterator[None]:
    _NEXT_LOOP[0] += 1
    _DYNAMIC.append(_NEXT_LOOP[0])
    if dynamic_range:
        _RANGES.add(_NEXT_LOOP[0])
    try:
        yield
    finally:
        _RANGES.discard(_DYNAMIC.pop())


class VirtualRegister:
    """A 32-bit sequencer register (``nisa.register_alloc``)."""

    __slots__ = ("_value", "frozen", "loaded", "home")

    def __init__(self, value: Any = 0, *, frozen: bool = False, loaded: bool = False) -> None:
        self._value = value
        #: the dynamic loops it was allocated in (a register written in a loop it was not allocated in carries a
        #: value across that loop's iterations: ``_loop_carried``)
        self.home = tuple(_DYNAMIC)
        #: a dynamic loop's induction register: read-only (writing it is an AssertionError, NKI 0.4+)
        self.frozen = frozen
        #: the value was read from a tensor (``register_load``): control flow on it depends on tensor values
        self.loaded = loaded

    @property
    def value(self) -> Any:
        """int, Affine (a compile-time loop's index) or None (read from a tensor without values)."""
        return self._value

    def set_value(self, value: Any, loaded: bool, api: str) -> None:
        if self.frozen:
            # rule: control.induction_read_only
            raise AssertionError(f"{api}: the induction register of a dynamic loop is read-only (NKI 0.4+); copy it "
                                 f"into another register first")
        self._value, self.loaded = value, loaded

    def _no_python(self, *_: Any) -> Any:
        # rule: control.register_python_value
        raise TypeError("a VirtualRegister's value exists only while the kernel runs on the device: it cannot be used "
                        "in a Python if/while, int() or range(); branch on it with nl.while_loop or nl.fori_loop")

    __bool__ = __int__ = __index__ = __float__ = __iter__ = _no_python

    def __repr__(self) -> str:
        return f"VirtualRegister({self._value!r})"


def register_value(x: Any, api: str, pname: str, allow_affine: bool = True) -> Any:
    """An int, or a register's value (Affine allowed where a loop index may go)."""
    if isinstance(x, VirtualRegister):
        v = x.value
        if v is None:
            # rule: limit.values_unknown
            raise error("err_operand_type", f"'{pname}' of '{api}': the register holds a value read from a tensor, "
                                            f"which is unknown while tracing without values (run the kernel on NumPy "
                                            f"inputs)")
        if isinstance(v, Affine) and not allow_affine:
            # rule: control.induction_read_only
            raise error("err_operand_type", f"'{pname}' of '{api}' cannot be a dynamic loop's index register")
        return v
    if isinstance(x, bool) or not isinstance(x, int):
        # rule: python.argument_type
        raise TypeError(f"'{pname}' of '{api}' must be an int or a VirtualRegister, got {type(x).__name__}")
    return x
