"""Timing an NKI 0.6 kernel on a Neuron device the way AWS documents it, and saying where a latency comes from.

NKI 0.6 has no ``nki.benchmark`` (nki-0.6 migration notes: "not available"). AWS's route for a 0.6 kernel on a
trn1/trn2/trn3 instance with Neuron SDK 2.32 is two steps, both run here:

1. **Compile and keep the NEFF.** Run the kernel once with ``NEURON_FRAMEWORK_DEBUG=1``, which "triggers the Neuron
   compiler to save the Neuron Executable File Format (NEFF) artifact to the current directory"
   (``nki/guides/use-neuron-profile.rst``, step 1), and ``NKI_ARTIFACTS_DIR`` set before ``nki`` is imported
   (``neuron-runtime/nrtpy/tutorial-debug-neff-nrtpy.rst``, step 2). ``find_neff`` picks the file up.
2. **Time the NEFF** with the first of these tools that is installed:

   * nrtpy's ``NrtpyModel.benchmark(inputs, warmup_iter, benchmark_iter, mode="device")``, whose
     ``BenchmarkResult.mean_ms`` is the NeuronCore's execution time (``tutorial-validate-benchmark.rst``, step 3;
     ``model.rst``). nrtpy and ``nki`` cannot share a virtualenv in SDK 2.32 (``nrtpy-getting-started.rst``), so
     it runs in nrtpy's own: ``$NKILAB_NRTPY_PYTHON``, else ``~/nrtpy_venv/bin/python`` (the venv AWS's
     getting-started page creates), with ``/opt/aws/neuron/lib`` on ``LD_LIBRARY_PATH`` as that page says;
   * ``neuron-explorer capture -n kernel.neff -s profile.ntff --profile-nth-exec=2`` (the command of
     ``use-neuron-profile.rst``, step 3: it runs the NEFF twice and writes ``profile_exec_2.ntff``), then
     ``neuron-explorer view -n kernel.neff -s profile_exec_2.ntff --output-format summary-text``, whose
     ``total_time`` line is the on-device time of that execution in seconds (``overview-summary-page.rst``;
     the summary's format: ``archive/profiler/neuron-profile-user-guide.rst``, "Profile summary").

A measurement is labelled ``measured on <instance>`` (the EC2 instance type from the DMI product name, as Nitro
instances report it). Without a device nothing here claims one: the lessons and the grader label every simulated
latency as a cost-model estimate.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: the Python of nrtpy's own virtualenv (nrtpy cannot be installed beside ``nki``)
NRTPY_PYTHON_ENV = "NKILAB_NRTPY_PYTHON"
#: where AWS's getting-started page creates that virtualenv
NRTPY_DEFAULT = Path("~/nrtpy_venv/bin/python")
#: where the Neuron runtime library and tools live on a Neuron instance (AWS's setup pages)
NEURON_LIB = "/opt/aws/neuron/lib"
NEURON_BIN = "/opt/aws/neuron/bin"
#: the largest NEFF accepted from a kernel's compile (the course's kernels compile to a few MB)
MAX_NEFF_BYTES = 256 << 20
#: warm-up and timed runs of nrtpy's benchmark
WARMUP, ITERATIONS = 2, 10
#: the SDK and commands the device path expects, as the pages say it
EXPECTS = ("Neuron SDK 2.32 or later (NKI 0.6, `import nki`) on a trn1, trn2 or trn3 instance; each kernel is "
           "compiled once with NEURON_FRAMEWORK_DEBUG=1 and its NEFF timed with nrtpy's "
           "NrtpyModel.benchmark(mode=\"device\") (in nrtpy's own venv: $NKILAB_NRTPY_PYTHON or "
           "~/nrtpy_venv/bin/python) or, without nrtpy, `neuron-explorer capture --profile-nth-exec=2` and "
           "`neuron-explorer view --output-format summary-text`")

_INSTANCE = re.compile(r"[a-z][a-z0-9-]*\.[a-z0-9-]+")


class DeviceError(RuntimeError):
    """A device measurement could not be made; the message says why in words."""


@dataclass(frozen=True)
class Measurement:
    """A latency measured on a Neuron device: what, where and with which tool."""

    latency_us: float
    instance: str
    how: str  # e.g. "nrtpy benchmark, mean of 10 runs"

    def label(self) -> str:
        return f"measured on {self.instance} ({self.how})"


def neuron_devices(root: Path = Path("/dev")) -> list[Path]:
    """The Neuron devices of this machine (``/dev/neuron0`` ...)."""
    try:
        return sorted(p for p in root.glob("neuron[0-9]*"))
    except OSError:
        return []


def aws_nki_installed() -> bool:
    """Whether ``import nki`` gives AWS's NKI rather than the course simulator."""
    try:
        import nkisim
    except ImportError:
        import importlib.util

        return importlib.util.find_spec("nki") is not None
    return not nkisim.provides_nki()


