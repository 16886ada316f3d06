"""What the NKI 0.6 namespaces (``nki``, ``nki.language``, ``nki.isa``...) are built from: ``binding`` (a 0.6 call
onto the one op registry: enum normalisation, strict keywords, the dtype and operand rules; ``calls`` holds the
registry call and the dtype rule, below ``tensor``), ``registers`` (``VirtualRegister`` and the dynamic loops a
kernel is inside, below ``tensor`` and ``control``), ``tensor`` and
``layout`` (``NkiTensor`` views and ``.ap()`` patterns lowered to the core's accesses), ``instruction``
(``NkiInstruction`` and the operand helpers of ``nki.isa``), ``creation`` (``nl``'s tensor creation and
``address=`` placement), ``control`` (registers and dynamic loops), ``cores`` (LNC2's ``sendrecv`` and
``core_barrier``), ``kernel`` (``nki.jit`` / ``nki.simulate``) and ``errors`` (the 0.6 compiler's wording).
The public modules one level up re-export these under AWS's names; nothing here computes or prices an
instruction (tests/test_nki06_registry.py)."""
