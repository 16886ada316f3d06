"""Versioned cost-model parameters, one TOML file per target (``params/<target>.toml``).

Numbers live in data files rather than code so a course term can freeze them (grades stay
reproducible) and each number can carry a comment naming its source in the reference spec.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import tomllib

PARAMS_DIR = Path(__file__).parent / "params"


@cache
def load(target: str) -> dict[str, Any]:
    """Parameters for ``target`` ('trn1' or 'trn2'); raises ValueError for an unknown target."""
    path = PARAMS_DIR / f"{target}.toml"
    if not path.exists():
        known = sorted(p.stem for p in PARAMS_DIR.glob("*.toml"))
        raise ValueError(f"no cost-model parameters for target {target!r} (known: {', '.join(known)})")
    with path.open("rb") as f:
        return tomllib.load(f)
