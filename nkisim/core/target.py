"""The hardware a kernel is compiled for: one ``Target`` per NeuronCore generation, read from one file.

Everything nkisim knows about a target lives in ``nkisim/targets/<name>.toml``: the limits the
compiler checks (partitions, PSUM tile size, SBUF bytes per partition, PSUM banks) and the cost
model's parameters, each number with a comment naming its source.  Nothing else holds a hardware
number, so a course term can freeze a target file and its grades stay reproducible.

A launch resolves its target once (``nki.jit(platform_target=)``, else the environment, else
``DEFAULT``) and carries the ``Target`` in its context; grading names its target explicitly and
never reads the environment.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import tomllib

TARGETS_DIR = Path(__file__).resolve().parent.parent / "targets"
#: What a launch runs on when nothing names a target (the course target too).
DEFAULT = "trn2"


@dataclass(frozen=True, slots=True, eq=False)  # one object per target (get is cached): identity
class Target:
    """One NeuronCore generation: the compiler's limits and the cost model's parameters."""

    name: str
    #: the file's ``version``: bumped whenever a number changes (reports name it)
    version: str
    #: NeuronCore generation (``nisa.nc_version``): 2 = trn1, 3 = trn2, 4 = trn3
    nc_version: int
    partitions: int
    psum_free_max: int
    gemm_stationary_free_max: int
    gemm_moving_free_max: int
    #: NeuronCores one launch may shard its SPMD instances over (nl.nc(k) needs k <= this)
    spmd_cores: int
    sbuf_partition_bytes: int
    psum_bank_bytes: int
    psum_banks: int
    #: the cost model's parameter tables (``[clock_ghz]``, ``[engine]``, ``[dma]``…), read-only
    params: Mapping[str, Any]
    #: the cost model has been checked against published figures for this target (the file's ``calibrated``;
    #: trn3's has none yet, so each of its estimates says "uncalibrated")
    calibrated: bool = True

    @property
    def label(self) -> str:
        """How estimates name the target: ``trn2``, or ``trn3 (uncalibrated)`` for a target no published figure
        has checked."""
        return self.name if self.calibrated else f"{self.name} (uncalibrated)"

    def __str__(self) -> str:
        return self.name

    def editable_params(self) -> dict[str, Any]:
        """A plain, deep copy of ``params`` to change (bench/calibrate.py --fit scans candidate values)."""
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in self.params.items()}

    def engine_ops(self, key: str) -> frozenset[str] | None:
        """The operators (``"op0+op1"`` or ``"op0"``) the target file's ``[engine_ops]`` table lets an engine asked
        for by name compute (``tensor_scalar_gpsimd``...); None when it computes every one (``"*"``)."""
        ops = [str(o) for o in self.params["engine_ops"][key]]
        return None if "*" in ops else frozenset(ops)

    def limit(self, key: str) -> int:
        """A limit of the target file's ``[limits]`` table by name (``bn_stats_free_max``,
        ``quadrant_partitions``...): the compiler's checks read every hardware number from here."""
        return int(self.params["limits"][key])

    @property
    def psum_partition_bytes(self) -> int:
        """PSUM bytes per partition: every bank."""
        return self.psum_bank_bytes * self.psum_banks


def names() -> tuple[str, ...]:
    """Every target nkisim models (one file each)."""
    return tuple(sorted(p.stem for p in TARGETS_DIR.glob("*.toml")))


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    return value


@functools.cache
def get(name: str) -> Target:
    """The target called ``name`` (``"trn1"``, ``"trn2"``, ``"trn3"``); ValueError naming the known ones otherwise."""
    key = str(name).lower()
    path = TARGETS_DIR / f"{key}.toml"
    if not key.isidentifier() or not path.is_file():
        raise ValueError(f"unknown platform target {name!r}: the simulator models {', '.join(names())}")
    with path.open("rb") as f:
        data = tomllib.load(f)
    limits, buffers = data["limits"], data["buffers"]
    return Target(name=key, version=str(data.get("version", "")), nc_version=int(limits["nc_version"]),
                  partitions=int(limits["partitions"]), psum_free_max=int(limits["psum_free_max"]),
                  gemm_stationary_free_max=int(limits["gemm_stationary_free_max"]),
                  gemm_moving_free_max=int(limits["gemm_moving_free_max"]), spmd_cores=int(limits["spmd_cores"]),
                  sbuf_partition_bytes=int(buffers["sbuf_partition_bytes"]),
                  psum_bank_bytes=int(buffers["psum_bank_bytes"]), psum_banks=int(buffers["psum_banks"]),
                  params=_frozen(data), calibrated=bool(data.get("calibrated", True)))


def resolve(target: Target | str) -> Target:
    """A ``Target`` for a name or a ``Target`` (what public functions accept)."""
    return target if isinstance(target, Target) else get(target)
