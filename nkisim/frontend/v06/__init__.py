"""The NKI 0.6 front end: ``import nki``, ``nki.language``, ``nki.isa`` and friends, on the same core.

NKI 0.6 (Neuron SDK 2.32) spells the same hardware instructions differently from legacy ``neuronxcc.nki``:
``nisa`` calls take their output tile first (``dst``) and return nothing useful, enums must be enum members,
an unknown keyword is an error, loops are plain Python, and tensors are views (``NkiTensor``) with
``.ap()`` access patterns.  This package is only those spellings: every 0.6 call is an adapter (argument
order, renames, enum normalisation, defaults) onto the one op registry (``nkisim.ops.registry``), which holds
each instruction's checks, numerics and cost once for both dialects.  ``activation`` maps ``nki``,
``nki.language``, ``nki.isa``, ``nki.isa.constants``, ``nki.typing`` and ``nki.collectives`` onto these modules.
"""