def on_device(root: Path = Path("/dev")) -> bool:
    """A Neuron device with AWS's NKI 0.6: a 0.6 kernel compiles and runs on the device here, and is timed by
    ``time_neff``."""
    return bool(neuron_devices(root)) and aws_nki_installed()


#: where a Nitro EC2 instance reports its type (``trn2.48xlarge``)
DMI_PRODUCT = Path("/sys/devices/virtual/dmi/id/product_name")


def instance_type(dmi: Path | None = None) -> str:
    """The EC2 instance type (``trn2.48xlarge``) as a Nitro instance reports it, or a plain description."""
    try:
        name = (dmi or DMI_PRODUCT).read_text(errors="replace").strip()
    except OSError:
        name = ""
    return name if _INSTANCE.fullmatch(name) else "this Neuron instance"


def find_neff(folder: Path) -> Path:
    """The newest NEFF a compile left under ``folder``: a regular file (links are not followed) of at most
    ``MAX_NEFF_BYTES``."""
    found = []
    for path in folder.rglob("*.neff"):
        try:
            if not path.is_symlink() and path.is_file() and path.stat().st_size <= MAX_NEFF_BYTES:
                found.append((path.stat().st_mtime_ns, str(path)))
        except OSError:
            continue
    if not found:
        raise DeviceError(f"the compile left no NEFF under {folder} (NKI 0.6 saves it with NEURON_FRAMEWORK_DEBUG=1 "
                          "or NKI_ARTIFACTS_DIR): is this Neuron SDK 2.32 or later?")
    return Path(max(found)[1])


def nrtpy_python() -> Path | None:
    """nrtpy's interpreter: ``$NKILAB_NRTPY_PYTHON``, else AWS's default venv, if it exists."""
    given = os.environ.get(NRTPY_PYTHON_ENV)
    path = Path(given).expanduser() if given else NRTPY_DEFAULT.expanduser()
    return path if path.is_file() and os.access(path, os.X_OK) else None


def neuron_explorer() -> str | None:
    """The ``neuron-explorer`` executable (``aws-neuronx-tools``), on PATH or in /opt/aws/neuron/bin."""
    return shutil.which("neuron-explorer") or shutil.which("neuron-explorer", path=NEURON_BIN)


def _tool_env() -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (NEURON_LIB, env.get("LD_LIBRARY_PATH", "")) if p)
    env["PATH"] = os.pathsep.join(p for p in (env.get("PATH", ""), NEURON_BIN) if p)
    return env


#: run in nrtpy's venv: load the NEFF, check its inputs against ours, benchmark on the device, print one JSON line
NRTPY_SCRIPT = """\
import json, sys
import numpy as np
from nrtpy import NrtpyModel, NrtpyTensor

neff, folder, count, warmup, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
model = NrtpyModel.load_from_neff(neff)
names = list(model.input_tensors_info)
arrays = [np.load(f"{folder}/input_{i}.npy") for i in range(count)]
shapes = [[int(d) for d in model.input_tensors_info[n].shape] for n in names]
if shapes != [list(a.shape) for a in arrays]:
    print(json.dumps({"error": f"the NEFF takes inputs {shapes}, not the kernel's {[list(a.shape) for a in arrays]}"}))
    sys.exit(0)
inputs = {n: NrtpyTensor.from_numpy(a, name=n) for n, a in zip(names, arrays)}
stats = model.benchmark(inputs=inputs, warmup_iter=warmup, benchmark_iter=iters, mode="device")
print(json.dumps({"mean_ms": float(stats.mean_ms), "min_ms": float(stats.min_ms), "max_ms": float(stats.max_ms),
                  "iterations": int(stats.iterations)}))
"""


def _last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    return {}


def time_with_nrtpy(python: Path, neff: Path, inputs: list[np.ndarray], *, timeout: float = 600.0) -> Measurement:
    """nrtpy's device-side benchmark of ``neff`` on ``inputs`` (AWS's ``tutorial-validate-benchmark``, step 3)."""
    with tempfile.TemporaryDirectory(prefix="nkilab-nrtpy-") as tmp:
        for i, arr in enumerate(inputs):
            np.save(Path(tmp) / f"input_{i}.npy", np.ascontiguousarray(arr))
        cmd = [str(python), "-c", NRTPY_SCRIPT, str(neff), tmp, str(len(inputs)), str(WARMUP), str(ITERATIONS)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_tool_env(), cwd=tmp)
        except subprocess.TimeoutExpired:
            raise DeviceError(f"nrtpy's benchmark did not finish within {timeout:.0f} s") from None
    found = _last_json(proc.stdout)
    if "error" in found:
        raise DeviceError(f"nrtpy could not time the kernel: {str(found['error'])[:300]}")
    mean, runs = found.get("mean_ms"), found.get("iterations")
    if proc.returncode != 0 or not isinstance(mean, (int, float)) or not 0 < mean < 1e6 or type(runs) is not int:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise DeviceError(f"nrtpy's benchmark failed (exit {proc.returncode}): {tail}")
    return Measurement(float(mean) * 1000.0, instance_type(), f"nrtpy benchmark, mean of {runs} runs")


