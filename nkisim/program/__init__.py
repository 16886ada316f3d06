"""Instruction programs: what a kernel's Python compiles to, and the only thing the executor runs.

A kernel's Python runs once per signature (shapes, dtypes, grid, target) while a launch records every NKI
call it makes (``runtime.recording``).  The result is a ``Program`` (``program.ir``): typed records of the calls with
their operands (``program.kinds``, see ``program.operands``: tensor ids, access patterns as affine index
expressions over loop ids, masks, scalars; one class per kind of operand), the loop structure (a body traced once,
split into paths where its Python branched on the loop's index) and SPMD instances, the inputs and the outputs.
It serialises to JSON (no pickle); its parser types and bounds every field (``program.limits`` states every cap),
the validator (``program.validate``) is the trust boundary, and the executor (``runtime.execute``) runs a valid
program on NumPy inputs through the same op implementations the eager path uses, so the numerics exist once.
"""
