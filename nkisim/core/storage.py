"""Host values of tiles and tensors: the simulator's own way in.

A real NKI tensor has no host-side values inside a kernel, so neither ``Tensor`` nor ``Access`` offers a
public attribute or method that reads or writes them (tests/test_storage_semantics.py checks, and the
grader's screen refuses a kernel's private names): the array is ``Tensor``'s private ``_data`` slot
(core.tensor), and values move through the private ``_read`` / ``_read_masked`` / ``_write`` methods of
``Tensor`` and ``Access`` (core.tensor, core.access).  The operators must move values, so these *module*
functions are their door: a kernel holding a tile finds nothing on it, and every reach into those
private names is written down once, here (each line's ``noqa: SLF001``), instead of in every op.

This module imports neither class (core.access and core.dynamic sit below core.tensor and need it too);
each function is a single call around one attribute, so an op pays one call per operand for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def read(tile: Any) -> np.ndarray | None:
    """Values of an ``Access``, or of a ``Tensor`` read whole, in storage dtype (a view where NumPy's
    indexing gives one); None while tracing without values."""
    return tile._read()  # noqa: SLF001 - the one door to tile values (module docstring)


def read_masked(acc: Any, valid: np.ndarray) -> np.ndarray | None:
    """Values of an ``Access`` where ``valid`` is set; masked-off positions (which may lie out of
    bounds) are clamped instead of read.  Shape ``acc.shape``."""
    return acc._read_masked(valid)  # noqa: SLF001 - the one door to tile values (module docstring)


def write(acc: Any, values: np.ndarray | None, valid: np.ndarray | None = None) -> None:
    """Store ``values`` (already ``acc.shape``, any dtype) into an ``Access``'s tensor, cast once, only
    where ``valid`` is set if given; marks the root tensor written."""
    acc._write(values, valid)  # noqa: SLF001 - the one door to tile values (module docstring)


def storage(tensor: Any) -> np.ndarray | None:
    """A ``Tensor``'s whole storage array as it is (None while tracing without values): no pending
    uninitialised fill is applied and no read-only input view is copied (``owned`` does)."""
    return tensor._data  # noqa: SLF001 - the one door to tile values (module docstring)


def set_storage(tensor: Any, data: np.ndarray | None) -> None:
    """Make ``data`` a ``Tensor``'s storage array (or drop it: None), as it is."""
    tensor._data = data  # noqa: SLF001 - the one door to tile values (module docstring)


def owned(tensor: Any) -> np.ndarray:
    """A ``Tensor``'s storage array, ready to be written: its pending uninitialised fill applied and a read-only
    view (a kernel input's) copied first."""
    return tensor._own_storage()  # noqa: SLF001 - the one door to tile values (module docstring)
