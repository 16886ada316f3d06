# NKI Kernel Lab. Every target creates/updates the virtualenv itself.
# The interpreter .venv is made from (an existing .venv keeps its own). Debian's /usr/bin/python3 when it is a 3.11
# with venv, else python3 on PATH: Debian builds its interpreter with profile-guided and link-time optimisation, and
# the suite is CPU-bound on 2 cores (measured side by side on this project, 3 alternating runs each: the quick
# calibration 12.1/10.7/12.6 s of CPU against 13.2/12.2/14.3 s under a pyenv build without them, about 11% less).
# `make test PYTHON=python3.12` picks another (remove .venv first).
PYTHON ?= $(shell /usr/bin/python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' \
	>/dev/null 2>&1 && echo /usr/bin/python3 || echo python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.installed-torch

.PHONY: sandbox-tool gradescope setup setup-lean test test-fast bench lint clean release release-check lab grade docs course

# Two layers of .venv, each remade when its requirements change: requirements.txt is all that students (make lab)
# and TAs grading (make grade) need; requirements-torch.txt adds PyTorch's CPU build (about 0.9 GB with sympy), which
# only the suite's references and the site's lesson outputs use. make setup is the developer's set-up: both.
setup: setup-lean $(TORCH_STAMP)

# Bytecode for the project's own modules, compiled once here: every sandboxed child, executor server, notebook
# kernel and nbgrader process imports them, and where PYTHONDONTWRITEBYTECODE is set (or the tree is read-only, as
# in the sandbox) each would compile them again (about 0.2 s of CPU per process; a class grading starts thousands).
setup-lean: $(STAMP)
	@command -v bwrap >/dev/null 2>&1 || $(MAKE) --no-print-directory sandbox-tool
	@$(PY) -m compileall -q -j 0 nkisim autograder/nkilab bench docs/_ext >/dev/null

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m nkisim --install-hook
	$(PY) -m nkilab.authoring.nbgrader_course install-path-hook
	touch $(STAMP)

# PyTorch's CPU index first without retries: on a machine that reaches only package registries or a local mirror
# (CI's and this project's: the same wheels come from the mirror), pip retries the unreachable index five times with
# back-off for each of torch's seven distributions, 81 s against 6 s to resolve torch alone (measured with
# `pip install --dry-run`). Should that first attempt fail (a machine that needs the index, on a flaky network), the
# second one has pip's usual retries.
$(TORCH_STAMP): requirements-torch.txt $(STAMP)
	$(PY) -m pip install -q --retries 0 -r requirements-torch.txt || $(PY) -m pip install -q -r requirements-torch.txt
	touch $(TORCH_STAMP)

# Student code is graded inside Debian's bubblewrap sandbox (autograder/nkilab/isolate/sandbox.py).
sandbox-tool:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	else \
		echo "make: bubblewrap (bwrap) is missing; grading needs it: sudo apt-get install bubblewrap" >&2; \
	fi

# The suite on every core (pytest-xdist); --dist loadfile keeps each test module on one worker, so a module's
# fixtures (the example class graded, the docs site built) run once. The twenty slowest tests are listed at the end.
TEST_JOBS ?= auto
PYTEST_JOBS := -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

test: setup
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m mypy
	$(PY) -m pytest -q $(PYTEST_JOBS) --durations=20

# The edit loop: no slow test and no test that starts a process (a sandbox, a Jupyter kernel, a server, a command:
# such a test fails here unless marked `processes`), stopping at the first failure.
test-fast: $(STAMP) $(TORCH_STAMP)
	NKILAB_TEST_FAST=1 $(PY) -m pytest -q $(PYTEST_JOBS) -m "not slow and not processes" -x

# Simulator wall time vs NumPy, cost-model estimates vs published hardware latencies, then grading seconds per
# hand-in on a synthetic class (NKILAB_BENCH_STUDENTS students x every stage); with NKILIB=<clone of
# aws-neuron/nki-library>, the slowest of its test shapes at full size (the largest case of each test file).
NKILIB ?=
bench: $(STAMP) $(TORCH_STAMP)
	mkdir -p build && $(PY) bench/run.py --record build/bench.json
	$(PY) bench/calibrate.py
	$(PY) bench/grading.py
	NKILIB=$(NKILIB) $(PY) bench/nkilib_suite.py

# One word picks the NKI dialect everywhere: DIALECT=nki (NKI 0.6, `import nki`, Neuron SDK 2.32+: the course's
# stub_dialect in course.toml) or DIALECT=legacy (`import neuronxcc.nki`, SDK 2.29 and earlier: CS149's handouts).
# make lab, release, course and gradescope take it; without it they use the course's dialect.
DIALECT ?=

# Course: notebooks/NN_*.py (authored) -> assignments/NN_*.ipynb (NKI 0.6 students' notebooks),
# assignments/legacy/NN_*.ipynb (their legacy twins) + solutions/NN_*/ (references: legacy beside the stage, NKI 0.6
# in nki/). make release DIALECT=legacy writes only the legacy notebooks; OUT=dir writes under dir instead.
OUT ?=
release: $(STAMP)
	$(PY) -m nkilab.authoring.release $(if $(DIALECT),--dialect $(DIALECT)) $(if $(OUT),--out $(OUT))

release-check: $(STAMP)
	$(PY) -m nkilab.authoring.release --check

# Grade the bundled example class with nbgrader (course built fresh in build/example_class/; see
# autograder/example_class/). For a real class: make grade COURSE=path/to/your/nbgrader/course
# GRADE_ARGS passes options through, e.g. GRADE_ARGS="--assignment 01_vector_add --no-sandbox".
COURSE ?=
GRADE_ARGS ?=
grade: setup-lean
	$(PY) -m nkilab.batch.classgrade $(if $(COURSE),--course $(COURSE)) $(GRADE_ARGS)

# A TA's own nbgrader course from the lessons (source/, release/, gradebook.db, roster): see autograder/README.md.
# make course COURSE=path/to/course STAGES=1,2 DIALECT=legacy COURSE_ARGS="--roster roster.csv --course-id cs-nki-2026"
# STAGES is the TA's choice, with no default: the stages given out now (1,2 or 1-3, or all); each stage in the course
# is an assignment its grade sheets and LMS export count, so run again with more stages when you give them out.
STAGES ?=
COURSE_ARGS ?=
course: setup-lean
	@test -n "$(COURSE)" || { echo "make course: say where, e.g. make course COURSE=../my-course STAGES=1,2" >&2; exit 2; }
	@test -n "$(STAGES)" || { echo "make course: say which stages you give out now, e.g. STAGES=1,2 (or STAGES=all); run it again with more stages to add them later" >&2; exit 2; }
	$(PY) -m nkilab.authoring.nbgrader_course install-path-hook
	$(PY) -m nkilab.authoring.nbgrader_course build --course $(COURSE) --stages $(STAGES) $(if $(DIALECT),--dialect $(DIALECT)) $(COURSE_ARGS)

# Gradescope autograder bundles, one per assignment: build/gradescope/<assignment>.zip, or for DIALECT=legacy
# build/gradescope/legacy/<assignment>.zip (see nkilab/lms/gradescope.py).
gradescope: setup-lean
	$(PY) -m nkilab.lms.gradescope build $(if $(DIALECT),--dialect $(DIALECT)) $(GRADE_ARGS)

# The course site: build/site/index.html. Sphinx + MyST-NB (docs/conf.py), warnings are errors, every page read
# afresh (-E: the error pages' reproducers and the API pages follow the simulator). The lessons run once for their
# demo outputs (about a minute), then come from build/docs-cache/ until the lesson, the simulator or the grader changes.
SITE     ?= build/site
DOCTREES ?= build/docs-doctrees
docs: $(STAMP) $(TORCH_STAMP)
	$(PY) -m sphinx -j auto -E -W --keep-going -b html -d $(DOCTREES) docs $(SITE)

# Students work on copies in work/ (work/legacy/ for DIALECT=legacy; never overwritten, not tracked), so
# `git pull` and `make release` never collide with their answers; the lab warns when a lesson changed since its
# copy was made. nbgrader's
# instructor tools are switched off for the lab (its own Jupyter config in build/lab-config); as root,
# --allow-root is added. LAB_ARGS go to jupyter lab, e.g. make lab LAB_ARGS="--no-browser --port 8899".
LAB_DIR ?=
LAB_ARGS ?=
lab: $(STAMP)
	$(PY) -m nkilab.authoring.lab $(if $(DIALECT),--dialect $(DIALECT)) $(if $(LAB_DIR),--dir $(LAB_DIR)) $(LAB_ARGS)

# ruff, the import-linter contracts in pyproject.toml (layers import downwards only), mypy on the program package, the
# cost model and nkilab.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m mypy

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
