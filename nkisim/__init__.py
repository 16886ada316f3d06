"""nkisim: a CPU simulator of AWS Trainium's NKI (``neuronxcc.nki``) with a NeuronCore cost model.

``import nkisim; nkisim.install()`` makes ``import neuronxcc.nki`` resolve to the simulator when the
real Neuron compiler is not installed (or only PyPI's placeholder is).  ``NKI_SIMULATOR=1`` forces
the simulator even where the real compiler exists.  This module stays import-light: nothing heavy
loads until a kernel module is imported.
"""

from nkisim.activation import install, uninstall, using_simulator

__version__ = "0.1.0"
__all__ = ["install", "uninstall", "using_simulator", "__version__"]
