"""The class report: what a TA sees of the whole class after ``make grade`` (``report/index.html`` and
``report/report.json`` in the course directory).

Built from the typed records grading produced -- each ``grade_table.Submission`` with its cells' ``GradeRecord`` --
never from printed text: per question the score distribution, the verdict kinds and how many students hit each,
the speed ratios against the tiers (a plot drawn here with matplotlib), the slowest hand-ins and the most common
bottleneck engines, the hand-ins that need a TA's look (not read, salvaged, failed, timed out, no grade record),
and the pairs of hand-ins most alike (``nkilab.kernels.similarity``), side by side.

Everything about a student came from sandboxed runs or from the student's own notebook: it is hostile text.  The
HTML escapes every string (``html.escape`` at the one place text is written, ``_e``), the plot carries only
numbers and the course's question ids, and no file a student names is opened: kernel sources are read from the
autograded notebooks' answer cells, found by the grade ids of the course's own release.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from nkilab.course.questions import QUESTION_CALL, QUESTIONS, SOLUTIONS, Question
from nkilab.intake.sanitize import grade_id, is_answer
from nkilab.judge.evaluate import reference_programs
from nkilab.judge.results import ENGINE_NAMES, GradeRecord, Outcome, ProblemKind
from nkilab.kernels import similarity
from nkilab.lms.grade_table import CellGrade, Submission

#: statuses of a hand-in that a TA should look at (intake's and grading's own words)
LOOK = {"unreadable": "could not be read", "salvaged": "salvaged: its notebook kernel died, graded cell by cell",
        "failed": "could not be graded"}
#: problems in a grade record that a TA should look at
LOOK_PROBLEMS = (ProblemKind.TIMEOUT, ProblemKind.CRASHED, ProblemKind.GARBLED, ProblemKind.HARNESS)
#: the pairs shown side by side: every flagged pair, and this many of the class's most similar
SIDE_BY_SIDE = 3
#: the pairs kept per question (every flagged one besides): a class of 300 has 44,850 pairs per question
PAIRS_KEPT = 20
#: the slowest hand-ins listed per question
SLOWEST = 3


@dataclass(frozen=True)
class Speed:
    student: str
    ratio: float
    tier: str  # full | partial | none
    bottleneck: str  # an engine as the lessons name it


@dataclass(frozen=True)
class QuestionFacts:
    assignment: str
    question: str
    title: str
    max_points: float
    scores: dict[str, float]  # student -> points (graded hand-ins only)
    verdicts: dict[str, list[str]]  # verdict kind -> students
    verdict_cases: dict[str, list[str]]  # verdict kind -> the kinds of case it was found on (dtypes, ragged rows, ...)
    speeds: list[Speed]
    full_tier: float | None
    partial_tier: float | None
    relaxed: bool = False  # half points measured against a second, relaxed reference

    def distribution(self) -> list[tuple[float, int]]:
        """(points, how many students) in ascending points."""
        return sorted(Counter(self.scores.values()).items())

    def bottlenecks(self) -> list[tuple[str, int]]:
        return Counter(s.bottleneck for s in self.speeds).most_common()

    def slowest(self) -> list[Speed]:
        return sorted(self.speeds, key=lambda s: -s.ratio)[:SLOWEST]


@dataclass(frozen=True)
class Look:
    """A hand-in a TA should look at, and why (the grader's words)."""

    student: str
    assignment: str
    question: str
    why: str


@dataclass(frozen=True)
class PairView:
    """A pair of hand-ins as the report shows it: scores and, for the side-by-side view, each source with the
    spans they share beyond common ground."""

    pair: similarity.Pair
    first_source: str = ""
    second_source: str = ""
    first_spans: tuple[tuple[int, int], ...] = ()
    second_spans: tuple[tuple[int, int], ...] = ()


@dataclass
class ClassReport:
    students: list[str]
    assignments: list[str]
    questions: list[QuestionFacts]
    looks: list[Look]
    pairs: list[PairView]
    threshold: float = similarity.THRESHOLD
    notes: list[str] = field(default_factory=list)
    text_threshold: float = similarity.TEXT_THRESHOLD

    def to_json(self) -> dict:
        data = asdict(self)
        data["schema"] = "nkilab-class-report/1"
        data["lead"] = similarity.LEAD
        for item, view in zip(data["pairs"], self.pairs):
            item["score"] = view.pair.score
        return data


def verdict_kinds(rec: GradeRecord) -> dict[str, set[str]]:
    """The kinds of verdict a record holds, in the grader's own categories, each with the kinds of case it hit: a
    whole-run problem, or each outcome of a failing case (an error by its NKI error id, else its class), or every
    case right."""
    if rec.problem is not None:
        return {rec.problem.kind.value: set()}
    found: dict[str, set[str]] = {}
    for c in rec.cases:
        if c.ok:
            continue
        what = c.outcome.value
        if c.outcome is Outcome.ERROR and c.error is not None:
            what = f"raised {c.error.error_id or c.error.type}"
        found.setdefault(what, set()).update(c.kinds)
    return found or ({"every case right": set()} if rec.cases else {"no cases run": set()})


def _question_facts(assignment: str, question: str, cells: list[tuple[str, CellGrade]]) -> QuestionFacts:
    scores = {st: c.points for st, c in cells if c.points is not None}
    verdicts: dict[str, list[str]] = {}
    cases: dict[str, set[str]] = {}
    speeds = []
    tiers: tuple[float, float] | tuple[None, None] = (None, None)
    title, relaxed = question, False
    for st, c in cells:
        rec = c.record
        if rec is None:
            verdicts.setdefault("no grade record", []).append(st)
            continue
        title = rec.title
        for kind, on in verdict_kinds(rec).items():
            verdicts.setdefault(kind, []).append(st)
            cases.setdefault(kind, set()).update(on)
        t = rec.timing
        if t is not None:
            tiers, relaxed = (t.full_tier, t.partial_tier), t.relaxed is not None
            if rec.correct and t.ratio is not None and t.latency_us:
                neck = ENGINE_NAMES[t.kernel.bottleneck(t.latency_us)] if t.kernel is not None else "unknown"
                speeds.append(Speed(st, t.ratio, t.tier or "none", neck))
    max_points = max((c.max_points for _, c in cells), default=0.0)
    return QuestionFacts(assignment, question, title, max_points, scores, verdicts,
                         {k: sorted(v) for k, v in cases.items() if v}, speeds, tiers[0], tiers[1], relaxed)


def graded_kernel(cell: CellGrade) -> bool:
    """A grade cell that grades a kernel question of the course (and so leaves a grade record): not a teacher's
    own plain-Python check, which leaves none."""
    return cell.kind == "kernel" and (cell.record is not None or cell.question in QUESTIONS)


def looks(subs: list[Submission]) -> list[Look]:
    found = []
    for s in subs:
        if s.status in LOOK:
            found.append(Look(s.student, s.assignment, "", LOOK[s.status]))
        if s.status not in ("graded", "salvaged"):
            continue
        for c in s.cells:
            if not graded_kernel(c):
                continue
            if c.record is None:
                found.append(Look(s.student, s.assignment, c.question, "no grade record (the grade cell did not "
                                                                       "finish)"))
            elif c.record.problem is not None and c.record.problem.kind in LOOK_PROBLEMS:
                found.append(Look(s.student, s.assignment, c.question, c.record.problem.text))
    return found


@dataclass(frozen=True)
class Sources:
    """What the similarity side reads for one question: each student's kernel source, and the common ground the
    course gave everyone (the released stub, the reference solution; the reference's program fingerprints)."""

    texts: dict[str, str]
    given_texts: tuple[str, ...] = ()
    given_program: tuple[int, ...] = ()


def pair_views(subs: list[Submission], sources: dict[str, Sources], threshold: float) -> list[PairView]:
    """The most similar pairs of each question (``PAIRS_KEPT`` and every flagged one), most similar first; the
    flagged ones and the top few with their sources."""
    programs: dict[str, dict[str, tuple[int, ...]]] = {}
    for s in subs:
        for c in s.cells:
            if c.record is not None and c.record.program:
                programs.setdefault(c.question, {})[s.student] = c.record.program
    pairs: list[PairView] = []
    for question in sorted(set(programs) | set(sources)):
        src = sources.get(question, Sources({}))
        texts = {st: similarity.text_fingerprint(t) for st, t in src.texts.items() if t.strip()}
        given: set[int] = set()
        for t in src.given_texts:
            given |= similarity.text_fingerprint(t).hashes
        common_text = similarity.common_ground({s: t.hashes for s, t in texts.items()}, given)
        ranked = similarity.rank(question, programs.get(question, {}), texts, src.given_program, given, threshold)
        for n, p in enumerate(ranked):
            if n >= PAIRS_KEPT and not p.flagged:
                continue
            if not (p.flagged or n < SIDE_BY_SIDE) or p.first not in texts or p.second not in texts:
                pairs.append(PairView(p))
                continue
            a, b = texts[p.first], texts[p.second]
            shared = (a.hashes & b.hashes) - common_text
            pairs.append(PairView(p, a.source, b.source, tuple(similarity.shared_spans(a, shared)),
                                  tuple(similarity.shared_spans(b, shared))))
    ranked_all = sorted(pairs, key=lambda v: (v.pair.key(), v.pair.question))
    return [v if v.pair.flagged or n < SIDE_BY_SIDE else PairView(v.pair) for n, v in enumerate(ranked_all)]


def build(subs: list[Submission], students: list[str], assignments: list[str],
          sources: dict[str, Sources] | None = None, threshold: float = similarity.THRESHOLD,
          notes: list[str] | None = None) -> ClassReport:
    """The report's facts from grading's records."""
    by_question: dict[tuple[str, str], list[tuple[str, CellGrade]]] = {}
    for s in subs:
        if s.status not in ("graded", "salvaged"):
            continue
        for c in s.cells:
            if graded_kernel(c):
                by_question.setdefault((s.assignment, c.question), []).append((s.student, c))
    order = {a: i for i, a in enumerate(assignments)}
    questions = [_question_facts(a, q, cells) for (a, q), cells in
                 sorted(by_question.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][0]))]
    return ClassReport(students, assignments, questions, looks(subs), pair_views(subs, sources or {}, threshold),
                       threshold, list(notes or []))


