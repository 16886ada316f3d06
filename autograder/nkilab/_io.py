"""Arrays across the process boundary: raw bytes plus a JSON header (bfloat16 does not survive .npy)."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes  # noqa: F401  (registers bfloat16 / float8 with NumPy)
import numpy as np


def save_array(path: Path, arr: np.ndarray) -> dict:
    arr = np.ascontiguousarray(arr)
    path.write_bytes(arr.tobytes())
    return {"file": path.name, "dtype": str(arr.dtype), "shape": list(arr.shape)}


def load_array(folder: Path, meta: dict) -> np.ndarray:
    data = (folder / meta["file"]).read_bytes()
    return np.frombuffer(data, dtype=np.dtype(meta["dtype"])).reshape(meta["shape"]).copy()


def write_json(path: Path, obj: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj))
    tmp.replace(path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
