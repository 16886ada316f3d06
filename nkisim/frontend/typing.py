"""``neuronxcc.nki.typing`` (``nt``): tensor annotations and shape-only placeholders."""

from __future__ import annotations

from typing import Any

from nkisim.core.tensor import Tensor
from nkisim.runtime.arguments import Placeholder


class _TensorMeta(type):
    """Kernel tensors are instances of ``nt.tensor`` / ``nki.tensor`` (``isinstance(x, nki.tensor)``)."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) or super().__instancecheck__(obj)


class _TensorType(metaclass=_TensorMeta):
    """``nt.tensor[shape, dtype]``: an annotation (checked at launch) and a benchmark placeholder.

    The bare class is also what ``nki.tensor`` and ``nl.tensor`` name, so ``x: nki.tensor`` works as
    a parameter annotation: it carries no shape, so the launch checks nothing for it.
    """

    mutable = False

    def __class_getitem__(cls, item: Any) -> Placeholder:
        if not isinstance(item, tuple):
            item = (item,)
        if len(item) == 2 and isinstance(item[0], (list, tuple)):
            shape, dtype = item
        else:
            shape, dtype = item, None
        return Placeholder(shape, dtype, mutable=cls.mutable)


class tensor(_TensorType):  # noqa: N801
    pass


class mutable_tensor(_TensorType):  # noqa: N801
    mutable = True


scalar = float
