"""``python -m nkisim [--latency] [--profile DIR] SCRIPT.py [args]``: run an unmodified NKI script (legacy
``neuronxcc.nki`` or NKI 0.6 ``import nki``) on the simulator.

``--latency`` prints each kernel launch's estimated latency (the cost model's, for the launch's target) to
stderr as it completes; ``--profile DIR`` also writes each launch's Perfetto trace and per-line table into DIR.

``python -m nkisim --install-hook`` writes a .pth file into the active environment so that
``import neuronxcc.nki`` works there without ``nkisim.install()`` (never shadowing a real compiler).
"""

from __future__ import annotations

import os
import runpy
import sys
import sysconfig
from typing import Any


def _install_hook() -> int:
    site = sysconfig.get_paths()["purelib"]
    path = os.path.join(site, "nkisim_neuronxcc_hook.pth")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("import nkisim.activation as _a; _a.install_fallback()\n")
    print(f"nkisim: wrote {path}")
    return 0


def _report(latency: bool, profile_dir: str | None) -> Any:
    """A launch observer printing each launch's estimate and writing its profile (``--latency``, ``--profile``)."""
    count = [0]

    def report(name: str, launch: Any) -> None:
        count[0] += 1
        if latency:
            print(f"nkisim: {name}: estimated latency {launch.latency_us():.2f} us on {launch.target} (cost-model "
                  f"estimate, not a hardware measurement)", file=sys.stderr)
        if profile_dir:
            prof = launch.profile()
            base = os.path.join(profile_dir, f"{count[0]:03d}_{name}")
            prof.write_perfetto(base + ".perfetto.json")
            with open(base + ".lines.txt", "w", encoding="utf-8") as fh:
                fh.write(prof.summary_text() + "\n\n" + prof.line_table_text() + "\n")

    return report


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--install-hook":
        return _install_hook()
    latency, profile_dir = False, None
    while argv and argv[0] in ("--latency", "--profile"):
        opt = argv.pop(0)
        if opt == "--latency":
            latency = True
        elif argv:
            profile_dir = argv.pop(0)
            os.makedirs(profile_dir, exist_ok=True)
    if not argv:
        print(__doc__)
        return 2
    import nkisim

    nkisim.install(force=True)
    script = argv[0]
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    if not (latency or profile_dir):
        runpy.run_path(script, run_name="__main__")
        return 0
    from nkisim import api

    with api.watching(_report(latency, profile_dir)):
        runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
