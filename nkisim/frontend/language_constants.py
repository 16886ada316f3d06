"""``neuronxcc.nki.language.constants``: dtype helpers importable on their own
(``from neuronxcc.nki.language.constants import sizeinbytes``)."""

from __future__ import annotations

from typing import Any

from nkisim.core import dtypes as _dt


def sizeinbytes(dtype: Any) -> int:
    """Bytes one element of ``dtype`` takes in SBUF/HBM (tfloat32 is stored in 4)."""
    return int(_dt.storage_dtype(_dt.normalize(dtype)).itemsize)
