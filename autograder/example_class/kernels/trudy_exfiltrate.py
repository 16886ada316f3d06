# trudy, stage 1 Q1: tries to smuggle secrets into her own feedback page: the reference solution, the gradebook,
# the grading seed and a classmate's notebook, raised as an error message (error text reaches the feedback).
# The screen refuses the file; in the sandbox none of those files or variables exist: 0.
import os
from pathlib import Path

here = Path(os.getcwd()).resolve()
loot = [os.environ.get("NKILAB_SEED", ""), os.environ.get("NKILAB_REFERENCE_LATENCIES", "")]
for rel in ("../../../gradebook.db", "../../ada/01_vector_add/01_vector_add.ipynb"):
    try:
        loot.append((here / rel).read_text(errors="replace")[:3000])
    except OSError as err:
        loot.append(str(err))
raise RuntimeError("LOOT " + " | ".join(loot))
