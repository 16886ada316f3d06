"""Targets: one file per NeuronCore generation holds every hardware number nkisim uses.

The numbers are checked against the published figures (nki-spec: SBUF bytes per partition, PSUM
banks, tile limits), the launch's context carries the resolved target, and nothing else in the
simulator spells a hardware number.
"""

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


def test_target_parameters_are_read_only_and_editable_copies_are_separate():
    t = target_mod.get("trn2")
    with pytest.raises(TypeError):
        t.params["dma"]["bytes_per_ns"] = 1  # type: ignore[index]
    copy = t.editable_params()
    copy["dma"]["bytes_per_ns"] = 1
    assert t.params["dma"]["bytes_per_ns"] != 1


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
