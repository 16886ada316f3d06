"""Look at what each student handed in before nbgrader does, so that no file can stop or fool the batch.

nbgrader grades ``submitted/<student>/<assignment>/<notebook>.ipynb``.  A notebook under another name is
skipped without a loud error ("Skipping unknown notebook"), a file that is not valid JSON fails the student
with a traceback in the log, and every other file handed in is copied next to the notebook that the grading
kernel runs.  ``take_in`` copies hand-ins into ``submitted/`` (the example class); ``inspect`` checks a
course's ``submitted/`` in place (a TA's class).  Either way each (student, assignment) gets one ``Intake``
record that the grading report shows:

* ``ok``: the notebook reads; only notebooks are graded, anything else handed in is listed and ignored;
* ``renamed``: exactly one notebook under another name (``lab-final.ipynb``): graded as the expected one;
* ``unreadable``: not a notebook nbgrader can safely open (too large, not UTF-8, not JSON, nested too deeply,
  not a valid notebook, a link): reported with a plain reason, not graded, the batch goes on;
* ``missing``: nothing handed in.

A ``timestamp.txt`` next to the notebook must be a date nbgrader can read, or the hand-in is ``unreadable``
too (nbgrader would fail the student on it, or hang on a FIFO).

Only a student whose record is ``gradable`` reaches nbgrader (the others are excluded by name), and nbgrader
opens only the expected notebook names, so every notebook nbgrader parses has passed ``readable`` first.
Reading a hand-in is bounded: a size cap, and the bracket nesting is measured without recursion before
any JSON parser runs (Python's ``json`` recurses once per ``[``/``{`` and a 200 KB file can hold 100 000).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import warnings
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import nbformat

STATUSES = ("ok", "renamed", "unreadable", "missing")
MAX_BYTES = 20 * 1024 * 1024  # the course's notebooks with outputs are < 2 MB
#: a larger notebook is read only to drop its outputs (they are regenerated at grading anyway: a student who
#: printed a large array loses nothing); past this, it is not read at all
MAX_STRIP_BYTES = 512 * 1024 * 1024
# Real notebooks nest < 20 levels (widget state included).  100 keeps every recursive step that later
# walks the notebook (nbformat.from_dict, copy.deepcopy, json's indenting encoder) far below Python's
# recursion limit of 1000, whatever the caller's own stack depth.
MAX_DEPTH = 100
_SHOWN_FILES = 10  # stray file names listed in a note; the rest are counted

_ESCAPE = re.compile(r"\\.", re.S)  # inside a JSON string a backslash always takes the next character
_STRING = re.compile(r'"[^"]*(?:"|\Z)')  # once escapes are gone; an unterminated string runs to the end
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# What nbgrader's exchange writes ("2024-05-01 10:00:00.000000 UTC"), and close variants: anything else in
# timestamp.txt makes nbgrader fail the student (or, with a time zone that names a file, read that file).
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?( ?([+-]\d{2}:?\d{2}|[A-Za-z]{1,6}))?")


#: where ``inspect`` puts the outputs-dropped copy of a TA's oversized hand-in (``submitted/`` is only read)
STRIPPED_DIR = "nkilab-stripped"


@dataclass
class Intake:
    student: str
    assignment: str
    status: str
    note: str = ""
    stripped: bool = False  # graded from a copy with its outputs dropped
    folder: str = "submitted"  # the course folder nbgrader reads this hand-in from
    @property
    def gradable(self) -> bool:
        return self.status in ("ok", "renamed")


@dataclass
class _Chosen:
    """A notebook picked for grading and the exact bytes that were checked (what ``take_in`` copies); ``stripped``
    when those are the hand-in with its outputs dropped."""

    path: Path
    content: bytes
    stripped: bool = False


def nesting_depth(text: str) -> int:
    """How deep ``[``/``{`` nest outside JSON strings: an upper bound on the depth ``json.loads`` would reach.

    Linear time, no recursion (three regex passes and a running sum).  Escapes are dropped first, then
    strings, then everything but brackets.  Where the text stops being valid JSON the parser stops too, so
    counting on past that point can only over-estimate."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", _ESCAPE.sub("", text)))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _shown(name: str, limit: int = 80) -> str:
    """A file name as it may appear in a report: no control characters (no terminal escapes), bounded."""
    clean = "".join(ch if ch.isprintable() else "?" for ch in name[:limit])
    return clean + ("..." if len(name) > limit else "")


