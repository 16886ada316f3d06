"""``python -m nkisim [options] SCRIPT.py [script args]``: run an unmodified NKI script on the simulator.

The options (``--help`` lists them) choose the target and what to report about each kernel launch; everything
after the script's name is the script's own arguments.  ``python -m nkisim --install-hook`` writes a .pth file
into the active environment so that ``import nki`` (NKI 0.6) and ``import neuronxcc.nki`` work there without
``nkisim.install()`` (never shadowing AWS's packages).  An error in the script is shown from the script's own
frames: the simulator's and runpy's frames are cut (``--full-traceback`` keeps them, for debugging the simulator).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import sysconfig
import textwrap
import traceback
from typing import Any

DESCRIPTION = """\
Run an NKI script unmodified on nkisim, a CPU simulator of a Trainium NeuronCore: NKI 0.6 (`import nki`,
Neuron SDK 2.32+) or legacy NKI (`import neuronxcc.nki`, SDK 2.29 and earlier). Kernels compute on NumPy, raise
the compiler's errors at your own line, and every latency comes from nkisim's cost model (an estimate for the
target, not a measurement)."""


def _epilog() -> str:
    from nkisim.activation import SWITCHES

    switches = "\n".join(f"  {s.setting:<22} " + "\n".join(textwrap.wrap(s.effect.replace("`", ""), 86))
                         .replace("\n", "\n" + " " * 25) for s in SWITCHES)
    return EPILOG.format(switches=switches)


EPILOG = """\
inside the script:
  NKI 0.6 (nki.benchmark and nki.profile do not exist there): --benchmark and --profile below, or
  nkisim.api.launch(kernel, [args...]).latency_us() / .profile()
  legacy: nki.benchmark(kernel)(args...) prints the estimated latency; .benchmark_result.nc_latency
                                         .get_latency_percentile(99) returns it (every percentile is the
                                         same estimate: the model is deterministic)
  legacy: nki.profile(working_directory=DIR, save_trace_name=NAME)(kernel)(args...)
                                         writes the trace at NAME (default profile.ntff; relative to DIR;
                                         a Perfetto JSON, open it in ui.perfetto.dev: the simulator writes
                                         no binary NTFF), and beside it <stem>_summary.json,
                                         <stem>_lines.txt and <stem>_timeline.png (stem: NAME without
                                         its extension)
  nkisim.api.profile_kernel(kernel, args...)
                                         the same profile as a Python object (.summary(), .figure())

simulator or AWS's NKI, per dialect:
{switches}

environment:
  NEURON_PLATFORM_TARGET_OVERRIDE=trn1   the target when --target is not given (default trn2)

examples:
  python -m nkisim my_kernel.py --size 1024
  python -m nkisim --target trn1 --benchmark my_kernel.py
  python -m nkisim --profile profiles/ --json launches.json my_kernel.py"""


def _install_hook() -> int:
    site = sysconfig.get_paths()["purelib"]
    path = os.path.join(site, "nkisim_neuronxcc_hook.pth")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("import nkisim.activation as _a; _a.install_fallback()\n")
    print(f"nkisim: wrote {path}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The command line (options before SCRIPT.py; the rest is the script's)."""
    from nkisim.core.target import names

    p = argparse.ArgumentParser(prog="python -m nkisim", description=DESCRIPTION, epilog=_epilog(),
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                usage="%(prog)s [options] SCRIPT.py [script args ...]\n"
                                      "       %(prog)s --install-hook")
    p.add_argument("script", nargs="?", metavar="SCRIPT.py",
                   help="the NKI script to run; every argument after it is passed to the script as sys.argv[1:]")
    p.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    tgt = p.add_argument_group("target")
    tgt.add_argument("--target", choices=names(), metavar="{" + ",".join(names()) + "}",
                     help="the NeuronCore generation to simulate: its limits (SBUF/PSUM sizes, partitions) and its "
                          "cost-model numbers (default: $NEURON_PLATFORM_TARGET_OVERRIDE, else trn2); a kernel's "
                          "own nki.jit(platform_target=...) still wins")
    rep = p.add_argument_group("benchmark and profile (every number is a cost-model estimate for the target)")
    rep.add_argument("--benchmark", "--latency", action="store_true",
                     help="print the estimated latency of every kernel launch the script makes (to stderr, so "
                          "the script's own output is unchanged), and a table of them at the end")
    rep.add_argument("--profile", metavar="DIR",
                     help="write a profile of every kernel launch into DIR (created if needed), as nki.profile "
                          "would: <kernel>_<n>.json (Perfetto trace), <kernel>_<n>_summary.json, "
                          "<kernel>_<n>_lines.txt (time per source line) and <kernel>_<n>_timeline.png")
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="FILE",
                     help="write one JSON record per kernel launch to FILE at the end: kernel, launch number, "
                          "target, estimated latency (us), instruction and DMA counts, per-engine busy time")
    out.add_argument("--full-traceback", action="store_true",
                     help="show the simulator's and runpy's frames in tracebacks too (for debugging nkisim; by "
                          "default a traceback starts at your script)")
    out.add_argument("--install-hook", action="store_true",
                     help="write a .pth file so `import nki` and `import neuronxcc.nki` find the simulator in this "
                          "environment where AWS's packages are not installed (make setup does this), then exit")
    return p


