"""The question registry: what each kernel question computes, on which inputs, and how it is scored.

Each question names the NumPy reference, the public cases (``check``) and hidden cases (``grade``),
per-dtype tolerances, the reference-solution kernel the speed tiers are measured against, and the
tier thresholds.  Hidden cases draw their data from a grading-time seed, so outputs cannot be
hard-coded even though the shapes below are public.
"""

from __future__ import annotations

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

FULL_TIER = 1.2  # full speed points at <= 1.2x the reference's latency
PARTIAL_TIER = 2.0  # half the speed points at <= 2x


@dataclass(frozen=True)
class Case:
    """One test input: every argument has this shape and dtype."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def describe(self, names: tuple[str, ...]) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"{', '.join(names)}: {self.dtype} [{dims}]"


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
        return [rng.standard_normal(case.shape).astype(np.dtype(case.dtype)) for _ in self.arg_names]

    def expected(self, args: list[np.ndarray], case: Case) -> np.ndarray:
        wide = [a.astype(np.float64) for a in args]
        return np.asarray(self.reference(*wide)).astype(np.dtype(case.dtype))

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return TOLERANCES.get(dtype, (1e-5, 1e-5))


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


_QUESTIONS = [
    # Stage 1: vector add.
    Question(
        qid="vector_add_naive",
        title="Stage 1, Q1: one-tile vector add",
        function="vector_add_naive",
        arg_names=("a", "b"),
        reference=_add,
        rules="a and b are [P, F] with 1 <= P <= 128 and 1 <= F <= 4096; return a + b with a's dtype",
        public=(Case((128, 512)), Case((7, 33))),
        hidden=(Case((1, 1)), Case((127, 512)), Case((128, 4096)), Case((64, 100), "float16"),
                Case((128, 512), "bfloat16"), Case((1, 4096))),
        speed_case=Case((128, 512)),
        solution="01_vector_add/vector_add_naive.py",
        correctness_points=2.0,
        speed_points=1.0,
    ),
    Question(
        qid="vector_add_stream",
        title="Stage 1, Q2: 128 rows by a long free dimension",
        function="vector_add_stream",
        arg_names=("a", "b"),
        reference=_add,
        rules="a and b are [P, F] with 1 <= P <= 128 and F a multiple of 2048; return a + b with a's dtype",
        public=(Case((128, 8192)), Case((32, 2048))),
        hidden=(Case((128, 2048)), Case((1, 4096)), Case((127, 6144)), Case((128, 65536)),
                Case((128, 8192), "bfloat16"), Case((64, 4096), "float16")),
        speed_case=Case((128, 65536)),
        solution="01_vector_add/vector_add_stream.py",
        correctness_points=2.0,
        speed_points=2.0,
    ),
]

QUESTIONS: dict[str, Question] = {q.qid: q for q in _QUESTIONS}


def get(qid: str) -> Question:
    try:
        return QUESTIONS[qid]
    except KeyError:
        known = ", ".join(sorted(QUESTIONS))
        raise KeyError(f"no question {qid!r}; known questions: {known}") from None
