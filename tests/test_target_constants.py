"""One source of truth per hardware number: the target files (issue 20 scope 6).

Every number a target file gives as a hardware fact (its ``[limits]``, ``[buffers]``, clocks, DMA engines and
bandwidths, the ISA's cycle constants) is looked for as a literal in the simulator's Python source; a literal
equal to one is a hardware number spelled twice, unless it is listed below with the reason it is something else
(a memo's bound, a cache size); the program format's caps on input sizes are not looked at.  Values under 16 are too common (dtype sizes, tuple positions, bit widths) to tell
apart and are left out.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from pathlib import Path

import pytest

from nkisim.core import target as target_mod

NKISIM = Path(target_mod.__file__).resolve().parent.parent

#: the target-file entries that are hardware facts (sections, or (section, key) pairs)
HARDWARE = ("limits", "buffers", "clock_ghz", ("dma", "queues"), ("dma", "partitions_per_queue"),
            ("dma", "bytes_per_ns"), ("dma", "fixed_latency_ns"), ("dma", "hbm_gbps"), ("engine", "min_ii_cycles"),
            ("engine", "instruction_overhead_cycles"), ("engine", "gpsimd_fixed_cycles"), ("engine", "stride_free_bytes"),
            ("engine", "reciprocal_cycles_per_element"), ("engine", "bn_aggr_cycles_per_element"),
            ("pe", "moving_floor_cycles"), ("peak", "dma_gbps"))

#: packages whose numbers are not about the hardware: the program format's caps on (hostile) input sizes
NOT_HARDWARE_PACKAGES = ("program/",)

#: (module, value): literals equal to a hardware number that are something else in that module, and what
NOT_HARDWARE = {
    ("core/dtypes.py", 16): "bits per two bytes",
    ("cost/deps.py", 64): "the dependency table's bucket count",
    ("cost/scheduler.py", 16): "idle gaps the DMA reservation table remembers",
    ("cost/lanes.py", 16): "idle gaps remembered per engine, as the DMA reservation table does",
    ("ops/optable.py", 64): "an activation's documented input range (nki.api.shared), part of its op-table entry",
    ("runtime/execute.py", 16): "a cache size",
    ("runtime/heap.py", 32): "glibc's mmap threshold (32 MiB)",
    ("runtime/heap.py", 128): "glibc's default trim threshold (128 KiB)",
    ("runtime/kernel.py", 512): "a cache size",
    ("frontend/v06/adapters/kernel.py", 512): "a cache size",
    ("ops/rng.py", 16): "a shift of the generator's 32-bit integer hash",
    ("frontend/v06/rules.py", 128): "a line number of AWS's docs source that a refusal cites",
    ("ops/rng.py", 24): "the 24-bit fraction of a uniform fp32 draw (2^-24)",
}


@functools.cache
def _hardware_numbers() -> frozenset[float]:
    numbers: set[float] = set()
    for name in target_mod.names():
        params = target_mod.get(name).params
        for entry in HARDWARE:
            section, key = (entry, None) if isinstance(entry, str) else entry
            for k, v in dataclasses.asdict(getattr(params, section)).items():
                if (key is None or k == key) and isinstance(v, (int, float)) and not isinstance(v, bool):
                    numbers.add(v)
    return frozenset(v for v in numbers if v >= 16 or (isinstance(v, float) and v != int(v)))


@functools.cache
def _literals() -> tuple[tuple[str, int, str, float], ...]:
    out = []
    for path in sorted(NKISIM.rglob("*.py")):
        rel = str(path.relative_to(NKISIM))
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                    and not isinstance(node.value, bool):
                out.append((rel, node.lineno, lines[node.lineno - 1].strip(), node.value))
    return tuple(out)


def test_the_hardware_numbers_are_the_target_files():
    numbers = _hardware_numbers()
    assert {128, 512, 2048, 1300, 212984, 180224, 2.4, 0.96} <= numbers  # the check looks for the real ones


def test_no_module_spells_a_hardware_number():
    numbers = _hardware_numbers()
    stray = [f"{rel}:{line}: {value} in `{text}`" for rel, line, text, value in _literals()
             if value in numbers and (rel, value) not in NOT_HARDWARE and not rel.startswith(NOT_HARDWARE_PACKAGES)]
    assert not stray, "hardware numbers outside nkisim/targets/*.toml (read them from the Target):\n" + \
        "\n".join(stray)


def test_every_exception_is_still_there():
    """An entry of NOT_HARDWARE whose line changed or went away must go (or be re-justified)."""
    present = {(rel, value) for rel, _line, _text, value in _literals()}
    stale = [key for key in NOT_HARDWARE if key not in present]
    assert not stale, stale


@pytest.mark.parametrize("module", ["ops/matmul.py", "core/physical.py", "ops/alu.py", "ops/activation.py", "ops/dma.py", "frontend/language.py",
                                    "cost/spill.py", "cost/instructions.py", "ops/movement.py", "ops/topk.py",
                                    "ops/transpose.py"])
def test_the_modules_issue_20_named_hold_none(module):
    numbers = _hardware_numbers()
    assert not [(line, v) for rel, line, _t, v in _literals() if rel == module and v in numbers]
