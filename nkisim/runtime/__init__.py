"""Kernel launching: nki.jit, SPMD grids, argument conversion and the entry points."""
