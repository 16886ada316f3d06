"""The language front end: modules that stand in for ``neuronxcc.nki`` and its submodules.

``nkisim.activation`` maps ``neuronxcc.nki`` -> ``frontend.nki``, ``neuronxcc.nki.language`` ->
``frontend.language``, and so on.  These modules only name things; the work happens in ``ops``.
"""
