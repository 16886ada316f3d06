"""Issue 29: AWS's nki-library runs unmodified through its own ``--test-mode simulation`` on nkisim.

In process: ``nki.cpu_simulate(kernel)[lnc](**inputs)`` as nki-library's harness calls it (and the target its
``NKI_NC_VERSION`` names), the ``neuron_dtypes`` stand-in's x4 packing against nkisim's own unpacking, and the
harness's patch of a docstring repeated after it closed.  Then, marked slow, ``bench/conformance.py --nkilib`` on a
clone of the local mirror of nki-library (skipped without one, like the other conformance tests): its cases pass
against the torch references its tests compute, every skip names its reason, and the output ends with the counts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nkisim

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "nkilib_support"))

import neuron_dtypes  # noqa: E402
import nkilib_suite  # noqa: E402

MIRROR = os.environ.get("NKILAB_NKILIB_MIRROR", "/work/.mirror/aws-neuron+nki-library/repo")
#: cumsum's largest shape, left to test_nkilib_full_size (which runs each file's largest case)
FULL_SIZE_CASE = "2048-6144-3-10-float32"


@nki.jit
def _scale(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def _version(x):
    out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    gen = 2 if nisa.get_nc_version() == nisa.nc_version.gen2 else 3 if nisa.get_nc_version() == nisa.nc_version.gen3 \
        else 4
    nisa.memset(dst=t, value=float(gen))
    nisa.dma_copy(dst=out, src=t)
    return out


def test_cpu_simulate_runs_a_kernel_with_keyword_inputs_at_each_lnc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NKI_NC_VERSION", raising=False)
    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    np.testing.assert_array_equal(nki.cpu_simulate(_scale)[1](x=x), 3 * x)
    np.testing.assert_array_equal(nki.cpu_simulate(_scale)(x), 3 * x)


@pytest.mark.parametrize(("gen", "number"), [("gen2", 2), ("gen3", 3), ("gen4", 4)])
def test_cpu_simulate_targets_the_generation_nki_nc_version_names(monkeypatch: pytest.MonkeyPatch, gen: str,
                                                                   number: int) -> None:
    monkeypatch.setenv("NKI_NC_VERSION", gen)
    assert float(nki.cpu_simulate(_version)[1](x=np.ones((1, 1), np.float32))[0, 0]) == number


def test_cpu_simulate_refuses_a_generation_it_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NKI_NC_VERSION", "gen9")
    with pytest.raises(ValueError, match="gen9"):
        nki.cpu_simulate(_scale)[1](x=np.ones((1, 1), np.float32))


@pytest.mark.parametrize("x4", [nl.float8_e4m3fn_x4, nl.float8_e5m2_x4, nl.float4_e2m1fn_x4])
def test_neuron_dtypes_static_cast_packs_four_values_as_nkisim_unpacks_them(x4) -> None:
    from nkisim.ops import mx

    values = np.array([[0.5, -1.0, 1.5, 2.0, -0.5, 3.0, 4.0, -6.0]], np.float32)
    packed = neuron_dtypes.static_cast(values, x4)
    assert packed.dtype == x4 and packed.shape == (1, 2)
    np.testing.assert_array_equal(mx.unpack(packed.view(np.uint32 if x4 != nl.float4_e2m1fn_x4 else np.uint16), x4)
                                  .reshape(1, 8), values)
    np.testing.assert_array_equal(neuron_dtypes.static_cast(packed, np.float32), values)


def test_the_harness_removes_a_docstring_tail_repeated_after_it_closed() -> None:
    good = 'def f():\n    """Doc.\n\n    Notes:\n        Two lines.\n    """\n    return 1\n'
    broken = good.replace('    """\n    return', '    """\n\n    Notes:\n        Two lines.\n    """\n    return')
    with pytest.raises(SyntaxError):
        compile(broken, "f.py", "exec")
    fixed = nkilib_suite.repeated_docstring(broken)
    assert fixed is not None and fixed[0] == good and (fixed[1], fixed[2]) == (7, 10)
    assert nkilib_suite.repeated_docstring("x = (\n") is None


