"""``make lab``: JupyterLab on the student's own copies of the notebooks, with no instructor tools in sight.

* ``--dialect`` picks the notebooks: NKI 0.6 (``assignments/*.ipynb``, the course's ``stub_dialect``) or their
  legacy twins (``assignments/legacy/``, CS149's ``neuronxcc.nki``), ``make lab DIALECT=legacy``.
* The released notebooks are copied into the lab directory (``work/``, or ``work/legacy/``) once; a copy
  is never overwritten, so ``git pull`` and ``make release`` never touch a student's answers.  When a lesson
  changed after its copy was made (the release's content differs from what was copied, or, for copies made
  before this was recorded, the release file is newer), the lab says so and how to get the new version.
* nbgrader's server extensions (formgrader, create-assignment, assignment and course lists, validate) and its
  JupyterLab extension are switched off for this lab only, through a lab-specific Jupyter config directory
  (``JUPYTER_CONFIG_DIR``): a student sees no "Formgrader" or "Create Assignment", and no "No
  nbgrader_config.py found" warnings.  A TA's own Jupyter (``~/.jupyter``) is untouched.
* As root (a container, a cloud VM) Jupyter refuses to start without ``--allow-root``: it is added.  Further
  options go to ``jupyter lab`` as given (``make lab LAB_ARGS="--no-browser --port 8899"``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from nkilab.authoring.release import assignments_dir
from nkilab.course import manifest
from nkisim.api import Dialect

#: the nbgrader server extensions ``pip install nbgrader`` enables for every Jupyter server
NBGRADER_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
)
#: nbgrader's JupyterLab extension (Formgrader, Create Assignment, Assignment List, Course List, Validate)
NBGRADER_LAB_EXTENSION = "@jupyter/nbgrader"
#: where the lab records which release each copy was made from: notebook name -> sha256 of the release
COPIES_RECORD = ".nkilab-copies.json"


@dataclass(frozen=True)
class Stale:
    """A student's copy made from an older release of its lesson."""

    copy: Path
    release: Path

    def warning(self) -> str:
        return (f"make lab: {self.copy} was copied from an older {self.release} (the lesson changed since); "
                f"your copy is kept as it is. To start from the new version, rename your copy (e.g. to "
                f"{self.copy.stem}.old.ipynb) and run make lab again: your answers stay in the renamed file.")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prepare_copies(assignments: Path, lab_dir: Path) -> tuple[list[Path], list[Stale]]:
    """Copy every released notebook missing from ``lab_dir``; return (copied, stale copies)."""
    lab_dir.mkdir(parents=True, exist_ok=True)
    record_path = lab_dir / COPIES_RECORD
    try:
        record = json.loads(record_path.read_text())
        record = record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        record = {}
    copied, stale = [], []
    for release in sorted(assignments.glob("*.ipynb")):
        copy = lab_dir / release.name
        digest = _digest(release)
        if not copy.exists():
            shutil.copy2(release, copy)
            record[release.name] = digest
            copied.append(copy)
            continue
        made_from = record.get(release.name)
        if made_from is not None:
            if made_from != digest:
                stale.append(Stale(copy, release))
        elif release.stat().st_mtime > copy.stat().st_mtime:  # a copy made before copies were recorded
            stale.append(Stale(copy, release))
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return copied, stale


def write_config(config_dir: Path) -> Path:
    """A Jupyter config directory that switches nbgrader's extensions off (server and JupyterLab)."""
    config_dir.mkdir(parents=True, exist_ok=True)
    server = {"ServerApp": {"jpserver_extensions": {name: False for name in NBGRADER_SERVER_EXTENSIONS}}}
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(server, indent=1) + "\n")
    labconfig = config_dir / "labconfig"
    labconfig.mkdir(exist_ok=True)
    page = {"disabledExtensions": {NBGRADER_LAB_EXTENSION: True}}
    (labconfig / "page_config.json").write_text(json.dumps(page, indent=1) + "\n")
    return config_dir


#: how the lab names each dialect
DIALECT_NAMES = {Dialect.NKI: "NKI 0.6 (import nki)", Dialect.LEGACY: "legacy (import neuronxcc.nki)"}


def lab_dir_for(dialect: Dialect | str) -> str:
    """The default lab directory: ``work`` for the course's dialect, ``work/<dialect>`` for its twin (the two sets
    share notebook names, so they cannot share a folder)."""
    which = manifest.dialect(dialect)
    return "work" if which is manifest.course().stub_dialect else f"work/{which.word}"


def command(lab_dir: Path, lab_args: list[str], jupyter: str) -> list[str]:
    """The ``jupyter lab`` command line: the lab directory, ``--allow-root`` as root, then the user's options."""
    cmd = [jupyter, "lab", f"--notebook-dir={lab_dir}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in lab_args:
        cmd.append("--allow-root")
    return cmd + lab_args


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m nkilab.authoring.lab", description=__doc__.split("\n\n")[0])
    p.add_argument("--dialect", choices=manifest.DIALECT_WORDS, default=None,
                   help="which notebooks: nki (NKI 0.6, import nki: assignments/) or legacy (import neuronxcc.nki, "
                        "CS149's dialect: assignments/legacy/); default: the course's stub_dialect")
    p.add_argument("--dir", default=None,
                   help="the lab directory with the student's copies (default: work, or work/<dialect> for the "
                        "other dialect)")
    p.add_argument("--assignments", default=None, help="the released notebooks (default: the dialect's folder)")
    p.add_argument("--config-dir", default="build/lab-config",
                   help="the lab's own Jupyter config directory (default: build/lab-config)")
    p.add_argument("--prepare-only", action="store_true", help="copy and write the config, do not start Jupyter")
    opts, lab_args = p.parse_known_args(argv)
    dialect = manifest.dialect(opts.dialect or manifest.course().stub_dialect)
    assignments = Path(opts.assignments) if opts.assignments else assignments_dir(Path("."), dialect)
    lab_dir = Path(opts.dir or lab_dir_for(dialect)).resolve()
    print(f"make lab: the {DIALECT_NAMES[dialect]} notebooks of {assignments}")
    copied, stale = prepare_copies(assignments, lab_dir)
    for path in copied:
        print(f"make lab: copied {path.name} into {lab_dir}")
    for s in stale:
        print(s.warning(), file=sys.stderr)
    config_dir = write_config(Path(opts.config_dir).resolve())
    jupyter = str(Path(sys.executable).with_name("jupyter"))
    cmd = command(lab_dir, lab_args, jupyter if os.path.exists(jupyter) else "jupyter")
    if opts.prepare_only:
        print(" ".join(cmd))
        return 0
    shown = [a.split("=", 1)[0] + "=..." if "token=" in a.lower() else a for a in cmd]
    print(f"make lab: {' '.join(shown)} (nbgrader's instructor tools off: JUPYTER_CONFIG_DIR={config_dir})")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config_dir)}
    # the venv's own tools (nbgrader's alembic, jupytext) are found by the kernels and the server
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    sys.stdout.flush()
    os.execvpe(cmd[0], cmd, env)  # Jupyter takes over this process: Ctrl-C and signals reach it directly
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
