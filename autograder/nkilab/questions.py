"""The question registry: what each kernel question computes, on which inputs, and how it is scored.

Each question names the NumPy reference, the public cases (``check``) and hidden cases (``grade``),
per-dtype tolerances, the reference-solution kernel the speed tiers are measured against, and the
tier thresholds.  Hidden cases draw their data from a grading-time seed, so outputs cannot be
hard-coded even though the shapes below are public.
"""

from __future__ import annotations

import functools
import json
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
import numpy as np

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"

# (rtol, atol) per output dtype; inputs are O(1) normal draws.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}

#: a grade cell's call, ``grade("<question id>", ...)``: how a notebook names the question it grades
QUESTION_CALL = re.compile(r"""\bgrade\(\s*["'](\w+)["']""")

#: the target every question is graded on unless it names its own.  Grading never reads it from the environment
#: (a TA's shell with NEURON_PLATFORM_TARGET_OVERRIDE=trn1 must not grade a class on trn1); ``check`` may.
COURSE_TARGET = "trn2"

FULL_TIER = 1.2  # full speed points at <= 1.2x the reference's latency
PARTIAL_TIER = 2.0  # half the speed points at <= 2x


@dataclass(frozen=True)
class Case:
    """One test input: every argument has ``shape`` (or its own entry of ``arg_shapes``) and ``dtype``."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    arg_shapes: tuple[tuple[int, ...], ...] | None = None

    def shapes(self, n_args: int) -> list[tuple[int, ...]]:
        """The shape of each of the ``n_args`` kernel arguments."""
        return list(self.arg_shapes) if self.arg_shapes is not None else [self.shape] * n_args

    def describe(self, names: tuple[str, ...]) -> str:
        shapes = self.shapes(len(names))
        if len(set(shapes)) == 1:
            return f"{', '.join(names)}: {self.dtype} [{', '.join(str(d) for d in shapes[0])}]"
        return ", ".join(f"{n}: {self.dtype} [{', '.join(str(d) for d in s)}]" for n, s in zip(names, shapes))


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
    solution: str  # reference kernel module, relative to solutions/
    correctness_points: float
    speed_points: float
    rules: str = ""  # the size rules the kernel may assume, in plain words
    full_tier: float = FULL_TIER
    partial_tier: float = PARTIAL_TIER
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

    @property
    def default_module(self) -> str:
        return f"{self.function}.py"

    @property
    def points(self) -> float:
        return self.correctness_points + self.speed_points

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS / self.solution

    def inputs(self, case: Case, seed: int, index: int) -> list[np.ndarray]:
        """Deterministic inputs for (seed, case index): independent, non-symmetric normal draws."""
        salt = zlib.crc32(f"{self.qid}:{index}:{case.shape}:{case.dtype}".encode())
        rng = np.random.default_rng([seed & 0xFFFFFFFF, salt])
        return [rng.standard_normal(shape).astype(np.dtype(case.dtype))
                for shape in case.shapes(len(self.arg_names))]

    def expected(self, args: list[np.ndarray], case: Case) -> np.ndarray:
        wide = [a.astype(np.float64) for a in args]
        return np.asarray(self.reference(*wide)).astype(np.dtype(case.dtype))

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return self.tolerances.get(dtype) or TOLERANCES.get(dtype, (1e-5, 1e-5))


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
                              tuple(tuple(int(d) for d in s) for s in c["arg_shapes"]) if c.get("arg_shapes") else None)
                         for c in cases)
    return out


def _collect() -> list[Question]:
    """Questions of every stage module in ``nkilab.stages`` (each defines ``QUESTIONS``), in stage order."""
    import importlib
    import pkgutil

    from nkilab import stages

    out: list[Question] = []
    for info in sorted(pkgutil.iter_modules(stages.__path__), key=lambda m: m.name):
        out.extend(importlib.import_module(f"nkilab.stages.{info.name}").QUESTIONS)
    return out


_QUESTIONS = _collect()
QUESTIONS: dict[str, Question] = {q.qid: q for q in _QUESTIONS}


def get(qid: str) -> Question:
    try:
        return QUESTIONS[qid]
    except KeyError:
        known = ", ".join(sorted(QUESTIONS))
        raise KeyError(f"no question {qid!r}; known questions: {known}") from None
