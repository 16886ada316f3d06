"""Timing an NKI 0.6 kernel on a Neuron device the way AWS documents for 0.6 (issue 30 scope 4), tested at the process
boundary: the tools AWS's pages name are stand-ins on this machine (no Trainium here) that behave and print exactly as
those pages document, and everything of ours around them is real.

* nrtpy (``neuron-runtime/nrtpy/model.rst``, ``tutorial-validate-benchmark.rst``): a package with ``NrtpyModel``
  (``load_from_neff``, ``input_tensors_info`` with ``shape``, ``benchmark(inputs, warmup_iter, benchmark_iter,
  mode)``) and ``NrtpyTensor.from_numpy``, returning a ``BenchmarkResult`` whose values are the tutorial's recorded
  "Confirmation" output (mean 0.0032 ms over 100 iterations); run by our script in its own interpreter, as AWS's
  setup page requires (nrtpy and nki cannot share a virtualenv).
* ``neuron-explorer`` (``nki/guides/use-neuron-profile.rst``, ``archive/profiler/neuron-profile-user-guide.rst``):
  ``capture -n F.neff -s profile.ntff --profile-nth-exec=2`` writes ``profile_exec_2.ntff``, ``view ...
  --output-format summary-text`` prints the guide's recorded summary (``total_time  0.017``).
* AWS's ``nki`` compiler (``use-neuron-profile.rst`` step 1): under ``NEURON_FRAMEWORK_DEBUG=1`` a kernel call saves
  its NEFF in the current directory. The stand-in's NEFF records the argument shapes it was compiled for, and the
  nrtpy stand-in reports them as the NEFF's inputs, so a NEFF that did not come through intact fails.

Without a device nothing claims a measurement: this machine has none, and every latency here is labelled an estimate.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nkilab import latency_label
from nkilab.course.questions import QUESTIONS
from nkilab.isolate import runner, sandbox
from nkilab.isolate.facts import Latency
from nkilab.judge.evaluate import Evaluation
from nkilab.kernels import device

NRTPY = '''
"""A stand-in for AWS's nrtpy at its documented interface (model.rst, tensor.rst)."""
import json, os


class TensorMetadata:
    def __init__(self, shape):
        self.shape, self.size = shape, 4
        for d in shape:
            self.size *= d


class BenchmarkResult:  # the tutorial's recorded "Confirmation" output
    mean_ms, min_ms, max_ms, std_dev_ms, iterations, warmup_iterations = 0.0032, 0.0030, 0.0041, 0.0002, 100, 10


class NrtpyTensor:
    @classmethod
    def from_numpy(cls, array, name=None, core_id=0):
        t = cls()
        t.shape, t.dtype, t.name = array.shape, array.dtype, name
        return t


class NrtpyModel:
    @classmethod
    def load_from_neff(cls, neff_path, name=None, core_id=0, cc_enabled=False, rank_id=0, world_size=1):
        data = open(neff_path, "rb").read()
        assert data.startswith(b"NEFF"), "not a NEFF"
        m = cls()
        shapes = json.loads(data[4:])
        m.input_tensors_info = {f"input{i}": TensorMetadata(s) for i, s in enumerate(shapes)}
        m.output_tensors_info = {"output0": TensorMetadata(shapes[0])}
        return m

    def benchmark(self, inputs, outputs=None, warmup_iter=5, benchmark_iter=5, mode="device"):
        if mode not in ("device", "host") or benchmark_iter < 1:
            raise ValueError(mode)
        assert set(inputs) == set(self.input_tensors_info)
        with open(os.environ["NRTPY_CALLS"], "a") as fh:
            fh.write(json.dumps({"mode": mode, "warmup_iter": warmup_iter, "benchmark_iter": benchmark_iter,
                                 "ld_library_path": os.environ.get("LD_LIBRARY_PATH", "")}) + "\\n")
        return BenchmarkResult()
'''

EXPLORER = '''#!/bin/sh
# A stand-in for AWS's neuron-explorer (aws-neuronx-tools) at its documented command line.
echo "$@" >> "$EXPLORER_CALLS"
case "$1" in
  capture)
    # neuron-explorer capture -n file.neff -s profile.ntff --profile-nth-exec=2  ->  profile_exec_2.ntff
    shift; while [ $# -gt 0 ]; do case "$1" in -s) out="$2"; shift;; esac; shift; done
    : > "${out%.ntff}_exec_2.ntff" ;;
  view)
    # the user guide's recorded summary (neuron-profile view --output-format summary-text, "Profile summary")
    printf 'nc_idx      1\\nnd_idx      2\\ntotal_time  0.017\\n' ;;
