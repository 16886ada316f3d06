"""One evaluation of a kernel module against a question: cases, verdicts, latency vs the reference."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nkilab.course import keep, manifest
from nkilab.course.questions import SOLUTIONS, Case, Question, course_target, hidden_cases, relaxed_reference
from nkilab.isolate.facts import ErrorFacts, Latency, SpeedFacts
from nkilab.isolate.replies import CaseRun, RunResult, RunStatus
from nkilab.isolate.runner import run_inprocess, run_module
from nkilab.judge import gate
from nkilab.judge.compare import Verdict, describe_error, diagnose
from nkilab.judge.results import CaseRecord, GradeRecord, Problem, ProblemKind, SpeedRecord
from nkilab.kernels import device
from nkilab.kernels.modules import load_kernel

#: a case whose arguments have at most this many elements each also runs on its negated inputs: on so
#: few elements, a kernel that mishandles one sign (a forgotten ReLU) would otherwise pass or fail it
#: by the luck of the grading seed's draw, and a student's grade would depend on the seed
MIRROR_MAX_ELEMENTS = 64
#: the input-draw index of the timed run (the speed case), apart from every checked case's index
TIMED_INDEX = 1000

_REFERENCE_CACHE: dict[tuple[str, str | None, str, float, bool], Latency] = {}


@dataclass
class CaseResult:
    case: Case
    hidden: bool
    verdict: Verdict


@dataclass
class Evaluation:
    question: Question
    module: str
    cases: list[CaseResult] = field(default_factory=list)
    problem: str | None = None  # a whole-run problem: missing file, import error, timeout, crash
    problem_kind: ProblemKind | None = None
    latency_us: float | None = None
    reference_us: float | None = None
    relaxed_us: float | None = None  # the relaxed reference's latency, for a question with two references
    target: str | None = None
    simulator: bool = True
    how: str | None = None  # on a device: the tool and statistic of the measurement ("nrtpy benchmark, mean of 10 runs")
    speed_note: str | None = None
    run: RunResult | None = None
    #: where the timed run's and the reference's time went (read at the pipe), for speed feedback
    speed_facts: SpeedFacts | None = None
    reference_facts: SpeedFacts | None = None
    #: the fingerprints of the kernel's program, as the grader's executor parsed it (``nkilab.kernels.similarity``)
    program: tuple[int, ...] | None = None

    @property
    def passed(self) -> int:
        return sum(c.verdict.ok for c in self.cases)

    @property
    def correct(self) -> bool:
        return self.problem is None and bool(self.cases) and self.passed == len(self.cases)

    @property
    def ratio(self) -> float | None:
        if self.latency_us is None or not self.reference_us:
            return None
        return self.latency_us / self.reference_us

    @property
    def tier(self) -> str | None:
        """'full', 'partial' or 'none' once a ratio exists."""
        r = self.ratio
        if r is None:
            return None
        q = self.question
        if q.relaxed is not None:  # half the points within partial_tier x the relaxed reference's latency
            partial = self.relaxed_us is not None and self.latency_us is not None \
                and self.latency_us <= q.partial_tier * self.relaxed_us
        else:
            partial = r <= q.partial_tier
        return "full" if r <= q.full_tier else "partial" if partial else "none"

    def speed_fraction(self) -> float:
        return {"full": 1.0, "partial": 0.5}.get(self.tier or "none", 0.0)

    def latency_label(self) -> str:
        if self.simulator:
            return f"estimate (nkisim cost model, {self.target or 'trn2'})"
        return f"measured on {self.target or 'this device'} ({self.how or 'nki.benchmark p99'})"


class CaseData(Sequence[np.ndarray]):
    """One run's inputs and the NumPy reference's answer for them (read-only: shared between evaluations), as the
    sequence of its inputs.

    Neither is made before it is needed.  The inputs are drawn the first time they are read: a kernel is traced from
    its cases' signatures (shapes and dtypes, ``signature``: the question's declared ones) and executed only if that
    worked, so a stub, or a kernel whose trace raised, costs no draw (a stage-9 student notebook's stubs spent a sixth
    of its kernel's time drawing inputs nothing read); nor does the timed run of a kernel that failed a case
    (``nkilab.isolate.runner.Gate``).  The answer is computed the first time it is asked for: a run that raised,
    timed out or returned no array is judged without it (``compare.diagnose`` decides those before it reads the
    answer)."""

    __slots__ = ("_answer", "_args", "_draw", "_expected", "signature")

    def __init__(self, draw: Callable[[], list[np.ndarray]], answer: Callable[[list[np.ndarray]], np.ndarray],
                 signature: tuple[tuple[tuple[int, ...], str], ...]) -> None:
        self._draw: Callable[[], list[np.ndarray]] | None = draw
        self._args: tuple[np.ndarray, ...] | None = None
        self._answer = answer
        self._expected: np.ndarray | None = None
        self.signature = signature

    @property
    def args(self) -> tuple[np.ndarray, ...]:
        if self._args is None:
            assert self._draw is not None
            args = self._draw()
            for a in args:
                a.setflags(write=False)
            drawn = tuple((tuple(int(d) for d in a.shape), str(a.dtype)) for a in args)
            if drawn != self.signature:  # a stage's prepare() that changed what its cases declare: the course's bug
                raise RuntimeError(f"inputs drawn as {drawn}, where the question declares {self.signature}")
            self._args, self._draw = tuple(args), None
        return self._args

    def __len__(self) -> int:
        return len(self.signature)

    def __getitem__(self, i: Any) -> Any:
        return self.args[i]

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.args)

    @property
    def drawn(self) -> bool:
        """Whether its inputs have been drawn yet."""
        return self._args is not None

    @property
    def largest(self) -> int:
        """Elements of its largest input, from its signature (nothing drawn)."""
        return max((math.prod(shape) for shape, _ in self.signature), default=0)

    @property
    def expected(self) -> np.ndarray:
        if self._expected is None:
            found = self._answer(list(self.args))
            found.setflags(write=False)
            self._expected = found
        return self._expected

    @property
    def nbytes(self) -> int:
        """Bytes held: the inputs once drawn, and the answer once computed."""
        return sum(a.nbytes for a in self._args or ()) + (self._expected.nbytes if self._expected is not None else 0)


#: drawn inputs and reference answers, kept for the next evaluation of the same question, seed and case: a
#: grading process (nbgrader's, warm across the class) draws each question's cases once per grading seed
_CASE_MEMO: OrderedDict[tuple, CaseData] = OrderedDict()
CASE_MEMO_BYTES = 512 * 2**20


def case_data(q: Question, case: Case, seed: int, index: int, negated: bool = False) -> CaseData:
    """The inputs of ``case`` (draw ``index`` of ``seed``; every value negated if asked) and their answer, each made
    when first read."""
    key = (id(q), q.qid, case, seed, index, negated)
    found = _CASE_MEMO.get(key)
    if found is not None:
        _CASE_MEMO.move_to_end(key)
        return found

    def draw() -> list[np.ndarray]:
        args = q.inputs(case, seed, index)
        return [-a for a in args] if negated else args

    n = len(q.arg_names)
    signature = tuple((tuple(int(d) for d in shape), str(np.dtype(dtype)))
                      for shape, dtype in zip(case.shapes(n), case.dtypes(n)))
    found = CaseData(draw, lambda args: q.expected(args, case), signature)
    _CASE_MEMO[key] = found
    while len(_CASE_MEMO) > 1 and sum(d.nbytes for d in _CASE_MEMO.values()) > CASE_MEMO_BYTES:
        _CASE_MEMO.popitem(last=False)
    return found


def default_target() -> str | None:
    """A student's own checks follow their environment (``NEURON_PLATFORM_TARGET_OVERRIDE``), as nki.jit does."""
    return os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE") or None


def grading_target(q: Question) -> str:
    """The target a question is *graded* on: its own, else the course's; never the environment's."""
    return q.target or course_target()


PRESET_ENV = "NKILAB_REFERENCE_LATENCIES"


def reference_key(q: Question, target: str | None) -> str:
    return f"{q.qid}@{target or ''}"


def _preset(q: Question, target: str | None) -> Latency | None:
    """A latency measured once for the whole class (``make grade`` sets it before any student code runs).

    An environment variable rather than a file: a student's kernel process can write files, but it cannot
    change the environment of the grading process that started it."""
    try:
        found = Latency.from_json(json.loads(os.environ.get(PRESET_ENV) or "{}").get(reference_key(q, target)))
    except (ValueError, AttributeError):
        return None
    return found if found.ok else None


def presets(found: dict[str, Latency]) -> str:
    """Reference latencies (by ``reference_key``) as ``PRESET_ENV`` holds them."""
    return json.dumps({key: lat.to_json() for key, lat in found.items()})


def reference_latency(q: Question, target: str | None, timeout: float, *, sandboxed: bool = False) -> Latency:
    """The reference solution's latency, measured as a student's is: its timed run on the speed case, traced to a
    program and executed as the grader does (``runner.run_inprocess``). The reference is the course's own code, so
    it runs in this process, without the sandbox's start-up; ``sandboxed=True`` runs it in a sandboxed child like a
    hand-in (``tests/test_reference_latencies.py`` checks that both give the same estimate)."""
    preset = _preset(q, target) if not sandboxed else None
    if preset is not None:
        return preset
    path = q.reference_path(device.on_device())  # on a device with AWS's NKI 0.6, the 0.6 reference: it compiles there
    key = (q.qid, target, str(path), path.stat().st_mtime if path.exists() else 0.0, sandboxed)
    if key not in _REFERENCE_CACHE:
        if not path.exists():
            return Latency.failed(f"reference solution {path} is missing (run make release)", "FileNotFoundError")
        if sandboxed or device.on_device():  # a hardware timing is measured afresh; a sandboxed run is the check
            _REFERENCE_CACHE[key] = measure_reference(q, path, target, timeout, sandboxed)
        else:
            _REFERENCE_CACHE[key] = _kept_reference(q, path, target, timeout)
    return _REFERENCE_CACHE[key]


def measure_reference(q: Question, path: Path, target: str | None, timeout: float, sandboxed: bool) -> Latency:
    args = list(case_data(q, q.speed_case, 0, TIMED_INDEX).args)
    if sandboxed:
        res = run_module(path, q.function, [args], timed=0, bench=_bench_spec(q), target=target,
                         timeout=timeout, grid=q.grid)
    else:
        res = run_inprocess(load_kernel(path, q.function), q.function, [args], timed=0, bench=_bench_spec(q),
                            target=target, grid=q.grid)
    found = timed_latency(res, 0)
    if found is None:
        return Latency.failed("reference did not run")
    if found.facts is not None:  # its costliest lines are solution code: never kept (presets and bundles carry
        found = dataclasses.replace(found, facts=found.facts.without_code())  # these facts)
    return found


def _kept_reference(q: Question, path: Path, target: str | None, timeout: float) -> Latency:
    """The simulator's estimate for a reference solution, kept on disk (``nkilab.course.keep``) under a key of the
    reference's source, the question, the target, the course manifest and all the course code: a cost-model
    estimate is deterministic, so every process of a ``make grade``, a lesson run or a test run after the first
    reads it instead of tracing and executing the reference again (a second or so each).  Only a successful run is
    kept."""
    content = f"reference latency\0{q.qid}\0{q.function}\0{target}\0".encode() + path.read_bytes() + b"\0" + \
        manifest.MANIFEST.read_bytes()
    file = keep.cache_dir() / "references" / f"{q.qid}-{keep.cache_key(content)}.json"
    with keep.locked(file.with_suffix(".lock")):
        try:
            kept = Latency.from_json(json.loads(file.read_text()))
            if kept.ok:
                return kept
        except (OSError, ValueError):
            pass
        found = measure_reference(q, path, target, timeout, False)
        if found.ok:
            partial = file.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps(found.to_json()))
            partial.replace(file)
        return found


