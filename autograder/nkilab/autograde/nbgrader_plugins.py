"""nbgrader preprocessors for grading the NKI Kernel Lab, and the settings that plug them into ``nbgrader``.

Each one closes a gap found by running nbgrader 0.9.6 against hostile submissions:

* ``RestoreSubmission`` (sanitize step, replaces ``DeduplicateIds``): the submission is rebuilt on the
  released notebook (see ``nkilab.intake.sanitize``), so added cells, duplicated ``grade_id``s, deleted or edited
  cells and pasted notebooks neither cheat nor abort the batch;
* ``TimeLimitedExecute`` (autograde step, replaces ``Execute``): nbgrader only limits each cell; this also
  caps the whole notebook, so no submission can hold the batch for long; ``nkilab.autograde.direct_grade.DirectGrade``,
  its subclass, is the step actually installed: the course's notebooks are graded without a Jupyter kernel;
* ``CheckCellMetadata`` (sanitize and autograde steps): nbgrader's check, its schema's validator built once per
  process rather than for every cell (the same checks and errors);
* ``GradeCellStderrToStdout``: nbgrader gives 0 to a grade cell with *any* stderr output; our grade cells
  run no student code in the notebook, so a library warning must not zero a correct kernel;
* ``RenderGradeRecords`` (feedback step): the autograded copy of a grade cell holds the TA's report (every
  hidden case: shape, dtype, first wrong element) and the grade record it was printed from
  (``nkilab.judge.results``); the feedback shows the record rendered for the student instead -- hidden cases as a
  count and their verdict categories -- and nothing else of the cell's outputs;
* ``TruncateOutputs`` (feedback step): an output's text is student-controlled (a kernel can raise with a
  megabyte-long message); each is capped at a few KB, head and tail kept;
* ``SanitizeStudentHTML`` and ``FeedbackHTMLExporter`` (feedback step): nbgrader copies written answers and
  outputs into the feedback page as they are; there ``<script>``, ``onerror=`` and ``javascript:`` links would
  run in the browser of whoever opens it.  nbconvert's ``SanitizeHTML`` removes scripts, widgets and SVG from
  outputs; the rendered markdown is cleaned by the exporter (cleaning the markdown *source* instead misses
  ``[x](javascript:...)`` links and garbles ``<``, ``&`` and ``>`` quotes in the student's text).

``grading_flags`` and ``feedback_flags`` render all of this as ``nbgrader`` command-line options (they win over any
``nbgrader_config.py``), so the same settings grade the bundled example class and a TA's own course.
"""

from __future__ import annotations

import html
import math
import re
import time
import traceback
from pathlib import Path
from typing import Any

import bleach
import jsonschema
import nbformat
import nbgrader
import nbgrader.preprocessors
from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool, Integer, default, validate

from nkilab.intake.sanitize import is_grade, restore
from nkilab.judge.check import truncate_text
from nkilab.judge.results import MIME, Audience, GradeRecord

_HERE = "nkilab.autograde.nbgrader_plugins"
SANITIZE = ["nbgrader.preprocessors.ClearOutput", f"{_HERE}.RestoreSubmission",
            "nbgrader.preprocessors.OverwriteKernelspec", "nbgrader.preprocessors.OverwriteCells",
            f"{_HERE}.CheckCellMetadata"]
AUTOGRADE = ["nkilab.autograde.direct_grade.DirectGrade", "nbgrader.preprocessors.IgnorePattern", f"{_HERE}.GradeCellStderrToStdout",
             "nbgrader.preprocessors.LimitOutput", "nbgrader.preprocessors.SaveAutoGrades",
             "nbgrader.preprocessors.AssignLatePenalties", f"{_HERE}.CheckCellMetadata"]
FEEDBACK = ["nbgrader.preprocessors.GetGrades", f"{_HERE}.MarkPendingGrades", "nbgrader.preprocessors.ClearHiddenTests",
            f"{_HERE}.RenderGradeRecords",
            f"{_HERE}.TruncateOutputs", f"{_HERE}.SanitizeStudentHTML", "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor"]