def test_the_harness_supplies_stand_in_sources_and_never_bytecode(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = tmp_path / "support" / "overlay" / "test" / "utils"
    (overlay / "__pycache__").mkdir(parents=True)
    (overlay / "stand_in.py").write_text("X = 1\n")
    (overlay / "__pycache__" / "stand_in.cpython-311.pyc").write_bytes(b"\0")
    monkeypatch.setattr(nkilib_suite, "SUPPORT", str(tmp_path / "support"))
    work = tmp_path / "work"
    notes = nkilib_suite.supply(str(work))
    assert (work / "test" / "utils" / "stand_in.py").read_text() == "X = 1\n"
    assert not (work / "test" / "utils" / "__pycache__").exists()
    assert [n for n in notes if "stand_in" in n] == ["supplied test/utils/stand_in.py (unpublished by AWS; "
                                                     "bench/nkilib_support)"]
    assert not [n for n in notes if "__pycache__" in n]


def test_a_patch_of_several_lines_applies_only_where_they_follow_one_another(tmp_path: Path) -> None:
    """main at d2ad3a5's test_qkv_tkg.py uses Platforms without importing it (NameError when collected): the harness
    adds the import on its copy, where the import block reads as main has it, and leaves 2.29_release's (which
    imports it) alone."""
    rel = "test/integration/nkilib/core/qkv/test_qkv_tkg.py"
    block = "from test.utils.common_dataclasses import (\n    KernelArgs,\n    LazyGoldenGenerator,\n{}    ValidationArgs,\n)\n"
    main_like, release_like = tmp_path / "main", tmp_path / "release"
    for root, extra in ((main_like, ""), (release_like, "    Platforms,\n")):
        (root / rel).parent.mkdir(parents=True)
        (root / rel).write_text(block.format(extra) + "X = Platforms\n")
    notes = nkilib_suite.patch_lines(str(main_like))
    assert [n for n in notes if "test_qkv_tkg.py line 3:" in n]
    assert (main_like / rel).read_text() == block.format("    Platforms,\n") + "X = Platforms\n"
    assert not [n for n in nkilib_suite.patch_lines(str(release_like)) if "test_qkv_tkg" in n]
    assert (release_like / rel).read_text() == block.format("    Platforms,\n") + "X = Platforms\n"


def test_a_trace_only_case_needing_the_unpublished_compiler_is_a_skip_with_its_reason() -> None:
    """main's core/utils/test_tensor_view.py cases are trace-only: its harness imports the Neuron compiler's tracer
    (nki.compiler.frontend), which AWS does not publish; any other failure stays a failure."""
    import xml.etree.ElementTree as ET

    def node(message: str) -> ET.Element:
        return ET.fromstring(f'<testcase classname="T" name="test_slice[0]" time="1.5"><failure message="{message}"/>'
                             f'</testcase>')

    rel = "test/integration/nkilib/core/utils/test_tensor_view.py"
    case = nkilib_suite.classify(rel, node("ModuleNotFoundError: No module named 'nki.compiler.frontend'; "
                                           "'nki.compiler' is not a package"))
    assert case is not None and case.outcome == "skipped" and "trace-only" in case.message
    other = nkilib_suite.classify(rel, node("ModuleNotFoundError: No module named 'scipy'"))
    assert other is not None and other.outcome == "failed" and "scipy" in other.message


@pytest.mark.processes
def test_two_runs_started_together_install_the_harness_packages_once(tmp_path: Path) -> None:
    """Two conformance runs (one per branch) started together: the second waits for the first's install instead of
    removing its half-made directory.  pip is stood in for by a script that takes a second and counts its runs."""
    pip = tmp_path / "pip.sh"
    pip.write_text('#!/bin/sh\nwhile [ "$1" != "--target" ]; do shift; done\nsleep 1\nmkdir -p "$2"\n'
                   f'touch "$2/pytest_html.py"\necho ran >> "{tmp_path}/runs"\n')
    pip.chmod(0o755)
    (tmp_path / "req.txt").write_text("pytest-html==4.1.1\n")
    deps = tmp_path / "build" / "nkilib-deps"
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import nkilib_suite as s; "
            f"s.PYTHON, s.REQUIREMENTS, s.DEPS = {str(pip)!r}, {str(tmp_path / 'req.txt')!r}, {str(deps)!r}; "
            f"d = s.ensure_deps(); import os; print(os.path.isfile(os.path.join(d, 'pytest_html.py')))")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert outs == ["True", "True"]
    assert (tmp_path / "runs").read_text() == "ran\n"  # installed once: the second found the first's stamp


