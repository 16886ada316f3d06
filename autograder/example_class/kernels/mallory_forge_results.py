# mallory, stage 2 Q2: writes the result files the old grader read back (case_<i>.json + raw outputs, NumPy's
# answer) and exits before the harness can write the real ones.  The grader reads results only from a pipe it
# opened itself, and its screen refuses `os`/`open` anyway: 0.
import json
import os

import nki
import numpy as np


@nki.jit
def tiled_add_relu(a, b):
    for i in range(64):
        with open(f"case_{i}.json", "w") as fh:
            json.dump({"status": "ok", "seconds": 0.0}, fh)
    np.zeros(1).tofile("out_0.bin")
    os._exit(0)