FEEDBACK_EXPORTER = f"{_HERE}.FeedbackHTMLExporter"
#: our feedback template (nbgrader's, with unmarked written answers shown as waiting for a TA) and where it and
#: nbgrader's own (which it extends) are found
FEEDBACK_TEMPLATE = "nkilab_feedback"
TEMPLATE_DIRS = [str(Path(__file__).resolve().parent / "templates"),
                 str(Path(nbgrader.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates")]



def _coursedir(pp: NbGraderPreprocessor) -> CourseDirectory:
    """The running converter's course directory (preprocessors are created with the exporter as parent)."""
    node = pp.parent
    while node is not None:
        found = getattr(node, "coursedir", None)
        if isinstance(found, CourseDirectory):
            return found
        node = getattr(node, "parent", None)
    return CourseDirectory(config=pp.config)


class RestoreSubmission(NbGraderPreprocessor):
    """Rebuild the submission on ``release/<assignment>/<notebook>.ipynb``; only answer sources are kept."""

    skip_teaching_cells = Bool(
        True, help="Do not run self-checks, demos and plots after the first answer cell while grading").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        info = resources["nbgrader"]
        coursedir = _coursedir(self)
        folder = Path(coursedir.format_path(coursedir.release_directory, ".", info["assignment"]))
        release = nbformat.read(folder / f"{info['notebook']}.ipynb", as_version=4)
        restored = restore(nb, release, skip_teaching_cells=self.skip_teaching_cells)
        for note in restored.notes:
            self.log.warning("%s / %s: %s", info["student"], info["notebook"], note)
        return restored.notebook, resources


class _SchemaOnce(BaseMetadataValidator):
    """nbgrader's per-cell metadata check with ``jsonschema.validate``'s steps spelled out, the schema's own check and
    its validator done once per process instead of once per cell (same versions checked, same error raised)."""

    def validate_cell(self, cell: NotebookNode) -> None:
        if "nbgrader" not in cell.metadata:
            return
        version = cell.metadata["nbgrader"].get("schema_version", 0)
        if version != self.schema_version:  # nbgrader's own wording for both directions
            super().validate_cell(cell)
            return
        error = jsonschema.exceptions.best_match(_validator(version, self.schema).iter_errors(cell.metadata["nbgrader"]))
        if error is not None:
            raise error


_VALIDATORS: dict[int, Any] = {}


def _validator(version: int, schema: dict) -> Any:
    """The validator of nbgrader's metadata schema ``version`` (its file, read by the validator: fixed per version)."""
    if version not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[version] = cls(schema)
    return _VALIDATORS[version]


class _CellMetadataValidator(MetadataValidator, _SchemaOnce):
    """nbgrader's current metadata validator (its checks after the schema's run as they are) on ``_SchemaOnce``."""


class CheckCellMetadata(nbgrader.preprocessors.CheckCellMetadata):
    """nbgrader's ``CheckCellMetadata`` (run twice per notebook autograded) with its validator's schema checked once
    per process: ``jsonschema.validate`` checks the schema itself against the metaschema before every cell, 6 % of an
    nbgrader autograde process's CPU in the example class."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        try:
            _CellMetadataValidator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg)  # noqa: B904 (nbgrader's own raise, its traceback kept as it logs it)
        return nb, resources


class TimeLimitedExecute(Execute):
    """nbgrader's ``Execute`` with a wall-clock limit for the whole notebook on top of the per-cell one."""

    notebook_timeout = Integer(
        0, help="Seconds for the whole notebook (0: no limit); each cell gets at most what is left").tag(config=True)

    _deadline: float | None = None

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict | None = None,
                   km: Any = None) -> tuple[NotebookNode, ResourcesDict | None]:
        self._deadline = time.monotonic() + self.notebook_timeout if self.notebook_timeout else None
        return super().preprocess(nb, resources, km=km)

    def _get_timeout(self, cell: NotebookNode | None) -> int | None:
        per_cell = super()._get_timeout(cell)
        if self._deadline is None:
            return per_cell
        left = max(1, math.ceil(self._deadline - time.monotonic()))
        return left if per_cell is None else min(per_cell, left)


class GradeCellStderrToStdout(NbGraderPreprocessor):
    """Move a grade cell's stderr text to stdout (marked ``[stderr]``) so nbgrader does not zero the cell."""

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type == "code" and is_grade(cell):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream" and out.get("name") == "stderr":
                    out["name"] = "stdout"
                    out["text"] = "".join("[stderr] " + line for line in out.get("text", "").splitlines(True))
        return cell, resources


class MarkPendingGrades(NbGraderPreprocessor):
    """A graded cell nobody has scored yet (a written answer before a TA marks it: neither an automatic nor a
    manual score in the gradebook, which nbgrader reports as a score of 0) is marked ``pending``, and the
    notebook's pending points go in ``resources``: the feedback template then says "waiting for a TA" where
    nbgrader's would print ``Score: 0.0 / 1.0``, and its total says how many points still wait."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        info = resources["nbgrader"]
        pending = 0.0
        with Gradebook(info["db_url"]) as gb:
            for cell in nb.cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if not meta.get("grade"):
                    continue
                grade = gb.find_grade(meta["grade_id"], info["notebook"], info["assignment"], info["student"])
                if grade.auto_score is None and grade.manual_score is None:
                    meta["pending"] = True
                    pending += float(grade.max_score or 0.0)
        info["pending_points"] = pending
        return nb, resources


class RenderGradeRecords(NbGraderPreprocessor):
    """Feedback rendered from each grade cell's record, for the student (see the module docstring).

    A grade cell's outputs become the record's student rendering and the score; a grade cell without a record
    (it did not finish) shows why in the grader's words and its score.  No record survives into the page from
    any cell: a record holds the hidden cases' details."""

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type != "code":
            return cell, resources
        outputs = cell.get("outputs", [])
        if not is_grade(cell):
            cell.outputs = [o for o in outputs if MIME not in o.get("data", {})]
            return cell, resources
        rec = None
        for out in outputs:
            if MIME in out.get("data", {}):
                try:
                    rec = GradeRecord.from_json(out["data"][MIME])
                except ValueError:
                    rec = None
        score = [o for o in outputs if o.get("output_type") == "execute_result" and _is_number(o)]
        errors = [o for o in outputs if o.get("output_type") == "error"]
        if rec is not None:
            text = rec.render_text(Audience.STUDENT)
        elif errors:
            text = f"This grade cell did not finish ({errors[0].get('ename', 'error')}: {errors[0].get('evalue', '')})\n"
        else:
            text = "This grade cell left no grading report.\n"
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)] + [
            nbformat.v4.new_output("execute_result", data={"text/plain": o["data"]["text/plain"]},
                                   execution_count=o.get("execution_count")) for o in score[-1:]]
        return cell, resources


