# theo, stage 1 Q2 (issue 28): the file starts with UTF-8's byte-order mark. Python reads past it; the screen once
# read it as text that does not parse, left the file to the import to report, and the import ran `import os`.
import os

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl  # noqa: F401

FOUND = os.listdir("/proc")


@nki.jit
def vector_add_stream(a, b):
    raise RuntimeError(str(FOUND))