class Reporter:
    """What --benchmark, --profile and --json ask for, gathered launch by launch."""

    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.records: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}
        if opts.profile:
            os.makedirs(opts.profile, exist_ok=True)

    def __call__(self, name: str, launch: Any) -> None:
        n = self.counts[name] = self.counts.get(name, 0) + 1
        est = launch.estimate()
        rec = {"kernel": name, "launch": n, "target": launch.target_label, "estimated_latency_us": round(est.total_us, 3),
               "instructions": est.instructions, "dma_transfers": est.dma_count, "dma_bytes": est.dma_bytes,
               "engine_busy_us": {e: round(v, 3) for e, v in est.engine_busy_us.items()},
               "label": "nkisim cost-model estimate (not a hardware measurement)"}
        self.records.append(rec)
        if self.opts.benchmark:
            print(f"nkisim: {name} launch {n}: estimated {est.total_us:.2f} us on {launch.target_label} "
                  "(cost-model estimate, not a hardware measurement)", file=sys.stderr)
        if self.opts.profile:
            paths = launch.profile().write(os.path.abspath(self.opts.profile), f"{name}_{n}", overwrite=True)
            rec["profile"] = paths

    def finish(self) -> None:
        if self.opts.benchmark and self.records:
            print("nkisim: estimated latency per launch (cost model, not measurements)", file=sys.stderr)
            for r in self.records:
                print(f"  {r['kernel'] + ' #' + str(r['launch']):<32} {r['estimated_latency_us']:>12.2f} us  "
                      f"{r['target']}", file=sys.stderr)
        if self.opts.json:
            with open(self.opts.json, "w", encoding="utf-8") as fh:
                json.dump(self.records, fh, indent=1)


def _trimmed(err: BaseException) -> BaseException:
    """``err`` (and the exceptions chained to it) with tracebacks that start at the user's script."""
    from nkisim.api import user_traceback

    seen: set[int] = set()
    todo: list[BaseException | None] = [err]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = _drop_runner_frames(user_traceback(e.__traceback__))
        todo += [e.__cause__, e.__context__]
    return err


def _drop_runner_frames(tb: Any) -> Any:
    """Cut the frames above the script (this module's and runpy's): the script's module frame comes first."""
    here = os.path.abspath(__file__)
    while tb is not None and (tb.tb_frame.f_code.co_filename in ("<frozen runpy>", here)
                              or os.path.basename(tb.tb_frame.f_code.co_filename) == "runpy.py"):
        tb = tb.tb_next
    return tb


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts = parser().parse_args(argv)
    if opts.install_hook:
        return _install_hook()
    if not opts.script:
        parser().print_help()
        return 2
    if opts.target:
        os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = opts.target
    import nkisim

    nkisim.install(force=True)
    script = opts.script
    sys.argv = [script, *opts.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    from nkisim.api import watching

    report = Reporter(opts)
    try:
        with watching(report):
            runpy.run_path(script, run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        report.finish()
        raise
    except BaseException as err:  # noqa: BLE001 - shown like Python would, from the script's own frames
        report.finish()
        if not opts.full_traceback:
            _trimmed(err)
        traceback.print_exception(err)
        return 1
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
