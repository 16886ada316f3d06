"""``nki.typing`` (``nt``): ``nt.tensor[shape]`` annotations on kernel parameters.

An annotation with a shape is checked at launch (a mismatch is the compiler's annotation error, at the call);
``nt.tensor[shape, dtype]`` also stands for an argument in a cost-only trace (``nkisim.api.trace``).
"""

from __future__ import annotations

from typing import Any

from nkisim.frontend.v06.adapters.tensor import NkiTensor
from nkisim.runtime.arguments import Placeholder


class _TensorMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, NkiTensor) or super().__instancecheck__(obj)


class tensor(metaclass=_TensorMeta):  # noqa: N801 - NKI's name
    """``nt.tensor[128, 512]`` (a shape) or ``nt.tensor[(128, 512), nl.bfloat16]`` (a shape and a dtype)."""

    def __class_getitem__(cls, item: Any) -> Placeholder:
        if not isinstance(item, tuple):
            item = (item,)
        if len(item) == 2 and isinstance(item[0], (list, tuple)):
            return Placeholder(item[0], item[1])
        return Placeholder(item, None)
