"""The kinds of operand, one class each (``program.operands`` says what a kind holds): importing this package
registers every kind, so a program can be parsed, encoded and decoded.

- ``containers``: lists, tuples, dicts, slices, ``nl.ds``, ``...``;
- ``constants``: non-finite floats, ``par_dim``, dtypes, NumPy scalars and arrays, operators, buffers;
- ``indexing``: tensors, accesses, index expressions, dynamic indices;
- ``masks``: mask predicates (symbolic, or a constant value).

A new kind is one class in one of these modules (or a new module imported here).
"""

from nkisim.program.kinds import constants, containers, indexing, masks

__all__ = ["constants", "containers", "indexing", "masks"]