def traced_program(path: Path, q: Question) -> tuple[int, ...]:
    """The fingerprints (``nkilab.kernels.similarity``) of the kernel in ``path`` traced on the question's timed-case shapes
    in this process, as a grading child traces a student's (not executed): for the course's own kernels only."""
    from nkilab.isolate import _child
    from nkilab.kernels.similarity import program_features
    from nkisim import api

    shapes, dtypes = _bench_spec(q)
    job = {"signatures": [[[list(s), d] for s, d in zip(shapes, dtypes)]], "grid": list(q.grid) if q.grid else None,
           "target": grading_target(q)}
    texts: list[np.ndarray] = []
    _child.trace_programs(load_kernel(path, q.function), job, None, lambda head, arrays: texts.extend(arrays))
    return tuple(program_features(api.program_from_json(texts[0].tobytes()))) if texts else ()


def reference_programs(q: Question) -> tuple[int, ...]:
    """The fingerprints of the question's reference solutions in both dialects (``traced_program``): the common
    ground no pair of hand-ins is flagged for sharing."""
    found: set[int] = set()
    for path in {q.solution_path, *([SOLUTIONS / q.solution_nki] if q.solution_nki else [])}:
        try:
            found.update(traced_program(path, q))
        except Exception:  # a reference that does not trace here gives no common ground (the pair is still shown)
            continue
    return tuple(sorted(found))