def _is_number(out: NotebookNode) -> bool:
    try:
        return math.isfinite(float(_joined(out.get("data", {}).get("text/plain", ""))))
    except ValueError:
        return False


def _joined(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value


class TruncateOutputs(NbGraderPreprocessor):
    """Cap the text of every output in the feedback (streams, errors, text/* data); images are left alone.

    nbgrader's ``LimitOutput`` counts lines, not characters: one line can still be megabytes of the
    student's exception message, which would land in the feedback page as is."""

    max_chars = Integer(8000, help="Characters kept of each output's text (head and tail)").tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type != "code":
            return cell, resources
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "stream":
                out["text"] = truncate_text(_joined(out.get("text", "")), self.max_chars)
            elif kind == "error":
                out["ename"] = truncate_text(str(out.get("ename", "")), 200)
                out["evalue"] = truncate_text(str(out.get("evalue", "")), self.max_chars)
                out["traceback"] = [truncate_text("\n".join(out.get("traceback", [])), self.max_chars)]
            elif kind in ("execute_result", "display_data"):
                data = out.get("data", {})
                for mime, value in data.items():
                    if mime.startswith("text/") and isinstance(value, (str, list)):
                        data[mime] = truncate_text(_joined(value), self.max_chars)
        return cell, resources


class SanitizeStudentHTML(SanitizeHTML):
    """nbconvert's ``SanitizeHTML`` for outputs and raw cells; markdown cells are left to ``FeedbackHTMLExporter``.

    ``SanitizeHTML`` cleans markdown *source* as if it were HTML: a ``[link](javascript:...)`` passes (it is
    not HTML yet) and code such as ``a < b && c`` is shown as ``a &lt; b &amp;&amp; c``.  Also drops widget
    state, whose renderer script the page would otherwise load and feed (the release carries none)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type == "markdown":
            return cell, resources
        return super().preprocess_cell(cell, resources, index)


# What rendered markdown needs, nothing that runs: no script/style/iframe/svg/form/object, no on* or style
# attributes, links only to http(s)/mailto/#anchors, images also from embedded raster data (attachments).
MARKDOWN_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"})
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp);base64,")
_URI_NOISE = re.compile(r"[`\x00-\x20\x7f-\xa0\s\ufffd]+")  # what browsers (and bleach) ignore in a scheme


def _is_data_uri(value: str) -> tuple[bool, bool]:
    """(a ``data:`` URI, an embedded raster image), seen as a browser would (entities, blanks, case)."""
    uri = _URI_NOISE.sub("", html.unescape(value)).lower()
    return uri.startswith("data:"), bool(_DATA_IMAGE.match(uri))


def _markdown_attribute(tag: str, name: str, value: str) -> bool:
    if name in ("class", "title") or (name == "id" and tag in {"h1", "h2", "h3", "h4", "h5", "h6"}):
        return True
    if tag == "a" and name == "href":
        return not _is_data_uri(value)[0]
    if tag == "img" and name == "src":
        data, image = _is_data_uri(value)
        return image or not data
    return (tag == "img" and name in ("alt", "width", "height")) or (tag in ("td", "th") and name in (
        "align", "colspan", "rowspan")) or (tag == "ol" and name == "start")


_MARKDOWN_CLEANER = bleach.Cleaner(tags=MARKDOWN_TAGS, attributes=_markdown_attribute,
                                   protocols={"http", "https", "mailto", "data"}, strip=False, strip_comments=True)


def clean_markdown_html(html: str) -> str:
    """Rendered markdown with everything active removed (disallowed tags are shown as text, not run)."""
    return _MARKDOWN_CLEANER.clean(html)


class FeedbackHTMLExporter(HTMLExporter):
    """nbgrader's feedback exporter (``HTMLExporter`` with the ``feedback`` template) with safe markdown.

    nbgrader's template renders written answers and TA comments with ``markdown2html`` and never cleans the
    result (its markdown block ignores ``sanitize_html``); here every rendered piece of markdown is cleaned.
    ``sanitize_html`` also cleans HTML outputs in the template."""

    @default("sanitize_html")
    def _sanitize_html_default(self) -> bool:
        return True

    @default("extra_template_basedirs")
    def _template_dirs_default(self) -> list[str]:
        return list(TEMPLATE_DIRS)

    @validate("extra_template_basedirs")
    def _with_our_templates(self, proposal: dict) -> list[str]:
        """Our feedback template and nbgrader's, whatever else is configured (nbgrader sets this trait for every
        ``HTMLExporter``, and a list cannot be given to a class nbgrader does not know on its command line)."""
        dirs = [d for d in proposal["value"] if d not in TEMPLATE_DIRS]
        return [*TEMPLATE_DIRS, *dirs]

    @validate("extra_template_paths")
    def _with_template_roots(self, proposal: dict) -> list[str]:
        """The same folders as roots of template names too: our template extends ``feedback/index.html.j2``."""
        return [*proposal["value"], *[d for d in TEMPLATE_DIRS if d not in proposal["value"]]]

    @default("extra_template_paths")
    def _template_roots_default(self) -> list[str]:
        return list(TEMPLATE_DIRS)

    @pass_context
    def markdown2html(self, context: Any, source: str) -> str:
        return clean_markdown_html(super().markdown2html(context, source))


def _list(values: list[str]) -> str:
    return "[" + ", ".join(repr(v) for v in values) + "]"


def grading_flags(*, cell_timeout: int, notebook_timeout: int) -> list[str]:
    """``nbgrader autograde`` options: our sanitize/execute steps, the time limits, nothing copied but notebooks.

    ``CourseDirectory.ignore = ['*', '.*']`` keeps every non-notebook file of a submission out of
    ``autograded/``: the grading kernel runs there with its directory first on ``sys.path``, so a submitted
    ``nkilab.py`` or compiled module would otherwise replace the grader.  The kernels a notebook needs are
    written by its own ``%%writefile`` cells."""
    return [f"--Autograde.sanitize_preprocessors={_list(SANITIZE)}",
            f"--Autograde.autograde_preprocessors={_list(AUTOGRADE)}",
            "--OverwriteCells.add_missing_cells=True",
            f"--Execute.timeout={int(cell_timeout)}",
            f"--TimeLimitedExecute.notebook_timeout={int(notebook_timeout)}",
            "--CourseDirectory.ignore=['*', '.*']"]


def feedback_flags() -> list[str]:
    """``nbgrader generate_feedback`` options: hidden test regions and hidden-case details stripped, outputs
    capped, and nothing from a student's cells active in the page (scripts, event handlers, ``javascript:``)."""
    return [f"--GenerateFeedback.preprocessors={_list(FEEDBACK)}",
            f"--GenerateFeedback.exporter_class={FEEDBACK_EXPORTER}",
            f"--FeedbackHTMLExporter.template_name={FEEDBACK_TEMPLATE}"]
