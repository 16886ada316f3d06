"""Targets: one file per NeuronCore generation holds every hardware number nkisim uses.

The numbers are checked against the published figures (nki-spec: SBUF bytes per partition, PSUM
banks, tile limits), the launch's context carries the resolved target, and nothing else in the
simulator spells a hardware number.
"""

import ast
import dataclasses
import re
from pathlib import Path

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim.core import target as target_mod
from nkisim.core.context import KernelContext

NKISIM = Path(target_mod.__file__).resolve().parent.parent


def test_every_target_file_loads_with_the_published_numbers():
    assert target_mod.names() == ("trn1", "trn2", "trn3")
    trn1, trn2 = target_mod.get("trn1"), target_mod.get("trn2")
    # nki-spec hardware table: usable SBUF per partition (192 KiB - 16 KiB, 224 KiB - 16392 B)
    assert (trn1.sbuf_partition_bytes, trn2.sbuf_partition_bytes) == (192 * 1024 - 16 * 1024, 224 * 1024 - 16392)
    assert (trn1.nc_version, trn2.nc_version) == (2, 3)
    for t in (trn1, trn2):
        assert (t.partitions, t.psum_free_max, t.gemm_stationary_free_max, t.gemm_moving_free_max) == (128, 512, 128, 512)
        assert t.psum_partition_bytes == 8 * 2048 == 16 * 1024
        assert t.version.startswith(t.name + "-")
        assert str(t) == t.name


def test_limits_the_hot_checks_read_as_constants_are_the_same_on_every_target():
    """core.buffers keeps PMAX & co. as module constants (read per instruction): that is only right while
    every target agrees on them; a target that differs must move its check to ctx.target."""
    from nkisim.core import buffers

    for name in target_mod.names():
        t = target_mod.get(name)
        assert (t.partitions, t.psum_free_max, t.psum_bank_bytes, t.psum_banks) == \
            (buffers.PMAX, buffers.PSUM_FMAX, buffers.PSUM_BANK_BYTES, buffers.PSUM_BANKS)


