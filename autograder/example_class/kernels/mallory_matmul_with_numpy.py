# mallory, stage 6 Q2: multiplies with NumPy's `@` on the kernel's arguments and stores nothing from NKI. Kernel
# arguments are NKI tensors, not arrays: the expression fails at this line on the simulator and on a device (0).
import nki
import nki.language as nl
import numpy as np


@nki.jit
def matmul_fast(lhsT, rhs):
    result = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    product = np.matmul(np.transpose(lhsT), rhs)
    nl.store(result, value=product)
    return result
