"""``mask=(ix < n and iy < m)``: Python's ``and`` between two index predicates means both hold.

The real compiler reads a kernel's source, so ``and`` in a mask is a logical and (AWS's own API tests
write masks so).  Python instead asks the left predicate for a truth value and returns the right one.
The simulator reads the kernel's bytecode at that moment: when the truth test is the ``and`` jump, the
left predicate is kept (``defer``) and the truth value is True; the comparison that makes up the whole
right operand then comes back joined with it (``joined``).  Anything else (``if mask:``, ``or``, a
right operand that is not one comparison) keeps the compiler's control-flow error.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

from nkisim.core.location import bytecode, user_frame


class _Pending(NamedTuple):
    frame: types.FrameType
    jump: int  # offset of the ``and`` jump
    end: int  # where the right operand's value is complete (the jump target)
    left: Any  # the left predicate


_pending: list[_Pending] = []


def defer(left: Any) -> bool:
    """``left and ...`` in the student's code: keep ``left`` for the right operand and answer True."""
    f = user_frame()
    if f is None:
        return False
    step = bytecode(f.f_code).get(f.f_lasti)
    if step is None or step.opname != "JUMP_IF_FALSE_OR_POP" or step.target is None:
        return False
    # forget conjunctions whose right operand has been evaluated (or never was a comparison)
    _pending[:] = [p for p in _pending if p.jump < p.frame.f_lasti < p.end and not (p.frame is f and p.jump == f.f_lasti)]
    _pending.append(_Pending(f, f.f_lasti, step.target, left))
    return True


def joined(right: Any) -> Any:
    """``right``, or ``left & right`` when ``right`` is the whole right operand of a deferred ``and``."""
    if not _pending:
        return right
    f = user_frame()
    if f is None:
        return right
    here = f.f_lasti
    step = bytecode(f.f_code).get(here)
    if step is None:
        return right
    # ``a and b and c`` jumps from both ``and``s to one end: the comparison just before it joins them all
    done = [p for p in _pending if p.frame is f and p.jump < here < p.end and p.end == step.next_offset]
    for p in done:
        right = p.left & right
    if done:
        _pending[:] = [p for p in _pending if p not in done]
    return right