def _listed(names: list[str]) -> str:
    shown = ", ".join(_shown(n) for n in names[:_SHOWN_FILES])
    return shown + (f" and {len(names) - _SHOWN_FILES} more" if len(names) > _SHOWN_FILES else "")


def _read_bounded(path: Path, limit: int = MAX_BYTES) -> bytes | str:
    """The file's bytes, or why they were not read: links, devices, FIFOs and files over ``limit`` bytes are
    never read (``O_NOFOLLOW``/``O_NONBLOCK``: a link or FIFO swapped in after a check cannot redirect or hang
    the read)."""
    if path.is_symlink():
        return "a symbolic link, not the notebook itself"
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > limit:
            return f"too large ({_size(info.st_size)}; the limit is {_size(limit)}), not read"
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    finally:
        os.close(fd)
    if len(data) > limit:
        return f"too large (over {_size(limit)}), not read"
    return data


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n:,} bytes"


def check_timestamp(folder: Path) -> str | None:
    """None if ``folder/timestamp.txt`` is absent or a time nbgrader reads, else why not.

    nbgrader opens it without a size or type check (a FIFO would hang the batch) and fails the student on a
    date it cannot parse; the time zone is looked up as a file name by dateutil."""
    path = folder / "timestamp.txt"
    if not (path.exists() or path.is_symlink()):
        return None
    data = _read_bounded(path, limit=4096)
    if isinstance(data, str):
        return data
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return "not UTF-8 text"
    if not text:
        return None  # nbgrader warns and grades without a time
    if not _TIMESTAMP.fullmatch(text):
        return f"not a date and time nbgrader reads ({_shown(text, 40)!r})"
    from nbgrader.utils import parse_utc  # here: Gradescope's container reads notebooks without nbgrader

    try:
        parse_utc(text)
    except Exception as err:  # dateutil raises ValueError, OverflowError, ...
        return f"not a date and time nbgrader reads ({type(err).__name__})"
    return None


def _validation_message(err: nbformat.ValidationError) -> str:
    """Where the notebook breaks the format and how, without the (possibly huge) offending value."""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in getattr(err, "absolute_path", [])).lstrip(".")
    if getattr(err, "validator", None) in ("oneOf", "anyOf"):
        message = "does not match the notebook format"
    else:
        message = str(getattr(err, "message", "") or err).splitlines()[0]
        message = message if len(message) <= 120 else message[:120] + "..."
    return f"{where}: {message}" if where else message