def timed_latency(run: RunResult, timed: int) -> Latency | None:
    """The latency of run ``timed`` (the simulator's estimate of that launch) or the device's benchmark."""
    if run.bench is not None:
        return run.bench
    crun = run.cases[timed] if timed < len(run.cases) else CaseRun(RunStatus.NOT_RUN)
    t = crun.timing
    if crun.status is not RunStatus.OK or t is None or not t.ok:
        return Latency(error=(t.error if t is not None else None) or crun.error
                       or ErrorFacts("RuntimeError", "the timed run did not finish"))
    return t


def _bench_spec(q: Question) -> tuple[list[tuple[int, ...]], list[str]]:
    c = q.speed_case
    return c.shapes(len(q.arg_names)), [c.dtype] * len(q.arg_names)


def evaluate(q: Question, module: str | os.PathLike, *, hidden: bool, seed: int, speed: bool = True,
             target: str | None = None, timeout: float | None = None, sandboxed: bool = False) -> Evaluation:
    """Run the kernel on the question's cases (and, for speed, its timed run) and judge every output here.

    A kernel *file* is screened first (``nkilab.judge.gate``); ``sandboxed`` runs it in ``nkilab.isolate.sandbox``."""
    target = q.target or (target if target is not None else default_target())
    timeout = timeout if timeout is not None else q.timeout_s
    inproc = callable(module)
    path = Path(getattr(module, "__name__", "kernel") if inproc else module)
    ev = Evaluation(q, str(path))
    if not inproc and not path.exists():
        ev.problem = (f"no file {path.name} -- run the %%writefile cell that writes your kernel first")
        ev.problem_kind = ProblemKind.MISSING
        return ev
    refusal = None if inproc else gate.screen(path)
    if refusal is not None:
        ev.problem = "the grader refused your file before running it: " + refusal.message(path.name)
        ev.problem_kind = ProblemKind.REFUSED
        return ev
    cases = [(c, False) for c in q.public] + ([(c, True) for c in hidden_cases(q)] if hidden else [])
    data = [case_data(q, c, seed, i) for i, (c, _) in enumerate(cases)]
    mirrored = [i for i, d in enumerate(data) if d.largest <= MIRROR_MAX_ELEMENTS]
    runs = data + [case_data(q, cases[i][0], seed, i, negated=True) for i in mirrored]
    # a hidden case's runs (and their mirrors) are traced only after the public ones, and said nothing of
    hidden_runs = frozenset(i for i, (_, h) in enumerate(cases) if h) | \
        frozenset(len(data) + j for j, i in enumerate(mirrored) if cases[i][1])
    speed = speed and q.speed_points > 0  # a question graded on correctness only has no timed run
    timed = len(runs) if speed else None
    if speed:  # the run whose latency counts, on inputs of this seed, its output checked like any case
        runs.append(case_data(q, q.speed_case, seed, TIMED_INDEX))
    bench = _bench_spec(q) if speed else None  # a device's nki.benchmark; the simulator times the run itself

    def judge(case: Case, d: CaseData, crun: Any) -> Verdict:
        return diagnose(crun, lambda: d.expected, d, *q.tolerance(case.dtype), path.name)

    def judged(cruns: list[Any]) -> list[CaseResult]:
        """Every case's verdict (a case passes only if its mirror, every input negated, passes too)."""
        out = [CaseResult(case, is_hidden, judge(case, d, crun)) for (case, is_hidden), d, crun in zip(cases, data, cruns)]
        for i, d, crun in zip(mirrored, runs[len(data):], cruns[len(data):]):
            if i < len(out) and out[i].verdict.ok:
                verdict = judge(out[i].case, d, crun)
                if not verdict.ok:
                    out[i].verdict = Verdict(False, f"with every input negated: {verdict.message}", verdict.outcome,
                                             verdict.error, verdict.wrong_map)
        return out

    seen: list[list[CaseResult]] = []

    def all_pass(cruns: list[Any]) -> bool:
        """The timed run only for a kernel whose every case passes: a failing one earns no speed points."""
        seen.append(judged(cruns))
        return all(c.verdict.ok for c in seen[-1])

    if inproc:
        with contextlib.redirect_stdout(io.StringIO()):  # nki.benchmark's own print line
            run = run_inprocess(module, q.function, list(runs), timed=timed, bench=bench, target=target,
                                grid=q.grid, gate=all_pass)
    else:
        run = run_module(path, q.function, list(runs), timed=timed, bench=bench, target=target,
                         timeout=timeout, grid=q.grid, sandboxed=sandboxed, hidden=hidden_runs, gate=all_pass)
    ev.run = run
    ev.program = run.program
    if run.import_error is not None:
        ev.problem = "your file did not import: " + describe_error(run.import_error, path.name).replace(
            "your kernel raised ", "")
        ev.problem_kind = ProblemKind.IMPORT
        return ev
    if run.timed_out:
        ev.problem = f"timed out after {timeout:g} s (an endless loop, or far too much work?)"
        ev.problem_kind = ProblemKind.TIMEOUT
    elif run.garbled:
        ev.problem = "the kernel process sent back something that is not a result"
        ev.problem_kind = ProblemKind.GARBLED
    elif run.crashed:
        ev.problem = "the kernel process died before finishing"
        ev.problem_kind = ProblemKind.CRASHED
    # the gate's verdicts when it was asked (the same runs: the timed one is not among them), else judged now
    ev.cases = seen[0] if seen else judged(run.cases)
    if timed is not None and ev.correct:
        verdict = judge(q.speed_case, runs[timed], run.cases[timed])
        if not verdict.ok:
            ev.speed_note = (f"no speed points: the timed run ({q.speed_case.describe(q.arg_names)}) was wrong: "
                             f"{verdict.message}")
            return ev
        found = timed_latency(run, timed) or Latency.failed("the timed run did not finish")
        if found.latency_us is None:
            ev.speed_note = "could not measure latency: " + describe_error(found.error, path.name)
            return ev
        ev.latency_us, ev.target, ev.simulator = found.latency_us, found.target, found.simulator
        ev.how = found.how  # on a device: which AWS tool measured it (nkilab.kernels.device)
        ev.speed_facts = found.facts
        ref = reference_latency(q, target, max(timeout, 60.0))
        if ref.latency_us is not None:
            ev.reference_us = ref.latency_us
            ev.reference_facts = ref.facts.without_code() if ref.facts is not None else None
        else:
            ev.speed_note = "reference latency unavailable: " + (ref.error.message if ref.error else "")
        relaxed = relaxed_reference(q)
        if relaxed is not None:
            ev.relaxed_us = reference_latency(relaxed, target, max(timeout, 60.0)).latency_us
    return ev


