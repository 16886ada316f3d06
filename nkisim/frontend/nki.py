"""``neuronxcc.nki`` on the simulator: kernels, launch modes and the submodules."""

from __future__ import annotations

from nkisim.core.tensor import Tensor as tensor  # noqa: F401
from nkisim.frontend import compiler, isa, language, typing  # noqa: F401
from nkisim.runtime.kernel import baremetal, jit, simulate_kernel  # noqa: F401
from nkisim.runtime.timing import benchmark, profile  # noqa: F401

__path__: list[str] = []  # makes ``neuronxcc.nki.<submodule>`` importable through the finder
SIMULATED = True
