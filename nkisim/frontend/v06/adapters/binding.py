"""Binding NKI 0.6 arguments onto the op registry: tensors, operators, enums, and the call itself.

Every adapter in ``isa`` and ``language`` does the same few things before it calls a registry entry: turn an
``NkiTensor`` into what the ops take (``tensor``), an operator (``nl.add``) into its op-table name (``op``), an
enum member into the number the ops use (``enum``, which refuses the raw integers NKI 0.6 refuses), and
finally call the entry (``call``, from ``calls``: the one door to the registry, below ``tensor`` so that an
assignment into a view can call it too).  Nothing here computes a value or issues an instruction: that is the
registry's, once for both dialects.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from nkisim.core.context import active
from nkisim.core.location import user_location, warn
from nkisim.core.tensor import Access, Tensor
from nkisim.frontend.v06.adapters import known_issues
from nkisim.frontend.v06.adapters.calls import call, dtype, reinterpret  # noqa: F401  (binding is their door)
from nkisim.frontend.v06.adapters.errors import error
from nkisim.frontend.v06.adapters.tensor import NkiTensor


def tensor(x: Any, api: str, pname: str) -> Any:
    """A required tensor operand, lowered (a clear error for anything else)."""
    if x.__class__ is not NkiTensor:
        # rule: python.argument_type
        raise error("err_operand_type", f"'{pname}' of '{api}' must be an NkiTensor, got {type(x).__name__}")
    return x.lower()


def tensor_or_scalar(x: Any, api: str, pname: str) -> Any:
    if x.__class__ is NkiTensor:
        return x.lower()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        # rule: python.argument_type
        raise error("err_operand_type",
                        f"'{pname}' of '{api}' must be an NkiTensor or a number, got {type(x).__name__}")
    return x


def wrap(result: Any) -> Any:
    """A registry entry's result as the 0.6 kernel sees it (tensors become ``NkiTensor`` views)."""
    if isinstance(result, Tensor):
        return NkiTensor.over(result)
    if isinstance(result, Access):
        # rule: python.internal
        raise AssertionError("an op returned an access where NKI 0.6 expects a tensor")
    if isinstance(result, (tuple, list)):
        return type(result)(wrap(r) for r in result)
    return result


def op(x: Any, api: str, pname: str = "op", optional: bool = False) -> str | None:
    """The op-table name of an operator argument: an ``nl`` function (``nl.add``, ``nl.exp``) or constant
    (``nl.bypass``).  NKI 0.6 takes operators from ``nki.language`` only."""
    if x is None and optional:
        return None
    name = getattr(x, "__nki_op__", None)
    if name is None:
        # rule: python.argument_type
        raise error("err_operand_type",
                        f"'{pname}' of '{api}' must be an operator from nki.language (nl.add, nl.exp, ...), got "
                        f"{x!r}")
    return name


#: raw integers of an enum that AWS-validated code passes (rule ``enum.raw_integer``, narrowed): nki-library's
#: 2.29_release and main kernels, validated on the 0.3+ compiler, pass ``dge_mode=3`` and ``0``
#: (``_DGE_MODE_NONE = 3``, ``_DGE_MODE_UNKNOWN = 0`` in mlp_tkg, qkv_tkg, norm_tkg_utils); the migration guide's
#: refused example is ``dge_mode=2``, which stays refused with every other raw integer
_RAW_ACCEPTED = {"dge_mode": frozenset({0, 3})}


def enum_value(x: Any, cls: type[enum.Enum], api: str, pname: str) -> enum.Enum:
    """``x`` if it is a member of ``cls``: NKI 0.3 dropped integers and strings for enum parameters (AWS's migration
    guide), except the raw ``dge_mode`` numbers AWS's own validated kernels pass, taken with a warning."""
    if isinstance(x, cls):
        return x
    if isinstance(x, int) and not isinstance(x, bool) and x in _RAW_ACCEPTED.get(cls.__name__, ()):
        member = cls(x)
        if known_issues.first_time(active(), (f"raw {cls.__name__}", user_location())):
            # rule: enum.raw_dge_mode
            warn(f"'{pname}' of '{api}' is the integer {x}: AWS's migration guide says \"Raw integer values (e.g., "
                 f"dge_mode=2) are no longer accepted for enum parameters\" (nki/migration/index.rst, NKI 0.3.0), "
                 f"but AWS's own kernels validated on that compiler (nki-library 2.29_release) pass dge_mode={x}; the "
                 f"simulator reads it as nisa.{cls.__name__}.{member.name}. Write nisa.{cls.__name__}.{member.name}",
                 known_issues.DocumentedRuleWarning)
        return member
    first = next(iter(cls)).name
    # rule: enum.raw_integer
    raise error("err_enum_argument",
                    f"'{pname}' of '{api}' must be a member of nki.isa.{cls.__name__} (for example "
                    f"nisa.{cls.__name__}.{first}), got {x!r}: NKI 0.3 dropped integers and strings for enum "
                    f"parameters; pass the member")