def check_notebook(data: bytes) -> str | None:
    """None if ``data`` is a notebook nbgrader can open, else why not in plain words.  Never raises: every
    parser runs only on input already known to be bounded in size and nesting."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"not UTF-8 text (invalid byte at offset {err.start})"
    if not text.strip():
        return "empty"
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        return f"nested {depth} levels deep (the limit is {MAX_DEPTH}), not parsed"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        return f"not valid JSON ({err.msg}: line {err.lineno}, column {err.colno})"
    except ValueError as err:  # Python refuses integers of more than 4300 digits (sys.get_int_max_str_digits)
        if "digits" in str(err):
            return "not a notebook (a number with thousands of digits)"
        return f"not valid JSON ({str(err).splitlines()[0][:120]})"
    except RecursionError:  # not expected after the depth check; never let it escape
        return "nested too deeply to parse"
    if not isinstance(obj, dict):
        kind = {list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(type(obj), "a number")
        return f"not a Jupyter notebook (the JSON is {kind}, not an object)"
    if not isinstance(obj.get("nbformat"), int) or isinstance(obj.get("nbformat"), bool):
        return "not a Jupyter notebook (no nbformat version number)"
    if obj["nbformat"] >= 4 and not isinstance(obj.get("cells"), list):
        return "not a Jupyter notebook (no list of cells)"
    if obj["nbformat"] >= 4 and not all(isinstance(c, dict) for c in obj["cells"]):
        return "not a Jupyter notebook (a cell that is not a JSON object)"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.convert(nbformat.reader.reads(text), 4)
            nbformat.validate(nb)
    except nbformat.ValidationError as err:
        return f"not a valid Jupyter notebook ({_validation_message(err)})"
    except Exception as err:  # nbformat raises several kinds for malformed notebooks
        first = (str(err).splitlines() or [""])[0][:120]
        return f"not a Jupyter notebook ({type(err).__name__}: {first})"
    if not isinstance(nb.get("cells"), list):
        return "not a Jupyter notebook (no list of cells)"
    return None


_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}:,]', re.S)  # a string (escapes kept), or punctuation


def drop_outputs(data: bytes | memoryview) -> bytes | None:
    """The notebook JSON ``data`` with every cell's ``outputs`` emptied, or None if it is not shaped like one.

    One pass over the JSON tokens (strings and punctuation; a regex, no recursion, no parser): the value of
    ``"outputs"`` in an object that is an element of the top-level ``"cells"`` array is replaced by ``[]``,
    everything else is kept byte for byte.  The result is then checked like any hand-in."""
    kept: list[bytes] = []
    pos = 0
    stack: list[bytes] = []  # per open container: b"{" or b"[", plus below the key it is the value of
    keys: list[bytes | None] = []
    key: bytes | None = None  # the last key read in the innermost object
    expect_key = False
    skipping_from = -1
    for m in _TOKEN.finditer(data):
        tok = m.group()
        if skipping_from >= 0:
            if tok in (b"[", b"{"):
                stack.append(tok)
            elif tok in (b"]", b"}"):
                stack.pop()
                if len(stack) == 3:  # the outputs array closed: back inside the cell object
                    kept.append(bytes(data[pos:skipping_from]) + b"[]")
                    pos = m.end()
                    skipping_from = -1
            continue
        if tok in (b"{", b"["):
            if (tok == b"[" and key == b'"outputs"' and len(stack) == 3 and stack == [b"{", b"[", b"{"]
                    and keys[1] == b'"cells"'):
                skipping_from = m.start()
                stack.append(tok)
                continue
            keys.append(key)
            stack.append(tok)
            key, expect_key = None, tok == b"{"
        elif tok in (b"}", b"]"):
            if not stack:
                return None
            stack.pop()
            key = keys.pop() if keys else None
            expect_key = False
        elif tok == b",":
            expect_key = bool(stack) and stack[-1] == b"{"
        elif tok == b":":
            expect_key = False
        elif expect_key:
            key = tok
    if stack or skipping_from >= 0:
        return None
    kept.append(bytes(data[pos:]))
    return b"".join(kept)


def _load(path: Path) -> _Chosen | str:
    """The checked bytes of ``path``, or why it cannot be graded.  A notebook over ``MAX_BYTES`` is graded with
    its outputs dropped when that brings it under the limit."""
    data = _read_bounded(path)
    stripped = False
    if isinstance(data, str) and data.startswith("too large"):
        big = _read_bounded(path, limit=MAX_STRIP_BYTES)
        if isinstance(big, str):
            return big
        small = drop_outputs(big)
        del big
        if small is None:
            return f"too large and not a notebook with outputs to drop (the limit is {_size(MAX_BYTES)})"
        if len(small) > MAX_BYTES:
            return (f"too large even without its outputs ({_size(len(small))}; the limit is {_size(MAX_BYTES)}), "
                    "not graded")
        data, stripped = small, True
    if isinstance(data, str):
        return data
    return check_notebook(data) or _Chosen(path, data, stripped)


def readable(path: Path) -> str | None:
    """None if ``path`` is a notebook nbgrader can open, else why not (in plain words)."""
    loaded = _load(path)
    return loaded if isinstance(loaded, str) else None


def load(path: Path) -> tuple[bytes | None, str]:
    """(the notebook's checked bytes -- its outputs dropped if it was too large with them -- or None, and a note
    saying why not or what was dropped): what a grader that reads one hand-in (Gradescope) takes."""
    loaded = _load(path)
    if isinstance(loaded, str):
        return None, loaded
    return loaded.content, (STRIPPED_NOTE if loaded.stripped else "")


#: what the report and feedback say of a hand-in graded without its outputs
STRIPPED_NOTE = ("over the size limit with its outputs: graded with the outputs dropped (grading runs every cell "
                 "it needs again; no answer was lost)")


def _any_stripped(chosen: dict[str, _Chosen]) -> bool:
    return any(c.stripped for c in chosen.values())


def _look(folder: Path, expected: list[str]) -> tuple[str, str, dict[str, _Chosen]]:
    """(status, note, {expected notebook name: the file to grade and its checked bytes}) for one hand-in."""
    if not folder.is_dir():
        return "missing", "nothing handed in", {}
    try:
        entries = sorted(folder.iterdir())
    except OSError as err:
        return "unreadable", f"the hand-in folder cannot be read ({err.strerror})", {}
    notebooks = [p for p in entries if p.suffix == ".ipynb" and (p.is_symlink() or not p.is_dir())]
    others = [p.name for p in entries if p.suffix != ".ipynb" and p.name != "timestamp.txt"]
    picked: dict[str, Path] = {}
    notes: list[str] = []
    status = "ok"
    for name in expected:
        exact = folder / f"{name}.ipynb"
        if exact in notebooks:
            picked[name] = exact
    strays = [p for p in notebooks if p not in picked.values()]
    if len(expected) == 1 and not picked and len(strays) == 1:
        picked[expected[0]] = strays[0]
        notes.append(f"handed in as {_shown(strays[0].name)}, graded as {expected[0]}.ipynb")
        status, strays = "renamed", []
    if strays:
        notes.append("ignored other notebooks: " + _listed([p.name for p in strays]))
    if others:
        notes.append("ignored other files (only notebooks are graded): " + _listed(others))
    chosen: dict[str, _Chosen] = {}
    for name, path in picked.items():
        loaded = _load(path)
        if isinstance(loaded, str):
            return "unreadable", f"{_shown(path.name)} is {loaded}", {}
        if loaded.stripped:
            notes.append(f"{_shown(path.name)} was {STRIPPED_NOTE}")
        chosen[name] = loaded
    if not chosen:
        return "missing", "no notebook named " + ", ".join(f"{n}.ipynb" for n in expected), {}
    problem = check_timestamp(folder)
    if problem:
        return "unreadable", f"timestamp.txt is {problem}: nbgrader would fail on it", {}
    return status, "; ".join(notes), chosen


def take_in(incoming: Path, submitted: Path, students: list[str], assignments: dict[str, list[str]]) -> list[Intake]:
    """Copy readable hand-ins from ``incoming/<student>/<assignment>/`` to ``submitted/`` (notebooks only).

    The bytes written are the ones that were checked, so a file changed after the check cannot slip in."""
    records = []
    for student in students:
        for assignment, expected in assignments.items():
            status, note, chosen = _look(incoming / student / assignment, expected)
            records.append(Intake(student, assignment, status, note, _any_stripped(chosen)))
            if not chosen:
                continue
            dest = submitted / student / assignment
            dest.mkdir(parents=True, exist_ok=True)
            for name, hand_in in chosen.items():
                (dest / f"{name}.ipynb").write_bytes(hand_in.content)
            stamp = incoming / student / assignment / "timestamp.txt"
            if stamp.is_file():  # checked by _look: a small regular file nbgrader can parse
                shutil.copyfile(stamp, dest / "timestamp.txt")
    return records


#: characters nbgrader's options treat specially in a student id: ``student_id_exclude`` splits on commas and
#: ``--student`` is a glob, so such an id could pull other students' notebooks past intake
UNSAFE_ID = re.compile(r"[,*?\[\]]")


def inspect(submitted: Path, students: list[str], assignments: dict[str, list[str]]) -> list[Intake]:
    """The same checks on a course's own ``submitted/`` folder, changing nothing in it.

    A notebook under another name is reported, not graded: rename it (or ``nbgrader collect`` again)."""
    records = []
    for student in students:
        for assignment, expected in assignments.items():
            if UNSAFE_ID.search(student):
                records.append(Intake(student, assignment, "unreadable",
                                      f"student id {_shown(student)!r} contains one of , * ? [ ] which nbgrader "
                                      "reads as a list or a pattern: rename the folder"))
                continue
            status, note, chosen = _look(submitted / student / assignment, expected)
            if status == "renamed":
                status = "missing"
                note = f"{note.split(',')[0]}: rename it to {expected[0]}.ipynb to grade it"
            stripped = status == "ok" and _any_stripped(chosen)
            if stripped:  # nbgrader grades this copy (``--CourseDirectory.submitted_directory``)
                dest = submitted.parent / STRIPPED_DIR / student / assignment
                dest.mkdir(parents=True, exist_ok=True)
                for name, hand_in in chosen.items():
                    (dest / f"{name}.ipynb").write_bytes(hand_in.content)
                stamp = submitted / student / assignment / "timestamp.txt"
                if stamp.is_file():
                    shutil.copyfile(stamp, dest / "timestamp.txt")
            records.append(Intake(student, assignment, status, note, stripped,
                                  STRIPPED_DIR if stripped else "submitted"))
    return records