def test_target_parameters_are_read_only_and_replaced_copies_are_separate():
    t = target_mod.get("trn2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.params.dma.bytes_per_ns = 1  # type: ignore[misc]
    copy = t.params.replace("dma", "bytes_per_ns", 1)
    assert copy.dma.bytes_per_ns == 1 and t.params.dma.bytes_per_ns != 1
    assert copy.dma.queues == t.params.dma.queues and copy.engine is t.params.engine
    with pytest.raises(KeyError, match=r"\[dma\] bytes_per_nss"):
        t.params.replace("dma", "bytes_per_nss", 1)


@pytest.mark.parametrize("name", ["trn9", "../trn2", "", "trn2.toml"])
def test_unknown_targets_are_refused_naming_the_known_ones(name):
    with pytest.raises(ValueError, match=r"unknown platform target .*models trn1, trn2, trn3"):
        target_mod.get(name)


def test_a_launch_carries_its_resolved_target(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    seen = {}

    @nki.jit
    def k(a):
        from nkisim.core.context import current

        seen["env"] = current().target
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    k(np.ones((4, 4), np.float32))
    assert seen["env"] is target_mod.get("trn1")  # the environment, as the real nki.jit reads it
    nki.jit(k.func, platform_target="trn2")(np.ones((4, 4), np.float32))
    assert seen["env"] is target_mod.get("trn2")  # an explicit target wins over the environment


def test_the_kernel_context_declares_every_field():
    ctx = KernelContext(target_mod.get("trn2"))
    with pytest.raises(AttributeError):
        ctx.undeclared = 1  # type: ignore[attr-defined]
    assert ctx.nc_version == 3 and ctx.stack == [] and ctx.rng is None


def test_no_module_spells_a_hardware_number_the_target_files_hold():
    """SBUF sizes appear only in nkisim/targets/*.toml (they were in four places)."""
    pattern = re.compile(r"\b(180224|212984)\b")
    offenders = [str(p.relative_to(NKISIM)) for p in NKISIM.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def _edited(tmp_path, old: str, new: str) -> Path:
    """A copy of trn2's target file with one line edited."""
    text = (target_mod.TARGETS_DIR / "trn2.toml").read_text()
    assert text.count(old) == 1, old
    path = tmp_path / "trn2.toml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize("old, new, message", [
    ("\nqueues = 16 ", "\nqueus = 16 ", r"\[dma\] has no key 'queus'"),  # misspelt
    ("\npsum_banks = 8 ", "\n# psum_banks = 8 ", r"\[buffers\] misses the key 'psum_banks'"),  # missing
    ("\n[kernel]", "\n[kernal]", r"no table or key 'kernal'"),  # a misspelt table
    ("\nbytes_per_ns = 23 ", "\nbytes_per_ns = \"23\" ", r"\[dma\] bytes_per_ns = '23' is not a float"),
    ("\ndve_perf_mode = true ", "\ndve_perf_mode = 1 ", r"\[engine\] dve_perf_mode = 1 is not a bool"),
])
def test_a_misspelt_or_missing_key_is_an_error_at_load_naming_the_file_and_the_key(tmp_path, old, new, message):
    path = _edited(tmp_path, old, new)
    with pytest.raises(target_mod.TargetFileError, match=re.escape(str(path)) + ": .*" + message):
        target_mod.load(path, "trn2")
    assert target_mod.load(_edited(tmp_path, old, old), "trn2").params == target_mod.get("trn2").params  # (unedited)


#: where code reads target parameters: the simulator, the grader, the lessons, the tools and the tests (not the
#: example class: students' code)
PARAM_READERS = [NKISIM, NKISIM.parent / "autograder" / "nkilab", NKISIM.parent / "bench", NKISIM.parent / "notebooks",
                 NKISIM.parent / "tests", NKISIM.parent / "docs" / "_ext"]


def string_indexed_params(source: str) -> list[int]:
    """Lines where ``source`` reads a target parameter by string: ``x.params["dma"]``, ``prm["engine"]``, or
    ``x["<a key of a target table>"]`` whatever ``x`` is (``d["queues"]`` with ``d`` a table: the tables' keys are
    named for what they hold, and no other dict in the code uses them -- the clocks' ``"pe"``, ``"dve"``... are
    engines' names everywhere, so they are left out); or asks a removed string accessor (``.limit("...")``,
    ``editable_params``)."""
    keys = {f.name for t, r in target_mod.TABLES.items() if t != "clock_ghz" for f in dataclasses.fields(r)}
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value,
                                                                                                      str):
            inner = node.value
            named = (isinstance(inner, ast.Attribute) and inner.attr == "params") or (
                isinstance(inner, ast.Name) and inner.id in ("prm", "params"))
            if named or node.slice.value in keys:
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr == "editable_params" or (node.func.attr == "limit" and node.args and isinstance(
                    node.args[0], ast.Constant) and isinstance(node.args[0].value, str))):
            lines.append(node.lineno)
    return lines


def test_the_string_index_scan_finds_every_form():
    src = ('a = t.params["dma"]["queues"]\nb = prm["engine"]\nc = d["queues"]\nd = t.limit("psum_min_align")\n'
           'e = t.editable_params()\nf = busy["dma"] + clocks["pe"]\ng = table["dma"]["not_a_dma_key"]\n'
           'h = t.params.dma.queues\n')
    assert sorted(string_indexed_params(src)) == [1, 1, 2, 3, 4, 5]


#: files that read a target file's own text on purpose
READS_THE_FILE = {"tests/test_figures.py": "the figures are checked against the TOML file itself (tomllib), not the "
                                           "records nkisim reads from it"}


def test_no_code_reads_a_target_parameter_by_string():
    found = [f"{p.relative_to(NKISIM.parent)}:{line}" for root in PARAM_READERS for p in sorted(root.rglob("*.py"))
             if "__pycache__" not in p.parts and str(p.relative_to(NKISIM.parent)) not in READS_THE_FILE
             for line in string_indexed_params(p.read_text())]
    assert found == []
