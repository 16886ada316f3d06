"""``neuronxcc.nki.typing`` (``nt``): tensor annotations and shape-only placeholders."""

from __future__ import annotations

from typing import Any

from nkisim.runtime.arguments import Placeholder


class _TensorType:
    """``nt.tensor[shape, dtype]``: an annotation (checked at launch) and a benchmark placeholder."""

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
