"""The question registry: what each kernel question computes, on which inputs, and how it is scored.

Each question names the NumPy reference, the public cases (``check``) and hidden cases (``grade``),
per-dtype tolerances, the reference-solution kernel the speed tiers are measured against, and the
tier thresholds.  Hidden cases draw their data from a grading-time seed, so outputs cannot be
hard-coded even though the shapes below are public.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
import numpy as np

from nkilab.course import manifest

if TYPE_CHECKING:
    from nkisim.api import Target

REPO = Path(__file__).resolve().parents[3]
SOLUTIONS = REPO / "solutions"

# (rtol, atol) per output dtype; inputs are O(1) normal draws.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}

#: a grade cell's call, ``grade("<question id>", ...)``: how a notebook names the question it grades
QUESTION_CALL = re.compile(r"""\bgrade\(\s*["'](\w+)["']""")



def course_target() -> str:
    """The target every question is graded on unless it names its own: the course manifest's ``target``, read
    when asked (a TA's edit of course.toml is what grading uses).  Grading never reads it from the environment
    (a TA's shell with NEURON_PLATFORM_TARGET_OVERRIDE=trn1 must not grade a class on trn1); ``check`` may."""
    return manifest.course().target


@functools.cache
def hardware(target: str | None = None) -> Target:
    """The hardware numbers of ``target`` (the course's, by default) as the simulator's target file gives them,
    through ``nkisim.api``: the one home of every number the course's cases, kinds of case and diagnoses tile by
    (the partitions a tile spans, a PSUM tile's free size), so nkilab spells none of them."""
    from nkisim import api

    return api.target(target or course_target())


@dataclass(frozen=True)
class Case:
    """One test input: every argument has ``shape`` (or its own entry of ``arg_shapes``) and ``dtype`` (or its own
    entry of ``arg_dtypes``); ``dtype`` is also the output's dtype."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    arg_shapes: tuple[tuple[int, ...], ...] | None = None
    #: per-argument dtypes where they differ from the output's (FP8 data with float32 scales)
    arg_dtypes: tuple[str, ...] | None = None

    def shapes(self, n_args: int) -> list[tuple[int, ...]]:
        """The shape of each of the ``n_args`` kernel arguments."""
        return list(self.arg_shapes) if self.arg_shapes is not None else [self.shape] * n_args

    def dtypes(self, n_args: int) -> list[str]:
        """The dtype of each of the ``n_args`` kernel arguments."""
        return list(self.arg_dtypes) if self.arg_dtypes is not None else [self.dtype] * n_args

    def describe(self, names: tuple[str, ...]) -> str:
        shapes, dtypes = self.shapes(len(names)), self.dtypes(len(names))
        if len(set(shapes)) == 1 and len(set(dtypes)) == 1:
            return f"{', '.join(names)}: {dtypes[0]} [{', '.join(str(d) for d in shapes[0])}]"
        return ", ".join(f"{n}: {d} [{', '.join(str(x) for x in s)}]" for n, d, s in zip(names, dtypes, shapes))


@dataclass(frozen=True)
class Work:
    """The least a computation must do on one case, whatever the kernel (``nkilab.course.bounds`` prices it on a target):
    HBM traffic, matmul flops and the elementwise engine passes it cannot avoid over ``elements`` values."""

    hbm_bytes: float
    pe_flops: float = 0.0
    pe_dtype: str = ""  # the matmuls' input dtype (its PE peak)
    elements: float = 0.0
    one_input_passes: float = 0.0
    two_input_passes: float = 0.0
    #: one-input passes only the Vector and GpSimd engines can run: a min or max (a saturation). trn2's Scalar engine
    #: applies activation functions, none of which clamps, and its tensor_scalar takes multiply and add only (AWS
    #: nki.isa.tensor_scalar: "The Scalar Engine on trn2 only supports some operator combinations")
    minmax_passes: float = 0.0
    #: two-input passes whose second operand repeats along the free axis (a group scale read with a zero stride):
    #: not contiguous, so VectorE's bf16 one-pass rule does not apply (``nkisim.cost.instructions.tensor_tensor``)
    broadcast_passes: float = 0.0
    #: the tolerance admits bf16 intermediates (an FP8 output): the bound prices every pass at the engines' bf16
    #: rates, VectorE's performance mode included, since a kernel may compute in bf16 and still pass
    half: bool = False


def io_bytes(case: Case, n_args: int, out_shape: tuple[int, ...], out_dtype: str | None = None) -> float:
    """Every argument read once and the output written once, in bytes."""
    ins = sum(int(np.prod(s)) * np.dtype(d).itemsize for s, d in zip(case.shapes(n_args), case.dtypes(n_args)))
    return float(ins + int(np.prod(out_shape)) * np.dtype(out_dtype or case.dtype).itemsize)


@dataclass(frozen=True)
class Question:
    qid: str
    title: str
    function: str  # the kernel's name in the student's module
    arg_names: tuple[str, ...]
    reference: Callable[..., np.ndarray]  # NumPy reference, computed in float64
    public: tuple[Case, ...]
    hidden: tuple[Case, ...]
    speed_case: Case
    solution: str  # reference kernel module, relative to solutions/ (the legacy one)
    correctness_points: float
    speed_points: float
    rules: str = ""  # the size rules the kernel may assume, in plain words
    full_tier: float = field(default_factory=lambda: manifest.course().full_tier)  # the manifest's, as every
    partial_tier: float = field(default_factory=lambda: manifest.course().partial_tier)  # stage passes them
    timeout_s: float = 60.0
    tags: tuple[str, ...] = field(default_factory=tuple)
    #: SPMD launch grid, e.g. (4,) or ({"nc": 2}, 2) for ``kernel[nl.nc(2), 2]``; None = a plain call
    grid: tuple | None = None
    #: target the question is graded on (e.g. "trn2" for multi-core); None = the course default
    target: str | None = None
    #: (rtol, atol) per output dtype where the question needs its own (e.g. long fp32 sums); else TOLERANCES
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: the lesson section that teaches this kernel's speed (speed feedback points there), e.g. "lesson 2, section 3"
    speed_lesson: str = ""
    #: the question whose reference kernel is this one's *relaxed* reference: when set, half the speed points
    #: need a latency within ``partial_tier`` x that kernel's on this question's speed case (CS149's two tiers)
    relaxed: str | None = None
    #: turns the standard-normal draws (float64, one per argument) into the kernel's arguments, for inputs that
    #: must be consistent with each other (a saved statistic, FP8 data and its scales); None: cast each draw
    prepare: Callable[[list[np.ndarray], Case], list[np.ndarray]] | None = None
    #: named kinds of case beyond the dtype (``"ragged rows"``), each a predicate on a case: the course manifest
    #: lists the kinds a question's public and hidden cases cover, and a test holds the two to each other
    kinds: dict[str, Callable[[Case], bool]] = field(default_factory=dict)
    #: the NKI 0.6 twin of ``solution`` (relative to solutions/): the reference timed on a Neuron device with AWS's
    #: ``nki``, where a legacy kernel no longer compiles (SDK 2.30+); "" where the manifest names none
    solution_nki: str = ""
    #: the least work of a case (``nkilab.course.bounds``); None: an elementwise kernel's traffic, output shaped as input 1
    work: Callable[[Case], Work] | None = None

    @property
    def default_module(self) -> str:
        return f"{self.function}.py"

    @property
    def points(self) -> float:
        return self.correctness_points + self.speed_points

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS / self.solution

    def reference_path(self, on_device: bool) -> Path:
        """The reference kernel timed against a student's: the NKI 0.6 twin on a Neuron device with AWS's ``nki``
        (it runs there; the legacy one is a compile error since Neuron SDK 2.30), else ``solution_path``."""
        return SOLUTIONS / self.solution_nki if on_device and self.solution_nki else self.solution_path

    def inputs(self, case: Case, seed: int, index: int) -> list[np.ndarray]:
        """Deterministic inputs for (seed, case index): independent, non-symmetric normal draws (made consistent
        with each other by ``prepare`` where the question has one)."""
        salt = zlib.crc32(f"{self.qid}:{index}:{case.shape}:{case.dtype}".encode())
        rng = np.random.default_rng([seed & 0xFFFFFFFF, salt])
        n = len(self.arg_names)
        draws = [rng.standard_normal(shape) for shape in case.shapes(n)]
        if self.prepare is not None:
            return self.prepare(draws, case)
        return [d.astype(np.dtype(dtype)) for d, dtype in zip(draws, case.dtypes(n))]

    def kinds_of(self, case: Case) -> set[str]:
        """The kinds ``case`` is of: its output dtype and every named kind whose predicate holds."""
        return set(self.kind_names(case))

    def kind_names(self, case: Case) -> tuple[str, ...]:
        """``kinds_of(case)`` in a reader's order: the dtype, then the named kinds as the question lists them.  What
        a student may learn of a hidden case: its kinds are named in the course manifest, its sizes are not."""
        return (case.dtype, *(name for name, holds in self.kinds.items() if holds(case) and name != case.dtype))

    def expected(self, args: list[np.ndarray], case: Case) -> np.ndarray:
        wide = [a.astype(np.float64) for a in args]
        return np.asarray(self.reference(*wide)).astype(np.dtype(case.dtype))

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return self.tolerances.get(dtype) or TOLERANCES.get(dtype, (1e-5, 1e-5))


def question(qid: str, **fields: Any) -> Question:
    """Question ``qid`` as a stage module declares it: what the course manifest says of it (title, points, tiers,
    reference solutions: ``manifest.question_fields``) with the module's ``fields`` (its NumPy reference, cases,
    kinds, tolerances, work).  The one way a stage makes a question, so no stage restates the manifest."""
    return Question(**manifest.question_fields(qid), **fields)


def variant(base: Question, qid: str, **changes: Any) -> Question:
    """Question ``qid``, another version of ``base``'s kernel (a faster one, on other sizes): ``base``'s fields, the
    manifest's for ``qid`` (its own points, tiers and references, never ``base``'s), then ``changes``."""
    return dataclasses.replace(base, **{**manifest.question_fields(qid), **changes})


def relaxed_reference(q: Question) -> Question | None:
    """``q``'s relaxed speed reference as a question of its own: the kernel of ``q.relaxed``'s reference solution,
    timed on ``q``'s speed case (its latency is keyed and preset apart from ``q``'s own reference)."""
    if q.relaxed is None:
        return None
    base = QUESTIONS[q.relaxed]
    return dataclasses.replace(q, qid=f"{q.qid}~relaxed", function=base.function, solution=base.solution,
                               solution_nki=base.solution_nki, relaxed=None)


def timed_references(q: Question) -> list[Question]:
    """The reference kernels ``q``'s speed tiers are measured against: its own, and its relaxed one if it has one;
    none for a question graded on correctness only (no speed points, no timed run)."""
    if not q.speed_points:
        return []
    relaxed = relaxed_reference(q)
    return [q] if relaxed is None else [q, relaxed]


def _first_shape(case: Case) -> tuple[int, ...]:
    return case.arg_shapes[0] if case.arg_shapes is not None else case.shape


def row_tile() -> int:
    """The rows of one tile on the course's target (its partitions): a question tiling its first argument's rows
    takes them this many at a time."""
    return hardware().partitions


def row_tiles(case: Case) -> int:
    """How many row tiles (``row_tile()`` rows each) the first argument's rows make (the last one ragged when they
    do not divide)."""
    return -(-_first_shape(case)[0] // row_tile())


#: kinds of case by the first argument's shape, for questions that tile its rows over the partitions.  An odd
#: number of row tiles (one included) is what a kernel taking its tiles two at a time gets wrong
ROW_KINDS: dict[str, Callable[[Case], bool]] = {
    "one row": lambda c: _first_shape(c)[0] == 1,
    "under one tile": lambda c: _first_shape(c)[0] < row_tile(),
    "ragged rows": lambda c: _first_shape(c)[0] % row_tile() != 0,
    "several row tiles": lambda c: _first_shape(c)[0] > row_tile(),
    "odd number of row tiles": lambda c: row_tiles(c) % 2 == 1,
    "one column": lambda c: len(_first_shape(c)) > 1 and _first_shape(c)[-1] == 1,
}


def row_kinds(*names: str) -> dict[str, Callable[[Case], bool]]:
    """The named ``ROW_KINDS`` a question's cases are classified by (every one of them when none is named).

    A row kind a question leaves out must not vary over its cases (``tests/test_case_kinds.py``): a kind the cases
    differ in is a kind a kernel can get wrong on a hidden case only."""
    return {n: ROW_KINDS[n] for n in (names or ROW_KINDS)}


def grid_size(grid: tuple | None) -> int:
    """The SPMD instances a launch grid makes: ``(4,)`` -> 4, ``({"nc": 2}, 2)`` -> 4, None -> 1."""
    n = 1
    for dim in grid or ():
        n *= int(dim["nc"]) if isinstance(dim, dict) else int(dim)
    return n


#: the kind of a multi-instance question's case whose row tiles do not divide evenly over its instances: a kernel
#: that splits them with floor division loses the last ones
UNEVEN_SPLIT = "uneven split over the cores"


def split_kinds(instances: int) -> dict[str, Callable[[Case], bool]]:
    """``UNEVEN_SPLIT`` for a launch of ``instances`` instances, each taking a block of row tiles."""
    return {UNEVEN_SPLIT: lambda c: row_tiles(c) % instances != 0}


def odd_tiles(length: Callable[[Case], int], tile: Callable[[], int]) -> Callable[[Case], bool]:
    """A kind of case: an axis of ``length`` makes an odd number of ``tile()``-long tiles (one included); ``tile`` is
    asked when a case is looked at, so it can read the target (``hardware()``)."""
    return lambda c: -(-length(c) // tile()) % 2 == 1


def uncovered_kinds(q: Question, hidden: tuple[Case, ...] | None = None) -> set[str]:
    """The kinds of ``q``'s hidden cases (``hidden``, or its own) that no public case has, and each argument's dtype
    a hidden case gives it and no public case does (as ``"<argument>: <dtype>"``).  Empty when ``check`` runs every
    kind of input grading does, so a kernel can pass the public cases and fail a hidden one only on its values."""
    hidden = q.hidden if hidden is None else hidden
    n = len(q.arg_names)

    def kinds(cases: tuple[Case, ...]) -> set[str]:
        named = set().union(*(q.kinds_of(c) for c in cases))
        return named | {f"{a}: {d}" for c in cases for a, d in zip(q.arg_names, c.dtypes(n))}

    return kinds(hidden) - kinds(q.public)


#: a grader-side JSON file of hidden cases, ``{"<question>": [{"shape": [...], "dtype": "...", "arg_shapes":
#: [[...], ...]}, ...]}``: for a class whose students can read this repository, the TA keeps the hidden cases
#: that count private (``make grade --hidden-cases FILE``); questions it does not name keep their own
HIDDEN_CASES_ENV = "NKILAB_HIDDEN_CASES"


def hidden_cases(q: Question) -> tuple[Case, ...]:
    """The hidden cases ``q`` is graded on: the grader-side file's when it names ``q``, else the registry's."""
    path = os.environ.get(HIDDEN_CASES_ENV)
    if not path:
        return q.hidden
    found = load_hidden_cases(path, Path(path).stat().st_mtime).get(q.qid)
    return q.hidden if found is None else found


@functools.lru_cache(maxsize=4)
def load_hidden_cases(path: str, mtime: float) -> dict[str, tuple[Case, ...]]:
    """The cases of a grader-side hidden-case file (read again when its ``mtime`` changes)."""
    data = json.loads(Path(path).read_text())
    out = {}
    for qid, cases in data.items():
        get(qid)  # an unknown question id is the TA's typo: say so
        out[qid] = tuple(Case(tuple(int(d) for d in c["shape"]), str(c.get("dtype", "float32")),
                              tuple(tuple(int(d) for d in s) for s in c["arg_shapes"]) if c.get("arg_shapes") else None,
                              tuple(str(d) for d in c["arg_dtypes"]) if c.get("arg_dtypes") else None)
                         for c in cases)
    return out


def _collect() -> list[Question]:
    """Questions of every stage module in ``nkilab.course.stages`` (each defines ``QUESTIONS``), in stage order."""
    import importlib
    import pkgutil

    from nkilab.course import stages

    out: list[Question] = []
    for info in sorted(pkgutil.iter_modules(stages.__path__), key=lambda m: m.name):
        out.extend(importlib.import_module(f"nkilab.course.stages.{info.name}").QUESTIONS)
    return out


_QUESTIONS = _collect()
QUESTIONS: dict[str, Question] = {q.qid: q for q in _QUESTIONS}


def get(qid: str) -> Question:
    try:
        return QUESTIONS[qid]
    except KeyError:
        known = ", ".join(sorted(QUESTIONS))
        raise KeyError(f"no question {qid!r}; known questions: {known}") from None
