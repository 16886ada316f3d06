"""One word per concept in the grader's and the simulator's identifiers.

Grading a hand-in that nbgrader discarded, cell by cell outside Jupyter, is *salvaging* it (``nkilab.batch.salvage``,
``handin_audit.salvage_submission``, "salvaged" in the logs and the table); it was also called *rescue* (the module
that decided it), which made a reader look for two mechanisms.  This reads every identifier of the Python the grader
and its tests are made of -- module and file names, definitions, arguments, names, attributes, imports -- split at
underscores and case changes, and fails on a word retired in favour of another.

In nkisim (issue 32 scope 3) an *instruction* is what one engine runs: ``cost.trace.Instruction``, the trace record
(it was ``Instr``, also spelt ``instr``/``instrs`` in names), and what the kernel's ``nisa`` call hands back is AWS's
``NkiInstruction``, a handle on one.  What an instruction is -- its engine and how it is priced -- is its
``InstructionKind`` (``cost.instructions``, ``nkisim.api``; it was ``Instruction`` too).  A *call* is one NKI API
call a kernel makes (``program.ir.Call``), which issues any number of instructions.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the example class is students' code (some of it does not even parse, on purpose): not the grader's words
ROOTS = [REPO / "autograder" / "nkilab", REPO / "tests", REPO / "bench", REPO / "docs" / "_ext", REPO / "nkisim",
         REPO / "notebooks"]

#: retired word -> the word for its concept
RETIRED = {"rescue": "salvage", "rescued": "salvaged", "rescues": "salvages", "rescuing": "salvaging",
           "instr": "instruction", "instrs": "instructions"}


def words(identifier: str) -> list[str]:
    return [w.lower() for part in identifier.split("_") for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", part)]


def identifiers(path: Path) -> set[str]:
    """Every identifier ``path`` defines or uses, and the names of the file and its folders."""
    out = set(path.relative_to(REPO).with_suffix("").parts)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.update((node.name or "").split("."))
            if node.asname:
                out.add(node.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.update(node.module.split("."))
    return out


def retired_words(paths: list[Path]) -> list[str]:
    return sorted(f"{p.relative_to(REPO)}: {name} (say {RETIRED[w]})"
                  for p in paths for name in identifiers(p) for w in words(name) if w in RETIRED)


def sources() -> list[Path]:
    return sorted(p for root in ROOTS for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def test_words_split_as_a_reader_reads_them():
    assert words("salvage_submission") == ["salvage", "submission"]
    assert words("RescueNotes") == ["rescue", "notes"] and words("HTTPRescue2") == ["http", "rescue", "2"]


def test_a_retired_word_in_an_identifier_is_found(tmp_path):
    mutant = REPO / "tests" / "_mutant_one_word.py"  # under REPO, so it is named as the others are
    try:
        mutant.write_text("def rescue_submission(rescued_cells):\n    return rescued_cells\n")
        found = retired_words([mutant])
    finally:
        mutant.unlink()
    assert found == ["tests/_mutant_one_word.py: rescue_submission (say salvage)",
                     "tests/_mutant_one_word.py: rescued_cells (say salvaged)"]


def test_no_retired_word_in_the_graders_identifiers():
    assert retired_words(sources()) == []


#: every class nkisim defines whose name holds "instruction", and the one concept it is
INSTRUCTION_CLASSES = {
    ("cost/trace.py", "Instruction"): "an instruction one engine runs (the trace record the cost model prices)",
    ("cost/instructions.py", "InstructionKind"): "what an instruction is: its engine and its cost formula",
    ("api.py", "InstructionKind"): "the same, as tools and the docs read it",
    ("frontend/v06/adapters/instruction.py", "NkiInstruction"): "AWS's name: an nisa call's handle on its instruction",
}


def test_each_instruction_class_is_one_concept():
    """"Instruction" names a record of what an engine runs and nothing else: a new class with the word in its name
    (another ``Instruction`` meaning the kind, say) must say here which concept it is."""
    nkisim = REPO / "nkisim"
    found = {(str(p.relative_to(nkisim)), node.name) for p in nkisim.rglob("*.py") if "__pycache__" not in p.parts
             for node in ast.walk(ast.parse(p.read_text())) if isinstance(node, ast.ClassDef)
             and "instruction" in words(node.name)}
    assert found == set(INSTRUCTION_CLASSES)


#: a module name retired in nkisim -> the word for its concept
RETIRED_MODULES = {"record": "recording"}


def test_the_recording_modules_share_one_name():
    """Compiling a launch into a program is *recording* it: the hook every NKI call passes (``core.recording``) and
    the recorder a launch installs (``runtime.recording``, which was ``runtime.record``) are found under one word.
    (A *record*, the noun, is a typed record: a trace record, the record of a launch.)"""
    found = sorted(f"{p.relative_to(REPO)} (say {RETIRED_MODULES[p.stem]})" for p in (REPO / "nkisim").rglob("*.py")
                   if p.stem in RETIRED_MODULES)
    assert found == []
    assert (REPO / "nkisim" / "core" / "recording.py").is_file() and (REPO / "nkisim" / "runtime" / "recording.py").is_file()
