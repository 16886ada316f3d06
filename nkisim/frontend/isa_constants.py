"""``neuronxcc.nki.isa.constants``: the ISA enums, importable on their own as the real package allows
(``from neuronxcc.nki.isa.constants import dge_mode``)."""

from __future__ import annotations

from nkisim.frontend.isa import dge_mode, engine, nc_version, oob_mode, reduce_cmd  # noqa: F401
