"""nkisim: a CPU simulator of AWS Trainium's NKI with a NeuronCore cost model, for both dialects: legacy
``neuronxcc.nki`` and NKI 0.6 (``import nki``).

``import nkisim; nkisim.install()`` makes ``import neuronxcc.nki`` and ``import nki`` resolve to the simulator
where the real packages are not installed (or only PyPI's placeholders are).  ``NKI_SIMULATOR=1`` forces the
simulator for ``neuronxcc`` even where the real compiler exists; for ``nki`` that variable means AWS's own
simulator, so only ``NKISIM_FORCE=1`` shadows a real ``nki`` (and ``neuronxcc``).  This module stays
import-light: nothing heavy loads until a kernel module is imported.
"""

from nkisim.activation import install, provides_nki, uninstall, using_simulator

__version__ = "0.1.0"
__all__ = ["install", "provides_nki", "uninstall", "using_simulator", "__version__"]
