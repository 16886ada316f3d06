"""AWS's NKI 0.6 example kernels (``nki/examples`` of the aws-neuron-sdk docs source) run unmodified on the
simulator, each checked against NumPy by ``bench/aws_examples06.py``.

The examples are AWS's and are never copied into this repository: the test clones the docs source from a local
mirror (``NKILAB_AWS_SDK_MIRROR``, default the machine's mirror of github.com/aws-neuron/aws-neuron-sdk) into a
temporary directory and runs ``bench/conformance.py --aws-examples`` on it; without a mirror it is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MIRROR = os.environ.get("NKILAB_AWS_SDK_MIRROR", "/work/.mirror/aws-neuron+aws-neuron-sdk/repo")


@pytest.mark.slow
def test_every_aws_example_passes_numpy_checked(tmp_path: Path) -> None:
    if not os.path.isdir(MIRROR):
        pytest.skip(f"no local mirror of aws-neuron-sdk at {MIRROR}")
    clone = tmp_path / "sdk"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{MIRROR}", str(clone)], check=True, timeout=600)
    summary = tmp_path / "summary.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "conformance.py"), "--aws-examples", str(clone),
                           "--json", str(summary)], capture_output=True, text=True, timeout=1800, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(summary.read_text())["aws-nki06-examples"]
    failed = [f["name"] + ": " + f["first_error"] for f in result["files"] if not f["ok"]]
    assert not failed, failed
    assert result["totals"]["tests_passed"] == 20
