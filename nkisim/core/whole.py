"""The parts of ``t[...]`` for a plainly laid out tensor: built once per (shape, partition axis), shared.

Every op result is accessed whole, so its access components, shape, NumPy index and trace box depend
only on the shape and partition axis; they are only ever read, so one copy serves every such tile.
"""

from __future__ import annotations

from nkisim.core.indexing import Affine

#: (shape, par_axis) -> normalised whole-tensor access parts, see Access.whole.
_WHOLE: dict[tuple, tuple] = {}


def _whole_of_shape(shape: tuple[int, ...], par_axis: int) -> tuple:
    """(comps, shape, par_axis, NumPy index, box) of ``tensor[...]`` for a plainly laid out tensor."""
    comps = tuple(("slice", Affine(0), Affine(n), 1) for n in shape)
    return (comps, shape, par_axis, tuple(slice(0, n, 1) for n in shape), tuple((0, n) for n in shape))


def whole_parts_of_shape(shape: tuple[int, ...], par_axis: int) -> tuple:
    """The shared parts of ``t[...]`` for any plainly laid out tensor of this shape (memoised)."""
    key = (shape, par_axis)
    parts = _WHOLE.get(key)
    if parts is None:
        if len(_WHOLE) > 4096:  # bound the memo for programs with unusually many shapes
            _WHOLE.clear()
        parts = _WHOLE[key] = _whole_of_shape(shape, par_axis)
    return parts