@pytest.mark.slow
def test_nkilib_cumsum_passes_through_its_own_simulation_mode(tmp_path: Path) -> None:
    if not os.path.isdir(MIRROR):
        pytest.skip(f"no local mirror of nki-library at {MIRROR}")
    clone = tmp_path / "nki-library"
    subprocess.run(["git", "clone", "-q", f"file://{MIRROR}", str(clone)], check=True, timeout=600)
    summary = tmp_path / "summary.json"
    # every case of the file but its one full-size shape (2048 x 10 x 6144 float32, half a GB an array: a minute of
    # torch and NumPy around six seconds of simulation), which test_nkilib_full_size runs as the file's largest
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "conformance.py"), "--nkilib", str(clone),
                           "--nkilib-ref", "origin/2.29_release", "--only", "core/cumsum/", "--aws-skips",
                           f"--pytest-arg=-knot {FULL_SIZE_CASE}", "--json", str(summary)],
                          capture_output=True, text=True, timeout=1800, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"(\d+) passed, (\d+) failed, (\d+) skipped", last)
    assert m, last
    (result,) = json.loads(summary.read_text()).values()
    assert result["totals"]["passed"] == int(m.group(1)) >= 30 and result["totals"]["failed"] == 0
    assert all(c["message"] for c in result["cases"] if c["outcome"] == "skipped")
    assert not [c for c in result["cases"] if FULL_SIZE_CASE in c["name"]]


@pytest.mark.parametrize("has_data_filter", [True, False])
def test_archives_are_extracted_with_the_data_filters_refusals_on_any_311(tmp_path, monkeypatch, has_data_filter):
    """AWS's trees arrive as `git archive` tars; tarfile's "data" filter (Python 3.11.4+) refuses members that leave
    the folder, and on an older 3.11 (Debian 12's 3.11.2, which `make` prefers) extract_data makes the same checks."""
    import io
    import tarfile

    if not has_data_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip(f"this Python's tarfile has no data filter (3.11.4 and later have it): {sys.version.split()[0]}")

    def archive(*members: tuple[str, bytes | None, str | None]) -> tarfile.TarFile:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data, link in members:
                info = tarfile.TarInfo(name)
                if link is not None:
                    info.type, info.linkname = tarfile.SYMTYPE, link
                    tar.addfile(info)
                else:
                    info.size = len(data or b"")
                    tar.addfile(info, io.BytesIO(data or b""))
        buf.seek(0)
        return tarfile.open(fileobj=buf)

    good = tmp_path / "good"
    good.mkdir()
    nkilib_suite.extract_data(archive(("src/a.py", b"x = 1\n", None), ("src/b.py", None, "a.py")), str(good))
    assert (good / "src" / "a.py").read_text() == "x = 1\n" and (good / "src" / "b.py").resolve() == \
        (good / "src" / "a.py").resolve()
    for i, bad in enumerate([("../escape.py", b"", None), ("src/out", None, "../../x")]):
        dest = tmp_path / f"bad{i}"
        dest.mkdir()
        with pytest.raises(tarfile.TarError):
            nkilib_suite.extract_data(archive(bad), str(dest))
        assert not (tmp_path / "escape.py").exists() and not list(dest.rglob("*"))
    # an absolute name: the filter extracts it inside the folder (its leading / stripped), the fallback refuses it
    dest = tmp_path / "absolute"
    dest.mkdir()
    try:
        nkilib_suite.extract_data(archive((str(tmp_path / "abs.py"), b"", None)), str(dest))
    except tarfile.TarError:
        assert not has_data_filter
    assert not (tmp_path / "abs.py").exists()
