"""What a program may be: the errors of the trust boundary, its caps, and the rules every field's parser applies.

A program that comes back from a grading child is hostile data: its parser (``program.ir.from_json`` and the
operand kinds' ``parse``) types and bounds every field before anything reads it, and ``program.validate`` then
checks what the fields mean.  Every cap is stated here, with the reason for its size, so a reviewer sees in one
place how much of the grading process a program can ask for.
"""

from __future__ import annotations

from typing import Any, NoReturn


class ProgramError(ValueError):
    """A program that is malformed or breaks a rule of the instruction set (the validator's verdict)."""


class RecordError(TypeError):
    """A kernel passed an NKI call something a program cannot hold."""


#: The JSON text of a program.  A kernel's program follows its text, not its trip counts (loop bodies are traced
#: once): every course question's reference solution traces to at most 52 KB on its public cases, and a
#: 4096x4096 elementwise kernel tiled by Python ``range`` loops, unrolled into 1,536 calls, to 180 KB (about 230
#: bytes a call), so 8 MB holds some 35,000 unrolled calls.  Parsing a program peaks at about 20 times its size in
#: Python objects (measured), so 8 MB keeps a hostile program's parse under ~160 MB of the grading process.
MAX_PROGRAM_BYTES = 8 * 2**20
#: Events (calls, loop and instance markers) in a body: an 8 MB program holds at most ~400,000 of the smallest.
MAX_EVENTS = 500_000
#: Tensors a program names (its allocations: every tile, tensor and view a call makes gets one id).
MAX_TENSORS = 500_000
#: Calls the executor would run, every iteration of every loop traced once counted, and the guards an iteration
#: may try to find its path: about 7 us each, so 2^24 is half an hour of the executor's time, far past any grading
#: time limit.  A program that asks for more is refused before it runs rather than stopped by the clock.
MAX_EXECUTED_CALLS = 2**24
#: Comparisons the validator spends on checking that some path of a loop body traced once holds at each of its
#: iterations (iterations times the guards' comparisons and joins); a larger loop is left to the executor, which refuses an iteration no
#: path holds at when it gets there (``runtime.runner``).
MAX_PATH_CHECKS = 2**20
#: Labels one call waits for (``ir.Order.after``): the cost model looks each up for every instruction the call
#: issues, so a call counts as ``1 + len(after) // EDGES_PER_CALL`` calls toward ``MAX_EXECUTED_CALLS``.  A
#: ``no_reorder`` chain waits for one label, ``depends_on`` for the handles it names.
MAX_EDGES = 256
EDGES_PER_CALL = 8
#: SPMD instances of a launch grid.
MAX_INSTANCES = 4096
#: Loops open at once: NKI kernels nest a handful (a tiled matmul nests 3, flash attention 4).
MAX_LOOP_DEPTH = 32
#: Iterations of one loop (a range past this is no tiling of any tensor a NeuronCore holds).
MAX_TRIP = 2**22
#: Nesting of one operand (lists in tuples in dicts, predicates in predicates, accesses indexed by accesses).
MAX_DEPTH = 24
#: Dimensions of an access, an array or an input (NKI tiles have at most 5).
MAX_DIMS = 8
#: Bytes of the constant arrays (index grids, mask values) together: base64 inside the text, 4 MB of them take
#: 5.3 MB of it.  The course's reference solutions hold at most 7 KB of them (on public cases).
MAX_ARRAY_BYTES = 4 * 2**20
#: Elements of one kernel input (the executor is handed inputs of the declared shapes).
MAX_INPUT_ELEMENTS = 2**31
#: Integers anywhere in a program.
MAX_INT = 2**62
#: Characters of a string: a file path (the longest string a traced program holds), a name, a string argument.
MAX_TEXT = 4096
#: Characters of a name (kernel, input, call, dtype, operator).
MAX_NAME = 256


def fail(what: str) -> NoReturn:
    raise ProgramError(f"invalid program: {what}")


def need(cond: bool, what: str) -> None:
    """Refuse the program unless ``cond`` (``what`` says what it must be)."""
    if not cond:
        raise ProgramError(f"malformed program: {what}")


def integer(x: Any, what: str, lo: int = -MAX_INT, hi: int = MAX_INT) -> int:
    """``x`` as an integer in ``[lo, hi]`` (not a bool, not a float)."""
    if type(x) is not int or not lo <= x <= hi:
        raise ProgramError(f"malformed program: {what} must be an integer in [{lo}, {hi}], got {_shown(x)}")
    return x


def integers(x: Any, what: str, lo: int = -MAX_INT, hi: int = MAX_INT, most: int = MAX_DIMS) -> tuple[int, ...]:
    """``x`` as a list of at most ``most`` integers in ``[lo, hi]``."""
    need(isinstance(x, list) and len(x) <= most, f"{what} must be a list of at most {most} integers")
    return tuple(integer(v, what, lo, hi) for v in x)


def flag(x: Any, what: str) -> bool:
    need(type(x) is bool, f"{what} must be true or false")
    return bool(x)


def text(x: Any, what: str, limit: int = MAX_TEXT) -> str:
    """``x`` as a string of at most ``limit`` characters on one line, with no control characters: a string from
    a program may end up in a student's feedback or a TA's table, so it can carry no newline, escape sequence,
    bidirectional override or other invisible character there (``str.isprintable``)."""
    if x.__class__ is str and x in _TEXTS and len(x) <= limit:  # (a program repeats its file names, call names)
        return x
    need(isinstance(x, str) and len(x) <= limit and x.isprintable(),
         f"{what} must be a string of at most {limit} printable characters on one line")
    if len(_TEXTS) < 4096:
        _TEXTS.add(x)
    return str(x)


#: strings ``text`` has found printable (a bounded memo: a string's validity never changes)
_TEXTS: set[str] = set()


def text_ok(x: str, limit: int = MAX_TEXT) -> bool:
    """Whether a string may be recorded into a program (``text``'s rule, for the encoder)."""
    return len(x) <= limit and x.isprintable()


def _shown(x: Any) -> str:
    """A refused value, shown briefly: a hostile program's values are not echoed at length."""
    s = repr(x)
    return s if len(s) <= 40 else s[:37] + "..."
