"""The set-up is lean where students and TAs stand: requirements.txt (all that `make lab` and `make grade` install)
brings no torch and no GPU stack, not even through a dependency, and requirements-torch.txt pins PyTorch's CPU
build for the targets that need it (`make test`, `make setup`, `make docs`). Read from the files, the installed
packages' own metadata and the Makefile's rules; nothing is installed or run."""

import re
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: the GPU stack and the packages that bring it: torch itself, NVIDIA's CUDA wheels, Triton (torch's GPU compiler)
GPU = re.compile(r"^(torch|torchvision|torchaudio|triton|jax|jaxlib|cupy.*|nvidia-.*|cuda-.*)$")


def requirements(name: str) -> tuple[list[str], list[Requirement]]:
    """A requirements file's option lines (``--extra-index-url ...``) and its requirements, comments dropped."""
    options, reqs = [], []
    for line in (REPO / name).read_text().splitlines():
        spec = line.split("#")[0].strip()
        if spec.startswith("-"):
            options.append(spec)
        elif spec:
            reqs.append(Requirement(spec))
    return options, reqs


def closure(reqs: list[Requirement]) -> dict[str, str]:
    """Every distribution the requirements pull in on this platform, by the installed packages' own metadata
    (name -> the requirement that first brought it), extras followed."""
    env = default_environment()
    seen: dict[str, str] = {}
    todo = [(r, str(r)) for r in reqs if r.marker is None or r.marker.evaluate(env)]
    while todo:
        req, via = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen[name] = via
        for dep in metadata.requires(req.name) or []:
            d = Requirement(dep)
            if d.marker is None or any(d.marker.evaluate({**env, "extra": e}) for e in [""] + sorted(req.extras)):
                todo.append((d, via))
    return seen


def test_the_student_requirements_bring_no_torch_and_no_gpu_stack():
    options, reqs = requirements("requirements.txt")
    assert not options
    assert all(len(r.specifier) == 1 and next(iter(r.specifier)).operator == "==" for r in reqs), "pin every line"
    named = [r.name for r in reqs if GPU.match(canonicalize_name(r.name))]
    assert not named, f"requirements.txt names {named}: torch goes in requirements-torch.txt"
    pulled = {n: via for n, via in closure(reqs).items() if GPU.match(n)}
    assert not pulled, f"requirements.txt pulls in the GPU stack: {pulled}"
    assert "numpy" in closure(reqs) and "nbgrader" in closure(reqs)  # the closure is read, not empty


def test_torch_is_pinned_to_the_cpu_build_from_pytorchs_cpu_index():
    options, reqs = requirements("requirements-torch.txt")
    assert options == [f"--extra-index-url {CPU_INDEX}"]
    assert {canonicalize_name(r.name) for r in reqs} == {"torch"}
    for r in reqs:
        (pin,) = r.specifier
        assert pin.operator == "=="
        darwin = r.marker is not None and r.marker.evaluate({**default_environment(), "sys_platform": "darwin"})
        # Linux and Windows: only the CPU index has a "+cpu" release; PyPI's one depends on nvidia-* wheels.
        # macOS wheels have no CUDA build and no local version.
        assert pin.version.endswith("+cpu") != darwin, str(r)
    assert len(reqs) == 2 and {str(r.marker) for r in reqs} == {'sys_platform != "darwin"',
                                                                  'sys_platform == "darwin"'}


def makefile_prerequisites() -> dict[str, list[str]]:
    """The Makefile's rules: target -> its prerequisites (variables left as written, e.g. ``$(STAMP)``)."""
    rules: dict[str, list[str]] = {}
    for line in (REPO / "Makefile").read_text().splitlines():
        m = re.match(r"^([^\s:=#][^:=]*):(?!=)(.*)$", line)
        if m:
            for target in m.group(1).split():
                rules.setdefault(target, []).extend(m.group(2).split())
    return rules


def installs(target: str, rules: dict[str, list[str]]) -> set[str]:
    """Everything ``make target`` makes first, transitively."""
    seen: set[str] = set()
    todo = [target]
    while todo:
        for p in rules.get(todo.pop(), []):
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return seen


def test_the_student_path_installs_no_torch_and_the_suite_does():
    rules = makefile_prerequisites()
    assert "requirements-torch.txt" in rules["$(TORCH_STAMP)"] and "requirements.txt" in rules["$(STAMP)"]
    for target in ("lab", "grade", "course", "gradescope"):
        assert "$(STAMP)" in installs(target, rules) and "$(TORCH_STAMP)" not in installs(target, rules), target
    for target in ("test", "test-fast", "setup", "docs"):
        assert {"$(STAMP)", "$(TORCH_STAMP)"} <= installs(target, rules), target
    recipe = (REPO / "Makefile").read_text().split("$(TORCH_STAMP): ", 1)[1].split("\n\n", 1)[0]
    assert "pip install -q -r requirements-torch.txt" in recipe
    # the first attempt does not wait out pip's retries against an unreachable CPU index; a failed one is retried with them
    install = next(line for line in recipe.splitlines() if "pip install" in line)
    first, _, fallback = install.partition(" || ")
    assert "--retries 0 -r requirements-torch.txt" in first and fallback.endswith("pip install -q -r requirements-torch.txt")


@pytest.mark.processes
def test_nbformat_imports_without_building_parsers():
    """jsonschema 4.25+ imports rfc3987-syntax, which builds 35 Lark parsers when imported: 1.5 s of CPU in every
    process that imports nbformat (each nbgrader command, the grader, every test worker).  The pinned jsonschema
    does not, and no schema our stack validates uses the iri formats it checks."""
    import sys

    pins = {canonicalize_name(r.name): str(r.specifier) for r in requirements("requirements.txt")[1]}
    assert pins["jsonschema"] == "==4.24.1"
    run = subprocess.run([sys.executable, "-c", "import sys, nbformat; print(sorted(m for m in sys.modules "
                          "if m.split('.')[0] in ('rfc3987_syntax', 'lark')))"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stdout + run.stderr


def _make_python(*args: str) -> str:
    out = subprocess.run(["make", "--no-print-directory", "--eval", "print-python: ; @echo $(PYTHON)", "print-python",
                          *args], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.processes
def test_the_venv_is_made_from_debians_optimised_311_when_there_is_one():
    """The suite is CPU-bound, and Debian's interpreter is built with profile-guided and link-time optimisation: the
    Makefile makes .venv from /usr/bin/python3 when that is a 3.11 with venv (the pinned wheels' version), else from
    python3 on PATH; a PYTHON given on the command line wins."""
    debian = Path("/usr/bin/python3")
    usable = debian.exists() and subprocess.run(
        [str(debian), "-c", "import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))"],
        capture_output=True).returncode == 0
    assert _make_python() == ("/usr/bin/python3" if usable else "python3")
    assert _make_python("PYTHON=/opt/other/python") == "/opt/other/python"
