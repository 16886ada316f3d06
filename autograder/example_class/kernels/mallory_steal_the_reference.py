# mallory, stage 4 Q1: runs the course's own reference solution from solutions/ instead of writing a kernel.
# In the sandbox solutions/ does not exist, and the screen refuses the file first (`import`, `exec`, `open`): 0.
import importlib.util
from pathlib import Path

import nkilab

reference = Path(nkilab.__file__).resolve().parents[2] / "solutions" / "04_masked_rmsnorm" / "rmsnorm.py"
spec = importlib.util.spec_from_file_location("stolen", reference)
stolen = importlib.util.module_from_spec(spec)
exec(open(reference).read(), stolen.__dict__)
rmsnorm = stolen.rmsnorm