def time_with_explorer(exe: str, neff: Path, *, timeout: float = 600.0) -> Measurement:
    """``neuron-explorer capture`` of the second execution of ``neff`` and its summary's ``total_time``."""
    with tempfile.TemporaryDirectory(prefix="nkilab-explorer-") as tmp:
        folder = Path(tmp)
        steps = [[exe, "capture", "-n", str(neff), "-s", str(folder / "profile.ntff"), "--profile-nth-exec=2"]]
        try:
            capture = subprocess.run(steps[0], capture_output=True, text=True, timeout=timeout, env=_tool_env(),
                                     cwd=tmp)
            traces = sorted(folder.glob("*.ntff"), key=lambda p: (p.name != "profile_exec_2.ntff", p.name))
            if capture.returncode != 0 or not traces:
                tail = (capture.stderr.strip().splitlines() or ["no profile written"])[-1][:300]
                raise DeviceError(f"neuron-explorer capture failed (exit {capture.returncode}): {tail}")
            view = subprocess.run([exe, "view", "-n", str(neff), "-s", str(traces[0]), "--output-format",
                                   "summary-text"], capture_output=True, text=True, timeout=timeout,
                                  env=_tool_env(), cwd=tmp)
        except subprocess.TimeoutExpired:
            raise DeviceError(f"neuron-explorer did not finish within {timeout:.0f} s") from None
    seconds = None
    for line in view.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "total_time":
            try:
                seconds = float(parts[1])
            except ValueError:
                seconds = None
    if view.returncode != 0 or seconds is None or not 0 < seconds < 1e3:
        raise DeviceError(f"neuron-explorer view printed no total_time (exit {view.returncode})")
    return Measurement(seconds * 1e6, instance_type(), "neuron-explorer capture, 2nd execution")


def time_neff(neff: Path, inputs: list[np.ndarray], *, timeout: float = 600.0) -> Measurement:
    """The device latency of ``neff``: nrtpy's benchmark where nrtpy's venv exists, else neuron-explorer."""
    python = nrtpy_python()
    if python is not None:
        return time_with_nrtpy(python, neff, inputs, timeout=timeout)
    exe = neuron_explorer()
    if exe is not None:
        return time_with_explorer(exe, neff, timeout=timeout)
    raise DeviceError("neither nrtpy (a venv at $NKILAB_NRTPY_PYTHON or ~/nrtpy_venv) nor neuron-explorer "
                      "(aws-neuronx-tools) is installed, so the NEFF cannot be timed; see AWS's nrtpy getting-started "
                      "page")


def measure_kernel(kernel: object, arrays: list[np.ndarray], grid: object = None) -> Measurement:
    """Compile and run ``kernel`` (AWS's ``nki.jit`` kernel) once on ``arrays`` in a scratch directory with
    ``NEURON_FRAMEWORK_DEBUG=1`` so the compiler saves its NEFF there, then time that NEFF (``time_neff``)."""
    with tempfile.TemporaryDirectory(prefix="nkilab-neff-") as tmp:
        here, before = os.getcwd(), os.environ.get("NEURON_FRAMEWORK_DEBUG")
        os.environ["NEURON_FRAMEWORK_DEBUG"] = "1"
        try:
            os.chdir(tmp)
            launch = kernel[grid] if grid is not None else kernel  # type: ignore[index]
            launch(*arrays)  # type: ignore[operator]
        finally:
            os.chdir(here)
            if before is None:
                os.environ.pop("NEURON_FRAMEWORK_DEBUG", None)
            else:
                os.environ["NEURON_FRAMEWORK_DEBUG"] = before
        roots = [Path(tmp)] + ([Path(os.environ["NKI_ARTIFACTS_DIR"])] if os.environ.get("NKI_ARTIFACTS_DIR") else [])
        for root in roots:
            try:
                neff = find_neff(root)
                break
            except DeviceError:
                continue
        else:
            raise DeviceError("the kernel ran but the compiler saved no NEFF (NEURON_FRAMEWORK_DEBUG=1): is this "
                              "Neuron SDK 2.32 or later?")
        return time_neff(neff, arrays)


if __name__ == "__main__":  # pragma: no cover - a diagnostic: python -m nkilab.kernels.device
    print("Neuron devices:", ", ".join(map(str, neuron_devices())) or "none")
    print("nki is", "AWS's NKI" if aws_nki_installed() else "the nkisim simulator")
    print("instance:", instance_type())
    print("nrtpy:", nrtpy_python() or "not found", "| neuron-explorer:", neuron_explorer() or "not found")
    print("expects:", EXPECTS)
    sys.exit(0)
