"""``python -m nkisim SCRIPT.py [args]``: run an unmodified NKI script on the simulator.

``python -m nkisim --install-hook`` writes a .pth file into the active environment so that
``import neuronxcc.nki`` works there without ``nkisim.install()`` (never shadowing a real compiler).
"""

from __future__ import annotations

import os
import runpy
import sys
import sysconfig


def _install_hook() -> int:
    site = sysconfig.get_paths()["purelib"]
    path = os.path.join(site, "nkisim_neuronxcc_hook.pth")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("import nkisim.activation as _a; _a.install_fallback()\n")
    print(f"nkisim: wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--install-hook":
        return _install_hook()
    import nkisim

    nkisim.install(force=True)
    script = argv[0]
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
