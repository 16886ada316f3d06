"""Run one error-page example as ``python kernel.py`` would, in a fresh interpreter, and record what happened.

    python runexample.py kernel.py record.json
    python runexample.py --serve      # many: a folder per line on stdin, an exit status per line on stdout

The kernel runs as ``__main__`` in its own process, so nothing the build did before (other examples, the
simulator's counters) can change what it prints.  ``--serve`` imports NumPy and the simulator once and forks a
child per example from that untouched state: each example still starts where a fresh interpreter would be after
those imports (nothing an example does reaches the server or the next example), at a tenth of the cost of
starting Python and NumPy again for each of the site's hundred-odd examples.  ``record.json`` gets the end of the traceback Python prints for
an uncaught error (the frames of ``kernel.py``, each run of simulator frames as one line saying so, the error),
the error's id in nkisim's catalogue, and the warnings the kernel gave.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import time
import traceback
import warnings


def traceback_end(err: BaseException, path: str, shown_as: str) -> str:
    """The traceback Python prints for ``err``, from the first frame of the reader's file ``path`` (written as
    ``shown_as``): frames of that file as printed, each run of frames inside the simulator as one line saying so,
    and the error itself."""
    tb = err.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    lines = ["Traceback (most recent call last):\n"]
    inside = 0
    for frame in traceback.extract_tb(tb):
        if frame.filename != path:
            inside += 1
            continue
        if inside:
            lines.append(f"  [{inside} frame{'s' if inside > 1 else ''} inside the simulator]\n")
            inside = 0
        lines.extend(traceback.format_list([frame]))
    if inside:
        lines.append(f"  [{inside} frame{'s' if inside > 1 else ''} inside the simulator]\n")
    lines.extend(traceback.format_exception_only(type(err), err))
    return "".join(lines).replace(path, shown_as).rstrip("\n")


def main(kernel: str, record: str) -> int:
    path = os.path.abspath(kernel)
    out: dict = {"text": "", "error_id": None, "error_class": None, "warnings": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sys.argv = [kernel]
        try:
            runpy.run_path(path, run_name="__main__")
        except Exception as err:  # noqa: BLE001  (any error is the outcome to report)
            from nkisim.core.errors import NKIError

            out.update(text=traceback_end(err, path, os.path.basename(kernel)), error_class=type(err).__qualname__,
                       error_id=err.error_id if isinstance(err, NKIError) else None)
    out["warnings"] = [{"category": w.category.__name__, "message": str(w.message), "lineno": w.lineno,
                        "in_kernel": os.path.abspath(w.filename) == path} for w in caught]
    with open(record, "w") as f:
        json.dump(out, f)
    return 0


def serve(timeout_s: float) -> int:
    """Answer ``{"dir": folder}`` lines from stdin: fork, run ``folder/kernel.py`` into ``folder/record.json``
    (its stdout and stderr to ``folder/output.txt``), and write the child's exit status (-9: killed at
    ``timeout_s``) as a line ``{"status": n}``."""
    import numpy  # noqa: F401  (what every example imports: paid once, before the first fork)

    import nkisim.api  # noqa: F401

    for line in sys.stdin:
        folder = json.loads(line)["dir"]
        pid = os.fork()
        if pid == 0:  # the child: this example alone, then gone without running the server's exit handlers
            code = 1
            try:
                os.chdir(folder)
                with open("output.txt", "wb") as out:
                    os.dup2(out.fileno(), 1)
                    os.dup2(out.fileno(), 2)
                code = main("kernel.py", "record.json")
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout_s
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        if done[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = -9
        else:
            status = os.waitstatus_to_exitcode(done[1])
        print(json.dumps({"status": status}), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        sys.exit(serve(float(sys.argv[2])))
    sys.exit(main(sys.argv[1], sys.argv[2]))
