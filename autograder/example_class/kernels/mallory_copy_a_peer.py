# mallory, stage 4 Q2: copies ada's hand-in out of the course's submitted/ folder and runs her kernel.
# The sandbox shows no course folder at all, and the screen refuses the file first: 0.
import json
import os
from pathlib import Path

course = Path(os.getcwd()).resolve().parents[2]
notebook = json.loads((course / "submitted" / "ada" / "04_masked_rmsnorm" / "04_masked_rmsnorm.ipynb").read_text())
for cell in notebook["cells"]:
    if "".join(cell["source"]).startswith("%%writefile rmsnorm_fast.py"):
        exec("".join(cell["source"]).split("\n", 1)[1])
