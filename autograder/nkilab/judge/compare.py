"""Say in plain words what is wrong with a kernel's output.

Order: the run itself (error, timeout, nothing returned), then shape, then dtype, then NaN/Inf and
all-zero flags, then the first mismatching element located by row tile, partition and column (a row tile is the
course target's partitions, ``questions.row_tile()``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nkilab.course.questions import row_tile
from nkilab.isolate.facts import ErrorFacts
from nkilab.isolate.replies import CaseRun, RunStatus
from nkilab.judge.results import Outcome

#: at most this many column (or element) blocks across a ``tile_map``
MAP_COLUMNS = 32


@dataclass(frozen=True)
class WrongMap:
    """Where an output of the right shape is wrong: the fraction of wrong elements per row tile (rows) x column
    block (columns), the output's shape, and the rows of a tile (1 for a 1-D output's element blocks).  check()'s
    picture of the wrong tiles draws it."""

    fractions: np.ndarray
    shape: tuple[int, ...]
    tile_rows: int = 1


@dataclass
class Verdict:
    ok: bool
    message: str
    outcome: Outcome = Outcome.PASSED
    error: ErrorFacts | None = None  # the error's facts when the run raised (read at the pipe: ``nkilab.isolate.replies``)
    wrong_map: WrongMap | None = None


def tile_map(wrong: np.ndarray) -> WrongMap:
    """Fraction of ``wrong`` elements per block: row tiles down (``row_tile()`` rows each), at most MAP_COLUMNS column
    blocks across (the trailing dimensions flattened); a 1-D output is one row of element blocks."""
    shape = tuple(int(d) for d in np.shape(wrong))
    w = np.asarray(wrong, dtype=np.float64)
    if w.ndim == 0:
        return WrongMap(w.reshape(1, 1), shape)
    if w.ndim == 1:
        w = w.reshape(1, -1)
        row_block = 1
    else:
        w = w.reshape(w.shape[0], -1)
        row_block = row_tile()
    r, c = w.shape
    col_block = max(1, -(-c // MAP_COLUMNS))
    nr, nc = -(-r // row_block), -(-c // col_block)
    padded = np.full((nr * row_block, nc * col_block), np.nan)
    padded[:r, :c] = w
    blocks = padded.reshape(nr, row_block, nc, col_block)
    return WrongMap(np.nanmean(blocks, axis=(1, 3)), shape, row_block)


def describe_error(err: ErrorFacts | None, module_name: str | None = None) -> str:
    """'NKIValueError at vector_add.py line 12 (`x = nl.load(a)`): <message>'."""
    if err is None:
        return "your kernel raised an error"
    where = ""
    if err.line is not None:
        where = f" at {Path(module_name or '').name} line {err.line}"
        if err.code:
            where += f" (`{err.code}`)"
    msg = err.message
    if err.type == "NotImplementedError" and not msg:
        return "not written yet: the kernel still raises NotImplementedError (replace it with your code)"
    head = msg.splitlines()[0] if msg else ""
    return f"your kernel raised {err.type}{where}: {head}".rstrip(": ")


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def diagnose(run: CaseRun, answer: Callable[[], np.ndarray], inputs: Sequence[np.ndarray], rtol: float, atol: float,
             module_name: str | None = None) -> Verdict:
    """The verdict on one case's run. ``answer`` gives the reference's output, asked for only when the run returned
    an array to compare with it (a run that did not run, raised or returned no array is judged without it)."""
    if run.status is RunStatus.NOT_RUN:
        return Verdict(False, "did not run (the kernel timed out or crashed before reaching this case)",
                       Outcome.NOT_RUN)
    if run.status is RunStatus.ERROR:
        return Verdict(False, describe_error(run.error, module_name), Outcome.ERROR, run.error)
    if run.status is RunStatus.BAD_RETURN or run.output is None:
        what = run.returned or "nothing"
        hint = " -- did you forget `return out`?" if what == "NoneType" else ""
        return Verdict(False, f"the kernel returned {what}, not an array{hint}", Outcome.NO_ARRAY)
    got = run.output
    expected = answer()
    if got.shape != expected.shape:
        return Verdict(False, f"output shape {tuple(got.shape)} but expected {tuple(expected.shape)} "
                              f"(the same shape as the inputs)", Outcome.WRONG_SHAPE)
    if got.dtype != expected.dtype:
        return Verdict(False, f"output dtype {got.dtype} but expected {expected.dtype} "
                              f"(create the output with the input's dtype)", Outcome.WRONG_SHAPE)
    if got.size == 0 or matches(got, expected, rtol, atol):
        return Verdict(True, "matches")
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    bad_nan = ~np.isfinite(g) & np.isfinite(e)
    if bad_nan.any():
        idx = _first(bad_nan)
        span = _span(bad_nan)
        return Verdict(False, f"output has {int(bad_nan.sum())} NaN/Inf values where the answer is finite; "
                              f"first at {_where(idx)}" + (f"; {span}" if span else "") +
                       " -- were those elements ever stored? (the simulator reads never-stored output as NaN)",
                       Outcome.WRONG_VALUES,
                       wrong_map=tile_map(bad_nan | ~np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)))
    if not np.any(g) and np.any(e):
        return Verdict(False, "output is all zeros -- was anything stored to it (nl.store)?", Outcome.WRONG_VALUES,
                       wrong_map=tile_map(e != 0))
    close = np.isclose(g, e, rtol=rtol, atol=atol)
    if close.all():
        return Verdict(True, "matches")
    wrong = ~close
    idx = _first(wrong)
    parts = [f"{int(wrong.sum())} of {wrong.size} elements wrong ({100.0 * wrong.mean():.1f}%)",
             f"first at {_where(idx)}: expected {_fmt(e[idx])}, got {_fmt(g[idx])}"]
    span = _span(wrong)
    if span:
        parts.append(span)
    for k, x in enumerate(inputs):
        if x.shape == got.shape and np.array_equal(x.astype(np.float64), g):
            parts.append(f"the output equals input #{k + 1} -- did you return or store an input unchanged?")
            break
    zeros = wrong & (g == 0) & (e != 0)
    if zeros.any() and zeros.sum() == wrong.sum():
        parts.append("every wrong element is 0 -- part of the output was never stored")
    return Verdict(False, "; ".join(parts) + f" (tolerance rtol={rtol:g}, atol={atol:g})", Outcome.WRONG_VALUES,
                   wrong_map=tile_map(wrong))


#: elements compared at a time by ``_matches`` (two float64 blocks and their masks stay in the CPU's cache)
BLOCK = 1 << 15


def matches(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> bool:
    """Whether ``diagnose`` would say "matches" for these arrays of one shape and dtype: no NaN/Inf where the
    answer is finite, not all zeros against a nonzero answer, and every element ``np.isclose`` in float64.

    The same element-wise float64 arithmetic as the whole-array checks, a block at a time: a passing stage-1 speed
    case (8 M elements) took 0.32 s of the grading process's CPU as whole arrays (a dozen 64 MB temporaries), 0.04 s
    so.  Anything else returns False at its block and ``diagnose`` says what is wrong from the whole arrays."""
    g_flat, e_flat = got.reshape(-1), expected.reshape(-1)
    any_g = any_e = False
    for start in range(0, g_flat.size, BLOCK):
        g = g_flat[start:start + BLOCK].astype(np.float64)
        e = e_flat[start:start + BLOCK].astype(np.float64)
        if (~np.isfinite(g) & np.isfinite(e)).any() or not np.isclose(g, e, rtol=rtol, atol=atol).all():
            return False
        any_g = any_g or bool(np.any(g))
        any_e = any_e or bool(np.any(e))
    return any_g or not any_e


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _where(idx: tuple[int, ...]) -> str:
    if len(idx) == 0:
        return "the only element"
    if len(idx) == 1:  # a 1-D vector: its tiles depend on how the kernel reshapes it, so name the element only
        return f"index [{idx[0]}] (element {idx[0]} of the vector)"
    row = idx[0]
    tile, part = divmod(row, row_tile())
    rest = ", ".join(str(i) for i in idx[1:])
    loc = f"row {row} (row tile {tile}, partition {part})"
    if rest:
        loc += f", column {rest}"
    return f"index [{', '.join(str(i) for i in idx)}] = {loc}"


def _span(wrong: np.ndarray) -> str:
    if wrong.ndim != 2:
        return ""
    rows = np.flatnonzero(wrong.any(axis=1))
    cols = np.flatnonzero(wrong.any(axis=0))
    return (f"wrong elements lie in rows {rows[0]}..{rows[-1]}, columns {cols[0]}..{cols[-1]}"
            if rows.size and cols.size else "")