esac
'''

AWS_NKI = '''
"""A stand-in for AWS's nki compiler at its documented boundary: under NEURON_FRAMEWORK_DEBUG=1 a kernel call saves
the NEFF in the current directory (use-neuron-profile.rst); this one records the shapes it was compiled for."""
import json, os
import numpy as np


class Kernel:
    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, lnc):
        return self

    def __call__(self, *args):
        if os.environ.get("NEURON_FRAMEWORK_DEBUG") == "1":
            with open("file.neff", "wb") as fh:
                fh.write(b"NEFF" + json.dumps([list(a.shape) for a in args]).encode())
        return np.zeros_like(args[0])


def jit(fn=None, **options):
    return Kernel(fn) if fn is not None else Kernel
'''


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The stand-ins on disk; nrtpy's interpreter is a Python whose path holds the nrtpy stand-in."""
    (tmp_path / "nrtpy_pkg" / "nrtpy").mkdir(parents=True)
    (tmp_path / "nrtpy_pkg" / "nrtpy" / "__init__.py").write_text(NRTPY)
    python = executable(tmp_path / "nrtpy-python", f'#!/bin/sh\nPYTHONPATH="{tmp_path / "nrtpy_pkg"}" '
                                                    f'exec "{sys.executable}" "$@"\n')
    (tmp_path / "bin").mkdir()
    executable(tmp_path / "bin" / "neuron-explorer", EXPLORER)
    (tmp_path / "aws" / "nki").mkdir(parents=True)
    (tmp_path / "aws" / "nki" / "__init__.py").write_text(AWS_NKI)
    (tmp_path / "aws" / "nki" / "language.py").write_text("")
    dmi = tmp_path / "product_name"
    dmi.write_text("trn2.48xlarge\n")
    monkeypatch.setattr(device, "DMI_PRODUCT", dmi)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/nrtpy_venv here
    monkeypatch.setenv("NRTPY_CALLS", str(tmp_path / "nrtpy_calls.jsonl"))
    monkeypatch.setenv("EXPLORER_CALLS", str(tmp_path / "explorer_calls.txt"))
    monkeypatch.delenv(device.NRTPY_PYTHON_ENV, raising=False)
    return {"python": python, "bin": tmp_path / "bin", "aws": tmp_path / "aws", "root": tmp_path}


def neff(folder: Path, *shapes: tuple[int, ...]) -> Path:
    path = folder / "kernel.neff"
    path.write_bytes(b"NEFF" + json.dumps([list(s) for s in shapes]).encode())
    return path


@pytest.mark.processes
def test_nrtpy_benchmark_times_the_neff_on_the_device(tools, monkeypatch):
    monkeypatch.setenv(device.NRTPY_PYTHON_ENV, str(tools["python"]))
    inputs = [np.ones((128, 512), np.float32), np.ones((128, 512), np.float32)]
    m = device.time_neff(neff(tools["root"], (128, 512), (128, 512)), inputs)
    assert m.latency_us == pytest.approx(3.2) and m.instance == "trn2.48xlarge"
    assert m.label() == "measured on trn2.48xlarge (nrtpy benchmark, mean of 100 runs)"
    call = json.loads((tools["root"] / "nrtpy_calls.jsonl").read_text())
    assert call["mode"] == "device" and (call["warmup_iter"], call["benchmark_iter"]) == (device.WARMUP, device.ITERATIONS)
    assert call["ld_library_path"].split(os.pathsep)[0] == "/opt/aws/neuron/lib"  # as AWS's nrtpy setup page says
    assert runner.measured(m) == Latency(m.latency_us, "trn2.48xlarge", False, "nrtpy benchmark, mean of 100 runs")
    # a NEFF compiled for other shapes than the timed case's is not timed as if it were the kernel's
    with pytest.raises(device.DeviceError, match=r"the NEFF takes inputs \[\[64, 512\]\]"):
        device.time_neff(neff(tools["root"], (64, 512)), inputs[:1])


@pytest.mark.processes
def test_without_nrtpy_neuron_explorer_captures_the_second_execution(tools, monkeypatch):
    monkeypatch.setenv("PATH", f"{tools['bin']}{os.pathsep}{os.environ['PATH']}")
    path = neff(tools["root"], (128, 512))
    m = device.time_neff(path, [np.ones((128, 512), np.float32)])
    assert m.latency_us == pytest.approx(17000.0)  # the guide's total_time 0.017 s
    assert m.label() == "measured on trn2.48xlarge (neuron-explorer capture, 2nd execution)"
    capture, view = (tools["root"] / "explorer_calls.txt").read_text().splitlines()
    assert capture.startswith(f"capture -n {path} -s ") and capture.endswith("/profile.ntff --profile-nth-exec=2")
    assert view.startswith(f"view -n {path} -s ") and view.endswith("/profile_exec_2.ntff --output-format summary-text")


def test_with_no_tool_and_no_device_nothing_claims_a_measurement(tools):
    with pytest.raises(device.DeviceError, match="neither nrtpy .* nor neuron-explorer"):
        device.time_neff(neff(tools["root"], (1, 1)), [np.ones((1, 1), np.float32)])
    assert device.neuron_devices() == [] and not device.on_device()  # this machine: no /dev/neuron*
    assert latency_label("trn2") == "estimate: nkisim cost model, trn2"
    assert latency_label("trn2", "legacy") == "estimate: nkisim cost model, trn2"
    ev = Evaluation(QUESTIONS["vector_add_stream"], "k.py", target="trn2")
    assert ev.latency_label() == "estimate (nkisim cost model, trn2)"
    ev.simulator, ev.target, ev.how = False, "trn2.48xlarge", "nrtpy benchmark, mean of 100 runs"
    assert ev.latency_label() == "measured on trn2.48xlarge (nrtpy benchmark, mean of 100 runs)"
    (tools["root"] / "dev").mkdir()
    (tools["root"] / "dev" / "neuron0").write_text("")
    assert device.neuron_devices(tools["root"] / "dev") == [tools["root"] / "dev" / "neuron0"]
    assert not device.on_device(tools["root"] / "dev")  # a device, but `import nki` is the simulator here


@pytest.mark.processes
def test_the_grader_compiles_a_06_kernel_to_a_neff_in_a_child_and_times_it_itself(tools, monkeypatch, tmp_path):
    """The grading parent's device path for an NKI 0.6 kernel: a child imports the student's file under AWS's nki
    (the stand-in), runs it once on the timed case's shapes with NEURON_FRAMEWORK_DEBUG=1 in a scratch folder, and
    sends the NEFF's bytes; the parent times them with nrtpy. The NEFF nrtpy loads is the one the child compiled
    for the speed case (its recorded shapes are the inputs nrtpy checks)."""
    monkeypatch.setenv(device.NRTPY_PYTHON_ENV, str(tools["python"]))
    kernel = tmp_path / "vector_add_stream.py"
    kernel.write_text("import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef vector_add_stream(a, b):\n"
                      "    return a\n")
    q = QUESTIONS["vector_add_stream"]
    shapes = q.speed_case.shapes(len(q.arg_names))
    env = sandbox.environment({})  # the child's environment, as the grader builds it
    env["PYTHONPATH"] = os.pathsep.join([str(tools["aws"]), env["PYTHONPATH"]])  # AWS's nki is installed
    result = runner.RunResult()
    facts = runner.device_bench([sys.executable, "-m", "nkilab.isolate._child"], kernel, str(tmp_path), env,
                                {"module": str(kernel), "function": "vector_add_stream", "grid": None, "target": None},
                                (shapes, [q.speed_case.dtype] * 2), time.monotonic() + 120, sandbox.Limits(),
                                False, result, None)
    assert (facts.latency_us, facts.target, facts.simulator, facts.how) == (
        pytest.approx(3.2), "trn2.48xlarge", False, "nrtpy benchmark, mean of 100 runs"), (facts, result.stderr[-2000:])
    assert not list(tmp_path.glob("*.neff"))  # compiled in a scratch folder, not beside the student's file
    # a kernel whose compile saves no NEFF (a legacy SDK, say) gets no latency, and the reason says why
    (tools["aws"] / "nki" / "__init__.py").write_text(AWS_NKI.replace('os.environ.get("NEURON_FRAMEWORK_DEBUG")',
                                                                      '"never"'))
    facts = runner.device_bench([sys.executable, "-m", "nkilab.isolate._child"], kernel, str(tmp_path), env,
                                {"module": str(kernel), "function": "vector_add_stream", "grid": None, "target": None},
                                (shapes, [q.speed_case.dtype] * 2), time.monotonic() + 120, sandbox.Limits(),
                                False, result, None)
    assert not facts.ok and facts.error is not None and "left no NEFF" in facts.error.message, facts