# --------------------------------------------------------------------------- rendering


def speed_plot(report: ClassReport, path: Path) -> bool:
    """The speed ratios of every question's correct hand-ins, one row per question, against its tiers (an SVG
    drawn by matplotlib: numbers and question ids only).  False when no question has a ratio."""
    rows = [q for q in report.questions if q.speeds]
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 0.42 * len(rows) + 1.2))
    colours = {"full": "#1a7f37", "partial": "#bf8700", "none": "#cf222e"}
    for y, q in enumerate(rows):
        for tier, colour in colours.items():
            xs = [s.ratio for s in q.speeds if s.tier == tier]
            jitter = [y + 0.12 * ((i % 3) - 1) for i in range(len(xs))]
            ax.scatter(xs, jitter, s=22, color=colour, label=tier if y == 0 else None, zorder=3)
        if q.full_tier:
            ax.plot([q.full_tier] * 2, [y - 0.35, y + 0.35], color="#1a7f37", lw=1.2)
        if q.partial_tier and not q.relaxed:
            ax.plot([q.partial_tier] * 2, [y - 0.35, y + 0.35], color="#bf8700", lw=1.2)
    ax.set_xscale("log")
    ratios = [s.ratio for q in rows for s in q.speeds]
    ticks = [t for t in (0.5, 0.8, 1, 1.2, 1.5, 2, 3, 5, 10, 20, 50, 100)
             if min(ratios) / 1.3 <= t <= max(ratios) * 1.3]
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.minorticks_off()
    ax.set_yticks(range(len(rows)), [q.question for q in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("latency / the reference's (estimates); bars: the tiers", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, [f"{lab} speed points" for lab in labels], fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)
    return True


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _g(x: float) -> str:
    return f"{x:g}"


def _marked(source: str, spans: tuple[tuple[int, int], ...]) -> str:
    out, at = [], 0
    for a, b in spans:
        if a < at:
            a = at
        if b <= a:
            continue
        out += [_e(source[at:a]), "<mark>", _e(source[a:b]), "</mark>"]
        at = b
    out.append(_e(source[at:]))
    return "".join(out)


CSS = """
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 12px;line-height:1.45;color:#1f2328}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #d0d7de}h3{margin-bottom:.3em}
.box{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #d0d7de;padding:2px 8px;text-align:left;
vertical-align:top}td{min-width:4em;overflow-wrap:break-word}th{white-space:nowrap}
.bar{display:inline-block;height:.8em;background:#54aeff;vertical-align:middle}
img{max-width:100%;height:auto}
.lead{border-left:4px solid #bf8700;background:#fff8c5;padding:.5em 1em}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:8px}
@media (max-width:800px){.pair{grid-template-columns:1fr}}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:8px;margin:0;font-size:.85em}
mark{background:#ffd8b5}
.flag{color:#cf222e;font-weight:bold}
"""


def render_html(report: ClassReport, plot: str | None) -> str:
    """The report as one HTML page; every string from a hand-in or a record is escaped."""
    h = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
         "<meta name='viewport' content='width=device-width, initial-scale=1'>",
         "<title>Class report</title>", f"<style>{CSS}</style></head><body>",
         "<h1>Class report</h1>",
         f"<p>{len(report.students)} students, {len(report.assignments)} assignments, {len(report.questions)} "
         "autograded questions. Latencies and ratios are nkisim cost-model estimates, not measurements.</p>"]
    h += [f"<p>{_e(n)}</p>" for n in report.notes]
    h.append("<h2 id='look'>Hand-ins that need a TA's look</h2>")
    if report.looks:
        h.append("<div class='box'><table><tr><th>student</th><th>assignment</th><th>question</th><th>why</th></tr>")
        h += [f"<tr><td>{_e(x.student)}</td><td>{_e(x.assignment)}</td><td>{_e(x.question)}</td><td>{_e(x.why)}</td>"
              "</tr>" for x in report.looks]
        h.append("</table></div>")
    else:
        h.append("<p>None: every hand-in was read and graded, none timed out.</p>")
    h.append("<h2 id='speed'>Speed against the tiers</h2>")
    if plot:
        h.append(f"<p><img src='{_e(plot)}' alt='Speed ratio of each correct hand-in per question, against the "
                 "full and half speed-point tiers'></p>")
    else:
        h.append("<p>No correct hand-in was timed.</p>")
    h.append("<h2 id='questions'>Per question</h2>")
    for q in report.questions:
        h.append(f"<h3>{_e(q.assignment)}: {_e(q.question)} ({_e(q.title)}, {_g(q.max_points)} points)</h3>")
        n = max(len(q.scores), 1)
        h.append("<div class='box'><table><tr><th>points</th><th>students</th></tr>")
        for pts, count in q.distribution():
            h.append(f"<tr><td>{_g(pts)}</td><td><span class='bar' style='width:{round(120 * count / n)}px'></span> "
                     f"{count}</td></tr>")
        h.append("</table></div>")
        h.append("<div class='box'><table><tr><th>verdict</th><th>on cases</th><th>students</th><th>who</th></tr>")
        for kind, who in sorted(q.verdicts.items(), key=lambda kv: -len(kv[1])):
            on = ", ".join(q.verdict_cases.get(kind, []))
            h.append(f"<tr><td>{_e(kind)}</td><td>{_e(on)}</td><td>{len(who)}</td><td>{_e(', '.join(who))}</td></tr>")
        h.append("</table></div>")
        if q.speeds:
            necks = ", ".join(f"{_e(e)} ({c})" for e, c in q.bottlenecks())
            slow = ", ".join(f"{_e(s.student)} {s.ratio:.2f}x ({_e(s.bottleneck)})" for s in q.slowest())
            h.append(f"<p>Busiest engine of the correct hand-ins: {necks}. Slowest: {slow}.</p>")
    h.append("<h2 id='similarity'>Similar hand-ins</h2>")
    h.append(f"<p class='lead'>{_e(similarity.LEAD)}</p>")
    h.append(f"<p>Pairs ranked by the similarity of their instruction programs as the grader traced them (names, "
             f"constants of shape and the order of independent instructions ignored), then of their source text "
             f"(copydetect's winnowed fingerprints, names and comments ignored). Each score is the share of the "
             f"pair's fingerprints they have in common beyond common ground (the reference solutions, the released "
             f"stub, what most of the class shares); in brackets, how many. Every question's threshold: "
             f"{report.threshold:g} for the program, {report.text_threshold:g} for the text (a short kernel leaves "
             f"little room, so honest answers share much of their text), with at least {similarity.MIN_SHARED} "
             f"fingerprints shared beyond common ground.</p>")
    shown = [v for v in report.pairs if v.pair.flagged or v.first_source]
    h.append("<div class='box'><table><tr><th>question</th><th>pair</th><th>program</th><th>text</th><th></th></tr>")
    for v in report.pairs[:max(20, len(shown))]:
        p = v.pair
        prog = f"{p.program.score:.2f} ({p.program.shared})" if p.program else "-"
        text = f"{p.text.score:.2f} ({p.text.shared})" if p.text else "-"
        flag = "<span class='flag'>over the threshold</span>" if p.flagged else ""
        h.append(f"<tr><td>{_e(p.question)}</td><td>{_e(p.first)} &amp; {_e(p.second)}</td><td>{prog}</td>"
                 f"<td>{text}</td><td>{flag}</td></tr>")
    h.append("</table></div>")
    for v in shown:
        p = v.pair
        h.append(f"<h3>{_e(p.question)}: {_e(p.first)} &amp; {_e(p.second)}</h3>")
        h.append("<div class='pair'>")
        for student, code, spans in ((p.first, v.first_source, v.first_spans),
                                     (p.second, v.second_source, v.second_spans)):
            h.append(f"<div><b>{_e(student)}</b><pre>{_marked(code, spans)}</pre></div>")
        h.append("</div>")
    h.append("</body></html>")
    return "\n".join(h) + "\n"


def write(report: ClassReport, folder: Path) -> Path:
    """``folder/index.html``, ``folder/report.json`` and the plot; returns the page's path."""
    folder.mkdir(parents=True, exist_ok=True)
    plot = "speed.svg" if speed_plot(report, folder / "speed.svg") else None
    (folder / "report.json").write_text(json.dumps(report.to_json(), indent=1, allow_nan=False))
    page = folder / "index.html"
    page.write_text(render_html(report, plot))
    return page


# --------------------------------------------------------------------------- reading a graded course


def _answer_cells(nb: nbformat.NotebookNode) -> dict[str, str]:
    """grade id -> source of each answer (solution) code cell of a notebook."""
    return {grade_id(c) or "": c.source for c in nb.cells if c.cell_type == "code" and is_answer(c)}


def _kernel_text(source: str) -> str:
    """An answer cell's kernel: its ``%%writefile`` line dropped, solution markers removed."""
    lines = source.split("\n")
    if lines and lines[0].startswith("%%writefile"):
        lines = lines[1:]
    return "\n".join(ln for ln in lines if "BEGIN SOLUTION" not in ln and "END SOLUTION" not in ln)


def reference_texts(q: Question) -> tuple[str, ...]:
    """The course's reference solutions of ``q`` in both dialects (``solutions/``): common ground for the text side,
    as a student on either handout may write the lesson's own kernel."""
    paths = {q.solution_path, *([SOLUTIONS / q.solution_nki] if q.solution_nki else [])}
    return tuple(p.read_text() for p in sorted(paths) if p.exists())


def reference_fingerprints(questions: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """The reference solutions' program fingerprints of ``questions`` (``evaluate.reference_programs``): about 25 s
    for the whole course on a busy machine, so ``make grade`` computes them while nbgrader grades."""
    return {q: reference_programs(QUESTIONS[q]) for q in questions if q in QUESTIONS}


def course_sources(course: Path, subs: list[Submission],
                   references: Mapping[str, tuple[int, ...]] | None = None) -> dict[str, Sources]:
    """Each question's kernel sources from the graded course: the answer cell each release's grade cell grades
    (matched by the file its ``%%writefile`` line names in the course's own release), read from every student's
    autograded notebook by grade id; the release's stub and the source notebook's solution as common ground, with
    with the reference solutions' programs: ``references`` (question -> fingerprints, see ``reference_fingerprints``),
    else traced here."""
    graded = {(s.student, s.assignment) for s in subs if s.status in ("graded", "salvaged")}
    found_sources: dict[str, Sources] = {}
    for assignment in sorted({s.assignment for s in subs}):
        for path in sorted((course / "release" / assignment).glob("*.ipynb")):
            release = nbformat.read(path, as_version=4)
            stubs = _answer_cells(release)
            solution_path = course / "source" / assignment / path.name
            solutions = _answer_cells(nbformat.read(solution_path, as_version=4)) if solution_path.exists() else {}
            by_file = {src.split("\n", 1)[0].split()[-1]: gid for gid, src in stubs.items()
                       if src.startswith("%%writefile") and len(src.split("\n", 1)[0].split()) == 2}
            for cell in release.cells:
                m = QUESTION_CALL.search(cell.source) if cell.cell_type == "code" else None
                files = [f for f in by_file if f"\"{f}\"" in cell.source or f"'{f}'" in cell.source]
                if m is None or not files:
                    continue
                qid, gid = m.group(1), by_file[files[0]]
                texts = {}
                for student, a in sorted(graded):
                    mine = course / "autograded" / student / a / path.name
                    if a == assignment and mine.exists():
                        answer = _answer_cells(nbformat.read(mine, as_version=4)).get(gid)
                        if answer is not None:
                            texts[student] = _kernel_text(answer)
                given = tuple(_kernel_text(t) for t in (stubs.get(gid), solutions.get(gid)) if t) + \
                    (reference_texts(QUESTIONS[qid]) if qid in QUESTIONS else ())
                if references is not None:
                    program = references.get(qid, ())
                else:
                    program = reference_programs(QUESTIONS[qid]) if qid in QUESTIONS and len(texts) > 1 else ()
                found_sources[qid] = Sources(texts, given, program)
    return found_sources