def record(ev: Evaluation, *, correctness: float, speed: float, sandboxed: bool = True,
           warnings: tuple[str, ...] = ()) -> GradeRecord:
    """The evaluation as a typed grade record (``nkilab.judge.results``): what reports, feedback and tables render."""
    q = ev.question
    cases = tuple(CaseRecord(n, cr.hidden, cr.case.describe(q.arg_names), cr.verdict.outcome, cr.verdict.message,
                             cr.verdict.error, q.kind_names(cr.case)) for n, cr in enumerate(ev.cases, 1))
    problem = Problem(ev.problem_kind or ProblemKind.HARNESS, ev.problem) if ev.problem else None
    timing = None
    if ev.latency_us is not None or ev.speed_note:
        timing = SpeedRecord(q.speed_case.describe(q.arg_names), ev.latency_label(), ev.latency_us, ev.reference_us,
                             ev.tier, q.full_tier, q.partial_tier, ev.speed_note, ev.speed_facts,
                             ev.reference_facts, q.speed_lesson,
                             relaxed=q.relaxed, relaxed_us=ev.relaxed_us)
    return GradeRecord(q.qid, q.title, round(correctness + speed, 4), q.points, round(correctness, 4),
                       q.correctness_points, round(speed, 4), q.speed_points, cases, problem, timing, sandboxed,
                       warnings, ev.program or ())

