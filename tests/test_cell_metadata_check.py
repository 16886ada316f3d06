"""Our ``CheckCellMetadata`` (its schema's validator built once per process) against nbgrader's own, in process: the
same notebooks pass, the same ones fail with the same error and the same log lines."""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import nbformat
import nbgrader.preprocessors
import pytest
from nbgrader.nbgraderformat import MetadataValidator, ValidationError

from nkilab.autograde import nbgrader_plugins
from nkilab.autograde.nbgrader_plugins import AUTOGRADE, FEEDBACK, SANITIZE, CheckCellMetadata

REPO = Path(__file__).resolve().parents[1]


def _release() -> nbformat.NotebookNode:
    return nbformat.read(REPO / "assignments" / "01_vector_add.ipynb", as_version=4)


def _graded_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))


def _edits() -> dict:
    def meta(key: str, value: object):
        def edit(nb):
            _graded_cell(nb).metadata["nbgrader"][key] = value
        return edit

    def drop(key: str):
        def edit(nb):
            del _graded_cell(nb).metadata["nbgrader"][key]
        return edit

    return {"the release as it is": lambda nb: None, "points a string": meta("points", "lots"),
            "grade not a bool": meta("grade", "yes"), "an unknown key": meta("forged", 1),
            "schema too old": meta("schema_version", 2), "schema too new": meta("schema_version", 4),
            "no grade_id": drop("grade_id"), "empty grade_id": meta("grade_id", ""), "no points": drop("points"),
            "cell type changed": meta("cell_type", "markdown"), "no schema version": drop("schema_version")}


def _outcome(pp_class: type, nb: nbformat.NotebookNode, caplog) -> tuple:
    caplog.clear()
    pp = pp_class()
    try:
        pp.preprocess(nb, {})
        raised = None
    except Exception as err:  # what is compared: the class, the message, the chained cause's class and message
        cause = err.__context__
        raised = (type(err), str(err), type(cause), str(cause).splitlines()[0] if cause else None)
    logged = [(r.levelname, r.getMessage().splitlines()[-1]) for r in caplog.records]
    return raised, logged


@pytest.mark.parametrize("edit", list(_edits()))
def test_our_check_passes_and_fails_exactly_as_nbgraders(edit, caplog):
    caplog.set_level(logging.DEBUG)
    nb = _release()
    _edits()[edit](nb)
    ours = _outcome(CheckCellMetadata, copy.deepcopy(nb), caplog)
    theirs = _outcome(nbgrader.preprocessors.CheckCellMetadata, copy.deepcopy(nb), caplog)
    assert ours == theirs
    assert (ours[0] is None) == (edit in ("the release as it is", "cell type changed")), ours


def test_the_schema_is_checked_once_per_process_and_the_check_is_installed(monkeypatch):
    """jsonschema.validate checks the schema against its metaschema on every call; ours does it once."""
    monkeypatch.setattr(nbgrader_plugins, "_VALIDATORS", {})
    schema = MetadataValidator().schema
    cls = nbgrader_plugins.jsonschema.validators.validator_for(schema)
    checked = []
    real = cls.check_schema

    def counting(schema, *args, **kwargs):
        checked.append(1)
        return real(schema, *args, **kwargs)

    monkeypatch.setattr(cls, "check_schema", counting)
    notebooks = [_release() for _ in range(3)]
    cells = sum("nbgrader" in c.metadata for c in notebooks[0].cells)
    for nb in notebooks:
        CheckCellMetadata().preprocess(nb, {})
    assert len(checked) == 1 and cells > 3
    assert f"{nbgrader_plugins.__name__}.CheckCellMetadata" in SANITIZE
    assert f"{nbgrader_plugins.__name__}.CheckCellMetadata" in AUTOGRADE
    assert not any("CheckCellMetadata" in name for name in FEEDBACK)
    assert ValidationError is nbgrader_plugins.ValidationError
